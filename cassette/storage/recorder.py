"""Turns finished calls into lines (delta-encoded, redacted) and hands them to a Writer.

Per (env_index, channel) the previous request is kept as JSON bytes taken when its line
was written, so a caller that edits it in place later cannot skew the next delta. Deltas
are taken against what the caller sent, not the scrubbed line: a secret is scrubbed once
and later lines keep its message by reference, so size stays linear.
"""

from __future__ import annotations

import functools
import threading
import time
from dataclasses import dataclass
from typing import Any

from .._version import __version__
from ..errors import CassetteError
from ..format.canonical import conversation_field
from ..format.checksum import CHECKSUM_KEY, crc_of_slices, with_checksum
from ..format.codec import dumps, loads
from ..format.delta import SAME_ALL, MessageBase, encode_messages
from ..format.runid import stamp
from ..format.version import FORMAT, VERSION
from ..redact import Redactor
from ..types import Json
from .store import Writer

__all__ = ["BASES", "Recorder", "header_line", "line_meta", "now_iso"]

# (env_index, channel) keys whose previous request is kept as a delta base (bounded memory)
BASES = 1024

_META_KEY = b',"meta":'


def now_iso() -> str:
    """UTC now as ISO-8601 with milliseconds, e.g. ``2026-11-29T20:19:39.788Z``."""
    now = time.time()
    sec = int(now)
    # (% and the rounding in line_meta: 1.2 µs a recorded call, bench/ab_replay.py row c)
    return "%s.%03dZ" % (_second(sec), (now - sec) * 1000)  # noqa: UP031


@functools.lru_cache(maxsize=1)
def _second(sec: int) -> str:
    """A second's ISO-8601 text, formatted once (strftime is most of a record call's clock)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec))


def header_line(meta: dict[str, Any] | None = None) -> dict[str, Any]:
    """A header line; its ``meta.run_id`` is derived from its own fields
    (:mod:`cassette.format.runid`) unless ``meta`` holds one."""
    line = {
        "type": "header",
        "format": FORMAT,
        "version": VERSION,
        "created_at": now_iso(),
        "producer": f"rollout-cassette/{__version__}",
        "meta": dict(meta or {}),
    }
    return stamp(line)


@dataclass
class _Base:
    """The previous request of one (env_index, channel)."""

    step: int
    field: str
    messages: MessageBase
    rest: bytes  # JSON of the other top-level keys (a dict in the request's order)


class Recorder:
    """Writes header, interaction and outcome lines to one writer, one whole line each."""

    def __init__(self, writer: Writer, redactor: Redactor, *, delta: bool = True) -> None:
        self.writer = writer
        self.redactor = redactor
        self.delta = delta
        self.redacted = 0  # replacements made so far (for reports)
        self.written = 0  # interaction and outcome lines written (the header not counted)
        self._bases: dict[tuple[Any, str], _Base] = {}
        self._lock = threading.Lock()

    def dumped(self, line: dict[str, Any]) -> bytes:
        """A header or outcome line as the bytes to write, redacted (and counted)."""
        raw = dumps(line)
        clean, count = self.redactor.redact_line(line, raw, dumps)
        if count:
            self.redacted += count
            raw = dumps(clean)
        return raw

    def _emit_interaction(
        self,
        line: dict[str, Any],
        response: dict[str, Any] | None,
        error: dict[str, Any] | None,
        meta: dict[str, Any],
    ) -> None:
        """Write ``line`` (keys up to ``request_sha256``) with response, error and meta; the
        checksum is the CRC of the response's bytes in place, unless the line has an error
        or redaction changed it (then it is dumped again)."""
        sha = line["request_sha256"]
        line["response"] = response
        if error is not None:
            line["error"] = error
        line["meta"] = meta
        raw = dumps(line)
        clean, count = self.redactor.redact_line(line, raw, dumps)
        if count or error is not None or CHECKSUM_KEY in meta:
            if count:
                self.redacted += count
                clean["meta"] = {**clean.get("meta", {}), "redacted": count}
            self.writer.write(with_checksum(clean))
            return
        marker = b'"request_sha256":"' + sha.encode() + b'","response":'
        # (found: the request cannot hold its own hash; ``meta`` is the line's last key)
        start = raw.find(marker) + len(marker)
        stop = len(raw) - len(dumps(meta)) - len(_META_KEY) - 1
        field = b'"' + CHECKSUM_KEY.encode() + b'":"%08x"}}' % crc_of_slices(raw, start, stop)
        self.writer.write(raw[:-2] + (b"," + field if meta else field))

    def header(self, meta: dict[str, Any] | None = None) -> None:
        with self._lock:
            self.writer.write(self.dumped(header_line(meta)))

    def outcome(self, line: dict[str, Any]) -> None:
        with self._lock:
            self.writer.write(self.dumped(line))
            self.written += 1

    def interaction(
        self,
        env_index: Any,
        channel: str,
        step: int,
        request: dict[str, Any],
        sha: str,
        response: dict[str, Any] | None,
        error: dict[str, Any] | None,
        meta: dict[str, Any],
        conversation: bytes | None = None,
    ) -> None:
        """Write one interaction line. ``conversation``: the sorted-key JSON of the
        request's message list if the caller has it (hashing made it), else made here."""
        key = (env_index, channel)
        try:
            snapshot = self._snapshot(step, request, response, conversation)
            line: dict[str, Any] = {
                "type": "interaction",
                "env_index": env_index,
                "channel": channel,
                "step": step,
            }
            with self._lock:
                base = self._bases.pop(key, None)
                if snapshot is None or base is None or base.field != snapshot.field:
                    line["request"] = request
                else:
                    line["delta"], line["request"] = _delta(request, snapshot, base)
                line["request_sha256"] = sha
                self._emit_interaction(line, response, error, meta)
                self.written += 1
                if snapshot is not None:  # kept last: the dict's order is least recent first
                    self._bases[key] = snapshot
                    if len(self._bases) > BASES:  # an episode that long idle is written whole
                        del self._bases[next(iter(self._bases))]
        except TypeError as exc:
            raise CassetteError(
                f"cannot record step {step} of ({env_index!r}, {channel!r}): {exc}; the "
                "adapter must pass JSON-able request and response dicts"
            ) from None

    def _snapshot(
        self, step: int, request: dict[str, Any], response: Any, conversation: bytes | None
    ) -> _Base | None:
        """The request as the next one's delta base, taken now (the caller may edit it)."""
        fld = conversation_field(request) if self.delta else None
        if fld is None:
            return None
        rest = dict(request)  # (a copy, less the conversation)
        del rest[fld]
        return _Base(step, fld, MessageBase.of(request[fld], response, conversation), dumps(rest))


