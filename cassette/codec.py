"""The JSON codec: compact orjson bytes, pydantic models dumped in JSON mode.

A cassette stores JSON only. What JSON cannot hold exactly is refused with
:class:`NotJSONError` (a :class:`~cassette.errors.CassetteError` and a ``TypeError``)
rather than stored as something else: dict keys that are not strings, ints beyond 64
bits, nesting deeper than orjson writes (255 levels), sets, and bytes that are not UTF-8
(bytes that are UTF-8 are stored as their text). NaN and infinities are refused where a
request is hashed (:func:`cassette.canonical.canonical_parts`); orjson alone would write
them as ``null``.

Pure: values in, bytes out, no IO.
"""

from __future__ import annotations

from typing import Any

import orjson

from .errors import CassetteError

__all__ = ["MAX_DEPTH", "NotJSONError", "dumps", "dumps_sorted", "loads"]

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
