"""The diff as one self-contained HTML file (inline CSS and JS): summary, statistics, an
episode table sortable by reward delta (``?sort=delta&dir=asc``), trajectories."""

from __future__ import annotations

import re
from collections.abc import Iterable
from importlib import resources

from ...storage.gc import paused_gc
from ..types import EpisodeDiff, RunDiff
from . import common as c
from .trajectory import e, trajectories_html

__all__ = ["analysis_html", "asset", "page_head", "render_html"]

TAG = {s: f'<span class="tag {s}">{s.upper()}</span>' for s in "ab"}
_NO_CALLS = '<div class="seqs">{}</div>'.format(
    "".join(f'<div class="seq {s}">{TAG[s]}<span>no tool calls</span></div>' for s in "ab")
)
_AB_HEAD = '<th class="num">A</th><th class="num">B</th>'


def asset(name: str) -> str:
    """A file of the report's ``assets/`` (CSS, JavaScript)."""
    return (resources.files("cassette.diff.report") / "assets" / name).read_text("utf-8")


def _num_attr(value: float | None) -> str:
    return "" if value is None else repr(float(value))


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _abd_table(table_id: str, head: str, rows: Iterable[tuple[str, str, str, str, str]]) -> str:
    """A table of (label, id prefix, A, B, B - A) rows, each cell with an id of its own."""
    out = [
        f'<table class="summary" id="{table_id}"><thead><tr>{head}'
        f'<th class="num">B {c.MINUS} A</th></tr></thead><tbody>'
    ]
    for label, key, a, b, delta in rows:
        cells = "".join(
            f'<td class="num" id="{key}-{s}">{e(v)}</td>'
            for s, v in (("a", a), ("b", b), ("delta", delta))
        )
        out.append(f'<tr><th scope="row">{e(label)}</th>{cells}</tr>')
    return "".join(out) + "</tbody></table>"


def _summary(diff: RunDiff) -> str:
    head = "".join(
        f'<th class="num">{TAG[s]}{e(run.label)}</th>' for s, run in (("a", diff.a), ("b", diff.b))
    )
    totals = c.summary_rows(diff)
    keys = ("episodes", "interactions", "mean reward", "tokens", "cost")
    labels = {"tokens": "tokens (prompt + completion)"}
    rows = [(labels.get(k, k), k.replace(" ", "-"), *totals[k]) for k in keys]
    counts = [
        f'<li id="count-{k}"><b>{n}</b> {c.STATUS_LABEL.get(k, k)}</li>'
        for k, n in diff.counts.items()
    ]
    forked = c.forks_line(diff)
    counts += [f'<li id="count-forked">{e(forked)}</li>'] if forked else []
    table = _abd_table("summary", f"<th></th>{head}", rows)
    return f'{table}<ul class="counts">{"".join(counts)}</ul>'


def _episode_row(n: int, ep: EpisodeDiff, drawn: set[int]) -> str:
    d, label = ep.divergence, e(ep.env_index)
    cls = " ".join(filter(None, ("ep", ep.status, ep.change)))
    link = f'<a href="#ep-{n}">{label}</a>' if n in drawn else label
    fork = "" if ep.fork is None else f'<span class="fork">{e(c.fork_line(ep.fork))}</span>; '
    return (
        f'<tr class="{cls}" data-env="{label}" data-status="{ep.status}" '
        f'data-reward-a="{_num_attr(ep.reward_a)}" data-reward-b="{_num_attr(ep.reward_b)}" '
        f'data-delta="{_num_attr(ep.delta)}"><td>{link}</td>'
        f'<td><span class="badge {ep.status}">{c.STATUS_LABEL[ep.status]}</span></td>'
        f'<td class="num">{c.fmt_reward(ep.reward_a)}</td>'
        f'<td class="num">{c.fmt_reward(ep.reward_b)}</td>'
        f'<td class="num delta">{c.fmt_delta(ep.delta)}</td>'
        f"<td>{fork}{e(c.describe(d)) if d is not None else ''}</td></tr>"
    )


