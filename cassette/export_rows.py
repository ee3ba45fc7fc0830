"""The ``interactions`` table of ``cassette export``, built column by column.

A cassette stores most requests as deltas of the one before; the table holds each full
request as JSON text. Here that text is assembled from bytes: each message is dumped to
JSON once, when it first appears in its (env_index, channel), and a request's message
list is the join of its messages' bytes (the ``keep`` messages a delta shares with its
base are the base's very objects, so their bytes are reused); the other top-level keys
are dumped once per change. Columns are kept as Python lists of bytes and turned into
Arrow arrays by :func:`text_array` (one join and an offsets buffer, no per-value
conversion).
"""

from __future__ import annotations

import itertools
import warnings
from array import array
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from .canonical import conversation_field
from .delta import LIT_KEY, REF_KEY, SAME_ALL
from .errors import CassetteFormatError, CassetteWarning
from .index import Entry, EnvIndex, Index

__all__ = ["COLUMNS", "Rows", "interaction_rows", "number_array", "text_array"]

# the columns of the interactions table, in order; every other one holds JSON or text
COLUMNS = (
    "seq",
    "env_index",
    "env_index_json",
    "channel",
    "step",
    "request_sha256",
    "model",
    "request",
    "response",
    "stream_chunks",
    "error",
    "usage",
    "latency_ms",
    "meta",
)
_LIMIT = 1 << 30  # bytes of one Arrow string chunk (its offsets are 32-bit)


@dataclass
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


def _resolve(ref: dict[str, Any], response: Any) -> Any:
    node = response
    for part in ref[REF_KEY]:
        node = node[part]
    if not isinstance(node, dict):
        raise TypeError("not an object")
    omit = ref.get("omit") or ()
    return {k: v for k, v in node.items() if k not in omit}


def _delta(entry: Entry, delta: dict[str, Any], base: _Request) -> _Request | None:
    """The request of a delta line built on its base's bytes; None where the line is not
    of the usual shape (the caller rebuilds it the general way, which names any fault)."""
    fld = delta.get("field", "messages")
    stored = entry.request.get(fld)
    keep = delta.get("keep", 0)
    if base.field != fld or not isinstance(stored, list) or keep > len(base.parts):
        return None
    parts = base.parts[:keep]
    response = entry.base.response if entry.base is not None else None
    for msg in stored:
        if isinstance(msg, dict) and REF_KEY in msg and len(msg) <= 2:
            try:
                msg = _resolve(msg, response)
            except (KeyError, IndexError, TypeError):
                return None
        elif isinstance(msg, dict) and len(msg) == 1 and LIT_KEY in msg:
            msg = msg[LIT_KEY]
        parts.append(orjson.dumps(msg))
    same = delta.get("same", ())
    if same == SAME_ALL and len(entry.request) == 1:  # the usual case: only messages
        return _Request(fld, parts, base.rest, base.head, base.tail)
    if same == SAME_ALL:
        rest = dict(base.rest)
    else:
        rest = {k: base.rest[k] for k in same if isinstance(k, str) and k in base.rest}
    rest.update((k, v) for k, v in entry.request.items() if k != fld)
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
            built = _delta(entry, delta, base)
        if built is None:  # a base served twice, a damaged line: the general way
            try:
                built = _whole(entry.full_request())
            except CassetteFormatError as exc:
                entry.broken = exc
                warnings.warn(
                    f"{entry.source}:{entry.line}: left out, its request cannot be rebuilt "
                    f"({_why(exc)}); run `cassette validate {entry.source}`",
                    CassetteWarning,
                    stacklevel=3,
                )
                continue
        pending[entry] = built
        yield entry, built


def _why(exc: CassetteFormatError) -> str:
    text = str(exc)
    return text.removeprefix(f"{exc.path}:{exc.line}: ").split("; run `cassette validate")[0]


@dataclass
class Rows:
    """The interactions table as columns (lists of the same length) and step counts."""

    columns: dict[str, list[Any]]
    steps: Counter[EnvIndex]


