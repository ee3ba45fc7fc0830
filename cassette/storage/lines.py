"""The lines of a cassette file (plain or gzip), numbered; blank runs skipped by a byte scan."""

from __future__ import annotations

import re
import warnings
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson

from ..errors import CassetteFormatError, CassetteWarning

__all__ = ["gunzip", "is_gzip_file", "numbered_lines", "parse_line", "read_records"]

_INK = re.compile(rb"\S")  # what bytes.strip() keeps
_BLOCK = 1 << 20
_GZIP_MAGIC = b"\x1f\x8b"
_FEED = 1 << 14  # bytes of gzip data given to the decompressor at a time


def is_gzip_file(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == _GZIP_MAGIC


def gunzip(blocks: Iterable[bytes], where: object, state: dict[str, bool]) -> Iterator[bytes]:
    """Decompressed bytes of every gzip member in ``blocks``; ``state['closed']`` is False
    if the last member ends without its trailer (a writer that was killed)."""
    dec = zlib.decompressobj(wbits=31)
    state["closed"] = True
    for block in blocks:
        view, pos = memoryview(block), 0
        while pos < len(block):
            # small pieces: unused_data is copied, and many small members must stay linear
            piece = view[pos : pos + _FEED]
            state["closed"] = False
            try:
                out = dec.decompress(piece)
            except zlib.error as exc:
                raise CassetteFormatError(
                    f"{where}: gzip data is corrupt ({exc}); restore the file from a copy",
                    path=str(where),
                ) from None
            if out:
                yield out
            pos += len(piece)
            if dec.eof:
                state["closed"] = True
                pos -= len(dec.unused_data)
                dec = zlib.decompressobj(wbits=31)
    if tail := dec.flush():
        yield tail


def _blocks(path: Path) -> Iterator[bytes]:
    with open(path, "rb") as f:
        while block := f.read(_BLOCK):
            yield block


def _numbered(chunks: Iterator[bytes]) -> Iterator[tuple[int, bytes]]:
    lineno = 0  # lines that end before ``pos``
    rest = b""
    for chunk in chunks:
        data = rest + chunk if rest else chunk
        end = data.rfind(b"\n") + 1  # whole lines only; the rest waits for the next chunk
        pos = 0
        while pos < end:
            if data[pos] == 123:  # "{": the usual line, no blank bytes before it
                stop = data.find(b"\n", pos, end) + 1
                lineno += 1
                yield lineno, data[pos:stop]
                pos = stop
                continue
            found = _INK.search(data, pos, end)
            if found is None:
                break
            ink = found.start()
            start = data.rfind(b"\n", pos, ink) + 1 or pos
            stop = data.find(b"\n", ink, end) + 1
            lineno += data.count(b"\n", pos, start) + 1
            yield lineno, data[start:stop]
            pos = stop
        lineno += data.count(b"\n", pos, end)
        rest = data[end:]
    if rest.strip():
        yield lineno + 1, rest


def numbered_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """(line number, line) of each line that is not blank, with its newline; an unclosed
    gzip stream is read to its end, with a :class:`CassetteWarning`."""
    if not is_gzip_file(path):
        yield from _numbered(_blocks(path))
        return
    state: dict[str, bool] = {}
    yield from _numbered(gunzip(_blocks(path), path, state))
    if not state.get("closed", True):
        warnings.warn(
            f"{path}: gzip stream was not closed (the writer was stopped); read every "
            "whole line before that point. Run `cassette validate` to check the file.",
            CassetteWarning,
            stacklevel=4,
        )


def read_records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, parsed object) of each line that is not blank (:func:`parse_line`)."""
    for lineno, line in numbered_lines(path):
        obj = parse_line(path, lineno, line, stacklevel=2)
        if obj is None:
            return
        yield lineno, obj


def parse_line(path: Path, lineno: int, line: bytes, stacklevel: int = 2) -> dict[str, Any] | None:
    """One line as a JSON object; None (with a :class:`CassetteWarning`) for a last line
    cut short by a crash, :class:`CassetteFormatError` for any other that is not one."""
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        if not line.endswith(b"\n") and line.startswith(b"{"):  # (a record's beginning)
            warnings.warn(
                f"{path}:{lineno}: last line is cut short (a crash while writing?); "
                "it was skipped. `cassette validate` checks the rest; appending repairs it.",
                CassetteWarning,
                stacklevel=stacklevel + 1,
            )
            return None
        raise _bad_line(path, lineno, f"not valid JSON ({exc})") from None
    if not isinstance(obj, dict):
        raise _bad_line(path, lineno, f"expected a JSON object, got {type(obj).__name__}")
    return obj


def _bad_line(path: Path, lineno: int, what: str) -> CassetteFormatError:
    return CassetteFormatError(
        f"{path}:{lineno}: {what}; fix or delete the line, then run `cassette validate {path}`",
        path=str(path),
        line=lineno,
    )
