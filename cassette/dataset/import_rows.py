"""The rows of a ``cassette export`` read back and checked (it may come from the Hub or
pandas): what does not fit raises a :class:`CassetteError` naming table, row and column."""

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

__all__ = ["ImportedCall", "ImportedOutcome", "checked_calls", "checked_headers",
           "checked_outcomes"]  # fmt: skip

_NONE = object()
_AGAIN = "export the cassette again with `cassette export`"
_FIX = f"{_AGAIN}, or fix the row"

# column: (kind, may be null) as `cassette export` writes them
_CALLS = {
    "seq": ("int", False), "env_index_json": ("text", False), "channel": ("text", False),
    "step": ("int", False), "request_sha256": ("text", True), "request": ("text", False),
    "response": ("text", True), "stream_chunks": ("text", True), "error": ("text", True),
    "meta": ("text", True),
}  # fmt: skip
_EPISODES = {
    "env_index_json": ("text", False), "reward": ("number", True),
    "terminated": ("bool", True), "info": ("text", True), "has_outcome": ("bool", False),
}  # fmt: skip


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


def _fits(got: str, kind: str, nullable: bool) -> bool:
    return got == kind or (kind, got) == ("number", "int") or (nullable and got == "null")


def _kind_of(pa: Any, typ: Any) -> str:
    t = pa.types
    text = t.is_string(typ) or t.is_large_string(typ) or getattr(t, "is_string_view", bool)(typ)
    kinds = (("null", t.is_null), ("int", t.is_integer), ("number", t.is_floating),
             ("bool", t.is_boolean), ("text", lambda _: text))  # fmt: skip
    return next((kind for kind, test in kinds if test(typ)), str(typ))


def _check_schema(pa: Any, table: Any, name: str, columns: dict[str, tuple[str, bool]]) -> None:
    """Refuse a table that lacks a column, or holds one of another type."""
    missing = [c for c in columns if c not in table.column_names]
    if missing:
        raise CassetteError(
            f"{name} has no column {', '.join(missing)}: not a `cassette export` table; {_AGAIN}"
        )
    for column, (kind, nullable) in columns.items():
        got = _kind_of(pa, table.schema.field(column).type)
        if not _fits(got, kind, nullable):
            raise CassetteError(
                f"{name} column {column} holds {got} values, where `cassette export` writes "
                f"{kind}; {_AGAIN}"
            )


class _Row:
    """One row of a table, its faults raised as errors naming the table and the row."""

    def __init__(self, name: str, row: int, record: dict[str, Any]) -> None:
        self.name, self.row, self.record = name, row, record

    def bad(self, what: str) -> CassetteError:
        return CassetteError(f"{self.name} row {self.row}: {what}; {_FIX}")

    def json(self, column: str, want: type = object, what: str = "") -> Any:
        """The column's JSON text parsed (None: null), of type ``want``."""
        text = self.record[column]
        try:
            value = None if text is None else orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            raise self.bad(f"{column} is not JSON ({exc})") from None
        if value is None or isinstance(value, want):
            return value
        raise self.bad(f"{column} is {type(value).__name__}, not {what}")

    def error(self) -> dict[str, Any] | None:
        """The error column, a valid error of the cassette format or null."""
        error: dict[str, Any] | None = self.json("error", dict, "a JSON object or null")
        if error is None:
            return None
        try:
            ErrorInfo.model_validate(error)
        except ValidationError as exc:
            why = exc.errors()[0]
            raise self.bad(f"error {'.'.join(str(p) for p in why['loc'])}: {why['msg']}") from None
        return error

    def response(self) -> dict[str, Any] | None:
        """The response, its stream chunks (kept in their own column) back in it, first."""
        response = self.json("response", dict, "a JSON object or null")
        chunks = self.json("stream_chunks", list, "a JSON array or null")
        return response if chunks is None else {"chunks": chunks, **(response or {})}

    def env(self) -> int | str:
        env = self.json("env_index_json")
        if isinstance(env, bool) or not isinstance(env, int | str):
            raise self.bad(f"env_index_json holds a {type(env).__name__}, not an int or a string")
        return env


