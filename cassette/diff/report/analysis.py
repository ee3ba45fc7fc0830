"""The statistics, causes, noise floor and aligned calls of a diff as rows of strings,
which the text, Markdown and HTML renderers lay out each in their own way."""

from __future__ import annotations

from itertools import groupby

from ..causes import CAUSES, SHORT
from ..types import (
    AlignedCall,
    EpisodeDiff,
    NoiseFloor,
    NoiseMetric,
    PairedStats,
    RunDiff,
    ToolCall,
)
from .common import MINUS, fmt_delta, fmt_reward

__all__ = [
    "MARK",
    "OP_LABEL",
    "aligned_rows",
    "cause_lines",
    "fmt_p",
    "many_header",
    "many_rows",
    "noise_rows",
    "p_text",
    "pass_k_rows",
    "stats_rows",
    "verdict",
]

# how an aligned call is marked: same, changed, only in A (deleted), only in B (inserted)
MARK = {"same": "=", "changed": "~", "deleted": MINUS, "inserted": "+"}
OP_LABEL = {"same": "same", "changed": "changed", "deleted": "only in A", "inserted": "only in B"}


def fmt_p(p: float | None) -> str:
    if p is None:
        return "—"
    return "< 0.001" if p < 0.001 else f"{p:.3g}"


def p_text(p: float | None) -> str:
    """``p = 0.0312`` or ``p < 0.001``."""
    text = fmt_p(p)
    return f"p {text}" if text.startswith("<") else f"p = {text}"


def _ci(s: PairedStats) -> str:
    if s.ci_low is None or s.ci_high is None:
        return "—"
    return f"[{fmt_delta(s.ci_low)}, {fmt_delta(s.ci_high)}]"


def verdict(s: PairedStats | None) -> str:
    """One sentence: is B's change in reward more than noise?"""
    if s is None or not s.paired:
        return "no episode has a reward in both runs: nothing to test"
    p = s.p_value
    if p is None:
        return "no test"
    if p < 0.05:
        way = "better" if (s.mean_delta or 0) > 0 else "worse"
        return f"B is {way} than A: significant at 0.05 ({p_text(p)}, {s.tests[0].name})"
    return f"not significant at 0.05 ({p_text(p)}, {s.tests[0].name}): could be noise"


def stats_rows(s: PairedStats | None) -> list[tuple[str, str]]:
    """(label, value) rows of the paired statistics."""
    if s is None or not s.paired:
        return [("paired episodes", "0 (no episode has a reward in both runs)")]
    rows = [
        ("paired episodes", f"{s.paired} (rewarded in both runs)"),
        ("improved / regressed", f"{s.improved} / {s.regressed}"),
        ("unchanged / still failing", f"{s.unchanged} / {s.still_failing}"),
        ("mean reward A → B", f"{fmt_reward(s.mean_a)} → {fmt_reward(s.mean_b)}"),
        (
            "mean reward delta",
            f"{fmt_delta(s.mean_delta)}, {round(s.ci_level * 100)}% CI {_ci(s)} "
            f"(bootstrap, {s.resamples:,} resamples, seed {s.seed})",
        ),
    ]
    for t in s.tests:
        detail = (
            f" ({s.improved} improved vs {s.regressed} regressed)" if t.name == "McNemar" else ""
        )
        rows.append((f"{t.name} ({t.method})", f"{p_text(t.p_value)}{detail}"))
    rows.append(("verdict", verdict(s)))
    return rows


def pass_k_rows(s: PairedStats | None) -> list[tuple[str, str, str, str]]:
    """(pass^k, A, B, B - A) rows when the runs hold tau2 trials (2+ a task)."""
    if s is None:
        return []
    return [(f"pass^{r.k}", fmt_reward(r.a), fmt_reward(r.b), fmt_delta(r.delta)) for r in s.pass_k]


def cause_lines(diff: RunDiff) -> list[tuple[str, str]]:
    """(sentence, commonest path) a cause, the largest first."""
    out = []
    for g in diff.causes:
        path = next(iter(g.paths), "")
        out.append((g.text, path if g.cause in CAUSES and path else ""))
    return out


