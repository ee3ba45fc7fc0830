"""The ``interactions`` table of ``cassette export``, built column by column.

A cassette stores most requests as deltas of the one before; the table holds each full
request as JSON text. Here that text is assembled from bytes: each message is dumped to
JSON once, when it first appears in its (env_index, channel), and a request's message
list is the join of its messages' bytes (the ``keep`` messages a delta shares with its
base are reused as bytes); the other top-level keys are dumped once per change.

:func:`stream_rows` reads the files line by line and keeps only the previous request of
each (env_index, channel): no index, no entry objects. It gives up (None) on anything
unusual (a key recorded twice, a delta whose base is not the line before, a damaged
line, an eval-protocol file), and :func:`interaction_rows` then builds the same rows from
a loaded :class:`~cassette.storage.index.Index`, which warns about or refuses what it must.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from ..errors import CassetteFormatError, CassetteWarning, reporting_paths
from ..format.canonical import conversation_field
from ..format.delta import LIT_KEY, SAME_ALL, _resolve, is_ref
from ..storage.index import Entry, Index, reason_of, warn_left_out
from ..storage.reader import Reader
from ..storage.store import shard_files
from ..types import EnvIndex
from .export_table import Rows

__all__ = ["interaction_rows", "stream_rows"]


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


def _delta(
    request: dict[str, Any], delta: dict[str, Any], base: _Request, response: Any
) -> _Request | None:
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


def _requests(index: Index) -> Iterator[tuple[Entry, _Request]]:
    """Every entry that can be served with its full request as bytes, in file order, as
    :meth:`Index.iter_full` rebuilds them (and leaves out the same lines, warning)."""
    pending: dict[Entry, _Request] = {}  # a request's bytes until a delta builds on them
    for entry in index.entries.values():
        if entry.broken is not None:  # found on load, and warned about then
            continue
        built = None
        delta = entry.delta
        if delta is None:
            built = _whole(entry.request)
        elif entry.base is not None and (base := pending.pop(entry.base, None)) is not None:
            built = _delta(entry.request, delta, base, entry.base.response)
        if built is None:  # a base served twice, a damaged line: the general way
            try:
                built = _whole(entry.full_request())
            except CassetteFormatError as exc:
                entry.broken = exc
                warn_left_out(entry, exc, stacklevel=3)
                continue
        pending[entry] = built
        yield entry, built


def interaction_rows(index: Index) -> Rows:
    """One row per interaction of ``index`` that can be served, in file order."""
    rows = Rows()
    rows.headers, rows.outcomes = index.headers, index.outcomes
    for env in index.episodes():  # (in the index's order; counted below)
        rows.steps[env] = 0
    for entry, built in _requests(index):
        try:
            entry.check()  # its meta.checksum: a damaged response is never exported
        except CassetteFormatError as exc:
            warnings.warn(
                f"{entry.source}:{entry.line}: left out of the export: {reason_of(exc)}",
                CassetteWarning,
                stacklevel=2,
            )
            continue
        response, error = entry.served()  # (a lean line: one decode for both)
        rows.add(
            entry.env_index,
            entry.channel,
            entry.step,
            entry.sha,
            built.json(),
            built.rest.get("model"),
            response,
            error,
            entry.meta,
        )
    return rows


class _GiveUp(Exception):
    """The stream holds something the index must judge."""


@dataclass(slots=True)
class _Last:
    """The previous interaction of one (env_index, channel) in the file being read."""

    step: int
    built: _Request
    response: Any


@reporting_paths
def stream_rows(src: Path) -> Rows | None:
    """The rows of the cassette ``src`` (a file or a shard directory) read line by line,
    or None where it holds anything but whole, well-formed lines of unique keys whose
    deltas build on the line before (see the module docstring). What the reader would
    warn of (a line cut short), the index path warns of."""
    rows = Rows()
    keys: set[tuple[type, EnvIndex, str, int]] = set()  # across the files of a directory
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CassetteWarning)
        try:
            for path in shard_files(src) if src.is_dir() else [src]:
                _stream_file(path, rows, keys)
        except (_GiveUp, CassetteFormatError):  # the index path says what is wrong
            return None
    return None if caught else rows


def _stream_file(path: Path, rows: Rows, keys: set[tuple[type, EnvIndex, str, int]]) -> None:
    reader = Reader(path, lean=True)
    last: dict[tuple[type, EnvIndex, str], _Last] = {}  # deltas build within one file
    for _, record in reader:
        if not isinstance(record, Entry):
            if record["type"] == "outcome":
                rows.outcomes[record["env_index"]] = record
            else:
                rows.headers.append(record)
            continue
        env, channel, step = record.key
        key = (type(env), env, channel, step)
        if reader.eval_protocol or record.broken is not None or key in keys:
            raise _GiveUp
        keys.add(key)
        record.check()  # (a damaged line: the index path leaves it out, warning)
        record.base = None  # (a delta builds on the line before: no chain is kept)
        line, delta = record.decoded(), record.delta
        if delta is None:
            built: _Request | None = _whole(line["request"])
        else:
            prev = last.get(key[:3])
            ok = prev is not None and prev.step == delta["base"]
            built = _delta(line["request"], delta, prev.built, prev.response) if ok else None  # type: ignore[union-attr]
        if built is None:
            raise _GiveUp
        response, error, meta = line.get("response"), line.get("error"), line.get("meta") or {}
        last[key[:3]] = _Last(step, built, response)
        model = built.rest.get("model")
        rows.add(env, channel, step, record.sha, built.json(), model, response, error, meta)