def _episode_rows(episodes: list[EpisodeDiff], drawn: set[int]) -> str:
    head = (
        '<table class="episodes" id="episodes"><thead><tr>'
        '<th data-sort="env">episode</th><th data-sort="status">status</th>'
        '<th class="num" data-sort="rewardA" data-type="num">reward A</th>'
        '<th class="num" data-sort="rewardB" data-type="num">reward B</th>'
        '<th class="num" data-sort="delta" data-type="num">\u0394 reward</th>'
        "<th>first divergence</th></tr></thead><tbody>"
    )
    rows = "".join(_episode_row(n, ep, drawn) for n, ep in enumerate(episodes))
    return f"{head}{rows}</tbody></table>"


def _note(n: int, ep: EpisodeDiff) -> str:
    d = ep.divergence
    fork = "" if ep.fork is None else f'<div class="note fork">{e(c.fork_line(ep.fork))}</div>'
    if d is None:
        return fork
    link = f'<a href="#ep-{n}-divergence">{e(c.describe(d) if d.part == "step" else d.where)}</a>'
    text = f"First divergence: {link}"
    if d.part != "step":
        where = f" at {link}" if d.step is not None else ""
        values = "".join(f"{TAG[s]}<code>{e(c.value_of(d, s, 300))}</code>" for s in "ab")
        text = (
            f"First divergence{where}: {c.PART_LABEL[d.part]} at <code>{e(d.path)}</code>"
            f'<div class="vals">{values}</div>'
        )
    return f'{fork}<div class="note">{text}</div>'


def _episode(n: int, ep: EpisodeDiff, diff: RunDiff) -> str:
    rewards = f"reward {c.fmt_reward(ep.reward_a)} \u2192 {c.fmt_reward(ep.reward_b)}"
    rewards += f" ({c.fmt_delta(ep.delta)})" if ep.delta is not None else ""
    body = _note(n, ep)
    if ep.alignment:
        body += aligned_html(n, ep)
    elif ep.status == "diverged":  # no alignment: neither run made a tool call
        body += _NO_CALLS
    body += trajectories_html(n, ep, (diff.a.label, diff.b.label), diff.steps) if diff.steps else ""
    return (
        f'<details class="episode {ep.status}" id="ep-{n}"{" open" * (ep.status != "identical")}>'
        f'<summary>episode {e(ep.env_index)} <span class="badge {ep.status}">'
        f'{c.STATUS_LABEL[ep.status]}</span> <span class="rewards">{rewards}</span></summary>'
        f'<div class="episode-body">{body}</div></details>'
    )


def _stats_html(diff: RunDiff) -> str:
    out = ['<section id="statistics"><h2>Statistics</h2><table class="stats" id="stats">']
    for label, value in c.stats_rows(diff.stats):
        cls = ' class="verdict-row"' * (label == "verdict")
        out.append(
            f'<tr{cls}><th scope="row">{e(label)}</th>'
            f'<td id="stat-{_slug(label)}">{e(value)}</td></tr>'
        )
    out.append("</table>")
    if diff.stats.pass_k:
        head = f"<th>{diff.stats.tasks} tasks</th>{_AB_HEAD}"
        pk = [(k, _slug(k), a, b, d) for k, a, b, d in c.pass_k_rows(diff.stats)]
        out.append(_abd_table("pass-k", head, pk))
    return "".join(out) + "</section>"


def _noise_html(diff: RunDiff) -> str:
    if diff.noise is None:
        return ""
    out = [
        f"<section><h2>Noise floor: A vs B against A vs {e(diff.noise.baseline)}</h2>"
        '<table class="summary" id="noise"><thead><tr><th>metric</th>'
        '<th class="num">A vs B</th><th class="num">A vs A2</th><th></th></tr></thead><tbody>'
    ]
    for metric, observed, noise, word in c.noise_rows(diff.noise):
        cls = "exceeds" if word == "exceeds noise" else "within"
        out.append(
            f'<tr class="{cls}" id="noise-{_slug(metric)}"><th scope="row">{e(metric)}</th>'
            f'<td class="num">{e(observed)}</td><td class="num">{e(noise)}</td>'
            f'<td class="word">{e(word)}</td></tr>'
        )
    return "".join(out) + "</tbody></table></section>"


