"""Files around a cassette: shard and side file names, the lock of a rewrite in place,
publishing a side file, repairing a last line a crash cut short."""

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
from typing import Any

from ..errors import CassetteModeError
from .lines import is_gzip_file
from .lines import read_records as iter_records
from .writer import Writer, create_exclusive, end_whole, identity, is_at, private_mode

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "SHARD_SUFFIXES",
    "Writer",
    "continues_run",
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

SHARD_SUFFIXES = (".jsonl", ".jsonl.gz", ".ndjson", ".ndjson.gz")
_SHARD = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,199}")
_READ = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_HELD: set[tuple[int, int]] = set()  # (device, inode) of the files this process holds


def is_gzip_path(path: Path) -> bool:
    return path.name.endswith(".gz")


def written_whole(path: Path) -> bool:
    """Whether ``path`` is a ``.gz`` cassette (by name or bytes): never appended to."""
    return is_gzip_path(path) or (path.is_file() and is_gzip_file(path))


def shard_files(directory: Path) -> list[Path]:
    """The shard files of a cassette directory, in name order."""
    return sorted(p for p in directory.iterdir() if p.is_file() and p.name.endswith(SHARD_SUFFIXES))


def shard_name() -> str:
    """This process's shard file name: ``$CASSETTE_SHARD`` (a plain name) or ``<host>-<pid>``."""
    base = os.environ.get("CASSETTE_SHARD")
    if not base:
        base = f"{socket.gethostname()}-{os.getpid()}".replace(os.sep, "_")
    elif not _SHARD.fullmatch(base) or ".." in base:
        raise CassetteModeError(
            f"CASSETTE_SHARD={base!r} is not a plain file name (a shard must stay inside its "
            "directory, where readers look for it): use letters, digits, '_', '-' and '.', "
            "e.g. CASSETTE_SHARD=worker-3"
        )
    return f"{base}.jsonl"


def partial_path(path: Path) -> Path:
    """A new, unpredictable side file name for ``path``: ``<name>.<pid>.<random>.partial``."""
    return path.with_name(f"{path.name}.{os.getpid()}.{secrets.token_hex(6)}.partial")


@contextlib.contextmanager
def holding(path: Path) -> Iterator[None]:
    """Hold the append lock of ``path``: appenders wait, then follow its replacement."""
    fd = _locked(path)
    if fd is None:  # none (yet), a link, unreadable, held here: nothing to wait for
        yield
        return
    key = identity(fd)
    _HELD.add(key)
    try:
        yield
    finally:
        _HELD.discard(key)
        os.close(fd)


def _locked(path: Path) -> int | None:
    """A locked descriptor of the regular file still at ``path``; None if none, or held here."""
    while True:
        try:
            fd = os.open(path, _READ)
        except OSError:
            return None
        st = os.fstat(fd)
        if fcntl is None or (st.st_dev, st.st_ino) in _HELD or not stat.S_ISREG(st.st_mode):
            os.close(fd)
            return None
        fcntl.flock(fd, fcntl.LOCK_EX)
        if is_at(path, (st.st_dev, st.st_ino)):
            return fd
        os.close(fd)  # replaced meanwhile: lock the new one


@contextlib.contextmanager
def replacing(out: Path, mode: int | None = None) -> Iterator[Writer]:
    """A writer of a side file that replaces ``out`` when the block ends cleanly."""
    side = partial_path(out)
    with holding(out):
        writer = Writer(side, mode=private_mode(out) if mode is None else mode)
        try:
            yield writer
            writer.close()
            publish(side, out)
        except BaseException:
            writer.close()
            side.unlink(missing_ok=True)
            raise


def publish(side: Path, target: Path) -> None:
    """Rename the finished ``side`` over ``target`` (for a ``.gz``, compressed first)."""
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
    """Make ``path`` end on a whole line (under its lock); True if it changed anything."""
    if not path.exists() or path.stat().st_size == 0:
        return False
    with open(path, "r+b") as f:
        if fcntl is not None:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        return end_whole(f)


def header_run(header: dict[str, Any]) -> Any:
    """The ``meta.run`` of a header line (None where its meta is not an object)."""
    meta = header.get("meta")
    return meta.get("run") if isinstance(meta, dict) else None


def stale_shards(directory: Path, own: Path) -> list[Path]:
    """Shards a record run replaces on close: all but its own and its ``$CASSETTE_RUN``'s."""
    run = os.environ.get("CASSETTE_RUN")
    return [s for s in shard_files(directory) if s != own and not (run and _of_run(s, run))]


def continues_run(shard: Path) -> bool:
    """Whether ``shard`` is one this ``$CASSETTE_RUN`` started."""
    run = os.environ.get("CASSETTE_RUN")
    return bool(run) and shard.is_file() and _of_run(shard, str(run))


def _of_run(shard: Path, run: str) -> bool:
    header = next(iter_records(shard), (0, {}))[1]
    return header.get("type") == "header" and header_run(header) == run
