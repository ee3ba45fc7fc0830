"""The diff as one self-contained HTML file: inline CSS and JS, no network.

Top: both runs' summary. Then a table of episodes, sortable by reward delta (click a
header, or open the file with ``?sort=delta&dir=asc``). Then each episode's two
trajectories side by side, step by step, with the first divergence highlighted
(``class="divergence"``, ``id="ep-N-divergence"``) and tool calls as structured blocks.
"""

from __future__ import annotations

from html import escape
from typing import Any

import orjson

from ...storage.gc import paused_gc
from ..compare import group_by_episode
from ..forks import fork_line, forks_line, take_forks
from ..types import EpisodeDiff, RunDiff
from .assets import CSS, JS
from .common import (
    MINUS,
    STATUS_LABEL,
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
from .html_analysis import CSS_EXTRA, aligned_html, analysis_html
from .trajectory import Message, StepView, episode_views, merged_keys

__all__ = ["render_html"]


def _e(value: Any) -> str:
    return escape(str(value), quote=True)


def _num_attr(value: float | None) -> str:
    return "" if value is None else repr(float(value))


def _summary(diff: RunDiff) -> str:
    a, b = diff.a, diff.b
    ma, mb = a.mean_reward, b.mean_reward
    rows = [
        ("episodes", "episodes", str(a.episodes), str(b.episodes), ""),
        ("interactions", "interactions", fmt_int(a.interactions), fmt_int(b.interactions), ""),
        (
            "mean-reward",
            "mean reward",
            fmt_reward(ma),
            fmt_reward(mb),
            fmt_delta(None if ma is None or mb is None else mb - ma),
        ),
        (
            "tokens",
            "tokens (prompt + completion)",
            fmt_int(a.total_tokens),
            fmt_int(b.total_tokens),
            fmt_delta(b.total_tokens - a.total_tokens),
        ),
        (
            "cost",
            "cost",
            fmt_cost(a.cost),
            fmt_cost(b.cost),
            fmt_cost(cost_delta(a.cost, b.cost), True),
        ),
    ]
    out = [
        '<table class="summary" id="summary"><thead><tr><th></th>',
        f'<th class="num"><span class="tag a">A</span>{_e(a.label)}</th>',
        f'<th class="num"><span class="tag b">B</span>{_e(b.label)}</th>',
        f'<th class="num">B {MINUS} A</th></tr></thead><tbody>',
    ]
    for key, label, va, vb, delta in rows:
        out.append(
            f'<tr><th scope="row">{_e(label)}</th><td class="num" id="{key}-a">{_e(va)}</td>'
            f'<td class="num" id="{key}-b">{_e(vb)}</td>'
            f'<td class="num" id="{key}-delta">{_e(delta)}</td></tr>'
        )
    out.append("</tbody></table>")
    c = diff.counts
    items = [
        ("identical", "identical"),
        ("diverged", "diverged"),
        ("only_a", "only in A"),
        ("only_b", "only in B"),
        ("improved", "improved"),
        ("regressed", "regressed"),
        ("unchanged", "unchanged"),
    ]
    out.append('<ul class="counts">')
    for key, label in items:
        out.append(f'<li id="count-{key}"><b>{c[key]}</b> {label}</li>')
    forked = forks_line(diff)
    if forked is not None:
        out.append(f'<li id="count-forked">{_e(forked)}</li>')
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
            f'<tr class="{cls}" data-env="{_e(ep.env_index)}" data-status="{ep.status}" '
            f'data-reward-a="{_num_attr(ep.reward_a)}" data-reward-b="{_num_attr(ep.reward_b)}" '
            f'data-delta="{_num_attr(ep.delta)}">'
            f"<td>{_link(n, ep, drawn)}</td>"
            f'<td><span class="badge {ep.status}">{STATUS_LABEL[ep.status]}</span></td>'
            f'<td class="num">{fmt_reward(ep.reward_a)}</td>'
            f'<td class="num">{fmt_reward(ep.reward_b)}</td>'
            f'<td class="num delta">{fmt_delta(ep.delta)}</td>'
            f"<td>{_fork_cell(ep)}{_e(describe(d)) if d is not None else ''}</td></tr>"
        )
    out.append("</tbody></table>")
    return "".join(out)


def _fork_cell(ep: EpisodeDiff) -> str:
    return "" if ep.fork is None else f'<span class="fork">{_e(fork_line(ep.fork))}</span>; '


def _link(n: int, ep: EpisodeDiff, drawn: set[int]) -> str:
    label = _e(ep.env_index)
    return f'<a href="#ep-{n}">{label}</a>' if n in drawn else label


def _message(msg: Message, out: bool) -> str:
    parts = [f'<div class="msg role-{_e(msg.role)}{" out" if out else ""}">']
    parts.append(f'<span class="role">{_e(msg.role)}</span>')
    if msg.text:
        parts.append(f'<div class="content">{_e(msg.text)}</div>')
    for call in msg.calls:
        args = orjson.dumps(call.arguments, option=orjson.OPT_INDENT_2, default=str).decode()
        parts.append(
            f'<div class="tool-call"><div class="tool-name">{_e(call.name)}</div>'
            f'<pre class="tool-args">{_e(args)}</pre></div>'
        )
    parts.append("</div>")
    return "".join(parts)


