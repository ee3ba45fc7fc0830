"""What the renderers share: numbers as text, episode order, a diff's parts as rows."""

from __future__ import annotations

import math
from collections.abc import Callable
from itertools import groupby
from operator import methodcaller
from typing import Any

import orjson

from ..types import Divergence, EpisodeDiff, NoiseFloor, PairedStats, RunDiff, ToolCall, clip, minus

__all__ = [
    "MARK",
    "MINUS",
    "OP_LABEL",
    "PART_LABEL",
    "STATUS_LABEL",
    "aligned_rows",
    "calls_by_side",
    "cause_lines",
    "describe",
    "fmt_ci",
    "fmt_delta",
    "fmt_p",
    "fmt_reward",
    "fork_line",
    "forks_line",
    "headline",
    "noise_rows",
    "ordered",
    "pass_k_rows",
    "rank",
    "stats_rows",
    "summary_rows",
    "tool_line",
    "value_of",
    "verdict",
]

MINUS = "\u2212"  # typographic minus sign, for signed numbers
STATUS_LABEL = {"identical": "identical", "diverged": "diverged"}
STATUS_LABEL |= {"only_a": "only in A", "only_b": "only in B"}
PART_LABEL = {part: f"the {part} differs" for part in ("request", "response")}
PART_LABEL["outcome"] = "only the outcome differs"
# how an aligned call is marked: same, changed, only in A (deleted), only in B (inserted)
MARK = {"same": "=", "changed": "~", "deleted": MINUS, "inserted": "+"}
OP_LABEL = {"same": "same", "changed": "changed", "deleted": "only in A", "inserted": "only in B"}
CONTEXT = 2  # equal calls shown around a changed one
Row = tuple[str, str, str]
_WORD = {None: "—", True: "exceeds noise", False: "within noise"}  # noise exceeded?
_ORDER = {"diverged": 1, "only_a": 2, "only_b": 3, "identical": 4}


def fmt_reward(value: float | None, digits: int = 3) -> str:
    return "—" if value is None or math.isnan(value) else f"{round(value, digits):g}"


def fmt_delta(value: float | None, digits: int = 3) -> str:
    if value is None:
        return "—"
    value = round(value, digits)
    return "0" if value == 0 else f"{value:+g}".replace("-", MINUS)


def _dollars(value: float) -> str:
    """``$0.0021`` (4 decimals from a cent up, else 6)."""
    text = f"${abs(value):.4f}" if abs(value) >= 0.01 else f"${abs(value):.6f}"
    return MINUS + text if value < 0 else text


def _fmt_cost(value: float | None) -> str:
    return "not recorded" if value is None else "$0" if round(value, 9) == 0 else _dollars(value)


def _fmt_cost_delta(value: float | None) -> str:
    if value is None:
        return "-"
    return "0" if round(value, 9) == 0 else "+" * (value > 0) + _dollars(value)


def summary_rows(diff: RunDiff) -> dict[str, tuple[str, str, str]]:
    """(A, B, B - A) of each run total; a difference only where it means something."""
    a, b = diff.a, diff.b
    ma, mb, tokens = a.mean_reward, b.mean_reward, b.total_tokens - a.total_tokens
    return {
        "episodes": (str(a.episodes), str(b.episodes), ""),
        "interactions": (f"{a.interactions:,}", f"{b.interactions:,}", ""),
        "mean reward": (fmt_reward(ma), fmt_reward(mb), fmt_delta(minus(ma, mb))),
        "tokens": (f"{a.total_tokens:,}", f"{b.total_tokens:,}", fmt_delta(tokens)),
        "prompt": (f"{a.prompt_tokens:,}", f"{b.prompt_tokens:,}", ""),
        "completion": (f"{a.completion_tokens:,}", f"{b.completion_tokens:,}", ""),
        "cost": (_fmt_cost(a.cost), _fmt_cost(b.cost), _fmt_cost_delta(minus(a.cost, b.cost))),
    }


