"""Why two JSON values differ: the first path where they part (``True`` is not ``1``,
``1`` is not ``1.0``), and both values there."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import zip_longest
from typing import Any, ClassVar

__all__ = ["Difference", "first_difference", "format_path"]

_WIDTH = 80  # of a value described


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

    def describe(self) -> str:
        """Where, and both values (recorded, live) there, shortened to a line each."""
        a, b = _shorten(self.a, self.b)
        if type(self.a) is not type(self.b) and self.a == self.b:  # True and 1: equal in
            a += f" ({type(self.a).__name__})"  # Python, not in JSON
            b += f" ({type(self.b).__name__})"
        return f"first difference at {self.where or '<root>'}\n    recorded: {a}\n    live:     {b}"


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


def _children(a: Any, b: Any) -> list[tuple[str | int, Any, Any]] | None:
    """(key, a's value, b's value) of two dicts or two lists; else None."""
    gone = Difference.MISSING
    if isinstance(a, dict) and isinstance(b, dict):
        return [(k, a.get(k, gone), b.get(k, gone)) for k in sorted(set(a) | set(b), key=str)]
    if isinstance(a, list) and isinstance(b, list):
        return _items(a, b)
    return None


def _items(a: list[Any], b: list[Any]) -> list[tuple[str | int, Any, Any]]:
    return [(i, *pair) for i, pair in enumerate(zip_longest(a, b, fillvalue=Difference.MISSING))]


def first_difference(a: Any, b: Any, path: tuple[str | int, ...] = ()) -> Difference | None:
    """The first path (keys in sorted order, lists in order) where ``a`` and ``b`` differ."""
    children = _children(a, b)
    if children is None:  # equal as JSON: True is not 1, 1 is not 1.0 (Python says both are)
        return None if type(a) is type(b) and a == b else Difference(path, a, b)
    for key, x, y in children:
        if (found := first_difference(x, y, (*path, key))) is not None:
            return found
    return None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _WIDTH else text[: _WIDTH - 1] + "…"


def _shorten(a: Any, b: Any) -> tuple[str, str]:
    """Both values shortened (two long strings, around where they part)."""
    if isinstance(a, str) and isinstance(b, str) and max(len(a), len(b)) > _WIDTH - 2:
        pairs = enumerate(zip(a, b, strict=False))
        start = next((i for i, (x, y) in pairs if x != y), min(len(a), len(b))) - _WIDTH // 3
        return _window(a, max(0, start)), _window(b, max(0, start))
    return _short(a), _short(b)


def _window(text: str, start: int) -> str:
    part = text[start : start + _WIDTH - 8]
    return ("…" if start else "") + repr(part) + ("…" if start + len(part) < len(text) else "")
