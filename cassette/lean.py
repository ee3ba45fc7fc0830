"""Lean entries: an interaction that keeps its line's bytes, decoded when served.

Replay (``load_index(..., lean=True)``) parses only the head of each interaction line
(type, env_index, channel, step, delta) and finds its hash; the request, response, error
and meta stay as the line's bytes, so a loaded cassette stays near its file's size.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from .entry import INTERACTION_KEYS, Entry, delta_ok, format_error

__all__ = ["LeanEntry", "lean_entry"]

_LAZY = frozenset({"request", "response", "error", "meta"})
_REQ = b',"request":'
_SHA = b',"request_sha256":"'
_HEX64 = re.compile(rb"[0-9a-f]{64}")


class LeanEntry(Entry):
    """An entry that keeps its line's bytes (``raw``): the request, response, error and
    meta are decoded from them each time they are asked for, and not kept, so a loaded
    cassette stays near its file's size; replay decodes a response when it serves it."""

    raw: bytes
    tail: int  # where ``"response":...`` starts in ``raw``

    def __getattr__(self, name: str) -> Any:
        if name in _LAZY and "raw" in self.__dict__:
            if name == "request":
                return orjson.loads(self.raw)["request"]
            value = self.payload().get(name)
            return (value or {}) if name == "meta" else value
        raise AttributeError(name)

    def payload(self) -> dict[str, Any]:
        """The response, error and meta of the line (decoded now; or as :meth:`check`
        decoded them just before, handed over once and not kept)."""
        kept = self.__dict__.pop("_payload", None)
        if kept is not None:
            return kept  # type: ignore[no-any-return]
        obj = orjson.loads(b"{" + self.raw[self.tail :])
        return obj if isinstance(obj, dict) else {}

    def served(self) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        payload = self.payload()
        return payload.get("response"), payload.get("error")

    def check(self) -> None:
        if self.broken is not None:
            raise self.broken
        if self.checked:
            return
        try:
            payload = self.__dict__["_payload"] = self.payload()  # for the serve that follows
        except orjson.JSONDecodeError:
            raise format_error(
                self.source, self.line, "the response part is not valid JSON"
            ) from None
        meta, response, error = payload.get("meta"), payload.get("response"), payload.get("error")
        if not isinstance(meta, (dict, type(None))) or not isinstance(response, (dict, type(None))):
            raise format_error(self.source, self.line, "malformed interaction")
        self.verify_checksum(meta or {}, response, error)
        self.checked = True


def lean_entry(line: bytes, spath: str, lineno: int) -> LeanEntry | None:
    """An interaction line as a :class:`LeanEntry`, parsing only its head (type, keys,
    delta) and finding its hash; None where the line is not laid out as the recorder
    writes it (the caller then parses it whole)."""
    cut = line.find(_REQ)
    if cut < 0 or not line.endswith(b"\n"):  # a last line cut short is parsed, and warned of
        return None
    at = line.find(_SHA, cut)
    if at < 0 or line.find(_SHA, at + 1) >= 0:
        return None
    start = at + len(_SHA)
    sha = line[start : start + 64]
    if line[start + 64 : start + 66] != b'",' or not _HEX64.fullmatch(sha):
        return None
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
    entry = LeanEntry.__new__(LeanEntry)
    entry.__dict__.update(
        env_index=env,
        channel=channel,
        step=step,
        sha=sha.decode(),
        delta=delta,
        base=None,
        source=spath,
        line=lineno,
        broken=None,
        checked=False,
        raw=line,
        tail=start + 66,
    )
    return entry