def value_of(d: Divergence, side: str, width: int = 60) -> str:
    """One side's value as compact JSON (strings quoted), cut to ``width`` characters."""
    value, missing = (d.a, d.a_missing) if side == "a" else (d.b, d.b_missing)
    if missing and value is None:
        return "(absent)"
    try:
        text = orjson.dumps(value).decode().replace("\n", " ")
    except TypeError:
        text = repr(value).replace("\n", " ")
    return clip(text, width)


def describe(d: Divergence) -> str:
    """One line: where the episode parts and how."""
    if d.part == "step":
        return f"{d.channel} step {d.step} is only in {'A' if d.b_missing else 'B'}"
    where = "" if d.part == "outcome" else f"{d.where}: "
    return f"{where}{PART_LABEL[d.part]} at {d.path}"


def _window(calls: list[ToolCall], focus: int | None, limit: int) -> tuple[int, int]:
    """Where the ``limit`` calls around step ``focus`` start and end."""
    if len(calls) <= limit:
        return 0, len(calls)
    at = len(calls) if focus is None else sum(1 for c in calls if c.step <= focus)
    start = max(0, min(at - (limit + 1) // 2, len(calls) - limit))
    return start, start + limit


def tool_line(
    calls: list[ToolCall],
    focus: int | None = None,
    *,
    limit: int = 8,
    sig: Callable[[ToolCall], str] = methodcaller("signature", 48),
    sep: str = " → ",
) -> str:
    """``name(args) → ...``, cut to the ``limit`` calls around step ``focus``."""
    start, end = _window(calls, focus, limit)
    parts = [f"… {start} earlier"] * bool(start) + [sig(c) for c in calls[start:end]]
    return sep.join(parts + [f"… {len(calls) - end} more"] * (end < len(calls))) or "(none)"


def calls_by_side(ep: EpisodeDiff) -> list[tuple[str, list[ToolCall]]]:
    """("A" or "B", tool calls) of each run that has the episode."""
    sides = {"only_a": "A", "only_b": "B"}.get(ep.status, "AB")
    return [(side, ep.tool_calls_a if side == "A" else ep.tool_calls_b) for side in sides]


def rank(ep: EpisodeDiff) -> tuple[int, float]:
    delta = ep.delta or 0.0
    if ep.change == "regressed":
        return (0, delta)
    return (_ORDER[ep.status], -delta if ep.status == "diverged" else 0.0)


def ordered(diff: RunDiff) -> list[EpisodeDiff]:
    """Regressed first (worst first), other diverged, only in A, only in B, identical."""
    return sorted(diff.episodes, key=rank)


def headline(diff: RunDiff) -> str:
    c, total = diff.counts, len(diff.episodes)
    if diff.equivalent:
        return f"equivalent: all {total} episodes identical"
    parts = [f"{c[k]} {STATUS_LABEL[k]}" for k in ("diverged", "only_a", "only_b") if c[k]]
    return "not equivalent: " + ", ".join(parts) + f" (of {total} episodes)"


def fork_line(fork: dict[str, Any]) -> str:
    """``forked at llm step 3 (mismatch)``."""
    why = f" ({fork['why']})" if fork.get("why") else ""
    return f"forked at {fork.get('channel')} step {fork.get('step')}{why}"


def forks_line(diff: RunDiff) -> str | None:
    """``12 episodes forked; first divergence at the fork point in 12``, or None."""
    n, at = diff.forks["forked"], diff.forks["at_fork_point"]
    noun = "episode" if n == 1 else "episodes"
    return f"{n} {noun} forked; first divergence at the fork point in {at}" if n else None


def fmt_p(p: float | None) -> str:
    return "—" if p is None else "< 0.001" if p < 0.001 else f"{p:.3g}"


def _p_text(p: float | None) -> str:
    text = fmt_p(p)
    return f"p {text}" if text.startswith("<") else f"p = {text}"


def fmt_ci(s: PairedStats) -> str:
    if s.ci_low is None or s.ci_high is None:
        return "—"
    return f"[{fmt_delta(s.ci_low)}, {fmt_delta(s.ci_high)}]"


def verdict(s: PairedStats) -> str:
    """One sentence: is B's change in reward more than noise?"""
    if not s.tests:
        return "no episode has a reward in both runs: nothing to test"
    p, test = s.tests[0].p_value, s.tests[0].name
    if p >= 0.05:
        return f"not significant at 0.05 ({_p_text(p)}, {test}): could be noise"
    way = "better" if (s.mean_delta or 0) > 0 else "worse"
    return f"B is {way} than A: significant at 0.05 ({_p_text(p)}, {test})"


def stats_rows(s: PairedStats) -> list[tuple[str, str]]:
    if not s.paired:
        return [("paired episodes", "0 (no episode has a reward in both runs)")]
    ci = f"{fmt_ci(s)} (bootstrap, {s.resamples:,} resamples, seed {s.seed})"
    rows = [
        ("paired episodes", f"{s.paired} (rewarded in both runs)"),
        ("improved / regressed", f"{s.improved} / {s.regressed}"),
        ("unchanged / still failing", f"{s.unchanged} / {s.still_failing}"),
        ("mean reward A → B", f"{fmt_reward(s.mean_a)} → {fmt_reward(s.mean_b)}"),
        ("mean reward delta", f"{fmt_delta(s.mean_delta)}, {round(s.ci_level * 100)}% CI {ci}"),
    ]
    mcnemar = f" ({s.improved} improved vs {s.regressed} regressed)"
    for t in s.tests:
        detail = mcnemar if t.name == "McNemar" else ""
        rows.append((f"{t.name} ({t.method})", f"{_p_text(t.p_value)}{detail}"))
    return [*rows, ("verdict", verdict(s))]


def pass_k_rows(s: PairedStats) -> list[tuple[str, str, str, str]]:
    """(pass^k, A, B, B - A) rows when the runs hold tau2 trials (2+ a task)."""
    return [(f"pass^{r.k}", fmt_reward(r.a), fmt_reward(r.b), fmt_delta(r.delta)) for r in s.pass_k]


def cause_lines(diff: RunDiff) -> list[tuple[str, str]]:
    """(sentence, commonest path) a cause, the largest first."""
    return [(g.text, next(iter(g.paths), "")) for g in diff.causes]


def _noise_value(unit: str, value: float | None) -> str:
    if value is None:
        return "—"
    if unit == "share":
        return f"{value:.1%}"
    return f"{fmt_delta(value, 1)}%" if unit == "percent" else fmt_delta(value)


def noise_rows(noise: NoiseFloor) -> list[tuple[str, str, str, str]]:
    """(metric, A vs B, A vs A2, verdict) rows of the noise floor."""
    out = []
    for m in noise.metrics:
        observed, floor = (_noise_value(m.unit, v) for v in (m.observed, m.noise))
        out.append((m.metric, observed, floor, _WORD[m.exceeds]))
    return out


def _sig(calls: list[ToolCall], i: int | None, width: int) -> str:
    return "" if i is None else clip(calls[i].signature(width), width)


def _kept(ep: EpisodeDiff) -> set[int]:
    """The rows within ``CONTEXT`` of a change (the first ``CONTEXT`` when none changed)."""
    changed = [i for i, row in enumerate(ep.alignment) if row.op != "same"]
    return {k for i in changed for k in range(i - CONTEXT, i + CONTEXT + 1)} or set(range(CONTEXT))


def aligned_rows(ep: EpisodeDiff, *, width: int = 48, limit: int = 40) -> list[Row]:
    """(mark, call of A, call of B) rows, long runs of equal calls folded, ``limit`` at most."""
    al, ca, cb = ep.alignment, ep.tool_calls_a, ep.tool_calls_b
    rows: list[Row] = []
    for kept, run in groupby(range(len(al)), _kept(ep).__contains__):
        if kept:
            rows += [
                (MARK[al[i].op], _sig(ca, al[i].a, width), _sig(cb, al[i].b, width)) for i in run
            ]
        else:
            n = len(list(run))
            rows.append(("", f"… {n} same call{'s' if n > 1 else ''}", ""))
    more = [("", f"… {len(rows) - limit} more rows", "")] if len(rows) > limit else []
    return rows[:limit] + more