def _rows(pa: Any, table: Any, name: str, columns: dict[str, tuple[str, bool]]) -> list[_Row]:
    """The rows of ``table``, its columns and their nulls checked."""
    _check_schema(pa, table, name, columns)
    rows = [_Row(name, i, r) for i, r in enumerate(table.select(list(columns)).to_pylist())]
    for r in rows:
        for column, (_, nullable) in columns.items():
            if r.record[column] is None and not nullable:
                raise r.bad(f"{column} is null")
    return rows


def checked_calls(pa: Any, table: Any, src: Path) -> Iterator[ImportedCall]:
    """The interactions of ``src``'s ``interactions.parquet``, in ``seq`` order, checked."""
    seen: dict[tuple[Any, str, int], int] = {}
    rows = _rows(pa, table, f"{src / 'interactions.parquet'}", _CALLS)
    for r in sorted(rows, key=lambda r: r.record["seq"]):
        env, channel, step = r.env(), r.record["channel"], r.record["step"]
        if step < 0:
            raise r.bad(f"step is {step}, below 0")
        if (env, channel, step) in seen:
            where = f"key (env_index={env!r}, channel={channel!r}, step={step})"
            raise r.bad(f"{where} is in row {seen[env, channel, step]} too")
        seen[env, channel, step] = r.row
        yield _call(r, env)


def _call(r: _Row, env: int | str) -> ImportedCall:
    sha = r.record["request_sha256"]
    if sha is not None and len(sha) != 64:  # (as readers check it; validate: hex)
        raise r.bad("request_sha256 is not 64 characters (leave it null to compute it)")
    request = r.json("request", dict, "a JSON object")
    response, error = r.response(), r.error()
    meta = r.json("meta", dict, "a JSON object or null") or {}
    if CHECKSUM_KEY in meta:
        response = _as_recorded(r, meta[CHECKSUM_KEY], response, error)
    return ImportedCall(env, r.record["channel"], r.record["step"], request, sha, response,
                        error, meta)  # fmt: skip


def _as_recorded(r: _Row, want: Any, response: Any, error: Any) -> Any:
    """``response`` as recorded, verified against its ``meta.checksum`` ``want``."""
    tries = [response]
    if isinstance(response, dict) and "chunks" in response:  # (also with chunks last)
        tries.append({k: v for k, v in response.items() if k != "chunks"} | response)
    found = next((made for made in tries if _sums_to(made, error, want)), _NONE)
    if found is not _NONE:
        return found
    raise r.bad(
        "response or error is not what was recorded (meta.checksum does not match: the row "
        "was edited or damaged)"
    )


def _sums_to(response: Any, error: Any, want: Any) -> bool:
    try:
        return bool(checksum(response, error) == want)
    except NotJSONError:
        return False


def checked_outcomes(pa: Any, table: Any, src: Path) -> Iterator[ImportedOutcome]:
    """The outcomes of ``src``'s ``episodes.parquet``, checked."""
    for r in _rows(pa, table, f"{src / 'episodes.parquet'}", _EPISODES):
        env = r.env()
        if r.record["has_outcome"]:
            info = r.json("info", dict, "a JSON object or null") or {}
            yield ImportedOutcome(env, r.record["reward"], r.record["terminated"], info)


def checked_headers(metadata: dict[bytes, bytes] | None, key: bytes, src: Path) -> list[Any]:
    """The valid header lines kept in the interactions table's ``metadata`` under ``key``."""
    raw = (metadata or {}).get(key)
    try:
        headers = [] if raw is None else orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise CassetteError(
            f"{src / 'interactions.parquet'}: its metadata {key.decode()} is not JSON "
            f"({exc}); {_AGAIN}"
        ) from None
    kept = map(_header, headers if isinstance(headers, list) else [])
    return [head for head in kept if head is not None]


def _header(head: Any) -> dict[str, Any] | None:
    try:
        return Header.model_validate(head).model_dump()
    except ValidationError:
        return None
