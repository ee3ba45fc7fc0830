"""The HTML report's statistics, causes, noise floor and aligned tool calls."""

from __future__ import annotations

import re
from html import escape
from typing import Any

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

__all__ = ["CSS_EXTRA", "aligned_html", "analysis_html"]

CSS_EXTRA = """
table.stats th[scope=row] { font-weight: 500; color: #374151; white-space: nowrap; }
tr.verdict-row td { font-weight: 700; }
ul.causes { padding-left: 18px; } ul.causes code { color: var(--muted); }
tr.exceeds td.word { font-weight: 700; color: var(--bad); }
tr.within td.word { color: var(--muted); }
table.aligned { width: 100%; margin-bottom: 10px; table-layout: fixed; }
table.aligned td { font: 12.5px/1.4 ui-monospace, Menlo, Consolas, monospace;
  overflow-wrap: anywhere; }
table.aligned .mark { width: 2.5em; text-align: center; font-weight: 700; }
table.aligned tr.op-changed td { background: #fef3c7; }
table.aligned tr.op-deleted td.a { background: #dbeafe; }
table.aligned tr.op-inserted td.b { background: #ffedd5; }
table.aligned tr.op-same td { color: var(--muted); }
table.aligned tr.fold td { color: var(--muted); font-style: italic; }
"""


def _e(value: Any) -> str:
    return escape(str(value), quote=True)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def analysis_html(diff: RunDiff) -> str:
    """Statistics, pass^k, grouped causes and the noise floor, as sections."""
    out = ['<section id="statistics"><h2>Statistics</h2><table class="stats" id="stats">']
    for label, value in stats_rows(diff.stats):
        cls = ' class="verdict-row"' if label == "verdict" else ""
        out.append(
            f'<tr{cls}><th scope="row">{_e(label)}</th>'
            f'<td id="stat-{_slug(label)}">{_e(value)}</td></tr>'
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
                f'<tr><th scope="row">{_e(k)}</th><td class="num" id="{slug}-a">{a}</td>'
                f'<td class="num" id="{slug}-b">{b}</td>'
                f'<td class="num" id="{slug}-delta">{_e(d)}</td></tr>'
            )
        out.append("</tbody></table>")
    out.append("</section>")
    causes = cause_lines(diff)
    if causes:
        out.append('<section><h2>Why episodes diverged</h2><ul class="causes" id="causes">')
        for (text, path), group in zip(causes, diff.causes, strict=True):
            example = f" <code>{_e(path)}</code>" if path else ""
            out.append(f'<li id="cause-{group.cause}"><b>{_e(text)}</b>{example}</li>')
        out.append("</ul></section>")
    rows = noise_rows(diff.noise)
    if rows and diff.noise is not None:
        out.append(
            f"<section><h2>Noise floor: A vs B against A vs {_e(diff.noise.baseline)}</h2>"
            '<table class="summary" id="noise"><thead><tr><th>metric</th>'
            '<th class="num">A vs B</th><th class="num">A vs A2</th><th></th></tr></thead><tbody>'
        )
        for metric, observed, noise, word in rows:
            cls = "exceeds" if word == "exceeds noise" else "within"
            out.append(
                f'<tr class="{cls}" id="noise-{_slug(metric)}"><th scope="row">{_e(metric)}</th>'
                f'<td class="num">{_e(observed)}</td><td class="num">{_e(noise)}</td>'
                f'<td class="word">{_e(word)}</td></tr>'
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
            f'<tr class="{cls}" id="ep-{n}-call-{k}"{title}><td class="mark">{_e(mark)}</td>'
            f'<td class="a">{_e(a)}</td><td class="b">{_e(b)}</td></tr>'
        )
    out.append("</tbody></table>")
    return "".join(out)
