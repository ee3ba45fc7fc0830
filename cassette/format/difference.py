"""Why two JSON values differ: :func:`first_difference` finds the first path where they
part (keys sorted, lists in order; ``True`` is not ``1``, ``1`` is not ``1.0``), and
:meth:`Difference.describe` shows both values there, long strings around where they part."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import zip_longest
from typing import Any, ClassVar

__all__ = ["Difference", "first_difference", "format_path"]


@dataclass(slots=True, eq=False)
class Difference:
    """Where two JSON values first part: a path and both values (``MISSING`` if absent)."""

    path: tuple[str | int, ...]
    a: Any
    b: Any
    MISSING: ClassVar[Any] = type("Missing", (), {"__repr__": lambda self: "<missing>"})()

    @property
    def where(self) -> str:
        return format_path(self.path)

    def describe(self, a_label: str = "recorded", b_label: str = "live", width: int = 80) -> str:
        a, b = _shorten(self.a, self.b, width)
        if type(self.a) is not type(self.b) and self.a == self.b:  # True and 1: equal in
            a += f" ({type(self.a).__name__})"  # Python, not in JSON
            b += f" ({type(self.b).__name__})"
        pad = max(len(a_label), len(b_label)) + 1
        return (
            f"first difference at {self.where or '<root>'}\n"
            f"    {(a_label + ':').ljust(pad)} {a}\n"
            f"    {(b_label + ':').ljust(pad)} {b}"
        )


def format_path(path: Iterable[str | int]) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_$][\w$-]*", part):
            out += f".{part}" if out else part
        else:
            out += f"[{part!r}]"
    return out


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON: ``True`` is not ``1``, ``1`` is not ``1.0`` (Python says both are)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _children(a: Any, b: Any) -> list[tuple[str | int, Any, Any]] | None:
    """(key, a's value, b's value) of two dicts (keys sorted) or two lists (in order), a
    side without the key holding ``Difference.MISSING``; None unless both are containers."""
    gone = Difference.MISSING
    if isinstance(a, dict) and isinstance(b, dict):
        return [(k, a.get(k, gone), b.get(k, gone)) for k in sorted(set(a) | set(b), key=str)]
    if isinstance(a, list) and isinstance(b, list):
        return [(i, *pair) for i, pair in enumerate(zip_longest(a, b, fillvalue=gone))]
    return None


def first_difference(a: Any, b: Any, path: tuple[str | int, ...] = ()) -> Difference | None:
    """The first path (keys in sorted order, lists in order) where ``a`` and ``b`` differ."""
    children = _children(a, b)
    if children is None:
        return None if _same(a, b) else Difference(path, a, b)
    for key, x, y in children:
        if not _same(x, y):  # (MISSING is the same as nothing else)
            return first_difference(x, y, (*path, key))
    return None


def _short(value: Any, width: int) -> str:
    text = repr(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def _shorten(a: Any, b: Any, width: int) -> tuple[str, str]:
    """Both values shortened; two long strings are shown around where they part."""
    if not (isinstance(a, str) and isinstance(b, str) and max(len(a), len(b)) > width - 2):
        return _short(a, width), _short(b, width)
    pairs = enumerate(zip(a, b, strict=False))
    start = max(0, next((i for i, (x, y) in pairs if x != y), min(len(a), len(b))) - width // 3)
    lead = "…" if start else ""
    la, lb = a[start : start + width - 8], b[start : start + width - 8]
    return (
        lead + repr(la) + ("…" if start + len(la) < len(a) else ""),
        lead + repr(lb) + ("…" if start + len(lb) < len(b) else ""),
    )
