"""The lines of a cassette file (plain or gzip), numbered, blank lines skipped cheaply.

A file of millions of blank lines (a 20 KB ``.gz`` of 20 MB of newlines) is skipped at
the speed of a byte scan: the reader looks for the next byte that is not whitespace and
counts the newlines it passed, instead of handling each blank line in Python.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from .errors import CassetteFormatError, CassetteWarning
from .store import _gzip_chunks, _is_gzip_file
from .writer import open_by_live_writer

__all__ = ["numbered_lines", "read_records"]

_INK = re.compile(rb"\S")  # a byte that is not ASCII whitespace (what bytes.strip() keeps)
_BLOCK = 1 << 20


def _plain_chunks(path: Path) -> Iterator[bytes]:
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
        while (found := _INK.search(data, pos, end)) is not None:
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
    """(line number, line) of each line that is not blank; a line keeps its newline, the
    last one lacks it if the file was cut short. A gzip stream that was not closed is read
    up to its end, with a :class:`CassetteWarning` unless a live writer holds it (as
    :func:`cassette.store.iter_records` reads it)."""
    if not _is_gzip_file(path):
        yield from _numbered(_plain_chunks(path))
        return
    state: dict[str, bool] = {}
    yield from _numbered(_gzip_chunks(path, state))
    if not state.get("closed", True) and not open_by_live_writer(path):
        warnings.warn(
            f"{path}: gzip stream was not closed (the writer was stopped); read every "
            "whole line before that point. Run `cassette validate` to check the file.",
            CassetteWarning,
            stacklevel=4,
        )


def read_records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, parsed object) for each line; blank lines are skipped.

    A last line cut short by a crash is skipped with a :class:`CassetteWarning`; any
    other line that is not a JSON object raises :class:`CassetteFormatError`.
    """
    for lineno, line in numbered_lines(path):
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            if not line.endswith(b"\n"):
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