def _step(view: StepView | None, side: str, key: tuple[str, int], part: str) -> str:
    channel, step = key
    if view is None:
        return (
            f'<div class="step {side} missing"><div class="step-head">{_e(channel)} · step '
            f"{step}</div>not recorded in {side.upper()}</div>"
        )
    ins = "".join(_message(m, False) for m in view.inputs)
    outs = "".join(_message(m, True) for m in view.outputs)
    in_cls = " part-diverged" if part == "request" else ""
    out_cls = " part-diverged" if part == "response" else ""
    return (
        f'<div class="step {side}"><div class="step-head">{_e(channel)} · step {step}</div>'
        f'<div class="inputs{in_cls}">{ins}</div><div class="outputs{out_cls}">{outs}</div></div>'
    )


def _trajectories(n: int, ep: EpisodeDiff, diff: RunDiff, groups: Any) -> str:
    va = episode_views(groups[0].get(ep.env_index))
    vb = episode_views(groups[1].get(ep.env_index))
    d = ep.divergence
    first = (d.channel, d.step) if d is not None and d.step is not None else None
    if ep.status in ("only_a", "only_b"):  # one column: the run that has the episode
        side = ep.status[-1]
        label = diff.a.label if side == "a" else diff.b.label
        steps = "".join(_step(v, side, k, "") for k, v in (va if side == "a" else vb).items())
        return (
            f'<p class="missing-run">Not in {"B" if side == "a" else "A"}.</p><div class="single">'
            f'<div class="col-head {side}">{side.upper()} · {_e(label)}</div>{steps}</div>'
        )
    out = [
        '<div class="grid">',
        f'<div class="col-head a">A · {_e(diff.a.label)}</div>',
        f'<div class="col-head b">B · {_e(diff.b.label)}</div>',
    ]
    after = False
    for key in merged_keys(va, vb):
        here = key == first
        part = d.part if here and d is not None else ""
        cls = "step-row divergence" if here else "step-row after" if after else "step-row"
        ident = f' id="ep-{n}-divergence"' if here else ""
        out.append(f'<div class="{cls}"{ident}>')
        out.append(_step(va.get(key), "a", key, part) + _step(vb.get(key), "b", key, part))
        out.append("</div>")
        after = after or here
    out.append("</div>")
    return "".join(out)


def _note(n: int, ep: EpisodeDiff) -> str:
    d = ep.divergence
    fork = "" if ep.fork is None else f'<div class="note fork">{_e(fork_line(ep.fork))}</div>'
    if d is None:
        return fork
    if d.part == "step":
        text = f'First divergence: <a href="#ep-{n}-divergence">{_e(describe(d))}</a>'
    else:
        where = f'<a href="#ep-{n}-divergence">{_e(d.where)}</a>' if d.step is not None else ""
        what = {"request": "the request differs", "response": "the response differs"}
        text = (
            f"First divergence{' at ' + where if where else ''}: "
            f"{what.get(d.part, 'only the outcome differs')} at <code>{_e(d.path)}</code>"
            f'<div class="vals"><span class="tag a">A</span><code>{_e(value_of(d, "a", 300))}'
            f'</code><span class="tag b">B</span><code>{_e(value_of(d, "b", 300))}</code></div>'
        )
    return f'{fork}<div class="note">{text}</div>'


def _sequences(ep: EpisodeDiff) -> str:
    out = ['<div class="seqs">']
    focus = ep.divergence.step if ep.divergence is not None else None
    for side, every in (("a", ep.tool_calls_a), ("b", ep.tool_calls_b)):
        before, calls, after = window(every, focus, 16)
        chips = f"<span>… {before} earlier</span>" if before else ""
        chips += "".join(f'<code class="chip">{_e(c.signature(60))}</code>' for c in calls)
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
    body += _trajectories(n, ep, diff, groups) if groups else ""
    return (
        f'<details class="episode {ep.status}" id="ep-{n}"{is_open}><summary>episode '
        f'{_e(ep.env_index)} <span class="badge {ep.status}">{STATUS_LABEL[ep.status]}</span> '
        f'<span class="rewards">{rewards}</span></summary>'
        f'<div class="episode-body">{body}</div></details>'
    )


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
        f"<title>{_e(title)}</title><style>{CSS}{CSS_EXTRA}</style></head><body><main>",
        "<header><h1>cassette diff</h1>",
        f'<p class="runs"><span class="tag a">A</span>{_e(diff.a.label)} &nbsp; ',
        f'<span class="tag b">B</span>{_e(diff.b.label)}</p>',
        f'<p class="verdict {verdict}" id="verdict">{_e(headline(diff))}</p></header>',
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
    ignored = ", ".join(f"<code>{_e(p)}</code>" for p in diff.volatile_seen) or "none"
    parts.append(
        f'</section><p class="ignored">Ignored as volatile (they differ between the runs): '
        f"{ignored}. Always ignored: {', '.join(_e(p) for p in diff.ignored)}.</p>"
    )
    parts.append(f"</main><script>{JS}</script></body></html>\n")
    return "".join(parts)
