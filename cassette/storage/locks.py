"""The lock a ``record`` run holds on its cassette file: one recording of a file at a time."""

from __future__ import annotations

import contextlib
import errno
import os
import weakref
from pathlib import Path

from ..errors import CassetteError, CassetteModeError
from .store import is_gzip_path
from .writer import identity, is_at, make_parent

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["RecordLock"]

_NO_RIGHTS = "record into a directory you can write to, or change its rights"
_OR_APPEND = ", or use mode='append', which any number of processes may share"
_FLAGS = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


class RecordLock:
    """An exclusive ``flock`` on ``<target>.lock``, taken at once or refused with
    :class:`CassetteModeError`; its file is removed on :meth:`release`."""

    def __init__(self, target: Path) -> None:
        self.path = target.with_name(target.name + ".lock")
        self._fd: int | None = None
        if fcntl is None:  # pragma: no cover - Windows: no advisory locks
            return
        make_parent(target)
        fd = self._take(target)
        while not is_at(self.path, identity(fd)):  # the last holder removed it after our open
            os.close(fd)
            fd = self._take(target)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd
        self._finalizer = weakref.finalize(self, os.close, fd)

    def _take(self, target: Path) -> int:
        try:
            fd = os.open(self.path, _FLAGS, 0o600)
        except OSError as exc:
            fix = "it is a link: remove it" if exc.errno == errno.ELOOP else _NO_RIGHTS
            raise CassetteError(
                f"cannot record {target}: cannot create its lock file {self.path.name} "
                f"({exc.strerror or exc}); {fix}"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise _held(target, fd) from None
        return fd

    def release(self) -> None:
        """Remove the lock file and drop the lock (idempotent)."""
        if self._fd is not None:
            self._fd = None
            with contextlib.suppress(OSError):
                self.path.unlink()  # before unlocking: a waiter then sees a new file
            self._finalizer()


def _held(target: Path, fd: int) -> CassetteModeError:
    holder = os.read(fd, 32).decode(errors="replace").strip() or "?"
    os.close(fd)
    return CassetteModeError(
        f"{target} is being recorded by another process (pid {holder}), and one "
        "file has one recorder at a time: give each process its own shard (a "
        "directory path ending in '/')" + ("" if is_gzip_path(target) else _OR_APPEND)
    )
