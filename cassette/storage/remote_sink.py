"""Writing a cassette at an fsspec URL: a thread uploads a local spool file's completed lines
as part objects ``<shard>.<session>.<seq>.part``; a clean close uploads the whole shard and
deletes the parts. If the store fails, the spool file is kept and the error names it."""

from __future__ import annotations

import contextlib
import gzip
import os
import secrets
import threading
import time
import zlib
from pathlib import Path
from typing import Any

import orjson

from ..errors import CassetteError, CassetteModeError, CassetteStorageError
from ..redact import Redactor
from .recorder import Recorder
from .remote import CHECK, Listing, Shard, failed, fetch_all, keep, private_dir, shard_bytes
from .sink import Sink
from .store import header_run, shard_name

__all__ = ["PART_BYTES", "PART_SECONDS", "RemoteSink"]

PART_SECONDS = float(os.environ.get("CASSETTE_PART_SECONDS", "2"))
PART_BYTES = int(os.environ.get("CASSETTE_PART_BYTES", str(1 << 20)))
_HEAD_BYTES = 1 << 16  # what is read of each shard for its header (more if it is longer)
_WRITING: set[tuple[str, str]] = set()  # (protocol, object) of the shards open here
_WRITING_LOCK = threading.Lock()


def _head(data: bytes, end: int | None) -> dict[str, Any] | bool:
    """The header in an object's first ``end`` bytes; True if longer, False if none."""
    cut = end is not None and len(data) >= end
    try:
        if data[:2] == b"\x1f\x8b":
            data = zlib.decompressobj(wbits=31).decompress(data)
        if cut and b"\n" not in data:
            return True
        obj = orjson.loads(data.split(b"\n", 1)[0])
    except (zlib.error, orjson.JSONDecodeError):
        return False
    return obj if isinstance(obj, dict) else False


def _cat(found: Listing, paths: list[str], end: int | None) -> dict[str, bytes]:
    try:
        got = found.fs.cat(paths, start=0, end=end, on_error="omit")
    except Exception as exc:  # OSError, or a storage library's own
        raise failed("cannot read", found.url, exc) from exc
    return dict(got)


def _heads(found: Listing) -> dict[str, dict[str, Any]]:
    """Each shard's header, from the first 64 KiB of its first object (else all of it)."""
    firsts = {n: s.paths()[0] for n, s in found.shards.items() if s.paths()}
    out: dict[str, dict[str, Any]] = {}
    end: int | None = _HEAD_BYTES
    while firsts:
        got = _cat(found, list(firsts.values()), end)
        heads = {n: _head(got.get(p, b""), end) for n, p in firsts.items()}
        out.update((n, h) for n, h in heads.items() if isinstance(h, dict))
        firsts = {n: firsts[n] for n, h in heads.items() if h is True}
        end = None
    return out


def _claim(found: Listing, target: str) -> tuple[str, str]:
    """Mark ``target`` as written here until :func:`_release`; a second writer is refused."""
    key = (str(found.fs.protocol), target)
    with _WRITING_LOCK:
        if key in _WRITING:
            raise CassetteModeError(
                f"{found.url} already has a cassette open for writing in this process, "
                f"whose shard {target.rsplit('/', 1)[-1]} this one would overwrite on close: "
                "close the first one, or give each its own shard name (CASSETTE_SHARD, or "
                "a directory URL per cassette)"
            )
        _WRITING.add(key)
    return key


def _release(key: tuple[str, str]) -> None:
    with _WRITING_LOCK:
        _WRITING.discard(key)


def _kept_for_run(found: Listing, record: bool) -> set[str]:
    """Recording with ``$CASSETTE_RUN``: the objects of this run's other workers."""
    run = os.environ.get("CASSETTE_RUN")
    if not (record and found.directory and run):
        return set()
    heads = _heads(found)
    runs = (s for s in found.shards.values() if header_run(heads.get(s.name, {})) == run)
    return {p for shard in runs for p in shard.paths()}


