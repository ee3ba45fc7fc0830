"""Appending whole lines to a cassette file, across threads and processes (one ``write``
on an ``O_APPEND`` descriptor under a lock and a ``flock``), never through a symbolic link.
A failed write is cut back; a writer follows a file a rewrite in place renamed over its own.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import stat
import threading
from pathlib import Path
from typing import BinaryIO

import orjson

from ..errors import CassetteError, path_error

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "Writer",
    "create_exclusive",
    "end_whole",
    "identity",
    "is_at",
    "make_parent",
    "private_mode",
]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_APPEND = os.O_WRONLY | os.O_CREAT | os.O_APPEND | _NOFOLLOW | _CLOEXEC


def private_mode(target: Path) -> int:
    """Permission bits for a file replacing ``target``: its mode if it is a file, else 0600."""
    try:
        st = os.lstat(target)
    except OSError:
        return 0o600
    return stat.S_IMODE(st.st_mode) if stat.S_ISREG(st.st_mode) else 0o600


def make_parent(path: Path) -> None:
    """Create the directories above ``path`` (or raise a one-line CassettePathError)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise path_error(exc) from exc


def _open(path: Path, flags: int) -> int:
    """Open ``path`` to append (a new file 0600), refusing a symbolic link."""
    try:
        return os.open(path, _APPEND | flags, 0o600)
    except FileExistsError:
        raise CassetteError(
            f"{path} already exists; a new side file is never written through an existing "
            "file or link: remove it and record again"
        ) from None
    except OSError as exc:
        raise _open_error(path, exc) from None


def _open_error(path: Path, exc: OSError) -> CassetteError:
    if os.path.islink(path):
        return CassetteError(
            f"{path} is a symbolic link; cassette never writes through a link (a planted one "
            f"would send the transcript elsewhere): remove it or pass the real path"
        )
    why = exc.strerror or str(exc)  # not the errno and the path again
    return CassetteError(
        f"cannot open {path} for writing ({why}); write it in a directory you can write to, "
        "or change its rights"
    )


def create_exclusive(path: Path, mode: int = 0o600) -> int:
    """Create ``path`` (it must not exist, nor be a link) for appending, with ``mode``."""
    fd = _open(path, os.O_EXCL)
    with contextlib.suppress(OSError):
        os.fchmod(fd, mode)
    return fd


def identity(fd: int) -> tuple[int, int]:
    """(device, inode) of the open file ``fd``."""
    held = os.fstat(fd)
    return held.st_dev, held.st_ino


def is_at(path: Path, held: tuple[int, int], missing: bool = False) -> bool:
    """Whether the file ``held`` (:func:`identity`) is the one at ``path``, never a link;
    ``missing`` if there is none."""
    try:
        now = os.lstat(path)
    except OSError:
        return missing
    return (now.st_dev, now.st_ino) == held


def end_whole(f: BinaryIO) -> bool:
    """Make the file ``f`` (opened ``r+b``, its lock held) end on a whole line: a last line cut
    short (a writer killed mid-write) is cut off, a whole one missing its newline ended."""
    with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        if data[-1:] == b"\n":
            return False
        start = data.rfind(b"\n") + 1
        last = data[start:]
    try:
        orjson.loads(last)
    except orjson.JSONDecodeError:
        f.truncate(start)
    else:
        f.seek(0, os.SEEK_END)
        f.write(b"\n")
    return True


class Writer:
    """Appends whole lines to one file; safe across threads, tasks and processes."""

    def __init__(self, path: Path, *, fsync: bool = False, mode: int | None = None) -> None:
        """``mode``: create a file of this writer's alone (a side file: it must not exist,
        no ``flock``) with these permission bits."""
        self.path = path
        self.fsync = fsync
        self.failed: str | None = None  # why a write failed, if one did
        # the header line: written before the first line if the file is empty then
        self.preamble: bytes | None = None
        self._flock = fcntl is not None and mode is None
        self._lock = threading.Lock()
        make_parent(path)
        self._fd: int | None = _open(path, 0) if mode is None else create_exclusive(path, mode)
        self._held = identity(self._fd)
        self._end = -1  # the file's size after this writer's last write (shared files)

    @property
    def closed(self) -> bool:
        return self._fd is None

    def write(self, line: bytes) -> None:
        """Write one line (without its newline); a failed write is cut back and raises."""
        with self._lock:
            fd = self._fd if self._fd is not None else self._open_fd()
            if not self._flock:
                self._put(fd, line + b"\n")
                return
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                fd = self._follow()
                self._mend(fd)
                self._put(fd, line + b"\n")
                self._end = os.lseek(fd, 0, os.SEEK_CUR)
            finally:
                if self._fd is not None:
                    fcntl.flock(self._fd, fcntl.LOCK_UN)

    def _open_fd(self) -> int:
        if self._fd is not None:
            return self._fd
        if self.failed is not None:
            raise CassetteError(
                f"cannot write to {self.path}: an earlier write failed ({self.failed}); "
                "free space or raise the file size limit and record again"
            )
        raise CassetteError(f"{self.path}: writer is closed; open the cassette again")

    def _mend(self, fd: int) -> None:
        """Under the flock: where another writer wrote since this one, the file is made to
        end on a whole line (one killed mid-write leaves a line cut short)."""
        size = os.fstat(fd).st_size
        if size != self._end and size:
            with os.fdopen(os.open(self.path, os.O_RDWR | _NOFOLLOW | _CLOEXEC), "r+b") as f:
                end_whole(f)

    def _follow(self) -> int:
        """The locked descriptor of the file now at the path (a rewrite may have replaced it)."""
        while self._fd is not None and not is_at(self.path, self._held, missing=True):
            new = _open(self.path, 0)
            os.close(self._fd)  # (and its lock)
            self._fd, self._held = new, identity(new)
            fcntl.flock(new, fcntl.LOCK_EX)
        return self._open_fd()

    def _put(self, fd: int, data: bytes) -> None:
        if self.preamble is not None:
            if os.fstat(fd).st_size == 0:
                data = self.preamble + b"\n" + data
            self.preamble = None
        done = 0
        try:
            done = os.write(fd, data)
            while done < len(data):  # a short write: a full disk, a size limit, a signal
                done += os.write(fd, memoryview(data)[done:])
            if self.fsync:
                os.fsync(fd)
        except OSError as exc:
            raise self._failed(fd, done, exc) from None

    def _failed(self, fd: int, done: int, exc: OSError) -> CassetteError:
        """Cut off the ``done`` bytes this write added (under the lock) and describe it."""
        try:
            os.ftruncate(fd, os.fstat(fd).st_size - done)
        except OSError as cut:
            self.failed = f"{exc}; cutting the file back also failed ({cut})"
            self._fd = None
            with contextlib.suppress(OSError):
                os.close(fd)
            state = "its last line may be cut short (readers skip it with a warning)"
        else:
            self.failed = str(exc)
            state = "the line was not written and the file ends on its last whole line"
        return CassetteError(
            f"cannot write to {self.path}: {self.failed}; {state}: free space or raise the "
            "file size limit and record again"
        )

    def close(self) -> None:
        with self._lock:
            fd, self._fd = self._fd, None
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.fsync(fd)
                os.close(fd)
