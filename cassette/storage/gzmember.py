"""The member record of a shared ``.gz`` cassette file (``<file>.open``): where the open
gzip member of a writer starts and ends, its CRC and size, and the writer's pid; what
any writer reads to close that member correctly (after a kill too) before it appends.
Also the last member of a file, decompressed (to repair a tail), and :func:`write_all`.
"""

from __future__ import annotations

import os
import struct
import zlib
from pathlib import Path

from ..errors import CassetteFormatError

__all__ = [
    "close_open_member",
    "last_member",
    "open_by_live_writer",
    "open_record",
    "put_record",
    "read_record",
    "record_path",
    "trailer",
    "write_all",
]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_GZ_FINAL = b"\x03\x00"  # an empty final deflate block (valid after a sync flush)
_RECORD = struct.Struct("<8sQQQQIIQ")  # magic, dev, inode, start, end, crc, size, pid
_MAGIC = b"CASGZ01\n"


def write_all(fd: int, data: bytes) -> None:
    written = os.write(fd, data)
    while written < len(data):  # a short write: a full disk, a file size limit, a signal
        written += os.write(fd, memoryview(data)[written:])


def record_path(path: Path) -> Path:
    return path.with_name(path.name + ".open")


def read_record(path: Path, fd: int) -> tuple[int, int, int, int] | None:
    """(start, end, crc, size) of the open member of the file ``fd``, if recorded."""
    found = _read_raw_record(path, os.fstat(fd))
    return None if found is None else found[:4]


def _read_raw_record(path: Path, st: os.stat_result) -> tuple[int, int, int, int, int] | None:
    """(start, end, crc, size, pid) of the member record of ``path`` (stat ``st``)."""
    try:
        rfd = os.open(record_path(path), os.O_RDONLY | _NOFOLLOW | _CLOEXEC)
    except OSError:
        return None
    try:
        raw = os.read(rfd, _RECORD.size + 1)
    finally:
        os.close(rfd)
    if len(raw) != _RECORD.size:
        return None
    magic, dev, ino, start, end, crc, size, pid = _RECORD.unpack(raw)
    if magic != _MAGIC or (dev, ino) != (st.st_dev, st.st_ino) or not start <= end:
        return None
    return start, end, crc, size, pid


def open_by_live_writer(path: Path) -> bool:
    """Whether the gzip file ``path`` ends with the open member of a writer that is still
    running (so an unclosed stream is work in progress, not a writer that was stopped)."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    found = _read_raw_record(path, st)
    if found is None or found[1] != st.st_size:
        return False
    try:
        os.kill(found[4], 0)
    except ProcessLookupError:
        return False
    except OSError:  # e.g. EPERM: it exists
        return True
    return True


def open_record(path: Path) -> int:
    """The member record's descriptor, kept while this writer's member is open: a record
    is rewritten in place (never truncated, so a full disk cannot leave half of one)."""
    return os.open(record_path(path), os.O_WRONLY | os.O_CREAT | _NOFOLLOW | _CLOEXEC, 0o600)


def put_record(rfd: int, st: os.stat_result, start: int, end: int, crc: int, size: int) -> None:
    raw = _RECORD.pack(_MAGIC, st.st_dev, st.st_ino, start, end, crc, size, os.getpid())
    if os.pwrite(rfd, raw, 0) != len(raw):
        raise OSError(28, "short write of the gzip member record")


def trailer(crc: int, size: int) -> bytes:
    return _GZ_FINAL + struct.pack("<II", crc, size & 0xFFFFFFFF)


def close_open_member(path: Path, fd: int) -> bool:
    """Under the file lock: close the open member the member record describes (cutting
    off a line a killed writer left half-written after it). True if it changed the file."""
    record = read_record(path, fd)
    rec = record_path(path)
    if record is None:
        rec.unlink(missing_ok=True)  # stale (another file's) or unreadable: ignore it
        return False
    start, end, crc, size = record
    now = os.fstat(fd).st_size
    if now < end:  # cut by someone else: not ours to interpret
        rec.unlink(missing_ok=True)
        return False
    if end == start:  # a member that never got a line: remove what may be of its header
        os.ftruncate(fd, start)
    else:
        if now > end:
            os.ftruncate(fd, end)
        write_all(fd, trailer(crc, size))
    rec.unlink(missing_ok=True)
    return True


def last_member(path: Path) -> tuple[int, bytes, bool]:
    """(offset, decompressed data, closed?) of the last gzip member of ``path``."""
    with open(path, "rb") as f:
        raw = f.read()
    view, pos, start, parts, closed = memoryview(raw), 0, 0, [b""], True
    dec = zlib.decompressobj(wbits=31)
    while pos < len(raw):
        if closed:  # a new member begins here
            dec, start, parts = zlib.decompressobj(wbits=31), pos, []
        piece = view[pos : pos + (1 << 14)]  # small pieces: unused_data is a copy
        try:
            parts.append(dec.decompress(piece))
        except zlib.error as exc:
            raise CassetteFormatError(
                f"{path}: gzip data is corrupt ({exc}); restore the file from a copy",
                path=str(path),
            ) from None
        pos += len(piece)
        closed = dec.eof
        if closed:
            pos -= len(dec.unused_data)
    return start, b"".join(parts), closed
