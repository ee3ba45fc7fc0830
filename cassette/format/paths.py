"""Paths into JSON values (``messages[*].name``, ``**.timestamp``): :class:`Paths` applies
many in one walk that copies only what changes (the ignore rules of matching and diff)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["ANY", "DEEP", "Paths", "parse_path"]

_TOKEN = re.compile(r"\[(\*|\d+)\]|\.?(\*\*|\*|[^.\[\]]+)")


class _Wild(str):
    """``ANY`` (``[*]`` or ``.*``: every key or item) and ``DEEP`` (``**``: any depth)."""

    __slots__ = ()


ANY = _Wild("*")
DEEP = _Wild("**")
Token = str | int  # a key, an index, ANY or DEEP
_GONE: Any = object()  # a dropped key or item
_WILD = {"**": DEEP, "*": ANY}


def _drop(value: Any) -> Any:
    return _GONE


def _token(index: str | None, key: str) -> Token:
    if index is None:
        return _WILD.get(key, key)
    return ANY if index == "*" else int(index)


def parse_path(path: str) -> tuple[Token, ...]:
    """The tokens of a path that ends in a key or index; ValueError where it does not."""
    tokens: list[Token] = []
    pos = 0
    while pos < len(path):
        m = _TOKEN.match(path, pos)
        if m is None or m.end() == pos:
            raise ValueError(f"cannot parse ignore path {path!r}; write e.g. 'messages[*].name'")
        tokens.append(_token(*m.groups()))
        pos = m.end()
    if not tokens or tokens[-1] is DEEP:
        raise ValueError(f"ignore path {path!r} must end in a key or index")
    return tuple(tokens)


class Paths:
    """Paths as a tree: a node's ``act`` applies to what its path selects (default: drop
    it), then its children apply inside the result."""

    __slots__ = ("act", "drops", "kids", "plain", "star", "walk")

    def __init__(self, paths: Iterable[str] = ()) -> None:
        self.kids: dict[Token, Paths] = {}
        self.act: Callable[[Any], Any] | None = None
        self._index()
        for path in paths:
            self.add(parse_path(path))

    def add(self, tokens: Iterable[Token], act: Callable[[Any], Any] = _drop) -> None:
        node, nodes = self, [self]
        for token in tokens:
            node = node.kids.setdefault(token, Paths())
            nodes.append(node)
        node.act = act
        for node in nodes:
            node._index()

    def _index(self) -> None:
        kids = self.kids
        self.drops = _dropped(kids)
        self.walk = tuple((k, v) for k, v in kids.items() if k not in (*self.drops, DEEP))
        self.star = kids.get(ANY)  # the rule of every key or item
        self.plain = self.act is None and DEEP not in kids and self._lone_star()

    def _lone_star(self) -> bool:
        star = self.star
        return star is None or (len(self.kids) == 1 and star.act is not _drop)

    def apply(self, node: Any) -> Any:
        """``node`` without what the paths drop (shares what they leave alone)."""
        if self.act is _drop:
            return _GONE
        if self.act is not None:
            node = self.act(node)
        if isinstance(node, dict):
            node = self._dict(node)
        elif isinstance(node, list):
            node = self._list(node)
        deep = self.kids.get(DEEP)
        return node if deep is None else deep._deep(node)

    def _deep(self, node: Any) -> Any:
        """Apply at ``node`` and at every depth below it."""
        node = self.apply(node)
        if isinstance(node, dict):
            new = {k: self._deep(v) for k, v in node.items()}
            return node if _all_kept(node.values(), new.values()) else new
        if isinstance(node, list):
            items = [self._deep(v) for v in node]
            return node if _all_kept(node, items) else items
        return node

    def _dict(self, node: dict[str, Any]) -> dict[str, Any]:
        drops = self.drops
        out = node if drops.isdisjoint(node) else _without(drops, node)
        for key, sub in self.walk:
            for k in _keys(key, out):
                new = sub.apply(out[k])
                if new is not out[k]:
                    out = dict(out) if out is node else out  # copied once
                    if new is _GONE:
                        del out[k]
                    else:
                        out[k] = new
        return out

    def _list(self, node: list[Any]) -> list[Any]:
        out = node
        for key, sub in self.walk:
            for i in _indices(key, node):
                if out[i] is not _GONE and (new := sub.apply(out[i])) is not out[i]:
                    out = list(out) if out is node else out
                    out[i] = new
        return out if out is node else _present(out)

    def same(self, a: Any, b: Any) -> bool:
        """``apply(a) == apply(b)``, walking into (and copying) only what differs."""
        return a == b or self._same(a, b)

    def _same(self, a: Any, b: Any) -> bool:
        """:meth:`same` of two values known to differ."""
        if self.act is _drop:
            return True
        if not self.plain:
            return bool(self.apply(a) == self.apply(b))
        if isinstance(a, dict) and isinstance(b, dict):
            return self._same_dict(a, b)
        if isinstance(a, list) and isinstance(b, list):
            return self._same_list(a, b)
        return False

    def _same_dict(self, a: dict[str, Any], b: dict[str, Any]) -> bool:
        drops = self.drops
        if drops and not (drops.isdisjoint(a) and drops.isdisjoint(b)):
            a, b = _without(drops, a), _without(drops, b)
            if a == b:
                return True
        return a.keys() == b.keys() and self._same_items(a.items(), b)

    def _same_list(self, a: list[Any], b: list[Any]) -> bool:
        if len(a) != len(b):
            return bool(self.apply(a) == self.apply(b))
        return self._same_items(enumerate(a), b)  # (an item dropped drops on both sides)

    def _same_items(self, items: Iterable[tuple[Any, Any]], b: Any) -> bool:
        star, kids = self.star, self.kids
        for k, x in items:
            y = b[k]
            if x is not y and x != y:
                sub = star or kids.get(k)
                if sub is None or not sub._same(x, y):
                    return False
        return True


def _all_kept(old: Iterable[Any], new: Iterable[Any]) -> bool:
    return all(a is b for a, b in zip(old, new, strict=True))


def _without(drops: frozenset[str], node: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in node.items() if k not in drops}


def _keys(key: Token, node: dict[str, Any]) -> Iterable[Any]:
    if key is ANY:
        return list(node)
    return (key,) if key in node else ()


def _indices(key: Token, node: list[Any]) -> Iterable[int]:
    if key is ANY:
        return range(len(node))
    return (key,) if isinstance(key, int) and 0 <= key < len(node) else ()


def _dropped(kids: dict[Token, Paths]) -> frozenset[str]:
    """The keys dropped outright (``type``: neither an index nor ANY or DEEP, a _Wild)."""
    return frozenset(k for k, v in kids.items() if v.act is _drop and type(k) is str)


def _present(items: list[Any]) -> list[Any]:
    return [v for v in items if v is not _GONE]
