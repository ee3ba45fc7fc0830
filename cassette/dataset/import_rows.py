"""The rows of a ``cassette export`` read back, checked before a line is written.

An export may come from elsewhere (a dataset downloaded from the Hub, a table edited in
pandas), so :func:`cassette.dataset.export.import_parquet` trusts none of it: each table must
hold the columns the import reads, of the types the export writes (nulls only where the
export writes them); each JSON text must parse to what the cassette format takes there,
a key (env_index, channel, step) may appear once, and the headers kept in the table's
metadata must be header lines. What is not raises a :class:`CassetteError` naming the
table, the row and the column, so no bad line reaches the cassette.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError

from ..errors import CassetteError
from ..format.checksum import CHECKSUM_KEY, checksum
from ..format.codec import NotJSONError
from ..format.models import ErrorInfo, Header

__all__ = [
    "ImportedCall",
    "ImportedOutcome",
    "checked_calls",
    "checked_headers",
    "checked_outcomes",
]

_AGAIN = "export the cassette again with `cassette export`"
_FIX = f"{_AGAIN}, or fix the row"

# column: (kind, may be null) as `cassette export` writes them
_CALLS = {
    "seq": ("int", False),
    "env_index_json": ("text", False),
    "channel": ("text", False),
    "step": ("int", False),
    "request_sha256": ("text", True),
    "request": ("text", False),
    "response": ("text", True),
    "stream_chunks": ("text", True),
    "error": ("text", True),
    "meta": ("text", True),
}
_EPISODES = {
    "env_index_json": ("text", False),
    "reward": ("number", True),
    "terminated": ("bool", True),
    "info": ("text", True),
    "has_outcome": ("bool", False),
}


@dataclass
class ImportedCall:
    env_index: int | str
    channel: str
    step: int
    request: dict[str, Any]
    sha: str | None
    response: dict[str, Any] | None
    error: dict[str, Any] | None
    meta: dict[str, Any]


@dataclass
class ImportedOutcome:
    env_index: int | str
    reward: float | None
    terminated: bool | None
    info: dict[str, Any]


def _kind_of(pa: Any, typ: Any) -> str:
    t = pa.types
    if t.is_null(typ):
        return "null"
    if t.is_integer(typ):
        return "int"
    if t.is_floating(typ):
        return "number"
    if t.is_boolean(typ):
        return "bool"
    if t.is_string(typ) or t.is_large_string(typ) or getattr(t, "is_string_view", bool)(typ):
        return "text"
    return str(typ)


def _check_schema(pa: Any, table: Any, name: str, columns: dict[str, tuple[str, bool]]) -> None:
    """Refuse a table that lacks a column, or holds one of another type."""
    missing = [c for c in columns if c not in table.column_names]
    if missing:
        raise CassetteError(
            f"{name} has no column {', '.join(missing)}: not a `cassette export` table; {_AGAIN}"
        )
    for column, (kind, nullable) in columns.items():
        got = _kind_of(pa, table.schema.field(column).type)
        fits = got == kind or (kind == "number" and got == "int") or (nullable and got == "null")
        if not fits:
            raise CassetteError(
                f"{name} column {column} holds {got} values, where `cassette export` writes "
                f"{kind}; {_AGAIN}"
            )


def _json(name: str, row: int, column: str, text: Any) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise CassetteError(f"{name} row {row}: {column} is not JSON ({exc}); {_FIX}") from None


def _typed(name: str, row: int, column: str, value: Any, want: type, what: str) -> Any:
    if value is None or isinstance(value, want):
        return value
    raise CassetteError(f"{name} row {row}: {column} is {type(value).__name__}, not {what}; {_FIX}")


def _env(name: str, row: int, text: str) -> int | str:
    env = _json(name, row, "env_index_json", text)
    if isinstance(env, bool) or not isinstance(env, int | str):
        raise CassetteError(
            f"{name} row {row}: env_index_json holds a {type(env).__name__}, not an int or "
            f"a string; {_FIX}"
        )
    return env


def _nulls(name: str, row: int, record: dict[str, Any], columns: dict[str, Any]) -> None:
    for column, (_, nullable) in columns.items():
        if record[column] is None and not nullable:
            raise CassetteError(f"{name} row {row}: {column} is null; {_FIX}")


def checked_calls(pa: Any, table: Any, src: Path) -> Iterator[ImportedCall]:
    """The interactions of the table ``interactions.parquet`` of ``src``, in recording
    order (its ``seq``), each checked."""
    name = f"{src / 'interactions.parquet'}"
    _check_schema(pa, table, name, _CALLS)
    records = table.select(list(_CALLS)).to_pylist()
    _check_nulls(name, records, _CALLS)
    seen: dict[tuple[Any, str, int], int] = {}
    for row, r in sorted(enumerate(records), key=lambda item: item[1]["seq"]):
        env = _env(name, row, r["env_index_json"])
        key = (env, r["channel"], r["step"])
        if r["step"] < 0:
            raise CassetteError(f"{name} row {row}: step is {r['step']}, below 0; {_FIX}")
        if key in seen:
            raise CassetteError(
                f"{name} row {row}: key (env_index={env!r}, channel={r['channel']!r}, "
                f"step={r['step']}) is in row {seen[key]} too; {_FIX}"
            )
        seen[key] = row
        sha = r["request_sha256"]
        if sha is not None and len(sha) != 64:  # (as readers check it; validate: hex)
            raise CassetteError(
                f"{name} row {row}: request_sha256 is not 64 characters (leave it null to "
                f"compute it); {_FIX}"
            )
        request = _json(name, row, "request", r["request"])
        _typed(name, row, "request", request, dict, "a JSON object")
        response = _parsed(name, row, r, "response", dict, "a JSON object or null")
        chunks = _parsed(name, row, r, "stream_chunks", list, "a JSON array or null")
        if chunks is not None:  # where a stream's response holds them: first
            response = {"chunks": chunks, **(response or {})}
        error = _parsed(name, row, r, "error", dict, "a JSON object or null")
        if error is not None:
            try:
                ErrorInfo.model_validate(error)
            except ValidationError as exc:
                why = exc.errors()[0]
                where = ".".join(str(p) for p in why["loc"])
                raise CassetteError(
                    f"{name} row {row}: error {where}: {why['msg']}; {_FIX}"
                ) from None
        meta = _parsed(name, row, r, "meta", dict, "a JSON object or null") or {}
        if CHECKSUM_KEY in meta:
            response = _as_recorded(name, row, meta[CHECKSUM_KEY], response, error)
        yield ImportedCall(env, r["channel"], r["step"], request, sha, response, error, meta)


def _as_recorded(name: str, row: int, want: Any, response: Any, error: Any) -> Any:
    """``response`` as it was recorded, its ``meta.checksum`` (``want``) verified: a
    response or error changed since (a damaged file, an edit) is refused, so the import
    never writes it with a new checksum that would let replay serve it."""
    tries = [response]
    if isinstance(response, dict) and "chunks" in response:  # (also with chunks last)
        tries.append({k: v for k, v in response.items() if k != "chunks"} | response)
    for made in tries:
        try:
            if checksum(made, error) == want:
                return made
        except NotJSONError:
            break
    raise CassetteError(
        f"{name} row {row}: response or error is not what was recorded (meta.checksum does "
        f"not match: the row was edited or damaged); {_FIX}"
    )


def _parsed(name: str, row: int, r: dict[str, Any], column: str, want: type, what: str) -> Any:
    text = r[column]
    value = None if text is None else _json(name, row, column, text)
    return _typed(name, row, column, value, want, what)


def _check_nulls(name: str, records: list[dict[str, Any]], columns: dict[str, Any]) -> None:
    for row, record in enumerate(records):
        _nulls(name, row, record, columns)


def checked_outcomes(pa: Any, table: Any, src: Path) -> Iterator[ImportedOutcome]:
    """The outcomes of the table ``episodes.parquet`` of ``src`` (its rows that have
    one), each checked."""
    name = f"{src / 'episodes.parquet'}"
    _check_schema(pa, table, name, _EPISODES)
    records = table.select(list(_EPISODES)).to_pylist()
    _check_nulls(name, records, _EPISODES)
    for row, r in enumerate(records):
        env = _env(name, row, r["env_index_json"])
        if not r["has_outcome"]:
            continue
        info = _parsed(name, row, r, "info", dict, "a JSON object or null") or {}
        yield ImportedOutcome(env, r["reward"], r["terminated"], info)


def checked_headers(metadata: dict[bytes, bytes] | None, key: bytes, src: Path) -> list[Any]:
    """The header lines kept in the interactions table's ``metadata`` under ``key``:
    none if it holds none; the ones that are not header lines are left out."""
    raw = (metadata or {}).get(key)
    if raw is None:
        return []
    try:
        headers = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise CassetteError(
            f"{src / 'interactions.parquet'}: its metadata {key.decode()} is not JSON "
            f"({exc}); {_AGAIN}"
        ) from None
    if not isinstance(headers, list):
        headers = []
    kept = []
    for head in headers:
        try:
            kept.append(Header.model_validate(head).model_dump())
        except ValidationError:
            continue
    return kept