class RemoteSink:
    """The write side of a cassette at a URL: a local :class:`Sink` on a spool file."""

    def __init__(
        self, found: Listing, *, record: bool, redactor: Redactor, meta: dict[str, Any], fsync: bool
    ) -> None:
        self._fs, self._directory = found.fs, found.directory
        self._name, self.target, self._shown = found.root.rsplit("/", 1)[-1], found.root, found.url
        if found.directory:
            self._name = shard_name()
            self.target = f"{found.root}/{self._name}"
            self._shown = f"{found.url.rstrip('/')}/{self._name}"
        self._session = secrets.token_hex(6)
        self._claim = _claim(found, self.target)
        try:
            self._spool = private_dir() / self._name.removesuffix(".gz")
            record = self._begin(found, record)
            if record and found.directory and os.environ.get("CASSETTE_RUN"):
                meta.setdefault("run", os.environ["CASSETTE_RUN"])
            self._local = Sink(
                self._spool, directory=False, record=record, redactor=redactor, meta=meta,
                fsync=fsync,
            )  # fmt: skip
        except BaseException:
            _release(self._claim)
            raise
        self._grow = self._local.side or self._spool
        self._found_size = found.sizes.get(self.target)  # the shard object, if any
        self._upload_lock, self._stop = threading.Lock(), threading.Event()
        self._thread = threading.Thread(target=self._run, name="cassette-parts", daemon=True)
        self._thread.start()

    def _begin(self, found: Listing, record: bool) -> bool:
        """Decide what close replaces; whether the local sink records from scratch."""
        keep_run = _kept_for_run(found, record)
        own = found.shards.get(self._name)
        self._seq = self._first = self._sent = self._copied = 0
        if own is not None and (not record or not keep_run.isdisjoint(own.paths())):
            self._continue(found, own)
            return False
        shards = found.shards.values() if record else ()
        self._replaced = [p for s in shards for p in s.paths() if p not in keep_run]
        return record

    def _continue(self, found: Listing, own: Shard) -> None:
        """Go on with the shard ``own``: copied into the spool, replaced on close."""
        only = Listing(found.url, found.fs, found.root, found.directory, {self._name: own})
        self._spool.write_bytes(shard_bytes(only, self._name, fetch_all(only)))
        self._sent = self._copied = self._spool.stat().st_size
        self._seq = self._first = own.next_seq()  # (its parts sort after those found)
        self._replaced = own.paths()

    @property
    def side(self) -> Path | None:
        return self._local.side

    @property
    def redacted(self) -> int:
        return self._local.redacted

    def recorder(self) -> Recorder:
        return self._local.recorder()

    def _run(self) -> None:
        last = time.monotonic()
        while not self._stop.wait(0.1):
            with contextlib.suppress(OSError):
                size = self._grow.stat().st_size - self._sent
                if size > 0 and (time.monotonic() - last >= PART_SECONDS or size >= PART_BYTES):
                    # if the store fails, a later part or the close uploads the lines
                    with contextlib.suppress(Exception):
                        self.flush_part()
                    last = time.monotonic()

    def _part(self, seq: int) -> str:
        return f"{self.target}.{self._session}.{seq:06d}.part"

    def flush_part(self) -> None:
        """Upload the completed lines not uploaded yet as the next part object."""
        with self._upload_lock:
            try:
                with open(self._grow, "rb") as f:
                    f.seek(self._sent)
                    data = f.read()
            except OSError:
                return
            cut = data.rfind(b"\n") + 1
            if cut:
                self._fs.pipe_file(self._part(self._seq), data[:cut])
                self._seq += 1
                self._sent += cut

    def _kept(self, path: Path, exc: BaseException) -> CassetteStorageError:
        kept = keep(path)
        fix = f"what this run recorded is kept in {kept}; {CHECK}, then copy that file to "
        fix += self._shown
        return failed("cannot upload", self._shown, exc, fix, kept=kept)

    def close(self) -> None:
        """Upload the whole shard, then delete the parts and what it replaces;
        :class:`CassetteStorageError`, naming the kept local file, if the store fails."""
        try:
            self._stop.set()
            self._thread.join()
            self._local.close()
            if self._spool.exists():  # (not in append mode when no call was made)
                self._upload()
        finally:
            _release(self._claim)

    def _upload(self) -> None:
        data = self._spool.read_bytes()
        target = self._free_target()
        replaced = self._replaced
        if target != self.target and self._copied:  # the continued shard is another's now:
            # upload its own lines under the header alone; the other's parts stay
            data = data[: data.find(b"\n") + 1] + data[self._copied :]
            replaced = []
        try:
            self._fs.pipe_file(target, gzip.compress(data) if target.endswith(".gz") else data)
        except Exception as exc:  # OSError, or a storage library's own
            raise self._kept(self._spool, exc) from exc
        parts = map(self._part, range(self._first, self._seq))
        self._delete([p for p in [*replaced, *parts] if p != self.target])

    def _delete(self, gone: list[str]) -> None:
        try:
            if gone:
                self._fs.rm(gone)
        except Exception as exc:  # OSError, or a storage library's own
            left = ", ".join(map(self._fs.unstrip_protocol, gone))
            fix = f"the recording is uploaded; delete what it replaces: {left}"
            raise failed("cannot delete objects next to", self._shown, exc, fix) from exc

    def _free_target(self) -> str:
        """The shard's object, unless another process wrote it since (then this session's)."""
        try:
            self._fs.invalidate_cache(self.target)
            now = self._fs.info(self.target).get("size")
        except FileNotFoundError:
            now = None
        except Exception:  # noqa: BLE001 - cannot tell: as before, the shard's object
            return self.target
        if now == self._found_size:
            return self.target
        if self._directory:
            stem, dot, ext = self._name.partition(".")
            return f"{self.target.rsplit('/', 1)[0]}/{stem}.{self._session}{dot}{ext}"
        raise CassetteError(
            f"{self._shown} was written by another process while this one recorded into it "
            f"(two writers of one object); what this one recorded is kept in "
            f"{keep(self._spool)}: merge it with `cassette merge`, then upload the result"
        )

    def abort(self, exc: BaseException | None) -> None:
        """Stop; what was recorded stays as parts, else in a local file named by a note on
        ``exc`` (raised when ``exc`` is None)."""
        try:
            self._stop.set()
            self._thread.join()
            self._local.abort(None)
            self._grow = self._local.side or self._spool
            try:
                self.flush_part()
                note = f"cassette: what this run recorded is in the parts of {self._shown}"
            except Exception as err:  # as above
                if exc is None:
                    raise self._kept(self._grow, err) from err
                note = f"cassette: {self._kept(self._grow, err)}"
        finally:
            _release(self._claim)
        if exc is not None:
            setattr(exc, "__notes__", [*getattr(exc, "__notes__", []), note])  # noqa: B010
