"""The diff as Markdown that fits a pull-request comment (GitHub's 65,536 characters),
regressed episodes first, details folded."""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from itertools import groupby

from ..types import Divergence, EpisodeDiff, RunDiff, ToolCall
from . import common as c

__all__ = [
    "COMMENT_LIMIT",
    "analysis_lines",
    "cell",
    "code",
    "fit",
    "render_markdown",
    "table_lines",
]

COMMENT_LIMIT = 65_536  # GitHub's limit on a comment body, in characters
_SUMMARY = ("episodes", "mean reward", "tokens", "cost")
_NUM3 = "|---|---:|---:|---:|"


def code(text: str) -> str:
    """``text`` as an inline code span that survives backticks and table pipes."""
    text = cell(text)
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def cell(text: str) -> str:
    return text.replace("\n", " ").replace("|", "\\|")


def table_lines(head: str, align: str, body: Sequence[Sequence[str]]) -> list[str]:
    """A table: ``head`` its first line, ``align`` its rule, ``body`` cells (already escaped)."""
    return [head, align, *(f"| {' | '.join(row)} |" for row in body)]


def _bold(text: str, when: bool) -> str:
    return f"**{text}**" if when else text


def _summary(diff: RunDiff) -> list[str]:
    n, forked = diff.counts, c.forks_line(diff)
    head = f"| | A {code(diff.a.label)} | B {code(diff.b.label)} | B {c.MINUS} A |"
    totals = c.summary_rows(diff)
    body = [(k, va, vb, _bold(d, k == "mean reward")) for k, (va, vb, d) in totals.items()]
    table = table_lines(head, "|---|---:|---:|---:|", [r for r in body if r[0] in _SUMMARY])
    counts = (
        f"episodes: **{n['regressed']} regressed**, {n['improved']} improved, "
        f"{n['unchanged']} unchanged · {n['identical']} identical, {n['diverged']} diverged, "
        f"{n['only_a']} only in A, {n['only_b']} only in B"
    )
    table = [line.replace("|  |", "| |") for line in table]
    return [*table, "", counts, *(["", f"forks: {forked}"] if forked else [])]


def _where(ep: EpisodeDiff) -> str:
    d = ep.divergence
    where = cell(c.describe(d)) if d is not None else ""
    if d is not None and d.part != "step":
        what = f"{d.where} {d.part}" if d.part != "outcome" else "outcome"
        va, vb = (code(c.value_of(d, side, 40)) for side in "ab")
        where = f"{what} {code(d.path)}: {va} → {vb}"
    return where if ep.fork is None else f"{cell(c.fork_line(ep.fork))}; {where}"


def _rewards(ep: EpisodeDiff) -> list[str]:
    delta = _bold(c.fmt_delta(ep.delta), ep.change in ("regressed", "improved"))
    return [c.fmt_reward(ep.reward_a), c.fmt_reward(ep.reward_b), delta]


def _table(episodes: list[EpisodeDiff]) -> list[str]:
    body = [(code(str(ep.env_index)), *_rewards(ep), _where(ep)) for ep in episodes]
    head = "| episode | reward A | reward B | Δ | first divergence |"
    return table_lines(head, "|---|---:|---:|---:|---|", body)


def _first(d: Divergence) -> list[str]:
    out = [f"- first divergence: {c.describe(d).split(' at ')[0]}"]
    if d.part != "step":
        out.append(f"  - path: {code(d.path)}")
        out += [f"  - {s.upper()}: {code(c.value_of(d, s, 200))}" for s in "ab"]
    return out


def _signature(call: ToolCall) -> str:
    return f"{call.step}:{code(call.signature(80))}"


def _details(ep: EpisodeDiff) -> list[str]:
    d = ep.divergence
    out = ["<details>", f"<summary>episode {html.escape(str(ep.env_index))}: details</summary>"]
    out += [""] + ([f"- {cell(c.fork_line(ep.fork))}"] if ep.fork is not None else [])
    out += _first(d) if d is not None else []
    for side, calls in c.calls_by_side(ep):
        seq = c.tool_line(calls, d.step if d else None, limit=12, sig=_signature, sep=", ")
        out.append(f"- tool calls {side} ({len(calls)}): {seq}")
    return [*out, *_aligned_table(ep), "", "</details>"]


