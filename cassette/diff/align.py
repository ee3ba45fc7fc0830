"""Two tool-call sequences lined up by edit distance. Costs: same 0, changed 2 (3 to another
tool), deleted or inserted 2, so a call keeps its tool when it can. Common prefixes and
suffixes are matched first; a middle over a million cells is paired by position."""

from __future__ import annotations

from collections.abc import Sequence

from .types import AlignedCall, Op, ToolCall

__all__ = ["AlignedCall", "Op", "align_calls"]

MAX_CELLS = 1_000_000
Key = tuple[str, str]


def _op(x: Key, y: Key) -> Op:
    return "same" if x == y else "changed"


def _sub(x: Key, y: Key) -> int:
    return 0 if x == y else 2 if x[0] == y[0] else 3


def _by_position(a: list[Key], b: list[Key], i0: int, j0: int) -> list[AlignedCall]:
    n, m = len(a), len(b)
    paired = [AlignedCall(_op(a[k], b[k]), i0 + k, j0 + k) for k in range(min(n, m))]
    paired += [AlignedCall("deleted", i0 + k, None) for k in range(m, n)]
    return paired + [AlignedCall("inserted", None, j0 + k) for k in range(n, m)]


def _costs(a: list[Key], b: list[Key]) -> list[list[int]]:
    cost = [list(range(0, 2 * len(b) + 1, 2))]
    for i, x in enumerate(a, 1):
        prev, name, left = cost[i - 1], x[0], 2 * i
        subs = [0 if y == x else 2 if y[0] == name else 3 for y in b]
        row = [left]
        for j, sub in enumerate(subs):
            left = min(prev[j] + sub, prev[j + 1] + 2, left + 2)
            row.append(left)
        cost.append(row)
    return cost


def _middle(a: list[Key], b: list[Key], i0: int, j0: int) -> list[AlignedCall]:
    """The least-cost alignment of two key lists (offsets ``i0``, ``j0`` in the episode)."""
    if len(a) * len(b) > MAX_CELLS:
        return _by_position(a, b, i0, j0)
    cost, out = _costs(a, b), []
    i, j = len(a), len(b)
    while i or j:
        if i and j and cost[i][j] == cost[i - 1][j - 1] + _sub(a[i - 1], b[j - 1]):
            out.append(AlignedCall(_op(a[i - 1], b[j - 1]), i0 + i - 1, j0 + j - 1))
            i, j = i - 1, j - 1
        elif i and cost[i][j] == cost[i - 1][j] + 2:
            out.append(AlignedCall("deleted", i0 + i - 1, None))
            i -= 1
        else:
            out.append(AlignedCall("inserted", None, j0 + j - 1))
            j -= 1
    return out[::-1]


def _common(a: list[Key], b: list[Key]) -> int:
    """How many keys ``a`` and ``b`` share from their start."""
    return next(
        (k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )


def align_calls(a: Sequence[ToolCall], b: Sequence[ToolCall]) -> list[AlignedCall]:
    """The alignment of ``a`` with ``b`` of least cost (see the module docstring)."""
    ka, kb = [(c.name, repr(c.arguments)) for c in a], [(c.name, repr(c.arguments)) for c in b]
    n, m = len(ka), len(kb)
    pre = _common(ka, kb)
    post = _common(ka[pre:][::-1], kb[pre:][::-1])
    out = [AlignedCall("same", k, k) for k in range(pre)]
    out += _middle(ka[pre : n - post], kb[pre : m - post], pre, pre)
    return out + [AlignedCall("same", n - post + k, m - post + k) for k in range(post)]
