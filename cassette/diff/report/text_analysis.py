"""The text report's statistics, causes, noise floor and aligned calls (rich)."""

from __future__ import annotations

import io

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..types import EpisodeDiff, RunDiff
from .analysis import aligned_rows, cause_lines, noise_rows, pass_k_rows, stats_rows

__all__ = ["print_aligned", "print_analysis", "text_console"]


def text_console(out: io.StringIO, color: bool, width: int) -> Console:
    """The rich Console a text report prints to ``out``: ANSI styles only with ``color``."""
    return Console(
        file=out,
        width=width,
        force_terminal=color,
        no_color=not color,
        color_system="standard" if color else None,
        highlight=False,
        emoji=False,
    )


_OP_STYLE = {"~": "yellow", "+": "magenta", "\u2212": "blue", "=": "dim"}


def print_analysis(diff: RunDiff, console: Console) -> None:
    """Paired statistics, pass^k, grouped causes and the noise floor."""
    console.print()
    console.print(Text("statistics (episodes paired by env_index)", style="bold"))
    grid = Table.grid(padding=(0, 2))
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    for label, value in stats_rows(diff.stats):
        grid.add_row(f"  {label}", Text(value, style="bold" if label == "verdict" else ""))
    console.print(grid)
    pk = pass_k_rows(diff.stats)
    if pk and diff.stats is not None:
        table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
        table.add_column(f"  {diff.stats.tasks} tasks")
        for col in ("A", "B", "B \u2212 A"):
            table.add_column(col, justify="right")
        for row in pk:
            table.add_row(f"  {row[0]}", *row[1:])
        console.print(table)
    causes = cause_lines(diff)
    if causes:
        console.print()
        console.print(Text("why episodes diverged", style="bold"))
        for text, path in causes:
            console.print(f"  {text}", markup=False)
            if path:
                console.print(Text(f"    e.g. at {path}", style="dim"))
    rows = noise_rows(diff.noise)
    if rows and diff.noise is not None:
        console.print()
        title = Text(f"noise floor: A vs B against A vs {diff.noise.baseline}", style="bold")
        console.print(title)
        table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
        for col in ("metric", "A vs B", "A vs A2", ""):
            table.add_column(col, justify="left" if col in ("metric", "") else "right")
        for metric, observed, noise, word in rows:
            style = "bold" if word == "exceeds noise" else "dim"
            table.add_row(metric, observed, noise, Text(word, style=style))
        console.print(table)


def print_aligned(ep: EpisodeDiff, grid: Table, width: int) -> None:
    """The two tool-call sequences aligned, a row to a call pair, cut to ``width``."""
    inner = Table.grid(padding=(0, 1))
    inner.add_column(no_wrap=True)
    inner.add_column(overflow="fold", ratio=1)
    inner.add_column(overflow="fold", ratio=1)
    for mark, a, b in aligned_rows(ep, width=max(24, (width - 24) // 2)):
        style = _OP_STYLE.get(mark, "dim")
        inner.add_row(Text(mark, style=style), Text(a, style=style), Text(b, style=style))
    grid.add_row("  tool calls A | B", inner)
