"""The one line reader: a file's lines as headers, outcomes and entries, delta bases
linked, every line checked (a bad one raises, or goes to a ``fault`` hook). ``lean``: a
line as the recorder writes it is read in place by a regex and kept as bytes."""

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
_HEAD_KEYS = frozenset({"type", "env_index", "channel", "step", "delta"})
_REQ = b',"request":{'
_SHA = b',"request_sha256":"'
_HEX = b"0123456789abcdef"
_BAD: Json = {}  # a head's delta that is not valid
# a head as the recorder writes it: key order, plain strings and ints, a flat delta
_TEXT = rb'"([^"\\\x00-\x1f]*)"'
_HEAD = re.compile(
    rb'\{"type":"interaction","env_index":(?:(-?(?:0|[1-9]\d{0,17}))|' + _TEXT + rb"),"
    rb'"channel":' + _TEXT + rb',"step":(0|[1-9]\d{0,17})(?:,"delta":(\{[^{}]*\}))?'
)


class Reader:
    """Reads one file: iterate for ``(line number, Entry or header/outcome dict)``;
    ``broken``: entries whose delta chain is broken."""

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
        try:
            return parse_line(self.path, lineno, line, stacklevel=5)
        except CassetteFormatError:
            self.unparsed += 1
            raise

    def _record(self, obj: Json, line: bytes, lineno: int) -> Entry | Json:
        """The record of a parsed line; :class:`CassetteFormatError` if bad."""
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
        """An invalid interaction line: later delta lines on its channel are broken."""
        env, channel = obj.get("env_index"), obj.get("channel", "llm")
        kind = obj.get("type")
        if kind == "interaction" and isinstance(env, (int, str)) and isinstance(channel, str):
            spoilt = Entry((env, channel, -1), None, None, source=self.spath, line=lineno)
            spoilt.broken = format_error(self.spath, lineno, why)
            self._last[(env, channel)] = spoilt

    def _link(self, entry: Entry) -> Entry:
        """Link ``entry`` to its delta base (broken without one)."""
        chan = (entry.env_index, entry.channel)
        if entry.delta is not None:
            entry.base = self._base(entry, self._last.get(chan))
            if entry.broken is not None:
                self.broken.append(entry)
        self._last[chan] = self._lines[entry.key] = entry
        return entry

    def _base(self, entry: Entry, previous: Entry | None) -> Entry | None:
        """The previous line of the channel, or the latest of the step its delta names."""
        step = entry.delta["base"]  # type: ignore[index]
        base = previous
        if previous is not None and previous.step != step and previous.step >= 0:
            base = self._lines.get((entry.env_index, entry.channel, step))
        if base is None:
            entry.broken = format_error(self.spath, entry.line, self._lost(entry, previous))
        elif base.broken is not None:
            entry.broken = format_error(
                self.spath,
                entry.line,
                f"its delta base (line {base.line}) cannot be rebuilt; this step "
                "cannot be served: re-record it",
            )
        return base

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
        """An interaction line read in place; None if not laid out as the recorder writes it."""
        cut = line.find(_REQ)
        if cut < 0 or not line.endswith(b"\n"):  # a last line cut short is parsed, and warned of
            return None
        start = _sha_at(line, cut)
        head = None if start < 0 else self._plain_head(line, cut) or _head(line, cut)
        if head is None:
            return None
        env, channel, step, delta = head
        sha = line[start : start + 64].decode()
        entry = Entry((env, channel, step), sha, delta, line, None, self.spath, lineno)
        entry.tail = tail = start + 66
        # checked now, while in the CPU's cache (else when served)
        entry.stop = stop = checked_response(line, tail)
        entry.checked = stop > 0
        return entry

    def _plain_head(self, line: bytes, cut: int) -> Head | None:
        found = _HEAD.fullmatch(line, 0, cut)
        if found is None:
            return None
        number, text, channel, step, raw_delta = found.groups()
        delta = None if raw_delta is None else self._delta(raw_delta)
        if delta is _BAD:
            return None
        try:
            env: EnvIndex = int(number) if number is not None else text.decode()
            return env, channel.decode(), int(step), delta
        except UnicodeDecodeError:
            return None

    def _delta(self, raw: bytes) -> Json:
        """A head's delta, parsed once per file; :data:`_BAD` if not a valid one."""
        delta = self._deltas.get(raw)
        if delta is not None:
            return delta
        try:
            parsed: Json = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return _BAD
        if not delta_ok(parsed):
            return _BAD
        if len(self._deltas) < 1 << 14:
            self._deltas[raw] = parsed
        return parsed


def _sha_at(line: bytes, cut: int) -> int:
    """Where the one well-formed request hash after ``cut`` begins; else -1."""
    at = line.find(_SHA, cut)
    if at < 0 or line.find(_SHA, at + 1) >= 0:
        return -1
    start = at + len(_SHA)
    if line[start + 64 : start + 66] != b'",' or line[start : start + 64].translate(None, _HEX):
        return -1
    return start


def _head(line: bytes, cut: int) -> Head | None:
    """The head ``line[:cut]`` of any valid interaction line."""
    try:
        head: dict[str, Any] = orjson.loads(line[:cut] + b"}")
    except orjson.JSONDecodeError:
        return None
    found = (head.get("env_index"), head.get("channel", "llm"), head.get("step"), head.get("delta"))
    if head.get("type") != "interaction" or not head.keys() <= _HEAD_KEYS:
        return None
    return cast(Head, found) if head_ok(*found) else None


def irregular(path: Path) -> bool:
    """Whether ``path`` is a pipe, socket or device (reading it could block)."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))
