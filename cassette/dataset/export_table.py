"""The rows of ``cassette export``'s interactions table (:class:`Rows`: repeated values as
small ints, JSON texts in growing buffers), and both tables' columns, declared once."""

from __future__ import annotations

import warnings
from collections import Counter
from typing import Any

import orjson

from ..errors import CassetteFormatError, CassetteWarning
from ..storage.index import Entry, Index, reason_of
from ..types import EnvIndex, Json
from .export_arrays import TextColumn, number_array, text_array
from .inspect import number

__all__ = ["EPISODES", "INTERACTIONS", "Rows", "interaction_rows", "json_bytes", "make_table"]

# name -> Arrow type (pyarrow's factory name), in order; make_table refuses any other
INTERACTIONS = {
    "seq": "int64",
    "env_index": "string",
    "env_index_json": "string",
    "channel": "string",
    "step": "int64",
    "request_sha256": "string",
    "model": "string",
    "request": "string",
    "response": "string",
    "stream_chunks": "string",
    "error": "string",
    "usage": "string",
    "latency_ms": "float64",
    "meta": "string",
}
EPISODES = {
    "env_index": "string",
    "env_index_json": "string",
    "reward": "float64",
    "terminated": "bool_",
    "info": "string",
    "steps": "int64",
    "has_outcome": "bool_",
    "run_id": "string",
}
_KINDS = {"int64": "q", "float64": "d", "bool_": "?"}  # array typecodes of numbers and flags


def make_table(
    pa: Any, columns: dict[str, str], values: dict[str, Any], metadata: dict[bytes, bytes]
) -> Any:
    """The table of ``columns`` from ``values`` (name -> an Arrow array, or a list)."""
    if list(values) != list(columns):
        raise TypeError(f"the columns {list(values)} are not the declared {list(columns)}")
    arrays = [_array(pa, name, columns[name], value) for name, value in values.items()]
    return pa.Table.from_arrays(arrays, names=list(columns), metadata=metadata)


def _array(pa: Any, name: str, typ: str, value: Any) -> Any:
    if isinstance(value, list):
        kind = _KINDS.get(typ)
        value = number_array(pa, value, kind) if kind else text_array(pa, value)
    declared = getattr(pa, typ)()
    if value.type != declared and not (typ == "string" and value.type == pa.large_string()):
        raise TypeError(f"column {name} is {value.type}, declared {declared}")
    return value


def _repeated(pa: Any, texts: list[bytes], ids: list[int | None]) -> Any:
    """The string array whose row i is ``texts[ids[i]]`` (null where ``ids[i]`` is None)."""
    return text_array(pa, [None if i is None else texts[i] for i in ids])


def json_bytes(value: Any) -> bytes | None:
    return None if value is None else orjson.dumps(value)


def _without_chunks(response: dict[str, Any] | None) -> tuple[dict[str, Any] | None, bytes | None]:
    """A streamed response without its ``chunks``, and those as JSON text (None: no stream)."""
    chunks = (response or {}).get("chunks")
    if response is None or not isinstance(chunks, list):
        return response, None
    return {k: v for k, v in response.items() if k != "chunks"}, orjson.dumps(chunks)


class Rows:
    """The interactions table being gathered, one :meth:`add` a row, with step counts,
    headers and outcomes."""

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
        self.chunks, self.error = TextColumn(), TextColumn()

    def __len__(self) -> int:
        return len(self.slot)

    def episodes(self) -> list[EnvIndex]:
        """As :meth:`Index.episodes`: in order of first appearance, then outcome-only."""
        seen = dict.fromkeys(self.steps)
        seen.update(dict.fromkeys(self.outcomes))
        return list(seen)

    def add(self, entry: Entry, full: Json) -> None:
        """One row: ``entry`` with its request rebuilt in ``full``."""
        line = entry.decoded()
        env, channel, model = entry.env_index, entry.channel, full.get("model")
        response, error, meta = line.get("response"), line.get("error"), line.get("meta") or {}
        key = (type(env), env, channel)
        self.slot.append(self._slots.setdefault(key, len(self._slots)))
        self.step.append(entry.step)
        self.sha.append(entry.sha)
        self.model.append(
            self._models.setdefault(model, len(self._models)) if isinstance(model, str) else None
        )
        self.request.add(orjson.dumps(full))
        response, chunks = _without_chunks(response)
        self.chunks.add(chunks)
        self.error.add(json_bytes(error))
        self.response.add(json_bytes(response))
        self.usage.add(json_bytes((response or {}).get("usage") or meta.get("usage")))
        self.latency.append(number(meta.get("latency_ms")))
        self.meta.add(orjson.dumps(meta))
        self.steps[env] += 1

    def table(self, pa: Any, metadata: dict[bytes, bytes]) -> Any:
        count = len(self)
        keys = list(self._slots)
        slots: list[int | None] = self.slot  # type: ignore[assignment]
        columns = {
            "seq": list(range(count)),
            "env_index": _repeated(pa, [str(k[1]).encode() for k in keys], slots),
            "env_index_json": _repeated(pa, [orjson.dumps(k[1]) for k in keys], slots),
            "channel": _repeated(pa, [k[2].encode() for k in keys], slots),
            "step": self.step,
            "request_sha256": text_array(pa, [None if v is None else v.encode() for v in self.sha]),
            "model": _repeated(pa, [m.encode() for m in self._models], self.model),
            "request": self.request.array(pa),
            "response": self.response.array(pa),
            "stream_chunks": self.chunks.array(pa),
            "error": self.error.array(pa),
            "usage": self.usage.array(pa),
            "latency_ms": self.latency,
            "meta": self.meta.array(pa),
        }
        return make_table(pa, INTERACTIONS, columns, metadata)


def interaction_rows(index: Index) -> Rows:
    """A row per servable interaction of the lean ``index`` (a damaged one left out, warned)."""
    rows = Rows()
    rows.headers, rows.outcomes = index.headers, index.outcomes
    for env in index.episodes():  # in the index's order
        rows.steps[env] = 0
    for entry, full in index.iter_full():
        try:
            entry.check()
        except CassetteFormatError as exc:
            warnings.warn(
                f"{entry.source}:{entry.line}: left out of the export: {reason_of(exc)}",
                CassetteWarning,
                stacklevel=2,
            )
            continue
        rows.add(entry, full)
    return rows
