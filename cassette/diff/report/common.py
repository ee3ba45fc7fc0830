"""Formatting shared by the renderers: numbers, values, episode order, one-line summaries."""

from __future__ import annotations

import math
from typing import Any

import orjson

from ..types import Divergence, EpisodeDiff, Json, RunDiff, ToolCall

__all__ = [
    "MINUS",
    "PART_LABEL",
    "STATUS_LABEL",
    "describe",
    "fmt_cost",
    "fmt_delta",
    "fmt_int",
    "fmt_reward",
    "fork_line",
    "forks_line",
    "headline",
    "ordered",
    "short",
    "summary_rows",
    "tool_line",
    "window",
]

MINUS = "\u2212"  # typographic minus sign, for signed numbers
STATUS_LABEL = {
    "identical": "identical",
    "diverged": "diverged",
    "only_a": "only in A",
    "only_b": "only in B",
}
PART_LABEL = {
    "request": "the request differs",
    "response": "the response differs",
    "outcome": "only the outcome differs",
}


def fmt_reward(value: float | None, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{round(value, digits):g}"


def fmt_delta(value: float | None, digits: int = 3) -> str:
    if value is None:
        return "—"
    value = round(value, digits)
    return "0" if value == 0 else f"{value:+g}".replace("-", MINUS)


def fmt_int(value: float) -> str:
    return f"{int(value):,}"


def fmt_cost(value: float | None, signed: bool = False) -> str:
    """``$0.0021``; a difference is signed; "not recorded" when no call recorded a cost."""
    if value is None:
        return "-" if signed else "not recorded"
    if round(value, 9) == 0:
        return "0" if signed else "$0"
    text = f"${abs(value):.4f}" if abs(value) >= 0.01 else f"${abs(value):.6f}"
    return (MINUS if value < 0 else "+" if signed else "") + text


def summary_rows(diff: RunDiff) -> dict[str, tuple[str, str, str]]:
    """(A, B, B - A) of each run total: episodes, interactions, mean reward, tokens (then
    prompt and completion), cost; a difference only where it means something."""
    a, b = diff.a, diff.b
    ma, mb = a.mean_reward, b.mean_reward
    cost = None if a.cost is None or b.cost is None else b.cost - a.cost
    mean = fmt_delta(None if ma is None or mb is None else mb - ma)
    tokens = fmt_delta(b.total_tokens - a.total_tokens)
    return {
        "episodes": (str(a.episodes), str(b.episodes), ""),
        "interactions": (fmt_int(a.interactions), fmt_int(b.interactions), ""),
        "mean reward": (fmt_reward(ma), fmt_reward(mb), mean),
        "tokens": (fmt_int(a.total_tokens), fmt_int(b.total_tokens), tokens),
        "prompt": (fmt_int(a.prompt_tokens), fmt_int(b.prompt_tokens), ""),
        "completion": (fmt_int(a.completion_tokens), fmt_int(b.completion_tokens), ""),
        "cost": (fmt_cost(a.cost), fmt_cost(b.cost), fmt_cost(cost, signed=True)),
    }


def short(value: Any, width: int = 60) -> str:
    """A value as compact JSON (strings quoted), cut to ``width`` characters."""
    try:
        text = orjson.dumps(value).decode()
    except TypeError:
        text = repr(value)
    text = text.replace("\n", " ")
    return text if len(text) <= width else text[: width - 1] + "…"


def value_of(d: Divergence, side: str, width: int = 60) -> str:
    missing = d.a_missing if side == "a" else d.b_missing
    value = d.a if side == "a" else d.b
    return "(absent)" if missing and value is None else short(value, width)


def describe(d: Divergence) -> str:
    """One line: where the episode parts and how."""
    if d.part == "step":
        side = "A" if d.b_missing else "B"
        return f"{d.channel} step {d.step} is only in {side}"
    if d.part == "outcome":
        return f"{PART_LABEL['outcome']} at {d.path}"
    return f"{d.where}: {PART_LABEL[d.part]} at {d.path}"


def window(
    calls: list[ToolCall], focus: int | None, limit: int = 8
) -> tuple[int, list[ToolCall], int]:
    """At most ``limit`` calls around step ``focus`` (the divergence): (left out before,
    shown, left out after)."""
    if len(calls) <= limit:
        return 0, calls, 0
    at = len(calls) if focus is None else sum(1 for c in calls if c.step <= focus)
    start = max(0, min(at - (limit + 1) // 2, len(calls) - limit))
    return start, calls[start : start + limit], len(calls) - start - limit


def tool_line(calls: list[ToolCall], focus: int | None = None, width: int = 48) -> str:
    """``name(args) → ...``, cut to the calls around step ``focus``."""
    if not calls:
        return "(none)"
    before, shown, after = window(calls, focus)
    parts = [c.signature(width) for c in shown]
    if before:
        parts.insert(0, f"… {before} earlier")
    if after:
        parts.append(f"… {after} more")
    return " → ".join(parts)


def _rank(ep: EpisodeDiff) -> tuple[int, float]:
    delta = ep.delta if ep.delta is not None else 0.0
    if ep.change == "regressed":
        return (0, delta)
    if ep.status == "diverged":
        return (1, -delta)
    return ({"only_a": 2, "only_b": 3}.get(ep.status, 4), 0.0)


def ordered(diff: RunDiff) -> list[EpisodeDiff]:
    """Regressed first (worst first), other diverged, only in A, only in B, identical."""
    return sorted(diff.episodes, key=_rank)


def headline(diff: RunDiff) -> str:
    c = diff.counts
    total = len(diff.episodes)
    if diff.equivalent:
        return f"equivalent: all {total} episodes identical"
    parts = [f"{c['diverged']} diverged" if c["diverged"] else ""]
    parts += [f"{c['only_a']} only in A" if c["only_a"] else ""]
    parts += [f"{c['only_b']} only in B" if c["only_b"] else ""]
    return "not equivalent: " + ", ".join(p for p in parts if p) + f" (of {total} episodes)"


def fork_line(fork: Json) -> str:
    """``forked at llm step 3 (mismatch)``."""
    why: Any = fork.get("why")
    return f"forked at {fork.get('channel')} step {fork.get('step')}" + (f" ({why})" if why else "")


def forks_line(diff: RunDiff) -> str | None:
    """``12 episodes forked; first divergence at the fork point in 12``, or None when no
    episode of either run is a fork."""
    forks = diff.forks
    n = forks["forked"]
    if not n:
        return None
    noun = "episode" if n == 1 else "episodes"
    return f"{n} {noun} forked; first divergence at the fork point in {forks['at_fork_point']}"
