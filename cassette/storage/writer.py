"""Appending whole lines to a cassette file: across threads and processes, through kills
and full disks, never through a planted symbolic link.

A plain line is written by one ``write`` on an ``O_APPEND`` descriptor under a thread
lock and an advisory file lock (``flock``). A write that fails (a full disk, a file size
limit) is cut back to where it began, so the file always ends on a whole line.

A ``.gz`` file is a sequence of gzip members. A writer keeps one member open across its
lines (sync-flushed per line, so compression spans lines), and it may leave the member
open between writes only because ``<file>.open`` (the *member record*: start, end, CRC
and size of the open member, written under the lock after every line) lets any other
writer, or a later one after a kill, close that member correctly before it appends its
own. Under the lock the file therefore always reads as whole members followed by at
most one open member, which ends on a whole line. The member record is
:mod:`cassette.storage.gzmember`'s.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import stat
import threading
import zlib
from pathlib import Path

from ..errors import CassetteError, path_error
from .gzmember import (
    close_open_member,
    last_member,
    open_by_live_writer,
    open_record,
    put_record,
    record_path,
    trailer,
    write_all,
)

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "Writer",
    "create_exclusive",
    "make_parent",
    "open_by_live_writer",
    "private_mode",
    "repair_gzip_tail",
]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
# a gzip member header: magic, deflate, no flags, mtime 0, no extra flags, OS unknown
_GZ_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"


def private_mode(target: Path) -> int:
    """Permission bits for a new file that holds ``target``'s transcript: the mode of
    ``target`` if it is a regular file (re-recording keeps 0600 or 0640), else 0600."""
    try:
        st = os.lstat(target)
    except OSError:
        return 0o600
    return stat.S_IMODE(st.st_mode) if stat.S_ISREG(st.st_mode) else 0o600


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
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | _NOFOLLOW | _CLOEXEC
    try:
        fd = os.open(path, flags, 0o600)
    except FileExistsError:
        raise CassetteError(
            f"{path} already exists; a new side file is never written through an existing "
            "file or link: remove it and record again"
        ) from None
    except OSError as exc:
        raise _open_error(path, exc) from None
    with contextlib.suppress(OSError):
        os.fchmod(fd, mode)
    return fd


def _open_append(path: Path) -> int:
    """Open (or create, 0600) ``path`` for appending, refusing a symbolic link."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | _NOFOLLOW | _CLOEXEC
    try:
        return os.open(path, flags, 0o600)
    except OSError as exc:
        raise _open_error(path, exc) from None


def _identity(fd: int) -> tuple[int, int]:
    held = os.fstat(fd)
    return held.st_ino, held.st_dev


def _names(path: Path, fd: int, held: tuple[int, int] | None = None) -> bool:
    """Whether ``fd`` (whose (inode, device) is ``held``, if known) is the file at
    ``path`` (or ``path`` names none: removed)."""
    try:
        now = os.stat(path)
    except OSError:
        return True
    return (now.st_ino, now.st_dev) == (held or _identity(fd))


def _follow(path: Path, fd: int) -> tuple[int, bool]:
    """(``fd``, False) if it (locked) is the file at ``path``; else (a locked descriptor
    of the file at ``path`` now, True), ``fd`` closed. A rewrite in place (``cassette
    redact``, ``merge``, ``import``) renames a new file over the old one, holding the old
    one's lock from its read to its rename: what is written to the old file after that is
    lost with it, and its member record is not the new file's. If the new one cannot be
    opened (a planted link) the error is raised with ``fd`` open and unlocked."""
    now = fd
    while not _names(path, now):
        try:
            new = _open_append(path)
        except BaseException:
            if now != fd:
                os.close(now)  # (and its lock)
            else:
                fcntl.flock(fd, fcntl.LOCK_UN)
            raise
        if now != fd:
            os.close(now)
        else:
            fcntl.flock(fd, fcntl.LOCK_UN)
        now = new
        fcntl.flock(now, fcntl.LOCK_EX)
    if now == fd:
        return fd, False
    os.close(fd)
    return now, True


