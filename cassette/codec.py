"""The JSON codec: compact orjson bytes, pydantic models dumped in JSON mode.

Pure: values in, bytes out, no IO.
"""

from __future__ import annotations

from typing import Any

import orjson

__all__ = ["dumps", "dumps_sorted", "loads"]


def _default(obj: Any) -> Any:
    dump = getattr(obj, "model_dump", None)
    if callable(dump):
        return dump(mode="json", exclude_unset=True)
    if isinstance(obj, (set, frozenset)):
        return sorted(obj, key=repr)
    if isinstance(obj, bytes):
        return obj.decode("utf-8", "replace")
    raise TypeError(f"cannot store a {type(obj).__name__} in a cassette; pass JSON-able data")


def dumps(obj: Any) -> bytes:
    """Compact JSON bytes (orjson; pydantic models are dumped in JSON mode)."""
    return orjson.dumps(obj, default=_default)


def dumps_sorted(obj: Any) -> bytes:
    """:func:`dumps` with sorted keys: equal for values equal up to key order."""
    return orjson.dumps(obj, default=_default, option=orjson.OPT_SORT_KEYS)


def loads(data: bytes | str) -> Any:
    return orjson.loads(data)