def _noise_value(m: NoiseMetric, value: float | None) -> str:
    if value is None:
        return "—"
    if m.unit == "share":
        return f"{value:.1%}"
    if m.unit == "percent":
        return f"{fmt_delta(value, 1)}%"
    return fmt_delta(value)


def noise_rows(noise: NoiseFloor | None) -> list[tuple[str, str, str, str]]:
    """(metric, A vs B, A vs A2, verdict) rows of the noise floor."""
    if noise is None:
        return []
    out = []
    for m in noise.metrics:
        word = "—" if m.exceeds is None else "exceeds noise" if m.exceeds else "within noise"
        out.append((m.metric, _noise_value(m, m.observed), _noise_value(m, m.noise), word))
    return out


def _sig(calls: list[ToolCall], i: int | None, width: int) -> str:
    if i is None:
        return ""
    text = calls[i].signature(width)
    return text if len(text) <= width else text[: width - 1] + "…"


def aligned_rows(
    ep: EpisodeDiff, *, width: int = 48, context: int = 2, limit: int = 40
) -> list[tuple[str, str, str]]:
    """(mark, call of A, call of B) rows; runs of more than 2 * ``context`` + 1 equal
    calls are folded into one ``… n same calls`` row, and at most ``limit`` rows shown."""
    rows: list[tuple[str, str, str]] = []
    al: list[AlignedCall] = ep.alignment
    keep = [False] * len(al)
    for i, row in enumerate(al):
        if row.op != "same":
            for k in range(max(0, i - context), min(len(al), i + context + 1)):
                keep[k] = True
    if not any(keep):
        keep = [i < context for i in range(len(al))]
    for kept, run in groupby(range(len(al)), keep.__getitem__):
        if kept:
            ca, cb = ep.tool_calls_a, ep.tool_calls_b
            rows += [
                (MARK[al[i].op], _sig(ca, al[i].a, width), _sig(cb, al[i].b, width)) for i in run
            ]
        else:
            n = len(list(run))
            rows.append(("", f"… {n} same call{'s' if n > 1 else ''}", ""))
    if len(rows) > limit:
        rows = [*rows[:limit], ("", f"… {len(rows) - limit} more rows", "")]
    return rows


def many_header(noise: bool) -> list[str]:
    head = ["run", "episodes", "reward", "Δ vs A", "95% CI", "p", "impr", "regr", "diverged",
            "top cause"]  # fmt: skip
    return [*head, "> noise"] if noise else head


def many_rows(diffs: list[RunDiff]) -> list[list[str]]:
    """One row a run: the baseline first, then each run against it."""
    first = diffs[0].a
    rows = [[f"A {first.label}", str(first.episodes), fmt_reward(first.mean_reward),
             "", "", "", "", "", "", ""]]  # fmt: skip
    noise = any(d.noise is not None for d in diffs)
    if noise:
        rows[0].append("")
    for n, d in enumerate(diffs, 1):
        s = d.stats
        top = d.causes[0] if d.causes else None
        row = [
            f"{chr(65 + n)} {d.b.label}",
            str(d.b.episodes),
            fmt_reward(d.b.mean_reward),
            fmt_delta(s.mean_delta) if s else "—",
            _ci(s) if s and s.paired else "—",
            fmt_p(s.p_value) if s else "—",
            str(s.improved) if s else "—",
            str(s.regressed) if s else "—",
            str(d.counts["diverged"]),
            f"{top.count} {SHORT.get(top.cause, top.cause)}" if top else "",
        ]
        if noise:
            m = d.noise.metrics[0] if d.noise is not None and d.noise.metrics else None
            if m is None or m.exceeds is None:
                row.append("—")
            else:  # how far |mean reward delta| is beyond A vs A2's
                row.append(f"by {fmt_reward(m.excess)}" if m.exceeds else "no")
        rows.append(row)
    return rows
