"""The one line reader: a cassette file's lines as headers, outcomes and entries, their
delta bases linked, every line checked (:mod:`cassette.format.check`).

A line that is not valid raises :class:`~cassette.errors.CassetteFormatError` (path:line,
what is wrong), or, where a ``fault`` hook is given (``cassette validate``), is handed to
it and reading goes on. A last line cut short by a crash is skipped with a warning.

``lean`` (replay): an interaction line laid out as the recorder writes it is not parsed
whole: its head (type, env_index, channel, step, delta) is read by one regex and its
hash found in place, and its response is checked against ``meta.checksum`` by a CRC of
its bytes (:func:`~cassette.format.checksum.checked_response`) while they are in the
CPU's cache; the entry keeps the line's bytes. Any other line is parsed and checked
whole; without ``lean`` every line is, and its entry keeps the parsed line.
"""

from __future__ import annotations

import re
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import orjson

from ..errors import CassetteFormatError
from ..format.check import delta_ok, head_ok, line_faults
from ..format.checksum import checked_response
from ..format.entry import Entry, ep_entry, format_error
from ..types import EnvIndex, Json
from .lines import numbered_lines, parse_line

__all__ = ["Fault", "Reader", "irregular"]

Fault = Callable[[CassetteFormatError, "Json | None"], None]  # (why, the parsed line)
Head = tuple[EnvIndex, str, int, "Json | None"]

_EP_KEYS = frozenset({"env_index", "step", "messages"})
_HEAD_KEYS = frozenset({"type", "env_index", "channel", "step", "delta"})  # before the request
_REQ = b',"request":{'
_SHA = b',"request_sha256":"'
_HEX = b"0123456789abcdef"
# a head as the recorder writes it: keys in its order, strings without escapes, ints
# as JSON writes them (no leading zeros), the delta an object of one level
_TEXT = rb'"([^"\\\x00-\x1f]*)"'
_HEAD = re.compile(
    rb'\{"type":"interaction","env_index":(?:(-?(?:0|[1-9]\d{0,17}))|' + _TEXT + rb"),"
    rb'"channel":' + _TEXT + rb',"step":(0|[1-9]\d{0,17})(?:,"delta":(\{[^{}]*\}))?'
)