def interaction_rows(index: Index) -> Rows:
    """One row per interaction of ``index`` that can be served, in file order."""
    cols: dict[str, list[Any]] = {name: [] for name in COLUMNS}
    steps: Counter[EnvIndex] = Counter()
    envs: dict[tuple[type, EnvIndex], tuple[bytes, bytes]] = {}
    channels: dict[str, bytes] = {}
    dumps = orjson.dumps
    (
        seq_,
        env_,
        env_json,
        channel_,
        step_,
        sha_,
        model_,
        request_,
        response_,
        chunks_,
        error_,
        usage_,
        latency_,
        meta_,
    ) = (cols[name].append for name in COLUMNS)
    for seq, (entry, built) in enumerate(_requests(index)):
        env = entry.env_index
        names = envs.get((type(env), env))
        if names is None:
            names = envs[(type(env), env)] = (str(env).encode(), dumps(env))
        channel = channels.get(entry.channel)
        if channel is None:
            channel = channels[entry.channel] = entry.channel.encode()
        response = entry.response
        chunks = None
        if response is not None and isinstance(response.get("chunks"), list):
            chunks = dumps(response["chunks"])
            response = {k: v for k, v in response.items() if k != "chunks"}
        meta = entry.meta
        usage = (response or {}).get("usage") or meta.get("usage")
        latency = meta.get("latency_ms")
        model = built.rest.get("model")
        seq_(seq)
        env_(names[0])
        env_json(names[1])
        channel_(channel)
        step_(entry.step)
        sha_(entry.sha.encode() if entry.sha is not None else None)
        model_(model.encode() if isinstance(model, str) else None)
        request_(built.json())
        response_(None if response is None else dumps(response))
        chunks_(chunks)
        error_(None if entry.error is None else dumps(entry.error))
        usage_(None if usage is None else dumps(usage))
        if isinstance(latency, (int, float)) and not isinstance(latency, bool):
            latency_(float(latency))
        else:
            latency_(None)
        meta_(dumps(meta))
        steps[env] += 1
    return Rows(cols, steps)


def _validity(pa: Any, values: list[Any]) -> Any:
    """The validity bitmap of ``values`` (a bit a value, set where it is not None)."""
    bits = bytearray((len(values) + 7) // 8)
    for i, value in enumerate(values):
        if value is not None:
            bits[i >> 3] |= 1 << (i & 7)
    return pa.py_buffer(bits)


def number_array(pa: Any, values: list[Any], kind: str) -> Any:
    """An int64 (``kind`` "q"), float64 ("d") or bool ("?") array of ``values`` (None:
    null), from buffers: ``pa.array`` of a list would import pandas, a second or so."""
    count, nulls = len(values), values.count(None)
    validity = _validity(pa, values) if nulls else None
    if kind == "?":
        flags = [bool(v) for v in values]
        return pa.Array.from_buffers(
            pa.bool_(), count, [validity, pa.py_buffer(_bits(flags))], null_count=nulls
        )
    data = array(kind, [0 if v is None else v for v in values] if nulls else values)
    typ = pa.int64() if kind == "q" else pa.float64()
    return pa.Array.from_buffers(typ, count, [validity, pa.py_buffer(data)], null_count=nulls)


def _bits(flags: list[bool]) -> bytearray:
    bits = bytearray((len(flags) + 7) // 8)
    for i, flag in enumerate(flags):
        if flag:
            bits[i >> 3] |= 1 << (i & 7)
    return bits


def text_array(pa: Any, values: list[bytes | None]) -> Any:
    """A string array of UTF-8 ``values`` (None: null), from one joined buffer and its
    offsets; chunked where a chunk's text would pass 1 GiB."""
    nulls = values.count(None)
    present: list[bytes] = [v or b"" for v in values] if nulls else values  # type: ignore[assignment]
    if sum(map(len, present)) <= _LIMIT:
        return _chunk(pa, values, present, nulls)
    chunks: list[Any] = []
    start = size = 0
    for i, value in enumerate(present):
        if size + len(value) > _LIMIT and i > start:
            part = values[start:i]
            chunks.append(_chunk(pa, part, present[start:i], part.count(None)))
            start, size = i, 0
        size += len(value)
    part = values[start:]
    chunks.append(_chunk(pa, part, present[start:], part.count(None)))
    return pa.chunked_array(chunks, type=pa.string())


def _chunk(pa: Any, values: list[bytes | None], present: list[bytes], nulls: int) -> Any:
    count = len(values)
    if nulls == count:
        return pa.nulls(count, type=pa.string())
    offsets = array("i", [0])
    offsets.extend(itertools.accumulate(map(len, present)))
    validity = _validity(pa, values) if nulls else None
    buffers = [validity, pa.py_buffer(offsets), pa.py_buffer(b"".join(present))]
    return pa.Array.from_buffers(pa.string(), count, buffers, null_count=nulls)
