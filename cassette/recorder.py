"""Turns finished calls into lines (delta-encoded, redacted) and hands them to a Writer.

The recorder keeps, per (env_index, channel), the previous request's messages exactly as
a reader will rebuild them (it decodes what it just wrote), so the delta of the next
line is always relative to what is on disk.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from ._format import FORMAT, VERSION
from ._version import __version__
from .codec import decode_messages, dumps, encode_messages, loads
from .errors import CassetteError
from .redact import Redactor
from .store import Writer

__all__ = ["Recorder", "header_line", "now_iso"]


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def header_line(meta: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "type": "header",
        "format": FORMAT,
        "version": VERSION,
        "created_at": now_iso(),
        "producer": f"rollout-cassette/{__version__}",
        "meta": dict(meta or {}),
    }


def _message_field(request: dict[str, Any]) -> str | None:
    if isinstance(request.get("messages"), list):
        return "messages"
    if isinstance(request.get("input"), list):
        return "input"
    return None


@dataclass
class _Base:
    step: int
    field: str
    messages: list[Any]
    rest: dict[str, Any]  # the other top-level keys of the request, as a reader rebuilds them
    response: dict[str, Any] | None


class Recorder:
    """Writes header, interaction and outcome lines to one writer, one whole line each."""

    def __init__(self, writer: Writer, redactor: Redactor, *, delta: bool = True) -> None:
        self.writer = writer
        self.redactor = redactor
        self.delta = delta
        self.redacted = 0  # replacements made so far (for reports)
        self._bases: dict[tuple[Any, str], _Base] = {}
        self._lock = threading.Lock()

    def _emit(self, line: dict[str, Any]) -> bytes:
        raw = dumps(line)
        if self.redactor.hits(raw):
            scrubbed, count = self.redactor.redact(line)
            if count:
                self.redacted += count
                if scrubbed.get("type") == "interaction":
                    scrubbed["meta"] = {**scrubbed.get("meta", {}), "redacted": count}
                raw = dumps(scrubbed)
        self.writer.write(raw)
        return raw

    def header(self, meta: dict[str, Any] | None = None) -> None:
        with self._lock:
            self._emit(header_line(meta))

    def outcome(self, line: dict[str, Any]) -> None:
        with self._lock:
            self._emit(line)

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
    ) -> None:
        try:
            stored: dict[str, Any] = request
            delta: dict[str, Any] | None = None
            fld = _message_field(request) if self.delta else None
            with self._lock:
                base = self._bases.get((env_index, channel))
                if fld is not None and base is not None and base.field == fld:
                    new, keep = encode_messages(request[fld], base.messages, base.response)
                    delta = {"base": base.step, "keep": keep}
                    if fld != "messages":
                        delta["field"] = fld
                    stored = {fld: new}
                    same = []
                    for key, value in request.items():
                        if key == fld:
                            continue
                        big = isinstance(value, (dict, list)) and value
                        if big and base.rest.get(key) == value:
                            same.append(key)
                        else:
                            stored[key] = value
                    if same:
                        delta["same"] = same
                line: dict[str, Any] = {
                    "type": "interaction",
                    "env_index": env_index,
                    "channel": channel,
                    "step": step,
                }
                if delta is not None:
                    line["delta"] = delta
                line["request"] = stored
                line["request_sha256"] = sha
                line["response"] = response
                line["error"] = error
                line["meta"] = meta
                raw = self._emit(line)
                if fld is None:
                    self._bases.pop((env_index, channel), None)
                    return
                # the reader's view of what was written is the base of the next delta
                written = loads(raw)
                rest = written["request"]
                msgs = rest.pop(fld)
                if delta is not None and base is not None:
                    msgs = decode_messages(
                        msgs, delta["keep"], base.messages, base.response, CassetteError
                    )
                    for key in delta.get("same", ()):
                        rest[key] = base.rest[key]
                self._bases[(env_index, channel)] = _Base(
                    step, fld, msgs, rest, written["response"]
                )
        except TypeError as exc:
            raise CassetteError(
                f"cannot record step {step} of ({env_index!r}, {channel!r}): {exc}; the "
                "adapter must pass JSON-able request and response dicts"
            ) from None