def _delta(
    request: dict[str, Any], now: _Base, base: _Base
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(delta, stored request) of ``request`` (snapshot ``now``) against ``base``."""
    fld = now.field
    new, keep = encode_messages(request[fld], base.messages, now.messages.raw)
    delta: dict[str, Any] = {"base": base.step, "keep": keep}
    if fld != "messages":
        delta["field"] = fld
    stored: dict[str, Any] = {fld: new}
    if now.rest == base.rest:  # the usual case: only the conversation changed
        delta["same"] = SAME_ALL
    else:
        _other_keys(request, fld, loads(base.rest), delta, stored)
    return delta, stored


def _other_keys(
    request: dict[str, Any], fld: str, old: dict[str, Any], delta: Json, stored: Json
) -> None:
    """Store the keys besides ``fld`` that differ from ``old``; name the equal ones in
    ``delta["same"]``."""
    same = []
    for key, value in request.items():
        if key == fld:
            continue
        if key in old and dumps(value) == dumps(old[key]):
            same.append(key)
        else:
            stored[key] = value
    if old.keys() <= request.keys():  # every other key of the base is still there
        delta["same"] = SAME_ALL
    elif same:
        delta["same"] = same


def line_meta(
    seconds: float,
    recorded_at: str,
    request: dict[str, Any],
    response: Any,
    extra: dict[str, Any] | None,
) -> dict[str, Any]:
    """The ``meta`` of an interaction line: latency, end time, the model that answered
    where it differs from the one asked for, and ``extra`` (a stream's usage)."""
    ms = round(seconds * 1e6) / 1000  # (to the microsecond, as round(x, 3) but cheaper)
    meta: dict[str, Any] = {"latency_ms": ms, "recorded_at": recorded_at}
    answered = response.get("model") if isinstance(response, dict) else None
    if answered is not None and answered != request.get("model"):
        meta["model"] = answered
    if extra:
        meta.update(extra)
    return meta
