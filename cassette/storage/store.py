"""Files around a cassette: the names of shards and side files, the lock a rewrite in
place holds, the side file that replaces a cassette on a clean close (a ``.gz`` one
compressed whole then), and the repair of a last line a crash cut short.

Lines are written by :class:`cassette.storage.writer.Writer` and read by
:func:`cassette.storage.lines.read_records` (both re-exported here).
"""

from __future__ import annotations

import contextlib
import gzip
import os
import re
import secrets
import shutil
import socket
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import orjson

from ..errors import CassetteModeError
from .lines import is_gzip_file
from .lines import read_records as iter_records
from .writer import Writer, create_exclusive, private_mode

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "Writer",
    "header_run",
    "holding",
    "is_gzip_path",
    "iter_records",
    "partial_path",
    "publish",
    "repair_tail",
    "replacing",
    "shard_files",
    "shard_name",
    "stale_shards",
    "written_whole",
]

_SHARD_SUFFIXES = (".jsonl", ".jsonl.gz", ".ndjson", ".ndjson.gz")
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_HELD: set[tuple[int, int]] = set()  # (device, inode) of the files this process holds


def is_gzip_path(path: Path) -> bool:
    return path.name.endswith(".gz")


def written_whole(path: Path) -> bool:
    """Whether ``path`` is a ``.gz`` cassette (by its name, or its bytes if it exists):
    written whole (record, merge, convert), never appended to."""
    return is_gzip_path(path) or (path.is_file() and is_gzip_file(path))


def shard_files(directory: Path) -> list[Path]:
    """The shard files of a cassette directory, in name order (side files excluded)."""
    return sorted(
        p for p in directory.iterdir() if p.is_file() and p.name.endswith(_SHARD_SUFFIXES)
    )


_SHARD = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,199}")


def shard_name() -> str:
    """This process's shard file name: ``$CASSETTE_SHARD`` or ``<host>-<pid>``. A shard
    name is one plain file name: no separator, no leading dot, no ``..``."""
    base = os.environ.get("CASSETTE_SHARD")
    if base is None or base == "":
        base = f"{socket.gethostname()}-{os.getpid()}".replace(os.sep, "_")
    elif not _SHARD.fullmatch(base) or ".." in base:
        raise CassetteModeError(
            f"CASSETTE_SHARD={base!r} is not a plain file name (a shard must stay inside its "
            "directory, where readers look for it): use letters, digits, '_', '-' and '.', "
            "e.g. CASSETTE_SHARD=worker-3"
        )
    return f"{base}.jsonl"


def partial_path(path: Path) -> Path:
    """A new, unpredictable name for the side file ``record`` mode writes before it
    replaces ``path``: ``<name>.<pid>.<random>.partial`` (created with ``O_EXCL``, so an
    earlier side file, or anything planted at a guessed name, is never written to)."""
    return path.with_name(f"{path.name}.{os.getpid()}.{secrets.token_hex(6)}.partial")


@contextlib.contextmanager
def holding(path: Path) -> Iterator[None]:
    """Hold the append lock of the file ``path`` (if it is one) until the block ends, so
    the processes appending to it wait; a writer that waited then follows the file that
    replaced it (see :class:`~cassette.storage.writer.Writer`). Re-entrant in a process."""
    fd = _locked(path)
    if fd is None:  # none (yet), a link, unreadable, held here: nothing to wait for
        yield
        return
    st = os.fstat(fd)
    key = (st.st_dev, st.st_ino)
    _HELD.add(key)
    try:
        yield
    finally:
        _HELD.discard(key)
        os.close(fd)


def _locked(path: Path) -> int | None:
    """A descriptor of the regular file ``path`` holding its lock, taken once it is
    still the file at ``path`` (another rewrite may have replaced it while this one
    waited); None if there is none to lock, or this process holds it already."""
    while True:
        try:
            fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC)
        except OSError:
            return None
        st = os.fstat(fd)
        if fcntl is None or (st.st_dev, st.st_ino) in _HELD or not stat.S_ISREG(st.st_mode):
            os.close(fd)
            return None
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            now = os.stat(path)
        except OSError:
            now = None
        if now is not None and (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino):
            return fd
        os.close(fd)  # replaced meanwhile: lock the new one


