"""The ``interactions`` table of ``cassette export``, built column by column.

A cassette stores most requests as deltas of the one before; the table holds each full
request as JSON text. Here that text is assembled from bytes: each message is dumped to
JSON once, when it first appears in its (env_index, channel), and a request's message
list is the join of its messages' bytes (the ``keep`` messages a delta shares with its
base are reused as bytes); the other top-level keys are dumped once per change.

The rows come from a lean :class:`~cassette.storage.index.Index` (each line's bytes,
its response checked as it was loaded), which warns about or refuses what it must;
each line is decoded once.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from ..errors import CassetteFormatError, CassetteWarning
from ..format.canonical import conversation_field
from ..format.delta import LIT_KEY, SAME_ALL, _resolve, is_ref
from ..storage.index import Entry, Index, reason_of, warn_left_out
from ..types import Json
from .export_table import Rows

__all__ = ["interaction_rows"]


@dataclass(slots=True)
class _Request:
    """A full request as JSON bytes: ``head`` + ``[`` messages ``]`` + ``tail``, where
    ``parts`` are the JSON of each message of ``field``; the other top-level keys are
    ``rest``. A request without a message list is ``whole`` alone."""

    field: str | None
    parts: list[bytes]
    rest: dict[str, Any]
    head: bytes
    tail: bytes
    whole: bytes = b""

    def json(self) -> bytes:
        if self.field is None:
            return self.whole
        return b"".join((self.head, b"[", b",".join(self.parts), b"]", self.tail))


def _template(request: dict[str, Any], fld: str) -> tuple[bytes, bytes]:
    """The JSON of ``request`` before and after the value of ``fld``, in its key order."""
    keys = list(request)
    at = keys.index(fld) if fld in request else len(keys)
    before = orjson.dumps({k: request[k] for k in keys[:at]})
    after = orjson.dumps({k: request[k] for k in keys[at + 1 :]})
    head = before[:-1] + (b',"' if at else b'"') + orjson.dumps(fld)[1:] + b":"
    tail = b"," + after[1:] if len(after) > 2 else b"}"
    return head, tail


def _whole(request: dict[str, Any]) -> _Request:
    """A request as written (no delta), or as rebuilt by the index."""
    fld = conversation_field(request)
    if fld is None:
        return _Request(None, [], {}, b"", b"", orjson.dumps(request))
    rest = {k: v for k, v in request.items() if k != fld}
    head, tail = _template(request, fld)
    return _Request(fld, [orjson.dumps(m) for m in request[fld]], rest, head, tail)


def _delta(request: Json, delta: Json, base: _Request, response: Any) -> _Request | None:
    """The request of a delta line (stored ``request``) built on its base's bytes, where
    ``response`` is the base's; None where the line is not of the usual shape (the caller
    rebuilds it the general way, which names any fault)."""
    fld = delta.get("field", "messages")
    stored = request.get(fld)
    keep = delta.get("keep", 0)
    if base.field != fld or not isinstance(stored, list) or keep > len(base.parts):
        return None
    parts = base.parts[:keep]
    for msg in stored:
        if is_ref(msg):
            try:
                msg = _resolve(msg, response)
            except (KeyError, IndexError, TypeError):
                return None
        elif isinstance(msg, dict) and len(msg) == 1 and LIT_KEY in msg:
            msg = msg[LIT_KEY]
        parts.append(orjson.dumps(msg))
    same = delta.get("same", ())
    if same == SAME_ALL and len(request) == 1:  # the usual case: only messages
        return _Request(fld, parts, base.rest, base.head, base.tail)
    if same == SAME_ALL:
        rest = dict(base.rest)
    else:
        rest = {k: base.rest[k] for k in same if isinstance(k, str) and k in base.rest}
    rest.update((k, v) for k, v in request.items() if k != fld)
    head, tail = _template(rest, fld)
    return _Request(fld, parts, rest, head, tail)


def _requests(index: Index) -> Iterator[tuple[Entry, Json, _Request]]:
    """Every entry that can be served, with its line (decoded once) and its full request
    as bytes, in file order, as :meth:`Index.iter_full` rebuilds them (and leaves out
    the same lines, warning)."""
    pending: dict[Entry, tuple[_Request, Any]] = {}  # (request, response) of a base to be
    for entry in index.entries.values():
        if entry.broken is not None:  # found on load, and warned about then
            continue
        line, delta, built = entry.decoded(), entry.delta, None
        if delta is None:
            built = _whole(line["request"])
        elif entry.base is not None and (base := pending.pop(entry.base, None)) is not None:
            built = _delta(line["request"], delta, *base)
        if built is None:  # a base served twice, a damaged line: the general way
            try:
                built = _whole(entry.full_request())
            except CassetteFormatError as exc:
                entry.broken = exc
                warn_left_out(entry, exc, stacklevel=3)
                continue
        pending[entry] = (built, line.get("response"))
        yield entry, line, built


def interaction_rows(index: Index) -> Rows:
    """One row per interaction of ``index`` that can be served, in file order."""
    rows = Rows()
    rows.headers, rows.outcomes = index.headers, index.outcomes
    for env in index.episodes():  # (in the index's order; counted below)
        rows.steps[env] = 0
    for entry, line, built in _requests(index):
        try:
            entry.check()  # its meta.checksum: a damaged response is never exported
        except CassetteFormatError as exc:
            warnings.warn(
                f"{entry.source}:{entry.line}: left out of the export: {reason_of(exc)}",
                CassetteWarning,
                stacklevel=2,
            )
            continue
        rows.add(
            entry.env_index,
            entry.channel,
            entry.step,
            entry.sha,
            built.json(),
            built.rest.get("model"),
            line.get("response"),
            line.get("error"),
            line.get("meta") or {},
        )
    return rows