class Reader:
    """Reads one file: iterate it for ``(line number, record)``, a record being an
    :class:`Entry` (an interaction or an eval-protocol line) or a header or outcome
    line's dict. ``broken``: the entries whose delta chain is broken, in file order."""

    def __init__(self, path: Path, *, lean: bool = False, fault: Fault | None = None) -> None:
        self.path, self.spath = path, str(path)
        self.lean = lean
        self.fault = fault
        self.eval_protocol = False
        self.broken: list[Entry] = []
        self.unparsed = 0  # lines that were not JSON (a delta base may have been one)
        self._first = True
        self._deltas: dict[bytes, Json] = {}  # equal deltas of a file share one dict
        self._last: dict[tuple[EnvIndex, str], Entry] = {}
        self._lines: dict[tuple[EnvIndex, str, int], Entry] = {}  # the latest line of a key

    def __iter__(self) -> Iterator[tuple[int, Entry | Json]]:
        lean = self.lean
        for lineno, line in numbered_lines(self.path):
            if lean and line.startswith(b'{"type":"interaction"'):
                entry = self._lean(line, lineno)
                if entry is not None:
                    self._first = False
                    yield lineno, self._link(entry)
                    continue
            obj = None
            try:
                obj = self._parse(line, lineno)
                if obj is None:  # a last line cut short (warned of): the end
                    return
                record = self._record(obj, line, lineno)
            except CassetteFormatError as exc:
                if self.fault is None:
                    raise
                self.fault(exc, obj)
                continue
            yield lineno, record

    def _parse(self, line: bytes, lineno: int) -> Json | None:
        """The line as a JSON object; None for a last line cut short (warned of)."""
        try:
            return parse_line(self.path, lineno, line, stacklevel=5)
        except CassetteFormatError:
            self.unparsed += 1
            raise

    def _record(self, obj: Json, line: bytes, lineno: int) -> Entry | Json:
        """The record of a parsed line, checked; :class:`CassetteFormatError` if bad."""
        kind = obj.get("type")
        if self._first:
            self._first = False
            self.eval_protocol = kind is None and obj.keys() >= _EP_KEYS
        if self.eval_protocol:
            return ep_entry(obj, self.spath, lineno)
        if kind not in ("header", "interaction", "outcome"):
            raise format_error(
                self.spath,
                lineno,
                f"unknown line type {kind!r} (expected header, interaction, outcome)",
            )
        faults = line_faults(obj)
        if faults:
            self._spoil(obj, lineno, faults[0])
            raise format_error(self.spath, lineno, faults[0])
        if kind != "interaction":
            return obj
        entry = Entry.of(obj, self.spath, lineno)
        if self.lean:  # keep the bytes, not the parsed line
            entry.kept, entry.raw = None, line
        return self._link(entry)

    def _spoil(self, obj: Json, lineno: int, why: str) -> None:
        """An interaction line that is not valid: later delta lines on its (env_index,
        channel) cannot be rebuilt (collecting faults, they are not reported again)."""
        env, channel = obj.get("env_index"), obj.get("channel", "llm")
        kind = obj.get("type")
        if kind == "interaction" and isinstance(env, (int, str)) and isinstance(channel, str):
            spoilt = Entry((env, channel, -1), None, None, source=self.spath, line=lineno)
            spoilt.broken = format_error(self.spath, lineno, why)
            self._last[(env, channel)] = spoilt

    def _link(self, entry: Entry) -> Entry:
        """Link ``entry`` to its delta base: the previous interaction of its (env_index,
        channel) in this file, if that is the step its delta names; where a key was
        recorded twice (two writers of one episode), the latest earlier line of that
        step. Without one, the entry is broken, as every later one built on it."""
        chan = (entry.env_index, entry.channel)
        delta = entry.delta
        if delta is not None:
            previous = self._last.get(chan)
            step = delta["base"]
            base = previous
            if previous is not None and previous.step != step and previous.step >= 0:
                base = self._lines.get((*chan, step))
            entry.base = base
            if base is None:
                entry.broken = format_error(self.spath, entry.line, self._lost(entry, previous))
            elif base.broken is not None:
                entry.broken = format_error(
                    self.spath,
                    entry.line,
                    f"its delta base (line {base.line}) cannot be rebuilt; this step "
                    "cannot be served: re-record it",
                )
            if entry.broken is not None:
                self.broken.append(entry)
        self._last[chan] = self._lines[entry.key] = entry
        return entry

    def _lost(self, entry: Entry, previous: Entry | None) -> str:
        env, channel, step = entry.env_index, entry.channel, entry.delta["base"]  # type: ignore[index]
        if previous is None:
            hint = " (an unparseable line above may have held it)" if self.unparsed else ""
            what = (
                f"delta base step {step}: no earlier interaction of ({env!r}, {channel!r}) "
                f"in this file{hint}"
            )
        else:
            what = (
                f"delta base step {step} is not the previous interaction of ({env!r}, "
                f"{channel!r}) (step {previous.step}, line {previous.line})"
            )
        return what + "; this step and the later ones built on it cannot be served: re-record them"

    def _lean(self, line: bytes, lineno: int) -> Entry | None:
        """An interaction line as an entry that keeps its bytes, parsing only its head
        and finding its hash; None where the line is not laid out as the recorder
        writes it (it is then parsed whole)."""
        cut = line.find(_REQ)
        if cut < 0 or not line.endswith(b"\n"):  # a last line cut short is parsed, and warned of
            return None
        at = line.find(_SHA, cut)
        if at < 0 or line.find(_SHA, at + 1) >= 0:
            return None
        start = at + len(_SHA)
        sha = line[start : start + 64]
        if line[start + 64 : start + 66] != b'",' or sha.translate(None, _HEX):
            return None
        head = self._plain_head(line, cut) or _head(line, cut)
        if head is None:
            return None
        env, channel, step, delta = head
        entry = Entry((env, channel, step), sha.decode(), delta, line, None, self.spath, lineno)
        entry.tail = tail = start + 66
        # the fast check, now that the line is in the CPU's cache: a CRC of the response's
        # bytes in place; where it fails, check() decodes and checks the line when served
        entry.stop = stop = checked_response(line, tail)
        entry.checked = stop > 0
        return entry

    def _plain_head(self, line: bytes, cut: int) -> Head | None:
        """The head of a line as the recorder writes it, read by one regex; None for
        any other head."""
        found = _HEAD.fullmatch(line, 0, cut)
        if found is None:
            return None
        number, text, channel, step, raw_delta = found.groups()
        delta = None
        if raw_delta is not None:
            delta = self._deltas.get(raw_delta)
            if delta is None:
                try:
                    delta = orjson.loads(raw_delta)
                except orjson.JSONDecodeError:
                    return None
                if not delta_ok(delta):
                    return None
                if len(self._deltas) < 1 << 14:
                    self._deltas[raw_delta] = delta
        try:
            env: EnvIndex = int(number) if number is not None else text.decode()
            return env, channel.decode(), int(step), delta
        except UnicodeDecodeError:
            return None


def _head(line: bytes, cut: int) -> Head | None:
    """The head (``line[:cut]``) of any line whose head is a valid interaction's."""
    try:
        head: dict[str, Any] = orjson.loads(line[:cut] + b"}")
    except orjson.JSONDecodeError:
        return None
    found = (head.get("env_index"), head.get("channel", "llm"), head.get("step"), head.get("delta"))
    if head.get("type") != "interaction" or not head.keys() <= _HEAD_KEYS:
        return None
    return cast(Head, found) if head_ok(*found) else None


def irregular(path: Path) -> bool:
    """Whether ``path`` is neither a file nor a directory (a pipe, a socket, a device:
    reading it could block); False where it cannot be looked at (reading it says why)."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))