@contextlib.contextmanager
def replacing(out: Path, mode: int | None = None) -> Iterator[Writer]:
    """A writer of a new file that replaces ``out`` when the block ends cleanly (a side
    file from :func:`partial_path`, renamed over it); after an exception the side file is
    removed and ``out`` is left as it was. ``mode``: its permission bits (default
    :func:`~cassette.storage.writer.private_mode` of ``out``), set when it is created. Processes
    appending to ``out`` wait until it is replaced (:func:`holding`), then append to the
    new file: none of their lines is lost with the old one."""
    with holding(out), _replacing(out, mode) as writer:
        yield writer


@contextlib.contextmanager
def _replacing(out: Path, mode: int | None) -> Iterator[Writer]:
    side = partial_path(out)
    mode = private_mode(out) if mode is None else mode
    writer = Writer(side, shared=False, exclusive=True, mode=mode)
    try:
        yield writer
        writer.close()
        publish(side, out)
    except BaseException:
        writer.close()
        side.unlink(missing_ok=True)
        raise


def publish(side: Path, target: Path) -> None:
    """Put the finished side file ``side`` in place of ``target``, atomically (a rename);
    for a ``.gz`` target, its lines compressed whole into a second side file first."""
    if not is_gzip_path(target):
        os.replace(side, target)
        return
    packed = partial_path(target)
    fd = create_exclusive(packed, stat.S_IMODE(os.stat(side).st_mode))
    try:
        with open(side, "rb") as src, open(fd, "wb") as raw:
            with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6, mtime=0) as out:
                shutil.copyfileobj(src, out, 1 << 20)
            raw.flush()
            os.fsync(raw.fileno())
        os.replace(packed, target)
    except BaseException:
        packed.unlink(missing_ok=True)
        raise
    side.unlink()


def repair_tail(path: Path) -> bool:
    """Make the plain file ``path`` end on a whole line before appending; True if it
    changed anything: a cut-short last line is cut off, a whole one without its newline
    gains it. Under the file lock (a writer in another process may be mid-line)."""
    if not path.exists() or path.stat().st_size == 0:
        return False
    with open(path, "r+b") as f:
        if fcntl is not None:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        return _repair_plain(f)


def _repair_plain(f: IO[bytes]) -> bool:
    f.seek(0, os.SEEK_END)
    size = f.tell()
    f.seek(max(0, size - 1))
    if f.read(1) == b"\n":
        return False
    pos, start = size, 0  # find the start of the unterminated last line
    while pos > 0:
        step = min(1 << 16, pos)
        pos -= step
        f.seek(pos)
        nl = f.read(step).rfind(b"\n")
        if nl >= 0:
            start = pos + nl + 1
            break
    f.seek(start)
    try:
        orjson.loads(f.read())
    except orjson.JSONDecodeError:
        f.truncate(start)
    else:
        f.seek(0, os.SEEK_END)
        f.write(b"\n")
    return True


def header_run(header: dict[str, Any]) -> Any:
    """The ``meta.run`` of a header line (None where its meta is not an object)."""
    meta = header.get("meta")
    return meta.get("run") if isinstance(meta, dict) else None


def stale_shards(directory: Path, own: Path) -> list[Path]:
    """Shards a record run in ``directory`` replaces on a clean close: those present now,
    except this process's and those of the same ``$CASSETTE_RUN`` (workers of one run)."""
    run = os.environ.get("CASSETTE_RUN")
    stale = []
    for shard in shard_files(directory):
        if shard == own:
            continue
        if run:
            header = next(iter_records(shard), (0, {}))[1]
            if header.get("type") == "header" and header_run(header) == run:
                continue
        stale.append(shard)
    return stale
