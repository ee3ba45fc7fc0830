"""Cassettes at any fsspec URL (``s3://bucket/runs/a/``, ``gs://...``, ``memory://...``).

Object stores have no append, so a URL is read and written through local copies:

* reading lists the cassette once (its shard objects and any part objects) and fetches
  them in parallel (``fs.cat`` of all paths) into a private temporary directory, which
  the local readers then use (:func:`materialize`);
* writing goes to a local spool file, whose completed lines a background thread uploads
  as numbered part objects ``<shard>.<session>.<seq>.part`` every
  :data:`PART_SECONDS` or :data:`PART_BYTES`; a clean close uploads the whole shard
  object and deletes the parts (:class:`RemoteSink`). A worker killed with SIGKILL
  loses only the lines not yet in a part; readers append a shard's parts to it.

``file://`` URLs are plain local paths. fsspec (and s3fs for ``s3://``) is the
``cloud`` extra.
"""

from __future__ import annotations

import atexit
import gzip
import os
import re
import secrets
import shutil
import tempfile
import threading
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from .errors import CassetteError
from .redact import Redactor
from .sink import Sink
from .store import shard_name

__all__ = [
    "PART_BYTES",
    "PART_SECONDS",
    "RemoteSink",
    "is_url",
    "listing",
    "local_or_url",
    "materialize",
    "private_dir",
    "remote_exists",
    "upload",
]

PART_SECONDS = float(os.environ.get("CASSETTE_PART_SECONDS", "2"))
PART_BYTES = int(os.environ.get("CASSETTE_PART_BYTES", str(1 << 20)))
INSTALL_HINT = "pip install 'rollout-cassette[cloud]'"
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_SHARD_SUFFIXES = (".jsonl", ".jsonl.gz", ".ndjson", ".ndjson.gz")
_PART = re.compile(r"^(?P<shard>.+)\.(?P<session>[0-9a-f]{12})\.(?P<seq>\d{6})\.part$")
_TEMP: list[str] = []


def is_url(path: object) -> bool:
    """True for ``scheme://...`` other than ``file://`` (a local path)."""
    return isinstance(path, str) and bool(_URL.match(path)) and not path.startswith("file://")


def local_or_url(path: str | os.PathLike[str]) -> str | Path:
    """A ``file://`` URL as its local path; other URLs as they are; paths as Paths."""
    text = os.fspath(path)
    if text.startswith("file://"):
        return Path(text[len("file://") :])
    return text if is_url(text) else Path(text)


def filesystem(url: str) -> tuple[Any, str]:
    """(fsspec filesystem, path within it) for ``url``; a one-line hint without fsspec."""
    try:
        from fsspec.core import url_to_fs  # type: ignore[import-untyped, import-not-found, unused-ignore]
    except ImportError:
        raise CassetteError(f"{url} is a URL and reading it needs fsspec: {INSTALL_HINT}") from None
    try:
        fs, root = url_to_fs(url)
    except (ImportError, ValueError) as exc:
        raise CassetteError(f"cannot open {url} ({exc}); {INSTALL_HINT}") from None
    return fs, str(root).rstrip("/")


def _remove_private_dirs() -> None:
    for path in _TEMP:
        shutil.rmtree(path, ignore_errors=True)


def private_dir() -> Path:
    path = tempfile.mkdtemp(prefix="cassette-url-")
    if not _TEMP:
        atexit.register(_remove_private_dirs)
    _TEMP.append(path)
    return Path(path)


@dataclass
class _Shard:
    name: str
    whole: str | None = None  # the compacted object's path
    sessions: dict[str, list[tuple[int, str]]] = field(default_factory=dict)


@dataclass
class Listing:
    """What one listing of a cassette URL found: each shard's object and parts."""

    url: str
    fs: Any
    root: str
    directory: bool
    shards: dict[str, _Shard]
    sizes: dict[str, int] = field(default_factory=dict)

    def paths(self) -> list[str]:
        out = []
        for shard in self.shards.values():
            if shard.whole is not None:
                out.append(shard.whole)
            for parts in shard.sessions.values():
                out.extend(p for _, p in sorted(parts))
        return out


