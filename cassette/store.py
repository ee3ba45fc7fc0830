"""Streaming reader of cassette files (plain, .gz, shard directories), the names of
shards and side files, and the repair of a tail a crash cut short.

Lines are written by :class:`cassette.writer.Writer` (re-exported here): whole, under a
thread lock and an advisory file lock, so threads, tasks and processes can share a file
and a kill loses at most the line being written. Gzip files are sync-flushed per line,
so a killed gzip recording is readable up to its last whole line.
"""

from __future__ import annotations

import os
import re
import secrets
import socket
import warnings
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from .errors import CassetteFormatError, CassetteModeError, CassetteWarning
from .writer import Writer, open_by_live_writer, repair_gzip_tail

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "Writer",
    "is_gzip_path",
    "iter_records",
    "partial_path",
    "repair_tail",
    "shard_files",
    "shard_name",
    "stale_shards",
]

_GZIP_MAGIC = b"\x1f\x8b"
_FEED = 1 << 14  # bytes of gzip data given to the decompressor at a time
_SHARD_SUFFIXES = (".jsonl", ".jsonl.gz", ".ndjson", ".ndjson.gz")


def is_gzip_path(path: Path) -> bool:
    return path.name.endswith(".gz")


def _is_gzip_file(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == _GZIP_MAGIC


def shard_files(directory: Path) -> list[Path]:
    """The shard files of a cassette directory, in name order (side files excluded)."""
    return sorted(
        p for p in directory.iterdir() if p.is_file() and p.name.endswith(_SHARD_SUFFIXES)
    )


_SHARD = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,199}")


def shard_name(gz: bool = False) -> str:
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
    return f"{base}.jsonl.gz" if gz else f"{base}.jsonl"


def partial_path(path: Path) -> Path:
    """A new, unpredictable name for the side file ``record`` mode writes before it
    replaces ``path``: ``<name>.<pid>.<random>.partial`` (created with ``O_EXCL``, so an
    earlier side file, or anything planted at a guessed name, is never written to)."""
    return path.with_name(f"{path.name}.{os.getpid()}.{secrets.token_hex(6)}.partial")


# --- reading -----------------------------------------------------------------------------


def _gzip_chunks(path: Path, state: dict[str, bool]) -> Iterator[bytes]:
    """Decompressed bytes of every gzip member; ``state['closed']`` is False if the last
    member ends without its trailer (a writer that was killed)."""
    with open(path, "rb") as f:
        dec = zlib.decompressobj(wbits=31)
        state["closed"] = True
        while True:
            block = f.read(1 << 20)
            if not block:
                break
            view, pos = memoryview(block), 0
            while pos < len(block):
                # fed in small pieces: what follows a member's end is copied (unused_data),
                # and a file of many small members (several appenders) must stay linear
                piece = view[pos : pos + _FEED]
                state["closed"] = False
                try:
                    out = dec.decompress(piece)
                except zlib.error as exc:
                    raise CassetteFormatError(
                        f"{path}: gzip data is corrupt ({exc}); restore the file from a copy",
                        path=str(path),
                    ) from None
                if out:
                    yield out
                pos += len(piece)
                if dec.eof:
                    state["closed"] = True
                    pos -= len(dec.unused_data)
                    dec = zlib.decompressobj(wbits=31)
        tail = dec.flush()
        if tail:
            yield tail


def _split_lines(chunks: Iterator[bytes]) -> Iterator[bytes]:
    rest = b""
    for chunk in chunks:
        data = rest + chunk if rest else chunk
        lines = data.split(b"\n")
        rest = lines.pop()
        yield from (line + b"\n" for line in lines)
    if rest:
        yield rest


def _raw_lines(path: Path) -> Iterator[bytes]:
    """Lines with their newline; the last one lacks it if the file was cut short."""
    if _is_gzip_file(path):
        state: dict[str, bool] = {}
        yield from _split_lines(_gzip_chunks(path, state))
        if not state.get("closed", True) and not open_by_live_writer(path):
            warnings.warn(
                f"{path}: gzip stream was not closed (the writer was stopped); read every "
                "whole line before that point. Run `cassette validate` to check the file.",
                CassetteWarning,
                stacklevel=4,
            )
        return
    with open(path, "rb") as f:
        yield from f


def iter_records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, parsed object) for each line; blank lines are skipped.

    A last line cut short by a crash is skipped with a :class:`CassetteWarning`; any
    other line that is not a JSON object raises :class:`CassetteFormatError`.
    """
    lineno = 0
    for line in _raw_lines(path):
        lineno += 1
        terminated = line.endswith(b"\n")
        if not line.strip():
            continue
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            if not terminated:
                warnings.warn(
                    f"{path}:{lineno}: last line is cut short (a crash while writing?); "
                    "it was skipped. `cassette validate` checks the rest; appending repairs it.",
                    CassetteWarning,
                    stacklevel=2,
                )
                return
            raise CassetteFormatError(
                f"{path}:{lineno}: not valid JSON ({exc}); fix or delete the line, then run "
                f"`cassette validate {path}`",
                path=str(path),
                line=lineno,
            ) from None
        if not isinstance(obj, dict):
            raise CassetteFormatError(
                f"{path}:{lineno}: expected a JSON object, got {type(obj).__name__}; fix or "
                f"delete the line, then run `cassette validate {path}`",
                path=str(path),
                line=lineno,
            )
        yield lineno, obj


def repair_tail(path: Path) -> bool:
    """Make ``path`` end on a whole line before appending; True if it changed anything.

    A plain file loses a cut-short last line (or gains the newline a whole last line
    lacks). A gzip file's open member is closed, and a last member that was cut short is
    replaced by one holding its whole lines.
    """
    if not path.exists() or path.stat().st_size == 0:
        return False
    if _is_gzip_file(path):  # in place, under the lock: another process may be writing
        return repair_gzip_tail(path)
    with open(path, "r+b") as f:
        if fcntl is not None:  # a writer in another process may be mid-line
            fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        return _repair_plain(f)


def _repair_plain(f: Any) -> bool:
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
            if header.get("type") == "header" and header.get("meta", {}).get("run") == run:
                continue
        stale.append(shard)
    return stale
