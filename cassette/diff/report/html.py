"""The diff as one self-contained HTML file: inline CSS and JS, no network.

Top: both runs' summary. Then a table of episodes, sortable by reward delta (click a
header, or open the file with ``?sort=delta&dir=asc``). Then each episode's two
trajectories side by side, step by step, with the first divergence highlighted
(``class="divergence"``, ``id="ep-N-divergence"``) and tool calls as structured blocks.
"""

from __future__ import annotations

import re
from typing import Any

from ...storage.gc import paused_gc
from ..compare import group_by_episode, take_forks
from ..types import EpisodeDiff, RunDiff
from .analysis import (
    MARK,
    OP_LABEL,
    aligned_rows,
    cause_lines,
    noise_rows,
    pass_k_rows,
    stats_rows,
)
from .assets import CSS, CSS_EXTRA, JS
from .common import (
    MINUS,
    PART_LABEL,
    STATUS_LABEL,
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
from .trajectory import e, trajectories_html

__all__ = ["aligned_html", "analysis_html", "render_html"]


def _num_attr(value: float | None) -> str:
    return "" if value is None else repr(float(value))


def _summary(diff: RunDiff) -> str:
    a, b = diff.a, diff.b
    out = [
        '<table class="summary" id="summary"><thead><tr><th></th>',
        f'<th class="num"><span class="tag a">A</span>{e(a.label)}</th>',
        f'<th class="num"><span class="tag b">B</span>{e(b.label)}</th>',
        f'<th class="num">B {MINUS} A</th></tr></thead><tbody>',
    ]
    totals = summary_rows(diff)
    for label in ("episodes", "interactions", "mean reward", "tokens", "cost"):
        (va, vb, delta), key = totals[label], label.replace(" ", "-")
        label = "tokens (prompt + completion)" if label == "tokens" else label
        out.append(
            f'<tr><th scope="row">{e(label)}</th><td class="num" id="{key}-a">{e(va)}</td>'
            f'<td class="num" id="{key}-b">{e(vb)}</td>'
            f'<td class="num" id="{key}-delta">{e(delta)}</td></tr>'
        )
    out.append("</tbody></table>")
    out.append('<ul class="counts">')
    for key, count in diff.counts.items():  # the statuses, then the reward changes
        out.append(f'<li id="count-{key}"><b>{count}</b> {STATUS_LABEL.get(key, key)}</li>')
    forked = forks_line(diff)
    if forked is not None:
        out.append(f'<li id="count-forked">{e(forked)}</li>')
    out.append("</ul>")
    return "".join(out)


def _episode_rows(episodes: list[tuple[int, EpisodeDiff]], drawn: set[int]) -> str:
    out = [
        '<table class="episodes" id="episodes"><thead><tr>',
        '<th data-sort="env">episode</th><th data-sort="status">status</th>',
        '<th class="num" data-sort="rewardA" data-type="num">reward A</th>',
        '<th class="num" data-sort="rewardB" data-type="num">reward B</th>',
        '<th class="num" data-sort="delta" data-type="num">\u0394 reward</th>',
        "<th>first divergence</th></tr></thead><tbody>",
    ]
    for n, ep in episodes:
        d = ep.divergence
        cls = " ".join(x for x in ("ep", ep.status, ep.change or "") if x)
        out.append(
            f'<tr class="{cls}" data-env="{e(ep.env_index)}" data-status="{ep.status}" '
            f'data-reward-a="{_num_attr(ep.reward_a)}" data-reward-b="{_num_attr(ep.reward_b)}" '
            f'data-delta="{_num_attr(ep.delta)}">'
            f"<td>{_link(n, ep, drawn)}</td>"
            f'<td><span class="badge {ep.status}">{STATUS_LABEL[ep.status]}</span></td>'
            f'<td class="num">{fmt_reward(ep.reward_a)}</td>'
            f'<td class="num">{fmt_reward(ep.reward_b)}</td>'
            f'<td class="num delta">{fmt_delta(ep.delta)}</td>'
            f"<td>{_fork_cell(ep)}{e(describe(d)) if d is not None else ''}</td></tr>"
        )
    out.append("</tbody></table>")
    return "".join(out)


def _fork_cell(ep: EpisodeDiff) -> str:
    return "" if ep.fork is None else f'<span class="fork">{e(fork_line(ep.fork))}</span>; '


def _link(n: int, ep: EpisodeDiff, drawn: set[int]) -> str:
    label = e(ep.env_index)
    return f'<a href="#ep-{n}">{label}</a>' if n in drawn else label


def _note(n: int, ep: EpisodeDiff) -> str:
    d = ep.divergence
    fork = "" if ep.fork is None else f'<div class="note fork">{e(fork_line(ep.fork))}</div>'
    if d is None:
        return fork
    if d.part == "step":
        text = f'First divergence: <a href="#ep-{n}-divergence">{e(describe(d))}</a>'
    else:
        where = f'<a href="#ep-{n}-divergence">{e(d.where)}</a>' if d.step is not None else ""
        text = (
            f"First divergence{' at ' + where if where else ''}: "
            f"{PART_LABEL[d.part]} at <code>{e(d.path)}</code>"
            f'<div class="vals"><span class="tag a">A</span><code>{e(value_of(d, "a", 300))}'
            f'</code><span class="tag b">B</span><code>{e(value_of(d, "b", 300))}</code></div>'
        )
    return f'{fork}<div class="note">{text}</div>'


def _sequences(ep: EpisodeDiff) -> str:
    out = ['<div class="seqs">']
    focus = ep.divergence.step if ep.divergence is not None else None
    for side, every in (("a", ep.tool_calls_a), ("b", ep.tool_calls_b)):
        before, calls, after = window(every, focus, 16)
        chips = f"<span>… {before} earlier</span>" if before else ""
        chips += "".join(f'<code class="chip">{e(c.signature(60))}</code>' for c in calls)
        chips += f"<span>… {after} more</span>" if after else ""
        out.append(
            f'<div class="seq {side}"><span class="tag {side}">{side.upper()}</span>'
            f"{chips or '<span>no tool calls</span>'}</div>"
        )
    out.append("</div>")
    return "".join(out)


def _episode(n: int, ep: EpisodeDiff, diff: RunDiff, groups: Any) -> str:
    is_open = " open" if ep.status != "identical" else ""
    rewards = f"reward {fmt_reward(ep.reward_a)} \u2192 {fmt_reward(ep.reward_b)}"
    if ep.delta is not None:
        rewards += f" ({fmt_delta(ep.delta)})"
    body = _note(n, ep)
    if ep.alignment:
        body += aligned_html(n, ep)
    elif ep.status == "diverged":
        body += _sequences(ep)
    body += trajectories_html(n, ep, (diff.a.label, diff.b.label), groups) if groups else ""
    return (
        f'<details class="episode {ep.status}" id="ep-{n}"{is_open}><summary>episode '
        f'{e(ep.env_index)} <span class="badge {ep.status}">{STATUS_LABEL[ep.status]}</span> '
        f'<span class="rewards">{rewards}</span></summary>'
        f'<div class="episode-body">{body}</div></details>'
    )


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def analysis_html(diff: RunDiff) -> str:
    """Statistics, pass^k, grouped causes and the noise floor, as sections."""
    out = ['<section id="statistics"><h2>Statistics</h2><table class="stats" id="stats">']
    for label, value in stats_rows(diff.stats):
        cls = ' class="verdict-row"' if label == "verdict" else ""
        out.append(
            f'<tr{cls}><th scope="row">{e(label)}</th>'
            f'<td id="stat-{_slug(label)}">{e(value)}</td></tr>'
        )
    out.append("</table>")
    pk = pass_k_rows(diff.stats)
    if pk and diff.stats is not None:
        out.append(
            f'<table class="summary" id="pass-k"><thead><tr><th>{diff.stats.tasks} tasks</th>'
            '<th class="num">A</th><th class="num">B</th><th class="num">B \u2212 A</th>'
            "</tr></thead><tbody>"
        )
        for k, a, b, d in pk:
            slug = _slug(k)
            out.append(
                f'<tr><th scope="row">{e(k)}</th><td class="num" id="{slug}-a">{a}</td>'
                f'<td class="num" id="{slug}-b">{b}</td>'
                f'<td class="num" id="{slug}-delta">{e(d)}</td></tr>'
            )
        out.append("</tbody></table>")
    out.append("</section>")
    causes = cause_lines(diff)
    if causes:
        out.append('<section><h2>Why episodes diverged</h2><ul class="causes" id="causes">')
        for (text, path), group in zip(causes, diff.causes, strict=True):
            example = f" <code>{e(path)}</code>" if path else ""
            out.append(f'<li id="cause-{group.cause}"><b>{e(text)}</b>{example}</li>')
        out.append("</ul></section>")
    rows = noise_rows(diff.noise)
    if rows and diff.noise is not None:
        out.append(
            f"<section><h2>Noise floor: A vs B against A vs {e(diff.noise.baseline)}</h2>"
            '<table class="summary" id="noise"><thead><tr><th>metric</th>'
            '<th class="num">A vs B</th><th class="num">A vs A2</th><th></th></tr></thead><tbody>'
        )
        for metric, observed, noise, word in rows:
            cls = "exceeds" if word == "exceeds noise" else "within"
            out.append(
                f'<tr class="{cls}" id="noise-{_slug(metric)}"><th scope="row">{e(metric)}</th>'
                f'<td class="num">{e(observed)}</td><td class="num">{e(noise)}</td>'
                f'<td class="word">{e(word)}</td></tr>'
            )
        out.append("</tbody></table></section>")
    return "".join(out)


def aligned_html(n: int, ep: EpisodeDiff) -> str:
    """Both tool-call sequences aligned side by side; each row marked same, changed,
    only in A (deleted) or only in B (inserted)."""
    ops = {v: k for k, v in MARK.items()}
    out = [
        f'<table class="aligned" id="ep-{n}-aligned"><thead><tr><th class="mark"></th>'
        '<th><span class="tag a">A</span>tool calls</th>'
        '<th><span class="tag b">B</span>tool calls</th></tr></thead><tbody>'
    ]
    for k, (mark, a, b) in enumerate(aligned_rows(ep, width=90, limit=60)):
        op = ops.get(mark)
        cls = f"op-{op}" if op else "fold"
        title = f' title="{OP_LABEL[op]}"' if op else ""
        out.append(
            f'<tr class="{cls}" id="ep-{n}-call-{k}"{title}><td class="mark">{e(mark)}</td>'
            f'<td class="a">{e(a)}</td><td class="b">{e(b)}</td></tr>'
        )
    out.append("</tbody></table>")
    return "".join(out)


def render_html(diff: RunDiff, *, max_episodes: int = 200) -> str:
    """The report page; trajectories are drawn for at most ``max_episodes`` episodes
    (those that differ first) when the diff still holds both runs' indexes."""
    with paused_gc():  # the indexes are millions of objects: no collector passes over them
        return _page(diff, max_episodes)


def _page(diff: RunDiff, max_episodes: int) -> str:
    numbered = list(enumerate(diff.episodes))
    by_rank = {id(ep): i for i, ep in enumerate(ordered(diff))}
    shown = sorted(numbered, key=lambda p: by_rank[id(p[1])])[:max_episodes]
    groups = None
    if diff.index_a is not None and diff.index_b is not None:
        groups = (group_by_episode(diff.index_a), group_by_episode(diff.index_b))
        for group in groups:
            take_forks(group)  # the fork records are shown as notes, not steps
    title = f"cassette diff: {diff.a.label} vs {diff.b.label}"
    verdict = "ok" if diff.equivalent else "bad"
    parts = [
        '<!doctype html><html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{e(title)}</title><style>{CSS}{CSS_EXTRA}</style></head><body><main>",
        "<header><h1>cassette diff</h1>",
        f'<p class="runs"><span class="tag a">A</span>{e(diff.a.label)} &nbsp; ',
        f'<span class="tag b">B</span>{e(diff.b.label)}</p>',
        f'<p class="verdict {verdict}" id="verdict">{e(headline(diff))}</p></header>',
        f"<section><h2>Runs</h2>{_summary(diff)}</section>",
        analysis_html(diff),
        f"<section><h2>Episodes</h2>{_episode_rows(numbered, {n for n, _ in shown})}</section>",
        "<section><h2>Trajectories</h2>",
    ]
    if len(numbered) > len(shown):
        parts.append(
            f"<p>{len(shown)} of {len(numbered)} episodes shown (those that differ first).</p>"
        )
    parts.extend(_episode(n, ep, diff, groups) for n, ep in sorted(shown))
    ignored = ", ".join(f"<code>{e(p)}</code>" for p in diff.volatile_seen) or "none"
    parts.append(
        f'</section><p class="ignored">Ignored as volatile (they differ between the runs): '
        f"{ignored}. Always ignored: {', '.join(e(p) for p in diff.ignored)}.</p>"
    )
    parts.append(f"</main><script>{JS}</script></body></html>\n")
    return "".join(parts)
