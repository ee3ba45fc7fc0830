"""Turns finished calls into lines (delta-encoded, redacted) and hands them to a Writer.

Per (env_index, channel) the recorder keeps the previous request as JSON bytes taken
when its line was written (so a caller that edits its messages in place afterwards
cannot skew the next delta): the message list, each other top-level key, and the
response objects that the next request may repeat. A request that extends the previous
one is recognised by one byte-prefix test.

Deltas are taken against what the caller sent, not against the scrubbed line: a secret
in message 3 is scrubbed once, on the line that first holds it, and later lines keep
message 3 by reference (a reader rebuilds it scrubbed), so size stays linear.
"""

from __future__ import annotations

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
from .store import Writer

__all__ = ["BASES", "Recorder", "header_line", "line_meta", "now_iso"]

# (env_index, channel) keys whose previous request is kept as a delta base: memory stays
# bounded however many episodes a recording holds; more run at once than this is rare
BASES = 1024

_META_KEY = b',"meta":'


def now_iso() -> str:
    """UTC now as ISO-8601 with milliseconds, e.g. ``2026-11-29T20:19:39.788Z``."""
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1000):03d}Z"


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

    def _emit(self, line: dict[str, Any]) -> None:
        """Write a header or outcome line (interactions: :meth:`_emit_interaction`)."""
        raw = dumps(line)
        clean, count = self.redactor.redact_line(line, raw, dumps)
        if count:
            self.redacted += count
            raw = dumps(clean)
        self.writer.write(raw)

    def _emit_interaction(
        self,
        line: dict[str, Any],
        response: dict[str, Any] | None,
        error: dict[str, Any] | None,
        meta: dict[str, Any],
    ) -> None:
        """Write an interaction line: ``line`` (its keys up to ``request_sha256``) with
        ``response``, ``error`` (if any) and ``meta``. The checksum of a line without an
        error is the CRC of the response's bytes as the line holds them (found after the
        request's hash, which the request itself cannot hold, and before ``meta``); a line
        with an error, or that redaction changes, is checksummed by dumping again."""
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
            self._emit(header_line(meta))

    def outcome(self, line: dict[str, Any]) -> None:
        with self._lock:
            self._emit(line)
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
        try:
            fld = conversation_field(request) if self.delta else None
            snapshot: _Base | None = None
            if fld is not None:  # taken now: the caller may edit its request later
                messages = request[fld]
                rest = dumps({k: v for k, v in request.items() if k != fld})
                base_of = MessageBase.of(messages, response, conversation)
                snapshot = _Base(step, fld, base_of, rest)
            line: dict[str, Any] = {
                "type": "interaction",
                "env_index": env_index,
                "channel": channel,
                "step": step,
            }
            with self._lock:
                base = self._bases.pop((env_index, channel), None)
                if snapshot is None or base is None or base.field != snapshot.field:
                    line["request"] = request
                else:
                    line["delta"], line["request"] = _delta(request, snapshot, base)
                line["request_sha256"] = sha
                self._emit_interaction(line, response, error, meta)
                self.written += 1
                if snapshot is not None:  # kept last: the dict's order is least recent first
                    self._bases[(env_index, channel)] = snapshot
                    if len(self._bases) > BASES:  # an episode that long idle is written whole
                        del self._bases[next(iter(self._bases))]
        except TypeError as exc:
            raise CassetteError(
                f"cannot record step {step} of ({env_index!r}, {channel!r}): {exc}; the "
                "adapter must pass JSON-able request and response dicts"
            ) from None


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
        return delta, stored
    old = loads(base.rest)
    equal = {k for k, v in old.items() if k in request and dumps(request[k]) == dumps(v)}
    keys = [k for k in request if k != fld]
    stored.update((k, request[k]) for k in keys if k not in equal)
    if old.keys() <= set(keys):  # every other key of the base is still there
        delta["same"] = SAME_ALL
    elif equal:
        delta["same"] = [k for k in keys if k in equal]
    return delta, stored


def line_meta(
    seconds: float,
    recorded_at: str,
    request: dict[str, Any],
    response: Any,
    extra: dict[str, Any] | None,
) -> dict[str, Any]:
    """The ``meta`` of an interaction line for a call that took ``seconds`` and ended at
    ``recorded_at`` (:func:`now_iso`). What the request and response already hold is not
    repeated: ``model`` is the model that answered where it differs from the one asked
    for; ``extra`` (a stream's ``usage``, ``incomplete``) is added."""
    meta: dict[str, Any] = {"latency_ms": round(seconds * 1000, 3), "recorded_at": recorded_at}
    answered = response.get("model") if isinstance(response, dict) else None
    if answered is not None and answered != request.get("model"):
        meta["model"] = answered
    if extra:
        meta.update(extra)
    return meta