def _section(title: str, episodes: list[EpisodeDiff], limit: int) -> list[str]:
    if not episodes:
        return []
    out = ["", f"### {title} ({len(episodes)})"] + ["", *_table(episodes[:limit])] * bool(limit)
    for ep in episodes[:limit]:
        out += ["", *_details(ep)]
    if len(episodes) > limit:
        more = "more" if limit else "episodes"
        out += ["", f"… and {len(episodes) - limit} {more} (run `cassette diff --format json`)"]
    return out


def analysis_lines(diff: RunDiff) -> list[str]:
    """Statistics (and pass^k), grouped causes, and the noise floor."""
    stats = [(cell(k), _bold(cell(v), k == "verdict")) for k, v in c.stats_rows(diff.stats)]
    out = ["", "### Statistics", "", *table_lines("| paired by env_index | |", "|---|---|", stats)]
    causes = c.cause_lines(diff)
    if diff.stats.pass_k:
        head = f"| {diff.stats.tasks} tasks | A | B | B {c.MINUS} A |"
        out += ["", *table_lines(head, _NUM3, c.pass_k_rows(diff.stats))]
    if causes:
        out += ["", "### Why episodes diverged", ""]
        out += [f"- **{text}**" + f" (e.g. {code(path)})" * bool(path) for text, path in causes]
    return out + _noise_lines(diff)


def _noise_lines(diff: RunDiff) -> list[str]:
    if diff.noise is None:
        return []
    head = ["", f"### Noise floor: A vs B against A vs {code(diff.noise.baseline)}", ""]
    rows = c.noise_rows(diff.noise)
    body = [(cell(m), o, n, _bold(w, w == "exceeds noise")) for m, o, n, w in rows]
    return head + table_lines("| metric | A vs B | A vs A2 | |", "|---|---:|---:|---|", body)


def _aligned_table(ep: EpisodeDiff) -> list[str]:
    body = [
        (mark, code(a) if a and not a.startswith("… ") else cell(a), code(b) if b else "")
        for mark, a, b in c.aligned_rows(ep, width=70)
    ]
    return ["", *table_lines("| | A | B |", "|:-:|---|---|", body)] if body else []


def fit(render: Callable[[int], str], limit: int, budget: int = COMMENT_LIMIT) -> str:
    """``render(n)`` for ``n <= limit`` episodes a section, fewer until it fits ``budget``."""
    for n in [n for n in (limit, 10, 5, 2, 0) if n <= limit]:
        text = render(n)
        if len(text) <= budget:
            return text
    note = "\n\n… (cut to fit a GitHub comment; run `cassette diff --format json` for all)\n"
    cut = text[: budget - len(note)]
    return cut[: cut.rfind("\n")] + note


def render_markdown(diff: RunDiff, *, limit: int = 25, budget: int = COMMENT_LIMIT) -> str:
    """The diff as Markdown: ``limit`` episodes a section, fewer (or cut) to fit ``budget``."""
    return fit(lambda n: _render(diff, n), limit, budget)


def _only(episodes: list[EpisodeDiff], limit: int) -> list[str]:
    body = []
    for ep in episodes[:limit]:
        side = "A" if ep.status == "only_a" else "B"
        reward, steps = (ep.reward_a, ep.steps_a) if side == "A" else (ep.reward_b, ep.steps_b)
        body.append((code(str(ep.env_index)), f"only in {side}", c.fmt_reward(reward), str(steps)))
    head = f"### Only in one run ({len(episodes)})"
    table = table_lines("| episode | run | reward | steps |", "|---|---|---:|---:|", body)
    return ["", head, "", *table] if episodes else []


def _kind(ep: EpisodeDiff) -> str:
    return "regressed" if ep.change == "regressed" else ep.status


def _episodes(diff: RunDiff, limit: int) -> list[str]:
    kinds = {kind: list(eps) for kind, eps in groupby(c.ordered(diff), _kind)}
    lines = _section("Regressed", kinds.get("regressed", []), limit)
    lines += _section("Other diverged episodes", kinds.get("diverged", []), limit)
    return lines + _only(kinds.get("only_a", []) + kinds.get("only_b", []), limit)


def _render(diff: RunDiff, limit: int) -> str:
    icon = "✅" if diff.equivalent else "❌"
    lines = [f"## {icon} cassette diff: {code(diff.a.label)} → {code(diff.b.label)}", ""]
    lines += [f"**{c.headline(diff)}**", "", *_summary(diff), *analysis_lines(diff)]
    lines += _episodes(diff, limit)
    if diff.volatile_seen:
        seen = ", ".join(code(p) for p in diff.volatile_seen)
        lines += ["", f"<sub>Ignored as volatile (they differ between the runs): {seen}</sub>"]
    return "\n".join(lines) + "\n"
