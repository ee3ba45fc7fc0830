"""Reports of many runs against one (:class:`cassette.diff.many.ManyDiff`): one table, a
row a run, then each diff's statistics and causes; as text, Markdown, HTML or JSON."""

from __future__ import annotations

import io
from html import escape

import orjson
from rich import box
from rich.table import Table
from rich.text import Text

from ..many import ManyDiff
from .analysis import many_header, many_rows, verdict
from .assets import CSS, CSS_EXTRA
from .html import analysis_html
from .markdown import analysis_lines, cell, code, fit
from .text import print_analysis, text_console

__all__ = ["render_many_html", "render_many_json", "render_many_markdown", "render_many_text"]


def render_many_json(many: ManyDiff) -> str:
    """Keys: format ("rollout-cassette/diff-many"), version, baseline, noise_baseline,
    equivalent, diffs (each a two-run diff as ``--format json`` prints it)."""
    return orjson.dumps(many.to_dict(), option=orjson.OPT_INDENT_2).decode() + "\n"


def render_many_text(many: ManyDiff, *, color: bool = False, width: int = 100) -> str:
    out = io.StringIO()
    console = text_console(out, color, width)
    console.print(Text(f"cassette diff  {len(many.diffs) + 1} runs against A", style="bold"))
    for row in many_rows(many.diffs):
        console.print(f"  {row[0]}", markup=False)
    if many.noise is not None:
        console.print(f"  noise floor: A vs {many.noise.b.label}", markup=False)
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    head = many_header(many.noise is not None)
    cause_at = head.index("top cause")  # too wide for a terminal table: listed below it
    for i, col in enumerate(head):
        if i != cause_at:
            table.add_column(col, justify="left" if i == 0 else "right", no_wrap=True)
    rows = many_rows(many.diffs)
    for row in rows:
        cells = [c for i, c in enumerate(row) if i != cause_at]
        table.add_row(row[0].split(" ", 1)[0], *cells[1:])
    console.print(table)
    causes = [f"{row[0].split(' ', 1)[0]} {row[cause_at]}" for row in rows[1:] if row[cause_at]]
    if causes:
        console.print("top cause: " + "; ".join(causes), markup=False)
    for n, d in enumerate(many.diffs, 1):
        console.print()
        console.print(Text(f"{chr(65 + n)} {d.b.label} against A", style="bold"))
        print_analysis(d, console)
    console.print()
    console.print(
        Text(
            "equivalent: no run differs from A" if many.equivalent else "not equivalent",
            style="bold green" if many.equivalent else "bold red",
        )
    )
    return "\n".join(line.rstrip() for line in out.getvalue().split("\n"))


def _render_markdown(many: ManyDiff, limit: int) -> str:
    head = many_header(many.noise is not None)
    icon = "✅" if many.equivalent else "❌"
    lines = [f"## {icon} cassette diff: {len(many.diffs) + 1} runs against A", ""]
    lines += ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for row in many_rows(many.diffs):
        first = row[0].split(" ", 1)
        rest = " | ".join(cell(c) for c in row[1:])
        lines.append(f"| {first[0]} {code(first[1])} | {rest} |")
    for n, d in enumerate(many.diffs[:limit] if limit else [], 1):
        summary = f"{chr(65 + n)} {escape(d.b.label)}: {escape(verdict(d.stats))}"
        lines += ["", f"<details><summary>{summary}</summary>"]
        lines += [*analysis_lines(d), "", "</details>"]
    return "\n".join(lines) + "\n"


def render_many_markdown(many: ManyDiff, *, budget: int = 65_536) -> str:
    return fit(lambda n: _render_markdown(many, n), len(many.diffs), budget)


def render_many_html(many: ManyDiff) -> str:
    head = many_header(many.noise is not None)
    title = f"cassette diff: {len(many.diffs) + 1} runs"
    parts = [
        '<!doctype html><html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(title)}</title><style>{CSS}{CSS_EXTRA}</style></head><body><main>",
        f"<header><h1>{escape(title)}</h1></header>",
        '<section><h2>Runs against A</h2><table class="summary" id="runs"><thead><tr>',
        "".join(f"<th>{escape(h)}</th>" for h in head),
        "</tr></thead><tbody>",
    ]
    for i, row in enumerate(many_rows(many.diffs)):
        cells = "".join(f'<td class="num">{escape(c)}</td>' for c in row[1:])
        parts.append(f'<tr id="run-{i}"><th scope="row">{escape(row[0])}</th>{cells}</tr>')
    parts.append("</tbody></table></section>")
    for n, d in enumerate(many.diffs, 1):
        parts.append(f'<section id="diff-{n}"><h2>{chr(65 + n)} {escape(d.b.label)} against A</h2>')
        parts.append(analysis_html(d) + "</section>")
    parts.append("</main></body></html>\n")
    return "".join(parts)
