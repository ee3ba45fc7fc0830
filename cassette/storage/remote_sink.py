"""The write side of a cassette at an fsspec URL (:mod:`cassette.storage.remote` is the read side).

Object stores have no append: :class:`RemoteSink` writes to a local spool file, whose
completed lines a background thread uploads as numbered part objects
``<shard>.<session>.<seq>.part`` every :data:`PART_SECONDS` or :data:`PART_BYTES`; a clean
close uploads the whole shard object and deletes the parts. A worker killed with SIGKILL
loses only the lines not yet in a part; readers append a shard's parts to it. In record
mode the objects the recording replaces are deleted on close, except the shards of this
run's other workers (``$CASSETTE_RUN``). When the store cannot be written, nothing recorded
is lost: the spool file is kept (not removed at exit) and the error names it.
"""

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
from .remote import CHECK, Listing, failed, fetch_all, keep, private_dir, shard_bytes
from .sink import Sink
from .store import header_run, shard_name

__all__ = ["PART_BYTES", "PART_SECONDS", "RemoteSink"]

PART_SECONDS = float(os.environ.get("CASSETTE_PART_SECONDS", "2"))
PART_BYTES = int(os.environ.get("CASSETTE_PART_BYTES", str(1 << 20)))


def _heads(found: Listing) -> dict[str, dict[str, Any]]:
    """Each shard's first line (its header), from the first 64 KiB of its first object,
    or from the whole object where the line is longer (a header with a large meta)."""
    firsts = {n: s.paths()[0] for n, s in found.shards.items() if s.paths()}
    if not firsts:
        return {}
    out: dict[str, dict[str, Any]] = {}
    longer = _first_lines(found, firsts, 1 << 16, out)
    if longer:
        _first_lines(found, longer, None, out)
    return out


def _first_lines(
    found: Listing, firsts: dict[str, str], end: int | None, out: dict[str, dict[str, Any]]
) -> dict[str, str]:
    """Put the first line of each object in ``firsts`` (read up to ``end``) in ``out``;
    the objects whose first line goes on past ``end``."""
    try:
        got = found.fs.cat(list(firsts.values()), start=0, end=end, on_error="omit")
    except Exception as exc:  # OSError, or a storage library's own
        raise failed("cannot read", found.url, exc) from exc
    got = got if isinstance(got, dict) else {next(iter(firsts.values())): got}
    longer = {}
    for name, path in firsts.items():
        data = got.get(path)
        if not isinstance(data, bytes):
            continue
        cut = end is not None and len(data) >= end
        try:
            if data[:2] == b"\x1f\x8b":
                data = zlib.decompressobj(wbits=31).decompress(data)
            if cut and b"\n" not in data:
                longer[name] = path
                continue
            obj = orjson.loads(data.split(b"\n", 1)[0])
        except (zlib.error, orjson.JSONDecodeError):  # not a header: a shard to replace
            continue
        if isinstance(obj, dict):
            out[name] = obj
    return longer


_WRITING: set[tuple[str, str]] = set()  # (protocol, object) of the shards open here
_WRITING_LOCK = threading.Lock()


def _claim(found: Listing, target: str) -> tuple[str, str]:
    """Mark the shard object ``target`` as written by this process until
    :func:`_release`; refuse a second writer of it here. (Each writer uploads the whole
    shard on close, so a second one would replace the first one's calls.)"""
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


