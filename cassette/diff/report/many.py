"""Reports of many runs against one (:class:`cassette.diff.many.ManyDiff`): one table, a
row a run, then each diff's statistics and causes; as text, Markdown or HTML."""

from __future__ import annotations

import io
from html import escape

from rich.console import Console
from rich.text import Text

from ..many import ManyDiff
from .common import many_header, many_rows, verdict
from .html import analysis_html, page_head
from .markdown import analysis_lines, cell, code, fit, table_lines
from .text import print_analysis, table, text_console

__all__ = ["render_many_html", "render_many_markdown", "render_many_text"]


def _name(n: int) -> str:
    return chr(65 + n)


def render_many_text(many: ManyDiff, *, color: bool = False, width: int = 100) -> str:
    out = io.StringIO()
    console = text_console(out, color, width)
    console.print(Text(f"cassette diff  {len(many.diffs) + 1} runs against A", style="bold"))
    rows = many_rows(many.diffs)
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
    return "\n".join(line.rstrip() for line in out.getvalue().split("\n"))


def _runs_table(many: ManyDiff, rows: list[list[str]], console: Console) -> None:
    """The runs' table; the top causes, too wide for a terminal table, listed below it."""
    head = many_header(many.noise is not None)
    cause = head.index("top cause")
    runs = table(*head[:cause], *head[cause + 1 :])
    for row in rows:
        runs.add_row(row[0].split(" ", 1)[0], *row[1:cause], *row[cause + 1 :])
    console.print(runs)
    causes = [f"{_name(n)} {row[cause]}" for n, row in enumerate(rows) if n and row[cause]]
    if causes:
        console.print("top cause: " + "; ".join(causes), markup=False)


def _render_markdown(many: ManyDiff, limit: int) -> str:
    head = many_header(many.noise is not None)
    icon = "✅" if many.equivalent else "❌"
    body = [
        [f"{row[0][0]} {code(row[0][2:])}", *map(cell, row[1:])] for row in many_rows(many.diffs)
    ]
    rule = "|---|" + "---:|" * (len(head) - 1)
    lines = [f"## {icon} cassette diff: {len(many.diffs) + 1} runs against A", ""]
    lines += table_lines("| " + " | ".join(head) + " |", rule, body)
    for n, d in enumerate(many.diffs[:limit], 1):
        summary = f"{_name(n)} {escape(d.b.label)}: {escape(verdict(d.stats))}"
        lines += [
            "",
            f"<details><summary>{summary}</summary>",
            *analysis_lines(d),
            "",
            "</details>",
        ]
    return "\n".join(lines) + "\n"


def render_many_markdown(many: ManyDiff, *, budget: int = 65_536) -> str:
    return fit(lambda n: _render_markdown(many, n), len(many.diffs), budget)


def render_many_html(many: ManyDiff) -> str:
    title = f"cassette diff: {len(many.diffs) + 1} runs"
    head = "".join(f"<th>{escape(h)}</th>" for h in many_header(many.noise is not None))
    parts = [
        page_head(title),
        f"<header><h1>{escape(title)}</h1></header><section><h2>Runs against A</h2>",
        f'<table class="summary" id="runs"><thead><tr>{head}</tr></thead><tbody>',
    ]
    for i, row in enumerate(many_rows(many.diffs)):
        cells = "".join(f'<td class="num">{escape(c)}</td>' for c in row[1:])
        parts.append(f'<tr id="run-{i}"><th scope="row">{escape(row[0])}</th>{cells}</tr>')
    parts.append("</tbody></table></section>")
    for n, d in enumerate(many.diffs, 1):
        parts.append(f'<section id="diff-{n}"><h2>{_name(n)} {escape(d.b.label)} against A</h2>')
        parts.append(analysis_html(d) + "</section>")
    return "".join(parts) + "</main></body></html>\n"