def analysis_html(diff: RunDiff) -> str:
    """Statistics, pass^k, grouped causes and the noise floor, as sections."""
    causes = "".join(
        f'<li id="cause-{g.cause}"><b>{e(text)}</b>{f" <code>{e(path)}</code>" * bool(path)}</li>'
        for (text, path), g in zip(c.cause_lines(diff), diff.causes, strict=True)
    )
    if causes:
        head = '<section><h2>Why episodes diverged</h2><ul class="causes" id="causes">'
        causes = f"{head}{causes}</ul></section>"
    return _stats_html(diff) + causes + _noise_html(diff)


def aligned_html(n: int, ep: EpisodeDiff) -> str:
    """Both tool-call sequences aligned side by side, each row marked."""
    ops = {v: k for k, v in c.MARK.items()}
    out = [
        f'<table class="aligned" id="ep-{n}-aligned"><thead><tr><th class="mark"></th>'
        f"<th>{TAG['a']}tool calls</th><th>{TAG['b']}tool calls</th></tr></thead><tbody>"
    ]
    for k, (mark, a, b) in enumerate(c.aligned_rows(ep, width=90, limit=60)):
        op = ops.get(mark)
        cls, title = (f"op-{op}", f' title="{c.OP_LABEL[op]}"') if op else ("fold", "")
        out.append(
            f'<tr class="{cls}" id="ep-{n}-call-{k}"{title}><td class="mark">{e(mark)}</td>'
            f'<td class="a">{e(a)}</td><td class="b">{e(b)}</td></tr>'
        )
    return "".join(out) + "</tbody></table>"


def render_html(diff: RunDiff, *, max_episodes: int = 200) -> str:
    """The report page, with trajectories of ``max_episodes`` (those that differ first)."""
    with paused_gc():  # the runs' steps are millions of objects: no collector passes over them
        return _page(diff, max_episodes)


def page_head(title: str) -> str:
    """The page up to ``<main>``: title and inline CSS."""
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{e(title)}</title><style>{asset('report.css')}</style></head><body><main>"
    )


def _page(diff: RunDiff, max_episodes: int) -> str:
    eps = diff.episodes
    shown = sorted(sorted(range(len(eps)), key=lambda n: c.rank(eps[n]))[:max_episodes])
    title = f"cassette diff: {diff.a.label} vs {diff.b.label}"
    parts = [
        page_head(title),
        "<header><h1>cassette diff</h1>",
        f'<p class="runs">{TAG["a"]}{e(diff.a.label)} &nbsp; {TAG["b"]}{e(diff.b.label)}</p>',
        f'<p class="verdict {"ok" if diff.equivalent else "bad"}" id="verdict">'
        f"{e(c.headline(diff))}</p></header>",
        f"<section><h2>Runs</h2>{_summary(diff)}</section>",
        analysis_html(diff),
        f"<section><h2>Episodes</h2>{_episode_rows(eps, set(shown))}</section>",
        "<section><h2>Trajectories</h2>",
    ]
    if len(eps) > len(shown):
        parts.append(f"<p>{len(shown)} of {len(eps)} episodes shown (those that differ first).</p>")
    parts.extend(_episode(n, eps[n], diff) for n in shown)
    ignored = ", ".join(f"<code>{e(p)}</code>" for p in diff.volatile_seen) or "none"
    parts.append(
        f'</section><p class="ignored">Ignored as volatile (they differ between the runs): '
        f"{ignored}. Always ignored: {', '.join(e(p) for p in diff.ignored)}.</p>"
    )
    parts.append(f"</main><script>{asset('report.js')}</script></body></html>\n")
    return "".join(parts)
