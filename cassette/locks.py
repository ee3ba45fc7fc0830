"""The lock a ``record`` run holds on its cassette file for its whole life: one recording
of a file at a time, so that no process's calls are lost to another's rename."""

from __future__ import annotations

import contextlib
import os
import weakref
from pathlib import Path

from .errors import CassetteError, CassetteModeError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["RecordLock"]

_FLAGS = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


class RecordLock:
    """An exclusive ``flock`` on ``<target>.lock``, taken at once or refused with
    :class:`CassetteModeError`; the lock file is removed on :meth:`release` (and the lock
    dropped by the kernel if the process dies)."""

    def __init__(self, target: Path) -> None:
        self.path = target.with_name(target.name + ".lock")
        self._fd: int | None = None
        if fcntl is None:  # pragma: no cover - Windows: no advisory locks
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        while True:
            try:
                fd = os.open(self.path, _FLAGS, 0o600)
            except OSError as exc:
                raise CassetteError(
                    f"cannot create the lock file {self.path}: {exc}; remove it if it is a "
                    "link, or check the directory's rights"
                ) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.read(fd, 32).decode(errors="replace").strip() or "?"
                os.close(fd)
                raise CassetteModeError(
                    f"{target} is being recorded by another process (pid {holder}), and one "
                    "file has one recorder at a time: give each process its own shard (a "
                    "directory path ending in '/'), or use mode='append', which any number "
                    "of processes may share"
                ) from None
            # the holder before us may have removed the file after we opened it: retry
            with contextlib.suppress(FileNotFoundError):
                now = os.stat(self.path, follow_symlinks=False)
                held = os.fstat(fd)
                if (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino):
                    break
            os.close(fd)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd
        self._finalizer = weakref.finalize(self, os.close, fd)

    def release(self) -> None:
        """Remove the lock file and drop the lock (idempotent)."""
        if self._fd is not None:
            self._fd = None
            with contextlib.suppress(OSError):
                self.path.unlink()  # before unlocking: a waiter then sees a new file
            self._finalizer()
