"""Arrow arrays of ``cassette export``'s columns, built from buffers.

``pa.array`` of a Python list converts value by value (and imports pandas on first use,
a second or so). Here a text column (:class:`TextColumn`) grows one ``bytearray`` and an
array of end offsets as rows are added, so a row leaves no object behind (a hundred
thousand retained ``bytes`` objects cost more in allocation than making them), and the
Arrow array is made from those buffers without a copy; a number column is an
``array.array`` handed over the same way.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable
from typing import Any

__all__ = ["TextColumn", "number_array", "string_array", "text_array"]

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

    def __len__(self) -> int:
        return len(self.ends)

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
    pa: Any, data: bytes | bytearray, ends: Iterable[int], validity: bytearray | None, nulls: int
) -> Any:
    """The one way a string array is made here: the UTF-8 ``data`` cut at ``ends`` (the
    end offset of each value), null where the bit of ``validity`` is clear (``nulls`` of
    them; None: no null), from buffers with no copy; ``large_string`` past 2 GiB."""
    wide = len(data) > _INT32
    offsets = array("q" if wide else "i", [0])
    if isinstance(ends, list):
        offsets.fromlist(ends)
    else:
        offsets.extend(ends)
    count = len(offsets) - 1
    buffers = [None if validity is None else pa.py_buffer(validity)]
    buffers += [pa.py_buffer(offsets), pa.py_buffer(data)]
    typ = pa.large_string() if wide else pa.string()
    return pa.Array.from_buffers(typ, count, buffers, null_count=nulls)


def text_array(pa: Any, values: list[bytes | None] | TextColumn) -> Any:
    """A string array of UTF-8 ``values`` (None: null)."""
    if isinstance(values, TextColumn):
        return values.array(pa)
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
    """An int64 (``kind`` "q"), float64 ("d") or bool ("?") array of ``values`` (None:
    null), from buffers."""
    count, nulls = len(values), values.count(None)
    validity = pa.py_buffer(_bits([v is not None for v in values])) if nulls else None
    if kind == "?":
        data = pa.py_buffer(_bits(list(map(bool, values))))
        return pa.Array.from_buffers(pa.bool_(), count, [validity, data], null_count=nulls)
    numbers = array(kind, [0 if v is None else v for v in values] if nulls else values)
    typ = pa.int64() if kind == "q" else pa.float64()
    return pa.Array.from_buffers(typ, count, [validity, pa.py_buffer(numbers)], null_count=nulls)
