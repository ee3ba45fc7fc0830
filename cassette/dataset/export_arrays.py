"""Arrow arrays made from buffers without a copy: a text column grows one ``bytearray`` and
its end offsets, and ``pa.array`` (value by value, importing pandas) is never called."""

from __future__ import annotations

from array import array
from typing import Any

__all__ = ["TextColumn", "number_array", "string_array", "text_array"]

_TYPES = {"q": "int64", "d": "float64", "?": "bool_"}
_INT32 = (1 << 31) - 1  # beyond this many bytes a column takes 64-bit offsets


class TextColumn:
    """A column of UTF-8 texts (or nulls) in one buffer: ``buf`` and the end of each."""

    __slots__ = ("buf", "ends", "nulls")

    def __init__(self) -> None:
        self.buf = bytearray()
        self.ends = array("q")
        self.nulls: list[int] = []  # rows that are null

    def add(self, value: bytes | None) -> None:
        if value is None:
            self.nulls.append(len(self.ends))
        else:
            self.buf += value
        self.ends.append(len(self.buf))

    def array(self, pa: Any) -> Any:
        """The column as a ``string`` array (``large_string`` past 2 GiB of text)."""
        count = len(self.ends)
        if count == len(self.nulls):
            return pa.nulls(count, type=pa.string())
        validity = None
        if self.nulls:
            validity = bytearray(b"\xff" * ((count + 7) // 8))
            for i in self.nulls:
                validity[i >> 3] &= 0xFF ^ (1 << (i & 7))
        return string_array(pa, self.buf, self.ends.tolist(), validity, len(self.nulls))


def string_array(
    pa: Any, data: bytes | bytearray, ends: list[int], validity: bytearray | None, nulls: int
) -> Any:
    """The UTF-8 ``data`` cut at ``ends``, null where ``validity``'s bit is clear."""
    wide = len(data) > _INT32
    offsets = array("q" if wide else "i", [0])
    offsets.fromlist(ends)
    count = len(ends)
    buffers = [None if validity is None else pa.py_buffer(validity)]
    buffers += [pa.py_buffer(offsets), pa.py_buffer(data)]
    typ = pa.large_string() if wide else pa.string()
    return pa.Array.from_buffers(typ, count, buffers, null_count=nulls)


def text_array(pa: Any, values: list[bytes | None]) -> Any:
    """A string array of UTF-8 ``values`` (None: null)."""
    column = TextColumn()
    for value in values:
        column.add(value)
    return column.array(pa)


def _bits(flags: list[bool]) -> bytearray:
    bits = bytearray((len(flags) + 7) // 8)
    for i, flag in enumerate(flags):
        if flag:
            bits[i >> 3] |= 1 << (i & 7)
    return bits


def number_array(pa: Any, values: list[Any], kind: str) -> Any:
    """An int64 (``kind`` "q"), float64 ("d") or bool ("?") array of ``values`` (None: null)."""
    count, nulls = len(values), values.count(None)
    validity = pa.py_buffer(_bits([v is not None for v in values])) if nulls else None
    filled = [0 if v is None else v for v in values] if nulls else values
    data = pa.py_buffer(_bits(list(map(bool, values))) if kind == "?" else array(kind, filled))
    typ = getattr(pa, _TYPES[kind])()
    return pa.Array.from_buffers(typ, count, [validity, data], null_count=nulls)