def listing(url: str) -> Listing:
    """One listing of ``url``: a directory (trailing ``/`` or a prefix holding objects) or
    one object, with the part objects of writers that have not closed yet."""
    fs, root = filesystem(url)
    directory = url.endswith("/")
    if not directory:
        try:
            directory = bool(fs.isdir(root))
        except OSError:
            directory = False
    parent = root if directory else root.rsplit("/", 1)[0] if "/" in root else root
    fs.invalidate_cache(parent)  # other processes write here: list afresh
    try:
        info = fs.find(parent, maxdepth=1, detail=True)
    except (FileNotFoundError, OSError):
        info = {}
    names = [k for k, v in info.items() if v.get("type") != "directory"]
    sizes = {str(k): int(info[k].get("size") or 0) for k in names}
    shards: dict[str, _Shard] = {}
    base = root.rsplit("/", 1)[-1]
    for full in names:
        name = str(full).rstrip("/").rsplit("/", 1)[-1]
        m = _PART.match(name)
        shard = m.group("shard") if m else name
        if not directory and shard != base:
            continue
        if not m and not (shard.endswith(_SHARD_SUFFIXES) or not directory):
            continue
        entry = shards.setdefault(shard, _Shard(shard))
        if m:
            entry.sessions.setdefault(m.group("session"), []).append((int(m.group("seq")), full))
        else:
            entry.whole = str(full)
    return Listing(url, fs, root, directory, shards, sizes)


def remote_exists(found: Listing) -> bool:
    """Whether the listing holds a recording (a non-empty object, or parts)."""
    for shard in found.shards.values():
        if shard.sessions:
            return True
        if shard.whole is not None and found.sizes.get(shard.whole, 1):
            return True
    return False


def _plain(data: bytes) -> bytes:
    if data[:2] != b"\x1f\x8b":
        return data
    out, dec = [], zlib.decompressobj(wbits=31)
    while data:
        out.append(dec.decompress(data))
        data = dec.unused_data if dec.eof else b""
        if dec.eof:
            dec = zlib.decompressobj(wbits=31)
    return b"".join(out) + dec.flush()


def shard_bytes(found: Listing, name: str, blobs: dict[str, bytes]) -> bytes:
    """A shard's lines: its object (decompressed), then each unclosed session's parts."""
    shard = found.shards[name]
    data = _plain(blobs[shard.whole]) if shard.whole is not None else b""
    if data and not data.endswith(b"\n"):
        data += b"\n"
    for _session, parts in sorted(shard.sessions.items(), key=lambda kv: min(kv[1])[1]):
        data += b"".join(blobs[p] for _, p in sorted(parts))
    return data


def fetch_all(found: Listing) -> dict[str, bytes]:
    """Every object of the listing, read in parallel (one ``cat`` of all paths)."""
    paths = found.paths()
    if not paths:
        return {}
    got = found.fs.cat(paths, on_error="raise")
    return {str(k): v for k, v in got.items()} if isinstance(got, dict) else {paths[0]: got}


def materialize(url: str | Listing) -> Path:
    """A private local copy of the cassette at ``url`` (a file, or a directory of shards;
    parts of unclosed writers appended to their shard). Missing: a path that does not
    exist, so callers report it as they would a local one."""
    found = listing(url) if isinstance(url, str) else url
    local = private_dir()
    blobs = fetch_all(found)
    if found.directory:
        target = local / (found.root.rsplit("/", 1)[-1] or "cassette")
        target.mkdir()
        for name in found.shards:
            plain = name[:-3] if name.endswith(".gz") else name
            (target / plain).write_bytes(shard_bytes(found, name, blobs))
        return target
    name = found.root.rsplit("/", 1)[-1]
    target = local / (name[:-3] if name.endswith(".gz") else name)
    if name in found.shards:
        target.write_bytes(shard_bytes(found, name, blobs))
    return target


