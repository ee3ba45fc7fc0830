"""The JSON codec: compact orjson bytes, pydantic models dumped in JSON mode; what JSON
cannot hold exactly (a set, an int beyond 64 bits, a NaN, ...) raises :class:`NotJSONError`."""

from __future__ import annotations

import math
from typing import Any

import orjson

from ..errors import CassetteError

__all__ = [
    "MAX_DEPTH",
    "NotJSONError",
    "all_finite",
    "check_finite",
    "dumps",
    "dumps_sorted",
    "loads",
    "messages_finite",
]

MAX_DEPTH = 254  # containers nested deeper than this cannot be written (orjson's limit)
_SCALARS = frozenset({str, int, bool, type(None)})  # what holds no float

_WHY = {
    "Dict key must be str": "a dict key that is not a string (JSON keys are strings)",
    "Integer exceeds 64-bit range": "an int beyond 64 bits (JSON numbers here are 64-bit)",
    "Recursion limit reached": f"containers nested deeper than {MAX_DEPTH} levels",
}


class NotJSONError(CassetteError, TypeError):
    """A value that a cassette cannot store as JSON exactly."""


def _default(obj: Any) -> Any:
    dump = getattr(obj, "model_dump", None)
    if callable(dump):
        return dump(mode="json", exclude_unset=True)
    if isinstance(obj, bytes):
        return _text(obj)
    if isinstance(obj, (set, frozenset)):
        raise TypeError("a set (JSON has no sets: pass a sorted list)")
    raise TypeError(f"a {type(obj).__name__}")


def _text(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise TypeError("bytes that are not UTF-8 (encode them, e.g. as base64 text)") from None


def _not_json(exc: TypeError) -> NotJSONError:
    cause = exc.__cause__
    text = str(cause) if isinstance(cause, TypeError) else str(exc)
    why = _WHY.get(text, text)
    if text.startswith("Type is not JSON serializable: "):
        why = "a " + text.rsplit(": ", 1)[1]
    return NotJSONError(f"cannot store {why} in a cassette; pass JSON-able data")


def dumps(obj: Any) -> bytes:
    """Compact JSON bytes (orjson; pydantic models are dumped in JSON mode)."""
    try:
        return orjson.dumps(obj, default=_default)
    except TypeError as exc:
        raise _not_json(exc) from None


def dumps_sorted(obj: Any) -> bytes:
    """:func:`dumps` with sorted keys: equal for values equal up to key order."""
    try:
        return orjson.dumps(obj, default=_default, option=orjson.OPT_SORT_KEYS)
    except TypeError as exc:
        raise _not_json(exc) from None


def loads(data: bytes | str) -> Any:
    """The value of JSON text (orjson)."""
    return orjson.loads(data)


def all_finite(value: Any) -> bool:
    """Whether ``value`` (serialised already: not deeper than orjson's limit) is finite."""
    kind = type(value)
    if kind is dict:
        value = value.values()
    elif kind is not list:
        return _odd_finite(value)
    for item in value:  # noqa: SIM110 - a loop is faster than all() here
        if type(item) not in _SCALARS and not all_finite(item):
            return False
    return True


def _odd_finite(value: Any) -> bool:
    """:func:`all_finite` of what is not a dict or a list: a float, a tuple, a subclass."""
    if isinstance(value, float):
        return bool(value - value == 0)  # NaN and infinities only (inf - inf is NaN)
    if isinstance(value, dict):
        return all_finite(list(value.values()))
    return not isinstance(value, (list, tuple)) or all_finite(list(value))


def _non_finite(value: Any, where: str) -> tuple[float, str] | None:
    stack: list[tuple[Any, str]] = [(value, where)]
    while stack:
        node, at = stack.pop()
        if isinstance(node, float) and not math.isfinite(node):
            return node, at
        stack.extend(_inside(node, at))
    return None


def _inside(node: Any, at: str) -> list[tuple[Any, str]]:
    if isinstance(node, dict):
        return [(v, f"{at}.{k}") for k, v in node.items()]
    if isinstance(node, (list, tuple)):
        return [(v, f"{at}[{i}]") for i, v in enumerate(node)]
    return []


def check_finite(value: Any, where: str = "request") -> None:
    """Raise :class:`NotJSONError` at a NaN or an infinity (orjson would write ``null``)."""
    found = None if all_finite(value) else _non_finite(value, where)
    if found is not None:
        raise NotJSONError(
            f"cannot store {found[0]!r} at {found[1]} in a cassette (JSON has no NaN or "
            "infinity, and it would read back as null); pass a finite number, or None"
        )


def messages_finite(messages: Any, start: int) -> bool:
    """Whether ``messages[start:]`` hold no NaN and no infinity."""
    return all_finite(messages[start:])