def repair_gzip_tail(path: Path) -> bool:
    """Make the gzip file ``path`` end on a whole line in closed members, in place and
    under the file lock (never a rename: another process may hold it open)."""
    fd = _open_append(path)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
            fd = _follow(path, fd)[0]  # (a file rewritten since: its member record is not ours)
        changed = close_open_member(path, fd)
        start, data, closed = last_member(path)
        if closed and (not data or data.endswith(b"\n")):
            return changed
        os.ftruncate(fd, start)
        keep = data[: data.rfind(b"\n") + 1]
        if keep:
            write_all(fd, gzip.compress(keep, mtime=0))
        return True
    finally:
        os.close(fd)  # releases the lock


# --- the writer ----------------------------------------------------------------------------


class _Member:
    """This writer's open gzip member: where it starts and ends, its CRC and size."""

    def __init__(self, start: int) -> None:
        self.start = self.end = start
        self.crc = 0
        self.size = 0
        self.broken = True  # until its first line is whole; after a failed write: close
        # it at ``end``, never continue it
        self.comp = zlib.compressobj(6, zlib.DEFLATED, -15)
        self.record: int | None = None  # the member record's descriptor (a shared file)
        self.stat: os.stat_result | None = None  # the file's, for the record

    def drop(self) -> None:
        if self.record is not None:
            os.close(self.record)
            self.record = None