class RemoteSink:
    """The write side of a cassette at a URL: a local :class:`Sink` on a spool file whose
    completed lines are uploaded as numbered parts, and the whole shard on close."""

    def __init__(
        self,
        found: Listing,
        *,
        record: bool,
        redactor: Redactor,
        meta: dict[str, Any],
        fsync: bool,
    ) -> None:
        url, directory = found.url, found.directory
        self._fs = found.fs
        name = shard_name() if directory else found.root.rsplit("/", 1)[-1]
        self.target_url = f"{found.root}/{name}" if directory else found.root
        self._shown = f"{url.rstrip('/')}/{name}" if directory else url  # the URL, for messages
        self._name = name
        self._claim = _claim(found, self.target_url)
        try:
            self._open(found, record, redactor, meta, fsync)
        except BaseException:
            _release(self._claim)
            raise

    def _open(
        self, found: Listing, record: bool, redactor: Redactor, meta: dict[str, Any], fsync: bool
    ) -> None:
        url, directory, name = found.url, found.directory, self._name
        self._session = secrets.token_hex(6)
        self._seq = self._first = 0
        self._sent = 0
        self._spool_dir = private_dir()
        spool = self._spool_dir / (name[:-3] if name.endswith(".gz") else name)
        run = os.environ.get("CASSETTE_RUN")
        own = found.shards.get(name)
        own_paths = own.paths() if own is not None else []
        keep: set[str] = set()
        if record and directory and run:  # the shards of this run's other workers stay
            heads = _heads(found)
            for shard in found.shards.values():
                if header_run(heads.get(shard.name, {})) == run:
                    keep.update(shard.paths())
        # append mode, or a worker of this run that opens its shard again: continue it
        cont = own is not None and (not record or bool(set(own_paths) & keep))
        if own is not None and cont:
            only = Listing(url, found.fs, found.root, directory, {name: own})
            spool.write_bytes(shard_bytes(only, name, fetch_all(only)))
            self._sent = spool.stat().st_size
            self._seq = self._first = own.next_seq()  # (its parts sort after those found)
            self._replaced = own_paths
            record = False
        elif record:
            self._replaced = [p for s in found.shards.values() for p in s.paths() if p not in keep]
        else:
            self._replaced = []
        if record and directory and run:
            meta.setdefault("run", run)
        self._local = Sink(
            spool, directory=False, record=record, redactor=redactor, meta=meta, fsync=fsync
        )
        self._grow = self._local.side or spool
        self._spool = spool
        self._directory = directory
        self._found_size = found.sizes.get(self.target_url)  # the shard object, if any
        self._upload_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cassette-parts", daemon=True)
        self._thread.start()

    @property
    def target(self) -> str:
        return self.target_url

    @property
    def side(self) -> Path | None:
        return self._local.side

    @property
    def redacted(self) -> int:
        return self._local.redacted

    def recorder(self) -> Any:
        return self._local.recorder()

    def _run(self) -> None:
        last = time.monotonic()
        while not self._stop.wait(0.1):
            try:
                size = self._grow.stat().st_size
            except OSError:
                continue
            if size > self._sent and (
                time.monotonic() - last >= PART_SECONDS or size - self._sent >= PART_BYTES
            ):
                # a store that fails: the lines stay in the spool file, and a later part
                # or the close uploads them (or says where they are kept)
                with contextlib.suppress(Exception):
                    self.flush_part()
                last = time.monotonic()

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
            if cut == 0:
                return
            part = f"{self.target_url}.{self._session}.{self._seq:06d}.part"
            self._fs.pipe_file(part, data[:cut])
            self._seq += 1
            self._sent += cut

    def _parts(self) -> list[str]:
        parts = range(self._first, self._seq)
        return [f"{self.target_url}.{self._session}.{n:06d}.part" for n in parts]

    def _kept(self, path: Path, exc: BaseException) -> CassetteStorageError:
        """The error for a store that failed: ``path`` (what was recorded) stays on disk."""
        kept = keep(path)
        fix = (
            f"what this run recorded is kept in {kept}; {CHECK}, then copy that file "
            f"to {self._shown}"
        )
        return failed("cannot upload", self._shown, exc, fix, kept=kept)

    def close(self) -> None:
        """Upload the whole shard, then delete the parts (and, in record mode, what the
        recording replaces). Raises :class:`~cassette.errors.CassetteStorageError`, naming
        the local file that keeps the recording, when the store cannot be written."""
        try:
            self._upload()
        finally:
            _release(self._claim)

    def _upload(self) -> None:
        self._stop.set()
        self._thread.join()
        self._local.close()
        if not self._spool.exists():  # append mode, and no call was made: no shard
            return
        data = self._spool.read_bytes()
        target = self._free_target()
        try:
            self._fs.pipe_file(target, gzip.compress(data) if target.endswith(".gz") else data)
        except Exception as exc:  # OSError, or a storage library's own
            raise self._kept(self._spool, exc) from exc
        gone = [p for p in [*self._replaced, *self._parts()] if p != self.target_url]
        if gone:
            try:
                self._fs.rm(gone)
            except Exception as exc:  # as above
                left = ", ".join(map(self._fs.unstrip_protocol, gone))
                fix = f"the recording is uploaded; delete what it replaces: {left}"
                raise failed("cannot delete objects next to", self._shown, exc, fix) from exc

    def _free_target(self) -> str:
        """Where the whole shard goes: its object, unless another process wrote that
        object since this one listed it (two processes that share a shard name): then,
        in a directory, an object of this session's own (readers take every shard);
        for a single object, nowhere (:class:`CassetteError` names the local copy)."""
        try:
            now = self._fs.info(self.target_url).get("size")
        except FileNotFoundError:
            now = None
        except Exception:  # noqa: BLE001 - cannot tell: as before, the shard's object
            return self.target_url
        if now == self._found_size:
            return self.target_url
        if self._directory:
            stem, dot, ext = self._name.partition(".")
            return f"{self.target_url.rsplit('/', 1)[0]}/{stem}.{self._session}{dot}{ext}"
        kept = keep(self._spool)
        raise CassetteError(
            f"{self._shown} was written by another process while this one recorded into it "
            f"(two writers of one object); what this one recorded is kept in {kept}: "
            f"merge it with `cassette merge`, then upload the result"
        )

    def abort(self, exc: BaseException | None) -> None:
        """Stop; what was recorded stays as parts (readers include them), or, if the store
        cannot be written, in a local file that ``exc`` gains a note about (raised when
        ``exc`` is None)."""
        try:
            self._stop.set()
            self._thread.join()
            self._local.abort(None)
            self._grow = self._local.side or self._spool
            try:
                self.flush_part()
            except Exception as err:  # as above
                kept = self._kept(self._grow, err)
                if exc is None:
                    raise kept from err
                note = f"cassette: {kept}"
            else:
                note = f"cassette: what this run recorded is in the parts of {self._shown}"
        finally:
            _release(self._claim)
        if exc is not None:
            setattr(exc, "__notes__", [*getattr(exc, "__notes__", []), note])  # noqa: B010
