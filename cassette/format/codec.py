"""The JSON codec: compact orjson bytes, pydantic models dumped in JSON mode.

A cassette stores JSON only. What JSON cannot hold exactly is refused with
:class:`NotJSONError` (a :class:`~cassette.errors.CassetteError` and a ``TypeError``)
rather than stored as something else: dict keys that are not strings, ints beyond 64
bits, nesting deeper than orjson writes (255 levels), sets, and bytes that are not UTF-8
(bytes that are UTF-8 are stored as their text). NaN and infinities are refused where a
request is hashed (:func:`cassette.format.canonical.canonical_parts`); orjson alone would write
them as ``null``; :func:`check_finite` finds them.

Pure: values in, bytes out, no IO.
"""

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

_WHY = {
    "Dict key must be str": "a dict key that is not a string (JSON keys are strings)",
    "Integer exceeds 64-bit range": "an int beyond 64 bits (JSON numbers here are 64-bit)",
    "Recursion limit reached": f"containers nested deeper than {MAX_DEPTH} levels",
}


class NotJSONError(CassetteError, TypeError):
    """A value that a cassette cannot store as JSON exactly (see the module docstring)."""


def _default(obj: Any) -> Any:
    dump = getattr(obj, "model_dump", None)
    if callable(dump):
        return dump(mode="json", exclude_unset=True)
    if isinstance(obj, bytes):
        try:
            return obj.decode("utf-8")
        except UnicodeDecodeError:
            raise TypeError("bytes that are not UTF-8 (encode them, e.g. as base64 text)") from None
    if isinstance(obj, (set, frozenset)):
        raise TypeError("a set (JSON has no sets: pass a sorted list)")
    raise TypeError(f"a {type(obj).__name__}")


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
    return orjson.loads(data)


def all_finite(value: Any) -> bool:
    """Whether ``value`` holds no NaN and no infinity (no paths: the common case is fast).
    Called on values that were serialised already, so nesting is at most 255 levels."""
    if isinstance(value, float):
        return bool(value - value == 0)  # NaN and infinities only (inf - inf is NaN)
    if isinstance(value, dict):
        value = value.values()
    elif not isinstance(value, (list, tuple)):
        return True
    for item in value:
        kind = type(item)
        if kind is str or item is None or kind is int or kind is bool:
            continue
        if not all_finite(item):
            return False
    return True


def check_finite(value: Any, where: str = "request") -> None:
    """Raise :class:`~cassette.format.codec.NotJSONError` if ``value`` holds a NaN or an
    infinity: JSON has neither, and orjson would write (and hash) them as ``null``."""
    if all_finite(value):
        return
    stack: list[tuple[Any, str]] = [(value, where)]  # (a value, where it is)
    while stack:
        node, at = stack.pop()
        if isinstance(node, float):
            if not math.isfinite(node):
                raise NotJSONError(
                    f"cannot store {node!r} at {at} in a cassette (JSON has no NaN or "
                    "infinity, and it would read back as null); pass a finite number, or None"
                )
        elif isinstance(node, dict):
            stack.extend((v, f"{at}.{k}") for k, v in node.items())
        elif isinstance(node, (list, tuple)):
            stack.extend((v, f"{at}[{i}]") for i, v in enumerate(node))


def messages_finite(messages: Any, start: int, raw: bytes = b"", offset: int = 0) -> bool:
    """Whether ``messages[start:]`` hold no NaN and no infinity. (``raw`` and ``offset``,
    their JSON, are not looked at: a scan of its bytes for nulls measured no faster.)"""
    return all(map(all_finite, messages[start:]))
