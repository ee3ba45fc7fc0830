"""The rows of ``cassette export``'s interactions table, gathered with as little work a
row as can be: repeated values (episode, channel, model) are kept as small ints and
expanded when the table is made; JSON texts go into growing buffers
(:class:`~cassette.export_arrays.TextColumn`); rare ones (errors, stream chunks) are
kept only where present.
"""

from __future__ import annotations

import itertools
from array import array
from collections import Counter
from typing import Any

import orjson

from .export_arrays import TextColumn, number_array, text_array
from .index import EnvIndex

__all__ = ["COLUMNS", "Rows"]

# the columns of the interactions table, in order
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


class _Sparse:
    """A text column null in most rows: the rows that hold a value, and the values."""

    __slots__ = ("rows", "values")

    def __init__(self) -> None:
        self.rows: list[int] = []
        self.values: list[bytes] = []

    def array(self, pa: Any, count: int) -> Any:
        if not self.rows:
            return pa.nulls(count, type=pa.string())
        sizes = [0] * count
        bits = bytearray((count + 7) // 8)
        for row, value in zip(self.rows, self.values, strict=True):
            sizes[row] = len(value)
            bits[row >> 3] |= 1 << (row & 7)
        return _from_parts(pa, count, b"".join(self.values), sizes, bits, count - len(self.rows))


def _from_parts(
    pa: Any, count: int, data: bytes, sizes: list[int], bits: bytearray | None, nulls: int
) -> Any:
    """A string array of ``count`` values: ``data`` cut in ``sizes``; null where the bit
    of ``bits`` is not set."""
    wide = len(data) > (1 << 31) - 1
    offsets = array("q" if wide else "i", [0])
    offsets.extend(itertools.accumulate(sizes))
    validity = pa.py_buffer(bits) if bits is not None else None
    typ = pa.large_string() if wide else pa.string()
    buffers = [validity, pa.py_buffer(offsets), pa.py_buffer(data)]
    return pa.Array.from_buffers(typ, count, buffers, null_count=nulls)


def _repeated(pa: Any, texts: list[bytes], ids: list[int | None]) -> Any:
    """The string array whose row i is ``texts[ids[i]]`` (null where ``ids[i]`` is None),
    joined in C (no per-row Python, no Arrow compute module to load)."""
    count = len(ids)
    bits = None
    nulls = ids.count(None)
    if nulls:
        bits = bytearray((count + 7) // 8)
        for i, index in enumerate(ids):
            if index is not None:
                bits[i >> 3] |= 1 << (i & 7)
    table = dict(enumerate(texts))
    table[None] = b""  # type: ignore[index]
    values = list(map(table.__getitem__, ids))  # type: ignore[arg-type]
    return _from_parts(pa, count, b"".join(values), list(map(len, values)), bits, nulls)


class Rows:
    """The interactions table being gathered, one :meth:`add` a row, with the step count
    of each episode, the header lines and the outcomes (as the index holds them)."""

    def __init__(self) -> None:
        self.headers: list[dict[str, Any]] = []
        self.outcomes: dict[EnvIndex, dict[str, Any]] = {}
        self.steps: Counter[EnvIndex] = Counter()
        self._slots: dict[tuple[type, EnvIndex, str], int] = {}  # (env_index, channel)
        self._models: dict[str, int] = {}
        self.slot: list[int] = []
        self.step: list[int] = []
        self.sha: list[str | None] = []
        self.model: list[int | None] = []
        self.latency: list[float | None] = []
        self.request, self.response, self.usage, self.meta = (TextColumn() for _ in range(4))
        self.chunks, self.error = _Sparse(), _Sparse()

    def __len__(self) -> int:
        return len(self.slot)

    def episodes(self) -> list[EnvIndex]:
        """As :meth:`Index.episodes`: in order of first appearance, then outcome-only."""
        seen = dict.fromkeys(self.steps)
        seen.update(dict.fromkeys(self.outcomes))
        return list(seen)

    def add(
        self,
        env: EnvIndex,
        channel: str,
        step: int,
        sha: str | None,
        request: bytes,
        model: Any,
        response: dict[str, Any] | None,
        error: dict[str, Any] | None,
        meta: dict[str, Any],
    ) -> None:
        dumps = orjson.dumps
        row = len(self.slot)
        key = (type(env), env, channel)
        slot = self._slots.get(key)
        if slot is None:
            slot = self._slots[key] = len(self._slots)
        self.slot.append(slot)
        self.step.append(step)
        self.sha.append(sha)
        if isinstance(model, str):
            index = self._models.get(model)
            if index is None:
                index = self._models[model] = len(self._models)
            self.model.append(index)
        else:
            self.model.append(None)
        col = self.request  # (TextColumn.add inlined where a value is always there)
        buf = col.buf
        buf += request
        col.ends.append(len(buf))
        if response is not None and isinstance(response.get("chunks"), list):
            self.chunks.rows.append(row)
            self.chunks.values.append(dumps(response["chunks"]))
            response = {k: v for k, v in response.items() if k != "chunks"}
        if error is not None:
            self.error.rows.append(row)
            self.error.values.append(dumps(error))
        if response is None:
            self.response.add(None)
            usage = meta.get("usage")
        else:
            self.response.add(dumps(response))
            usage = response.get("usage") or meta.get("usage")
        self.usage.add(None if usage is None else dumps(usage))
        latency = meta.get("latency_ms")
        ok = isinstance(latency, (int, float)) and not isinstance(latency, bool)
        self.latency.append(float(latency) if ok else None)  # type: ignore[arg-type]
        col = self.meta
        buf = col.buf
        buf += dumps(meta)
        col.ends.append(len(buf))
        self.steps[env] += 1

    def table(self, pa: Any, metadata: dict[bytes, bytes]) -> Any:
        """The rows as an Arrow table (the columns of :data:`COLUMNS`)."""
        count = len(self)
        keys = list(self._slots)
        slots: list[int | None] = self.slot  # type: ignore[assignment]
        columns = {
            "seq": number_array(pa, list(range(count)), "q"),
            "env_index": _repeated(pa, [str(k[1]).encode() for k in keys], slots),
            "env_index_json": _repeated(pa, [orjson.dumps(k[1]) for k in keys], slots),
            "channel": _repeated(pa, [k[2].encode() for k in keys], slots),
            "step": number_array(pa, self.step, "q"),
            "request_sha256": _ascii(pa, self.sha),
            "model": _repeated(pa, [m.encode() for m in self._models], self.model),
            "request": self.request.array(pa),
            "response": self.response.array(pa),
            "stream_chunks": self.chunks.array(pa, count),
            "error": self.error.array(pa, count),
            "usage": self.usage.array(pa),
            "latency_ms": number_array(pa, self.latency, "d"),
            "meta": self.meta.array(pa),
        }
        return pa.Table.from_arrays(list(columns.values()), names=list(columns), metadata=metadata)


def _ascii(pa: Any, values: list[str | None]) -> Any:
    """A string array of equal-length ASCII ``values`` (hashes) from one join; any other
    list the general way."""
    width = len(values[0]) if values and values[0] is not None else 0
    same = width and None not in values and all(len(v) == width for v in values)  # type: ignore[arg-type]
    data = "".join(values).encode() if same else b""  # type: ignore[arg-type]
    if not same or len(data) != width * len(values):
        return text_array(pa, [None if v is None else v.encode() for v in values])
    column = TextColumn()
    column.buf = bytearray(data)
    column.ends.fromlist(list(range(width, len(data) + 1, width)))
    return column.array(pa)
