"""Lean entries: an interaction that keeps its line's bytes, decoded when served.

Replay (``load_index(..., lean=True)``) parses only the head of each interaction line
(type, env_index, channel, step, delta) and finds its hash; the request, response, error
and meta stay as the line's bytes, so a loaded cassette stays near its file's size.

A line laid out as the recorder writes it (``"response":R,"meta":{...,"checksum":"c"}}``)
is checked as it is loaded, while its bytes are in the CPU's cache: ``meta.checksum``
against a CRC of the bytes ``R`` in place (:func:`cassette.format.checksum.crc_of_slices`:
what the recorder CRC'd, without decoding and dumping them again); such a line is
served by decoding ``R`` alone, not ``meta``. Any other line (an error, another key
order or spacing, a line whose bytes were edited) is checked the slow way the first
time it is served: its response, error and meta decoded, ``[response, error]`` dumped
again and CRC'd. A line that fails the fast check is refused, when served, by the slow
one: a damaged line still raises only when it is asked for.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from .checksum import CHECKSUM_KEY, crc_of_slices
from .entry import INTERACTION_KEYS, Entry, EnvIndex, delta_ok, format_error

__all__ = ["LeanEntry", "lean_entry", "response_span"]

_new = object.__new__
_loads = orjson.loads
_REQ = b',"request":'
_SHA = b',"request_sha256":"'
_HEX = b"0123456789abcdef"
# a head as the recorder writes it: keys in its order, strings without escapes, ints
# as JSON writes them (no leading zeros), the delta an object of one level
_TEXT = rb'"([^"\\\x00-\x1f]*)"'
_HEAD = re.compile(
    rb'\{"type":"interaction","env_index":(?:(-?(?:0|[1-9]\d{0,17}))|' + _TEXT + rb"),"
    rb'"channel":' + _TEXT + rb',"step":(0|[1-9]\d{0,17})(?:,"delta":(\{[^{}]*\}))?'
)
# a delta as the recorder writes it, alone up to the request: shared by the lines that
# hold the same bytes (``same`` lists names without escapes)
_PLAIN_DELTA = re.compile(
    rb'\{"base":\d{1,18},"keep":\d{1,18}(?:,"field":"(?:messages|input)")?'
    rb'(?:,"same":(?:"\*"|\[(?:"[^"\\]*"(?:,"[^"\\]*")*)?\]))?\}'
)
_DELTAS = 1 << 14  # distinct deltas shared per file, at most
_RESPONSE = b'"response":'
_AFTER = len(_RESPONSE)
_META = b',"meta":{'
# how a line written by the recorder ends: the checksum is meta's last field
_CRC_KEY = b'"' + CHECKSUM_KEY.encode() + b'":"'
_CRC_AT = len(_CRC_KEY)
_CRC_END = _CRC_AT + 8 + 4  # "checksum":"0123abcd"}} and the newline


class LeanEntry(Entry):
    """An entry that keeps its line's bytes (``raw``): the request, response, error and
    meta are decoded from them each time they are asked for, and not kept, so a loaded
    cassette stays near its file's size; replay decodes a response when it serves it.

    Its attributes are set one by one in a fixed order (:func:`lean_entry`), never
    through ``__dict__``, so that they live in CPython's shared-key instance values
    rather than a dict of their own (about 300 bytes less an entry)."""

    raw: bytes
    tail: int  # where ``"response":...`` starts in ``raw``
    # set at load where the fast check passed: where the response's bytes end (they
    # start after ``"response":``); it is served by decoding them alone
    _fast: int | None = None
    # set by check() (slow check): the decoded response, error and meta, handed to the
    # serve that follows and dropped then
    _payload: dict[str, Any] | None = None

    # the request, response, error and meta: properties (not a __getattr__, which would
    # slow every attribute access of an entry: CPython specialises none of them then)
    @property
    def request(self) -> dict[str, Any]:  # type: ignore[override]
        request: dict[str, Any] = self._decode(self.raw, "the line")["request"]
        return request

    @property
    def response(self) -> dict[str, Any] | None:  # type: ignore[override]
        response: dict[str, Any] | None = self.payload().get("response")
        return response

    @property
    def error(self) -> dict[str, Any] | None:  # type: ignore[override]
        error: dict[str, Any] | None = self.payload().get("error")
        return error

    @property
    def meta(self) -> dict[str, Any]:  # type: ignore[override]
        meta: dict[str, Any] = self.payload().get("meta") or {}
        return meta

    def _decode(self, data: bytes, what: str) -> Any:
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            raise format_error(self.source, self.line, f"{what} is not valid JSON") from None

    def payload(self) -> dict[str, Any]:
        """The response, error and meta of the line (decoded now; or as :meth:`check`
        decoded them just before, handed over once and not kept)."""
        kept = self._payload
        if kept is not None:
            self._payload = None
            return kept
        obj = self._decode(b"{" + self.raw[self.tail :], "the response part")
        return obj if isinstance(obj, dict) else {}

    def served(self) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        stop = self._fast
        if stop is None:
            payload = self.payload()
            return payload.get("response"), payload.get("error")
        try:
            response = _loads(memoryview(self.raw)[self.tail + _AFTER : stop])  # (no copy)
        except orjson.JSONDecodeError:
            response = ()  # (the CRC matched: never seen) refused below
        if response is not None and type(response) is not dict:
            raise format_error(self.source, self.line, "malformed interaction")
        return response, None

    def check(self) -> None:
        if self.broken is not None:
            raise self.broken
        if self.checked:  # (a line with its fast check passed at load is checked)
            return
        # the slow check: decode the response, error and meta, dump and CRC them again
        payload = self._payload = self.payload()  # for the serve that follows
        meta, response, error = payload.get("meta"), payload.get("response"), payload.get("error")
        if not isinstance(meta, (dict, type(None))) or not isinstance(response, (dict, type(None))):
            raise format_error(self.source, self.line, "malformed interaction")
        self.verify_checksum(meta or {}, response, error)
        self.checked = True


def response_span(raw: bytes, tail: int) -> tuple[int, int, bytes] | None:
    """(start, end, checksum) of the response's bytes in an interaction line laid out as
    the recorder writes it (``"response":`` at ``tail``, ``meta`` last, its checksum
    last); None for any other line. Where the line holds an error (or a ``"meta"`` key
    nested in meta fools the search) the bytes found are not the response's alone, and
    their CRC does not match: such lines are checked the slow way."""
    at = len(raw) - _CRC_END  # the line ends with its newline (lean_entry)
    if (
        raw.startswith(_CRC_KEY, at)
        and raw.startswith(b'"}}\n', at + _CRC_AT + 8)
        and raw[at - 1] in b",{"
        and raw.startswith(_RESPONSE, tail)
    ):
        stop = raw.rfind(_META, tail, at)  # (a line with an error fails the CRC: slow path)
        if stop >= 0:
            return tail + _AFTER, stop, raw[at + _CRC_AT : at + _CRC_AT + 8]
    return None


def _plain_head(
    line: bytes, cut: int, deltas: dict[bytes, Any]
) -> tuple[EnvIndex, str, int, dict[str, Any] | None] | None:
    """(env_index, channel, step, delta) of a head written as the recorder writes it
    (keys in its order, strings without escapes), read by one regex; equal deltas of a
    file share one dict. None for any other head."""
    found = _HEAD.fullmatch(line, 0, cut)
    if found is None:
        return None
    number, text, channel, step, raw_delta = found.groups()
    delta = None
    if raw_delta is not None:
        delta = deltas.get(raw_delta)
        if delta is None:
            if not _PLAIN_DELTA.fullmatch(raw_delta):
                return None
            delta = orjson.loads(raw_delta)
            if not delta_ok(delta):
                return None
            if len(deltas) < _DELTAS:
                deltas[raw_delta] = delta
    try:
        env: EnvIndex = int(number) if number is not None else text.decode()
        return env, channel.decode(), int(step), delta
    except UnicodeDecodeError:
        return None


def _head(line: bytes, cut: int) -> tuple[EnvIndex, str, int, dict[str, Any] | None] | None:
    """(env_index, channel, step, delta) of any head (``line[:cut]``) that is a valid
    interaction's; None for one that is not."""
    try:
        head = orjson.loads(line[:cut] + b"}")
    except orjson.JSONDecodeError:
        return None
    env, step, delta = head.get("env_index"), head.get("step"), head.get("delta")
    channel = head.get("channel", "llm")
    if (
        head.get("type") != "interaction"
        or not head.keys() <= INTERACTION_KEYS
        or not isinstance(env, (int, str))
        or isinstance(env, bool)
        or not isinstance(channel, str)
        or type(step) is not int
        or step < 0
        or (delta is not None and not delta_ok(delta))
    ):
        return None
    return env, channel, step, delta