def upload(local: Path, url: str) -> None:
    """Copy a local file, or a directory's shard files, to ``url`` (objects replaced)."""
    fs, root = filesystem(url)
    if local.is_dir():
        fs.pipe(
            {f"{root}/{p.name}": p.read_bytes() for p in sorted(local.iterdir()) if p.is_file()}
        )
    else:
        data = local.read_bytes()
        fs.pipe_file(
            root, gzip.compress(data) if root.endswith(".gz") and data[:2] != b"\x1f\x8b" else data
        )


def _paths_of(shard: _Shard) -> list[str]:
    return ([shard.whole] if shard.whole else []) + [
        p for parts in shard.sessions.values() for _, p in sorted(parts)
    ]


def _heads(found: Listing) -> dict[str, dict[str, Any]]:
    """Each shard's first line (its header), from the first 64 KiB of its first object."""
    firsts = {n: _paths_of(s)[0] for n, s in found.shards.items() if _paths_of(s)}
    if not firsts:
        return {}
    got = found.fs.cat(list(firsts.values()), start=0, end=1 << 16, on_error="omit")
    got = got if isinstance(got, dict) else {next(iter(firsts.values())): got}
    out = {}
    for name, path in firsts.items():
        data = got.get(path)
        if data is None:
            continue
        if data[:2] == b"\x1f\x8b":
            data = zlib.decompressobj(wbits=31).decompress(data)
        try:
            obj = orjson.loads(data.split(b"\n", 1)[0])
        except orjson.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            out[name] = obj
    return out


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
        self._name = name
        self._session = secrets.token_hex(6)
        self._seq = 0
        self._sent = 0
        self._spool_dir = private_dir()
        spool = self._spool_dir / (name[:-3] if name.endswith(".gz") else name)
        run = os.environ.get("CASSETTE_RUN")
        own = found.shards.get(name)
        own_paths = _paths_of(own) if own is not None else []
        keep: set[str] = set()
        if record and directory and run:  # the shards of this run's other workers stay
            heads = _heads(found)
            for shard in found.shards.values():
                if heads.get(shard.name, {}).get("meta", {}).get("run") == run:
                    keep.update(_paths_of(shard))
        # append mode, or a worker of this run that opens its shard again: continue it
        cont = own is not None and (not record or bool(set(own_paths) & keep))
        if cont:
            only = Listing(url, found.fs, found.root, directory, {name: own})  # type: ignore[dict-item]
            spool.write_bytes(shard_bytes(only, name, fetch_all(only)))
            self._sent = spool.stat().st_size
            self._replaced = own_paths
            record = False
        elif record:
            self._replaced = [
                p for s in found.shards.values() for p in _paths_of(s) if p not in keep
            ]
        else:
            self._replaced = []
        if record and directory and run:
            meta.setdefault("run", run)
        self._local = Sink(
            spool, directory=False, record=record, redactor=redactor, meta=meta, fsync=fsync
        )
        self._grow = self._local.side or spool
        self._spool = spool
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
        return [f"{self.target_url}.{self._session}.{n:06d}.part" for n in range(self._seq)]

    def close(self) -> None:
        """Upload the whole shard, then delete the parts (and, in record mode, what the
        recording replaces)."""
        self._stop.set()
        self._thread.join()
        self._local.close()
        data = self._spool.read_bytes()
        self._fs.pipe_file(
            self.target_url, gzip.compress(data) if self.target_url.endswith(".gz") else data
        )
        gone = [p for p in [*self._replaced, *self._parts()] if p != self.target_url]
        if gone:
            self._fs.rm(gone)

    def abort(self, exc: BaseException | None) -> None:
        """Stop; what was recorded stays as parts (readers include them)."""
        self._stop.set()
        self._thread.join()
        self._local.abort(None)
        self._grow = self._local.side or self._spool
        self.flush_part()
        if exc is not None:
            note = f"cassette: what this run recorded is in the parts of {self.target_url}"
            setattr(exc, "__notes__", [*getattr(exc, "__notes__", []), note])  # noqa: B010
