"""Two tool-call sequences lined up by edit distance, not only up to their first divergence.

Each step of the alignment is ``same`` (equal name and arguments), ``changed`` (a call in
each run at that place, differing), ``deleted`` (a call of A that B does not make) or
``inserted`` (a call of B that A does not make). Costs: same 0, changed with the same
tool name 2, changed to another tool 3, deleted or inserted 2, so a substitution is
preferred over a deletion plus an insertion, and a call keeps its tool when it can.
Common prefixes and suffixes are matched first; the quadratic table is built only for
the middle, and a middle too large for it (over a million cells) is paired by position.
"""

from __future__ import annotations

from collections.abc import Sequence

from .types import AlignedCall, Op, ToolCall

__all__ = ["AlignedCall", "Op", "align_calls", "edit_distance"]

MAX_CELLS = 1_000_000


def _key(call: ToolCall) -> tuple[str, str]:
    return call.name, repr(call.arguments)


Key = tuple[str, str]


def _op(x: Key, y: Key) -> Op:
    return "same" if x == y else "changed"


def _middle(a: list[Key], b: list[Key], i0: int, j0: int) -> list[AlignedCall]:
    """The least-cost alignment of two key lists (offsets ``i0``, ``j0`` in the episode)."""
    n, m = len(a), len(b)
    if n * m > MAX_CELLS:
        paired = [AlignedCall(_op(a[k], b[k]), i0 + k, j0 + k) for k in range(min(n, m))]
        paired += [AlignedCall("deleted", i0 + k, None) for k in range(m, n)]
        return paired + [AlignedCall("inserted", None, j0 + k) for k in range(n, m)]

    def sub(x: Key, y: Key) -> int:
        return 0 if x == y else 2 if x[0] == y[0] else 3

    cost = [list(range(0, 2 * m + 1, 2))]
    for i in range(1, n + 1):  # the hot loop: no calls but list.append
        prev, x = cost[i - 1], a[i - 1]
        name = x[0]
        subs = [0 if y == x else 2 if y[0] == name else 3 for y in b]
        left = 2 * i
        row = [left]
        for j in range(m):
            diag, up = prev[j] + subs[j], prev[j + 1] + 2
            left += 2
            if diag < left:
                left = diag
            if up < left:
                left = up
            row.append(left)
        cost.append(row)
    out: list[AlignedCall] = []
    i, j = n, m
    while i or j:
        if i and j and cost[i][j] == cost[i - 1][j - 1] + sub(a[i - 1], b[j - 1]):
            out.append(AlignedCall(_op(a[i - 1], b[j - 1]), i0 + i - 1, j0 + j - 1))
            i, j = i - 1, j - 1
        elif i and cost[i][j] == cost[i - 1][j] + 2:
            out.append(AlignedCall("deleted", i0 + i - 1, None))
            i -= 1
        else:
            out.append(AlignedCall("inserted", None, j0 + j - 1))
            j -= 1
    out.reverse()
    return out


def align_calls(a: Sequence[ToolCall], b: Sequence[ToolCall]) -> list[AlignedCall]:
    """The alignment of ``a`` with ``b`` of least cost (see the module docstring)."""
    ka, kb = [_key(c) for c in a], [_key(c) for c in b]
    n, m = len(ka), len(kb)
    pre = 0
    while pre < min(n, m) and ka[pre] == kb[pre]:
        pre += 1
    post = 0
    while post < min(n, m) - pre and ka[n - 1 - post] == kb[m - 1 - post]:
        post += 1
    out = [AlignedCall("same", k, k) for k in range(pre)]
    out += _middle(ka[pre : n - post], kb[pre : m - post], pre, pre)
    out += [AlignedCall("same", n - post + k, m - post + k) for k in range(post)]
    return out


def edit_distance(alignment: Sequence[AlignedCall]) -> int:
    """How many calls were changed, deleted or inserted."""
    return sum(1 for row in alignment if row.op != "same")
