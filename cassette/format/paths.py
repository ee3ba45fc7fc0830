"""Paths into JSON values: ``messages[*].name``, ``metadata.trace_id``, ``**.timestamp``.

Parsed by :func:`parse_path`; :func:`remove_path` copies a value without what a path
selects (the ignore rules of :class:`cassette.Matcher` and of ``cassette diff``).
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["parse_ignore", "parse_path", "remove_path"]

_TOKEN = re.compile(r"\[(\*|\d+)\]|\.?(\*\*|\*|[^.\[\]]+)")

_ANY = object()
_DEEP = object()
Token = Any  # str key | int index | _ANY | _DEEP


def parse_path(path: str, *, star: Any = _ANY, deep: Any = _DEEP) -> list[Any]:
    """The tokens of an ignore path: keys, list indices, ``star`` for ``[*]`` or ``.*``
    and ``deep`` for ``**``. Raises ValueError where the path does not parse."""
    tokens: list[Any] = []
    pos = 0
    while pos < len(path):
        m = _TOKEN.match(path, pos)
        if m is None or m.end() == pos:
            raise ValueError(f"cannot parse ignore path {path!r}; write e.g. 'messages[*].name'")
        idx, key = m.group(1), m.group(2)
        if idx is not None:
            tokens.append(star if idx == "*" else int(idx))
        else:
            tokens.append(deep if key == "**" else star if key == "*" else key)
        pos = m.end()
    return tokens


def parse_ignore(path: str) -> tuple[Token, ...]:
    """The tokens of an ignore rule: a path that ends in a key or index."""
    tokens = parse_path(path)
    if not tokens or tokens[-1] is _DEEP:
        raise ValueError(f"ignore path {path!r} must end in a key or index")
    return tuple(tokens)


def remove_path(node: Any, tokens: tuple[Token, ...]) -> Any:
    """Copy of ``node`` without what ``tokens`` selects (shares what it does not touch)."""
    if not tokens:
        return node
    head, rest = tokens[0], tokens[1:]
    if head is _DEEP:
        node = remove_path(node, rest)  # zero levels
        if isinstance(node, dict):
            return {k: remove_path(v, tokens) for k, v in node.items()}
        if isinstance(node, list):
            return [remove_path(v, tokens) for v in node]
        return node
    if isinstance(node, dict):
        keys = list(node) if head is _ANY else [head] if head in node else []
        if not keys:
            return node
        out = dict(node)
        for k in keys:
            if rest:
                out[k] = remove_path(node[k], rest)
            else:
                del out[k]
        return out
    if isinstance(node, list):
        idxs = range(len(node)) if head is _ANY else [head] if isinstance(head, int) else []
        idxs = [i for i in idxs if 0 <= i < len(node)]
        if not idxs:
            return node
        if not rest:
            drop = set(idxs)
            return [v for i, v in enumerate(node) if i not in drop]
        out_list = list(node)
        for i in idxs:
            out_list[i] = remove_path(node[i], rest)
        return out_list
    return node