def make_parent(path: Path) -> None:
    """Create the directories above ``path``; one that cannot be is a
    :class:`~cassette.errors.CassettePathError` naming it (a read-only place, a file where
    a directory goes), not the OS error: ``cassette.open`` let that out."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise path_error(exc) from exc


class Writer:
    """Appends whole lines to one file; safe across threads, tasks and processes."""

    def __init__(
        self,
        path: Path,
        *,
        gz: bool | None = None,
        fsync: bool = False,
        shared: bool = True,
        exclusive: bool = False,
        mode: int = 0o600,
    ) -> None:
        """``shared=False``: the file is this writer's alone (a side file), so the
        cross-process lock is skipped. ``exclusive``: create the file, which must not
        exist (``O_EXCL | O_NOFOLLOW``), with permission bits ``mode``; otherwise an
        existing file is appended to and a new one is created 0600."""
        self.path = path
        self.gz = path.name.endswith(".gz") if gz is None else gz
        self.fsync = fsync
        self.shared = shared
        self.failed: str | None = None  # why a write failed, if one did
        # the header line: written before this writer's first line if the file is empty
        # then (decided under the lock, so of several processes one writes it)
        self.preamble: bytes | None = None
        self._flock = fcntl is not None and shared
        self._lock = threading.Lock()
        self._member: _Member | None = None
        self._begin = 0  # where the line being written begins
        self._size: int | None = None  # the file's size (shared=False, after a write)
        make_parent(path)
        self._fd: int | None = create_exclusive(path, mode) if exclusive else _open_append(path)
        self._held = _identity(self._fd) if self._flock else None  # (inode, device) of _fd

    @property
    def closed(self) -> bool:
        return self._fd is None

    def write(self, line: bytes) -> None:
        """Write one line (without its newline) and flush it to the OS; on failure the
        file is cut back to its last whole line and :class:`CassetteError` is raised."""
        data = line + b"\n"
        with self._lock:
            fd = self._fd
            if fd is None:
                if self.failed is not None:
                    raise CassetteError(
                        f"cannot write to {self.path}: an earlier write failed ({self.failed}); "
                        "free space or raise the file size limit and record again"
                    )
                raise CassetteError(f"{self.path}: writer is closed; open the cassette again")
            if self._flock:
                fcntl.flock(fd, fcntl.LOCK_EX)
                fd = self._current(fd)
            try:
                # a file of this writer's alone: its size is known, no fstat a line
                known = self._size
                self._begin = known if known is not None else os.fstat(fd).st_size
                self._size = None  # until this line is whole in the file
                if self.preamble is not None:
                    if self._begin == 0:
                        data = self.preamble + b"\n" + data
                    self.preamble = None
                try:
                    if self.gz:
                        self._write_gz(fd, data, self._begin)
                    else:
                        write_all(fd, data)
                    if not self.shared:
                        member = self._member
                        self._size = member.end if member is not None else self._begin + len(data)
                    if self.fsync:
                        os.fsync(fd)
                except OSError as exc:
                    raise self._failed(fd, self._begin, exc) from None
            finally:
                if self._flock:
                    fcntl.flock(fd, fcntl.LOCK_UN)

    def _current(self, fd: int) -> int:
        """``fd`` (locked), or the file that replaced it at the path (see :func:`_follow`),
        whose end this writer's open gzip member is not."""
        if _names(self.path, fd, self._held):  # (one stat a line: fd's own is known)
            return fd
        fd, moved = _follow(self.path, fd)
        if moved:
            self._fd = fd
            self._held = _identity(fd)
            if self._member is not None:
                self._member.drop()
                self._member = None
        return fd

    def _write_gz(self, fd: int, data: bytes, size: int) -> None:
        member = self._member
        head = b""
        if member is None or member.end != size or member.broken:
            # the tail is not a member this writer can go on with: close whatever is open
            if member is not None:
                member.drop()
            self._member = None
            if self._close_tail(fd, member, size):
                size = self._begin = os.fstat(fd).st_size
            member = self._member = _Member(size)
            head = _GZ_HEADER
            if self.shared:  # recorded first: a kill mid-header leaves a member to remove
                member.stat = os.fstat(fd)
                member.record = open_record(self.path)
                put_record(member.record, member.stat, size, size, 0, 0)
        # until the line is whole in the file, the compressor is ahead of it: a failure
        # leaves the member broken (closed at its last whole line, never continued)
        member.broken = True
        body = member.comp.compress(data) + member.comp.flush(zlib.Z_SYNC_FLUSH)
        write_all(fd, head + body)
        end = size + len(head) + len(body)
        crc = zlib.crc32(data, member.crc)
        if member.record is not None and member.stat is not None:
            put_record(member.record, member.stat, member.start, end, crc, member.size + len(data))
        member.end, member.crc, member.size = end, crc, member.size + len(data)
        member.broken = False

    def _close_tail(self, fd: int, member: _Member | None, size: int) -> bool:
        """Close the open member at the end of the file (this writer's or, in a shared
        file, another's); True if the file changed."""
        if self.shared:
            return close_open_member(self.path, fd)
        if member is None or member.end != size or member.end == member.start:
            return False
        write_all(fd, trailer(member.crc, member.size))
        return True

    def _failed(self, fd: int, start: int, exc: OSError) -> CassetteError:
        """Cut the file back to ``start`` (where this write began) and describe it."""
        try:
            os.ftruncate(fd, start)
        except OSError as cut:
            self.failed = f"{exc}; cutting the file back also failed ({cut})"
            self._fd = None
            with contextlib.suppress(OSError):
                os.close(fd)
            return CassetteError(
                f"cannot write to {self.path}: {self.failed}; its last line may be cut short "
                "(readers skip it with a warning, `cassette validate` checks the rest): free "
                "space or raise the file size limit and record again"
            )
        self.failed = str(exc)
        return CassetteError(
            f"cannot write to {self.path}: {exc}; the line was not written and the file ends "
            "on its last whole line: free space or raise the file size limit and record again"
        )

    def sync(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.fsync(self._fd)

    def close(self) -> None:
        """Close this writer's gzip member (if the file still ends with it) and the file."""
        with self._lock:
            fd, self._fd = self._fd, None
            if fd is None:
                return
            try:
                if self.gz and self._member is not None:
                    self._finish(fd, self._member)
                with contextlib.suppress(OSError):
                    os.fsync(fd)
            finally:
                if self._member is not None:
                    self._member.drop()
                self._member = None
                os.close(fd)

    def _finish(self, fd: int, member: _Member) -> None:
        if self._flock:
            fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            if os.fstat(fd).st_size != member.end:
                return  # another writer closed it already
            if self.shared and not _names(self.path, fd):
                return  # rewritten since (its lines are in the new file): the member
                # record is another writer's now
            if member.end != member.start:
                try:
                    write_all(fd, trailer(member.crc, member.size))
                except OSError:
                    # a full disk: the member stays open, ending on a whole line; the
                    # member record (shared) or a reader's warning (a side file) covers it
                    os.ftruncate(fd, member.end)
                    return
            if self.shared:
                record_path(self.path).unlink(missing_ok=True)
        finally:
            if self._flock:
                fcntl.flock(fd, fcntl.LOCK_UN)

    def __repr__(self) -> str:
        return f"<Writer {str(self.path)!r} gz={self.gz} shared={self.shared}>"
