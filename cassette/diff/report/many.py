"""Reports of many runs against one: a row a run, then each diff's analysis."""

from __future__ import annotations

from html import escape

from rich.console import Console
from rich.text import Text

from ..causes import SHORT
from ..many import ManyDiff
from ..types import RunDiff
from .common import fmt_ci, fmt_delta, fmt_p, fmt_reward, verdict
from .html import analysis_html, page_head
from .markdown import analysis_lines, cell, code, fit, table_lines
from .text import print_analysis, rendered, table

__all__ = ["render_many_html", "render_many_markdown", "render_many_text"]

_HEAD = ["run", "episodes", "reward", "Δ vs A", "95% CI", "p", "impr", "regr", "diverged"]
_HEAD += ["top cause"]


def _name(n: int) -> str:
    return chr(65 + n)


def _header(many: ManyDiff) -> list[str]:
    return [*_HEAD, "> noise"] if many.noise is not None else _HEAD


def _beyond_noise(d: RunDiff) -> str:
    """How far |mean reward delta| is beyond A vs A2's."""
    m = d.noise.metrics[0] if d.noise is not None and d.noise.metrics else None
    if m is None or m.exceeds is None:
        return "—"
    return f"by {fmt_reward(m.excess)}" if m.exceeds else "no"


def _row(n: int, d: RunDiff, noise: bool) -> list[str]:
    s, top = d.stats, d.causes[0] if d.causes else None
    row = [f"{_name(n)} {d.b.label}", str(d.b.episodes), fmt_reward(d.b.mean_reward)]
    row += [fmt_delta(s.mean_delta), fmt_ci(s), fmt_p(s.p_value), str(s.improved)]
    cause = f"{top.count} {SHORT.get(top.cause, top.cause)}" if top else ""
    return [*row, str(s.regressed), str(d.counts["diverged"]), cause, *[_beyond_noise(d)] * noise]


def _rows(many: ManyDiff) -> list[list[str]]:
    """The baseline's row, then each run's against it."""
    first, noise = many.diffs[0].a, many.noise is not None
    rows = [[f"A {first.label}", str(first.episodes), fmt_reward(first.mean_reward)]]
    rows[0] += [""] * (len(_header(many)) - 3)
    return rows + [_row(n, d, noise) for n, d in enumerate(many.diffs, 1)]


def render_many_text(many: ManyDiff, *, color: bool = False, width: int = 100) -> str:
    return rendered(color, width, lambda console: _draw_text(many, console))


def _draw_text(many: ManyDiff, console: Console) -> None:
    console.print(Text(f"cassette diff  {len(many.diffs) + 1} runs against A", style="bold"))
    rows = _rows(many)
    console.print("\n".join(f"  {row[0]}" for row in rows), markup=False)
    if many.noise is not None:
        console.print(f"  noise floor: A vs {many.noise.b.label}", markup=False)
    _runs_table(many, rows, console)
    for n, d in enumerate(many.diffs, 1):
        console.print(Text(f"\n{_name(n)} {d.b.label} against A", style="bold"))
        print_analysis(d, console)
    same = many.equivalent
    text = "equivalent: no run differs from A" if same else "not equivalent"
    console.print(Text(f"\n{text}", style="bold green" if same else "bold red"))


def _runs_table(many: ManyDiff, rows: list[list[str]], console: Console) -> None:
    """The runs' table; the top causes, too wide for a terminal table, listed below it."""
    head = _header(many)
    cause = head.index("top cause")
    runs = table(*head[:cause], *head[cause + 1 :])
    for row in rows:
        runs.add_row(row[0].split(" ", 1)[0], *row[1:cause], *row[cause + 1 :])
    console.print(runs)
    causes = [f"{_name(n)} {row[cause]}" for n, row in enumerate(rows) if n and row[cause]]
    if causes:
        console.print("top cause: " + "; ".join(causes), markup=False)


def _render_markdown(many: ManyDiff, limit: int) -> str:
    head = _header(many)
    icon = "✅" if many.equivalent else "❌"
    body = [[f"{row[0][0]} {code(row[0][2:])}", *map(cell, row[1:])] for row in _rows(many)]
    rule = "|---|" + "---:|" * (len(head) - 1)
    lines = [f"## {icon} cassette diff: {len(many.diffs) + 1} runs against A", ""]
    lines += table_lines("| " + " | ".join(head) + " |", rule, body)
    for n, d in enumerate(many.diffs[:limit], 1):
        summary = f"{_name(n)} {escape(d.b.label)}: {escape(verdict(d.stats))}"
        lines += ["", f"<details><summary>{summary}</summary>", *analysis_lines(d), ""]
        lines.append("</details>")
    return "\n".join(lines) + "\n"


def render_many_markdown(many: ManyDiff, *, budget: int = 65_536) -> str:
    return fit(lambda n: _render_markdown(many, n), len(many.diffs), budget)


def render_many_html(many: ManyDiff) -> str:
    title = f"cassette diff: {len(many.diffs) + 1} runs"
    head = "".join(f"<th>{escape(h)}</th>" for h in _header(many))
    parts = [
        page_head(title),
        f"<header><h1>{escape(title)}</h1></header><section><h2>Runs against A</h2>",
        f'<table class="summary" id="runs"><thead><tr>{head}</tr></thead><tbody>',
    ]
    for i, row in enumerate(_rows(many)):
        cells = "".join(f'<td class="num">{escape(c)}</td>' for c in row[1:])
        parts.append(f'<tr id="run-{i}"><th scope="row">{escape(row[0])}</th>{cells}</tr>')
    parts.append("</tbody></table></section>")
    for n, d in enumerate(many.diffs, 1):
        parts.append(f'<section id="diff-{n}"><h2>{_name(n)} {escape(d.b.label)} against A</h2>')
        parts.append(analysis_html(d) + "</section>")
    return "".join(parts) + "</main></body></html>\n"
