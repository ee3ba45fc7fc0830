"""The diff as Markdown that fits a pull-request comment (GitHub's 65,536 characters): a
summary table, the statistics, causes and noise floor, the regressed episodes first,
then the other episodes that differ, details folded."""

from __future__ import annotations

import html
from collections.abc import Callable

from ..types import EpisodeDiff, RunDiff
from .analysis import aligned_rows, cause_lines, noise_rows, pass_k_rows, stats_rows
from .common import (
    MINUS,
    describe,
    fmt_delta,
    fmt_reward,
    fork_line,
    forks_line,
    headline,
    ordered,
    summary_rows,
    value_of,
    window,
)

__all__ = ["COMMENT_LIMIT", "analysis_lines", "cell", "code", "fit", "render_markdown"]


COMMENT_LIMIT = 65_536  # GitHub's limit on a comment body, in characters


def code(text: str) -> str:
    """``text`` as an inline code span that survives backticks and table pipes."""
    text = text.replace("\n", " ").replace("|", "\\|")
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def cell(text: str) -> str:
    return text.replace("\n", " ").replace("|", "\\|")


def _summary(diff: RunDiff) -> list[str]:
    a, b = diff.a, diff.b
    c, totals = diff.counts, summary_rows(diff)
    rows = [f"| | A {code(a.label)} | B {code(b.label)} | B {MINUS} A |", "|---|---:|---:|---:|"]
    for key in ("episodes", "mean reward", "tokens", "cost"):
        va, vb, delta = totals[key]
        delta = f"**{delta}**" if key == "mean reward" else delta
        rows.append(f"| {key} | {va} | {vb} | {delta} |".replace("|  |", "| |"))
    counts = (
        f"episodes: **{c['regressed']} regressed**, {c['improved']} improved, "
        f"{c['unchanged']} unchanged · {c['identical']} identical, {c['diverged']} diverged, "
        f"{c['only_a']} only in A, {c['only_b']} only in B"
    )
    forked = forks_line(diff)
    return [*rows, "", counts, *(["", f"forks: {forked}"] if forked else [])]


def _table(episodes: list[EpisodeDiff]) -> list[str]:
    lines = [
        "| episode | reward A | reward B | Δ | first divergence |",
        "|---|---:|---:|---:|---|",
    ]
    for ep in episodes:
        d = ep.divergence
        where = cell(describe(d)) if d is not None else ""
        if d is not None and d.part != "step":
            what = f"{d.where} {d.part}" if d.part != "outcome" else "outcome"
            where = f"{what} {code(d.path)}: "
            where += f"{code(value_of(d, 'a', 40))} → {code(value_of(d, 'b', 40))}"
        if ep.fork is not None:
            where = f"{cell(fork_line(ep.fork))}; {where}"
        delta = fmt_delta(ep.delta)
        delta = f"**{delta}**" if ep.change in ("regressed", "improved") else delta
        lines.append(
            f"| {code(str(ep.env_index))} | {fmt_reward(ep.reward_a)} | "
            f"{fmt_reward(ep.reward_b)} | {delta} | {where} |"
        )
    return lines


def _details(ep: EpisodeDiff) -> list[str]:
    d = ep.divergence
    label = html.escape(str(ep.env_index))
    out = ["<details>", f"<summary>episode {label}: details</summary>", ""]
    if ep.fork is not None:
        out.append(f"- {cell(fork_line(ep.fork))}")
    if d is not None:
        out.append(f"- first divergence: {describe(d).split(' at ')[0]}")
        if d.part != "step":
            out.append(f"  - path: {code(d.path)}")
            out.append(f"  - A: {code(value_of(d, 'a', 200))}")
            out.append(f"  - B: {code(value_of(d, 'b', 200))}")
    for side, calls in (("A", ep.tool_calls_a), ("B", ep.tool_calls_b)):
        if (side == "A" and ep.status == "only_b") or (side == "B" and ep.status == "only_a"):
            continue
        before, shown, after = window(calls, d.step if d is not None else None, 12)
        seq = [f"{c.step}:{code(c.signature(80))}" for c in shown]
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