def lean_entry(line: bytes, spath: str, lineno: int, deltas: dict[bytes, Any]) -> LeanEntry | None:
    """An interaction line as a :class:`LeanEntry`, parsing only its head (type, keys,
    delta) and finding its hash; None where the line is not laid out as the recorder
    writes it (the caller then parses it whole). ``deltas``: the deltas met so far in
    the file, by their bytes; lines with equal deltas share one (read-only) dict."""
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
    head = _plain_head(line, cut, deltas)
    if head is None:
        head = _head(line, cut)
        if head is None:
            return None
    env, channel, step, delta = head
    entry = _new(LeanEntry)
    entry.env_index = env
    entry.channel = channel
    entry.step = step
    entry.sha = sha.decode()
    entry.delta = delta
    entry.base = None
    entry.source = spath
    entry.line = lineno
    entry.broken = None
    entry.raw = line
    entry.tail = tail = start + 66
    # the fast check, now that the line is in the CPU's cache: a CRC of the response's
    # bytes in place; where it fails, check() decodes and checks the line when served
    span = response_span(line, tail)
    if span is not None and b"%08x" % crc_of_slices(line, span[0], span[1]) == span[2]:
        entry.checked = True
        entry._fast = span[1]
    else:
        entry.checked = False
        entry._fast = None
    return entry
