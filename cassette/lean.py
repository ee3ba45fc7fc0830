"""Lean entries: an interaction that keeps its line's bytes, decoded when served.

Replay (``load_index(..., lean=True)``) parses only the head of each interaction line
(type, env_index, channel, step, delta) and finds its hash; the request, response, error
and meta stay as the line's bytes, so a loaded cassette stays near its file's size.

Serving a line as the recorder lays it out (``"response":R,"meta":{...,"checksum":"c"}}``,
no error) takes a fast path: ``meta.checksum`` is checked by a CRC of the bytes ``R`` as
they stand in the line (:func:`cassette.checksum.crc_of_slices`: what the recorder
CRC'd, without decoding and dumping them again), and only ``R`` is decoded, not ``meta``.
Any other line (an error, another key order or spacing, a line whose bytes were edited)
is checked the slow way: its response, error and meta decoded, ``[response, error]``
dumped again and CRC'd; the fast path never accepts what the slow one would refuse.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from .checksum import CHECKSUM_KEY, crc_of_slices
from .entry import INTERACTION_KEYS, Entry, delta_ok, format_error

__all__ = ["LeanEntry", "lean_entry"]

_LAZY = frozenset({"request", "response", "error", "meta"})
_new = object.__new__
_REQ = b',"request":'
_SHA = b',"request_sha256":"'
_HEX = b"0123456789abcdef"
_DELTA = b',"delta":'
# a delta as the recorder writes it, alone up to the request: shared by the lines that
# hold the same bytes (``same`` lists names without escapes)
_PLAIN_DELTA = re.compile(
    rb'\{"base":\d{1,18},"keep":\d{1,18}(?:,"field":"(?:messages|input)")?'
    rb'(?:,"same":(?:"\*"|\[(?:"[^"\\]*"(?:,"[^"\\]*")*)?\]))?\}'
)
_DELTAS = 1 << 14  # distinct deltas shared per file, at most
_RESPONSE = b'"response":'
_META = b',"meta":{'
# how a line written by the recorder ends: the checksum is meta's last field
_CRC_KEY = b'"' + CHECKSUM_KEY.encode() + b'":"'
_CRC_END = len(_CRC_KEY) + 8 + 3  # "checksum":"0123abcd"}}


class LeanEntry(Entry):
    """An entry that keeps its line's bytes (``raw``): the request, response, error and
    meta are decoded from them each time they are asked for, and not kept, so a loaded
    cassette stays near its file's size; replay decodes a response when it serves it.

    Its attributes are set one by one in a fixed order (:func:`lean_entry`), never
    through ``__dict__``, so that they live in CPython's shared-key instance values
    rather than a dict of their own (about 300 bytes less an entry)."""

    raw: bytes
    tail: int  # where ``"response":...`` starts in ``raw``
    # set by check(): the response's bytes, served by decoding them alone (fast check)
    _fast: tuple[int, int] | None = None
    # set by check() (slow check): the decoded response, error and meta, handed to the
    # serve that follows and dropped then
    _payload: dict[str, Any] | None = None

    def __getattr__(self, name: str) -> Any:  # only for what an instance does not hold
        if name in _LAZY:
            if name == "request":
                return self._decode(self.raw, "the line")["request"]
            value = self.payload().get(name)
            return (value or {}) if name == "meta" else value
        raise AttributeError(name)

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

    def _span(self) -> tuple[int, int, str] | None:
        """(start, end, checksum) of the response's bytes in a line laid out as the
        recorder writes it; None for any other line. Where the line holds an error (or
        a nested ``"meta"`` key fools the search) the bytes found are not the response's
        alone, and their CRC does not match: such lines are checked the slow way."""
        raw, start = self.raw, self.tail + len(_RESPONSE)
        at = len(raw) - 1 - _CRC_END  # the line ends with its newline (lean_entry)
        if (
            not raw.startswith(_RESPONSE, self.tail)
            or not raw.startswith(_CRC_KEY, at)
            or not raw.startswith(b'"}}\n', at + _CRC_END - 3)
            or raw[at - 1] not in b",{"
        ):
            return None
        stop = raw.rfind(_META, start, at)  # (a line with an error fails the CRC: slow path)
        if stop < 0:
            return None
        want = raw[at + len(_CRC_KEY) : at + len(_CRC_KEY) + 8]
        return start, stop, want.decode("latin-1")

    def served(self) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        fast = self._fast
        if fast is None:
            payload = self.payload()
            return payload.get("response"), payload.get("error")
        response = self._decode(self.raw[fast[0] : fast[1]], "the response")
        if response is not None and type(response) is not dict:
            raise format_error(self.source, self.line, "malformed interaction")
        return response, None

    def check(self) -> None:
        if self.broken is not None:
            raise self.broken
        if self.checked:
            return
        span = self._span()
        if span is not None:
            start, stop, want = span
            if "%08x" % crc_of_slices(self.raw, start, stop) == want:  # noqa: UP031
                self._fast = (start, stop)  # served by decoding only these
                self.checked = True
                return
        # the slow check: decode the response, error and meta, dump and CRC them again
        payload = self._payload = self.payload()  # for the serve that follows
        meta, response, error = payload.get("meta"), payload.get("response"), payload.get("error")
        if not isinstance(meta, (dict, type(None))) or not isinstance(response, (dict, type(None))):
            raise format_error(self.source, self.line, "malformed interaction")
        self.verify_checksum(meta or {}, response, error)
        self.checked = True


def lean_entry(
    line: bytes, spath: str, lineno: int, deltas: dict[bytes, Any] | None = None
) -> LeanEntry | None:
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
    delta = None
    at = line.find(_DELTA, 0, cut)
    if deltas is not None and at >= 0 and _PLAIN_DELTA.fullmatch(line, at + len(_DELTA), cut):
        raw_delta = line[at + len(_DELTA) : cut]  # one object with no other key after it
        delta = deltas.get(raw_delta)
        if delta is None:
            delta = orjson.loads(raw_delta)
            if not delta_ok(delta):
                return None
            if len(deltas) < _DELTAS:
                deltas[raw_delta] = delta
        cut = at
    try:
        head = orjson.loads(line[:cut] + b"}")
    except orjson.JSONDecodeError:
        return None
    env, step = head.get("env_index"), head.get("step")
    if delta is None:
        delta = head.get("delta")
    elif "delta" in head:
        return None
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
    entry.checked = False
    entry.raw = line
    entry.tail = start + 66
    return entry
