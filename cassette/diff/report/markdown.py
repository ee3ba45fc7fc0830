"""The diff as Markdown that fits a pull-request comment: a summary table, the regressed
episodes first, then the other episodes that differ, details folded."""

from __future__ import annotations

import html

from ..types import EpisodeDiff, RunDiff
from .common import (
    MINUS,
    cost_delta,
    describe,
    fmt_cost,
    fmt_delta,
    fmt_int,
    fmt_reward,
    headline,
    ordered,
    value_of,
    window,
)
from .markdown_analysis import aligned_table, analysis_lines, fit

__all__ = ["render_markdown"]


def _code(text: str) -> str:
    """``text`` as an inline code span that survives backticks and table pipes."""
    text = text.replace("\n", " ").replace("|", "\\|")
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _cell(text: str) -> str:
    return text.replace("\n", " ").replace("|", "\\|")


def _summary(diff: RunDiff) -> list[str]:
    a, b = diff.a, diff.b
    ma, mb = a.mean_reward, b.mean_reward
    mean_delta = None if ma is None or mb is None else mb - ma
    c = diff.counts
    cost_change = fmt_cost(cost_delta(a.cost, b.cost), True)
    rows = [
        f"| | A {_code(a.label)} | B {_code(b.label)} | B {MINUS} A |",
        "|---|---:|---:|---:|",
        f"| episodes | {a.episodes} | {b.episodes} | |",
        f"| mean reward | {fmt_reward(ma)} | {fmt_reward(mb)} | **{fmt_delta(mean_delta)}** |",
        f"| tokens | {fmt_int(a.total_tokens)} | {fmt_int(b.total_tokens)} "
        f"| {fmt_delta(b.total_tokens - a.total_tokens)} |",
        f"| cost | {fmt_cost(a.cost)} | {fmt_cost(b.cost)} | {cost_change} |",
    ]
    counts = (
        f"episodes: **{c['regressed']} regressed**, {c['improved']} improved, "
        f"{c['unchanged']} unchanged · {c['identical']} identical, {c['diverged']} diverged, "
        f"{c['only_a']} only in A, {c['only_b']} only in B"
    )
    return [*rows, "", counts]


def _table(episodes: list[EpisodeDiff]) -> list[str]:
    lines = [
        "| episode | reward A | reward B | Δ | first divergence |",
        "|---|---:|---:|---:|---|",
    ]
    for ep in episodes:
        d = ep.divergence
        where = _cell(describe(d)) if d is not None else ""
        if d is not None and d.part != "step":
            what = f"{d.where} {d.part}" if d.part != "outcome" else "outcome"
            where = f"{what} {_code(d.path)}: "
            where += f"{_code(value_of(d, 'a', 40))} → {_code(value_of(d, 'b', 40))}"
        delta = fmt_delta(ep.delta)
        delta = f"**{delta}**" if ep.change in ("regressed", "improved") else delta
        lines.append(
            f"| {_code(str(ep.env_index))} | {fmt_reward(ep.reward_a)} | "
            f"{fmt_reward(ep.reward_b)} | {delta} | {where} |"
        )
    return lines


def _details(ep: EpisodeDiff) -> list[str]:
    d = ep.divergence
    label = html.escape(str(ep.env_index))
    out = ["<details>", f"<summary>episode {label}: details</summary>", ""]
    if d is not None:
        out.append(f"- first divergence: {describe(d).split(' at ')[0]}")
        if d.part != "step":
            out.append(f"  - path: {_code(d.path)}")
            out.append(f"  - A: {_code(value_of(d, 'a', 200))}")
            out.append(f"  - B: {_code(value_of(d, 'b', 200))}")
    for side, calls in (("A", ep.tool_calls_a), ("B", ep.tool_calls_b)):
        if (side == "A" and ep.status == "only_b") or (side == "B" and ep.status == "only_a"):
            continue
        before, shown, after = window(calls, d.step if d is not None else None, 12)
        seq = [f"{c.step}:{_code(c.signature(80))}" for c in shown]
        seq = ([f"… {before} earlier"] if before else []) + seq
        seq += [f"… {after} more"] if after else []
        out.append(f"- tool calls {side} ({len(calls)}): {', '.join(seq) or '(none)'}")
    return [*out, *aligned_table(ep), "", "</details>"]


def _section(title: str, episodes: list[EpisodeDiff], limit: int) -> list[str]:
    if not episodes:
        return []
    out = ["", f"### {title} ({len(episodes)})"]
    if limit:
        out += ["", *_table(episodes[:limit])]
    for ep in episodes[:limit]:
        out += ["", *_details(ep)]
    if len(episodes) > limit:
        more = "more" if limit else "episodes"
        out += ["", f"… and {len(episodes) - limit} {more} (run `cassette diff --format json`)"]
    return out


def render_markdown(diff: RunDiff, *, limit: int = 25, budget: int = 65_536) -> str:
    """At most ``limit`` episodes a section are shown, fewer when needed to fit a comment
    in ``budget`` characters (GitHub's limit); what still does not fit is cut, with a note."""
    return fit(lambda n: _render(diff, n), limit, budget)


def _render(diff: RunDiff, limit: int) -> str:
    eps = ordered(diff)
    regressed = [e for e in eps if e.change == "regressed"]
    others = [e for e in eps if e.status == "diverged" and e.change != "regressed"]
    only = [e for e in eps if e.status in ("only_a", "only_b")]
    icon = "✅" if diff.equivalent else "❌"
    lines = [f"## {icon} cassette diff: {_code(diff.a.label)} → {_code(diff.b.label)}", ""]
    lines += [f"**{headline(diff)}**", "", *_summary(diff), *analysis_lines(diff)]
    lines += _section("Regressed", regressed, limit)
    lines += _section("Other diverged episodes", others, limit)
    if only:
        lines += ["", f"### Only in one run ({len(only)})", ""]
        lines += ["| episode | run | reward | steps |", "|---|---|---:|---:|"]
        for ep in only[:limit]:
            side = "A" if ep.status == "only_a" else "B"
            reward = ep.reward_a if side == "A" else ep.reward_b
            steps = ep.steps_a if side == "A" else ep.steps_b
            lines.append(
                f"| {_code(str(ep.env_index))} | only in {side} | {fmt_reward(reward)} | {steps} |"
            )
    if diff.volatile_seen:
        seen = ", ".join(_code(p) for p in diff.volatile_seen)
        lines += ["", f"<sub>Ignored as volatile (they differ between the runs): {seen}</sub>"]
    return "\n".join(lines) + "\n"