def analysis_lines(diff: RunDiff) -> list[str]:
    """Statistics (and pass^k), grouped causes, and the noise floor."""
    out = ["", "### Statistics", "", "| paired by env_index | |", "|---|---|"]
    for label, value in stats_rows(diff.stats):
        value = f"**{cell(value)}**" if label == "verdict" else cell(value)
        out.append(f"| {cell(label)} | {value} |")
    pk = pass_k_rows(diff.stats)
    if pk and diff.stats is not None:
        out += ["", f"| {diff.stats.tasks} tasks | A | B | B {MINUS} A |", "|---|---:|---:|---:|"]
        out += [f"| {k} | {a} | {b} | {d} |" for k, a, b, d in pk]
    causes = cause_lines(diff)
    if causes:
        out += ["", "### Why episodes diverged", ""]
        out += [
            f"- **{text}**" + (f" (e.g. {code(path)})" if path else "") for text, path in causes
        ]
    rows = noise_rows(diff.noise)
    if rows and diff.noise is not None:
        out += ["", f"### Noise floor: A vs B against A vs {code(diff.noise.baseline)}", ""]
        out += ["| metric | A vs B | A vs A2 | |", "|---|---:|---:|---|"]
        for metric, observed, noise, word in rows:
            word = f"**{word}**" if word == "exceeds noise" else word
            out.append(f"| {cell(metric)} | {observed} | {noise} | {word} |")
    return out


def aligned_table(ep: EpisodeDiff) -> list[str]:
    """The tool calls aligned, as a table: = same, ~ changed, minus only in A, + only in B."""
    if not ep.alignment:
        return []
    out = ["", "| | A | B |", "|:-:|---|---|"]
    for mark, a, b in aligned_rows(ep, width=70):
        left = code(a) if a and not a.startswith("… ") else cell(a)
        out.append(f"| {mark} | {left} | {code(b) if b else ''} |")
    return out


def fit(render: Callable[[int], str], limit: int, budget: int = COMMENT_LIMIT) -> str:
    """The report rendered with at most ``limit`` episodes a section, fewer until it fits
    in ``budget`` characters; if even none fit, cut at a line with a note."""
    for n in (limit, 10, 5, 2, 0):
        if n > limit:
            continue
        text = render(n)
        if len(text) <= budget:
            return text
    note = "\n\n… (cut to fit a GitHub comment; run `cassette diff --format json` for all)\n"
    cut = text[: budget - len(note)]
    return cut[: cut.rfind("\n")] + note


def render_markdown(diff: RunDiff, *, limit: int = 25, budget: int = COMMENT_LIMIT) -> str:
    """At most ``limit`` episodes a section are shown, fewer when needed to fit a comment
    in ``budget`` characters (GitHub's limit); what still does not fit is cut, with a note."""
    return fit(lambda n: _render(diff, n), limit, budget)


def _render(diff: RunDiff, limit: int) -> str:
    eps = ordered(diff)
    regressed = [e for e in eps if e.change == "regressed"]
    others = [e for e in eps if e.status == "diverged" and e.change != "regressed"]
    only = [e for e in eps if e.status in ("only_a", "only_b")]
    icon = "✅" if diff.equivalent else "❌"
    lines = [f"## {icon} cassette diff: {code(diff.a.label)} → {code(diff.b.label)}", ""]
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
                f"| {code(str(ep.env_index))} | only in {side} | {fmt_reward(reward)} | {steps} |"
            )
    if diff.volatile_seen:
        seen = ", ".join(code(p) for p in diff.volatile_seen)
        lines += ["", f"<sub>Ignored as volatile (they differ between the runs): {seen}</sub>"]
    return "\n".join(lines) + "\n"
