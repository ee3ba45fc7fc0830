"""The diff for a terminal: a summary table, the statistics, causes and noise floor, then
the episodes that differ with their tool calls aligned (rich)."""

from __future__ import annotations

import io

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..types import EpisodeDiff, RunDiff
from .analysis import aligned_rows, cause_lines, noise_rows, pass_k_rows, stats_rows
from .common import (
    MINUS,
    STATUS_LABEL,
    describe,
    fmt_delta,
    fmt_reward,
    fork_line,
    forks_line,
    headline,
    ordered,
    summary_rows,
    tool_line,
    value_of,
)

__all__ = ["print_analysis", "render_text", "text_console"]

_STYLE = {"regressed": "red", "improved": "green", "only_a": "yellow", "only_b": "yellow"}
_OP_STYLE = {"~": "yellow", "+": "magenta", "\u2212": "blue", "=": "dim"}


def _summary(diff: RunDiff) -> Table:
    a, b = diff.a, diff.b
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    table.add_column("")
    table.add_column(f"A  {a.label}", justify="right", overflow="fold")
    table.add_column(f"B  {b.label}", justify="right", overflow="fold")
    table.add_column(f"B {MINUS} A", justify="right")
    for key, (va, vb, delta) in summary_rows(diff).items():
        table.add_row(f"  {key}" if key in ("prompt", "completion") else key, va, vb, delta)
    return table


def _episode(ep: EpisodeDiff, console: Console) -> None:
    head = Text()
    head.append(f"episode {ep.env_index}", style="bold")
    head.append(f"  {STATUS_LABEL[ep.status]}", style=_STYLE.get(ep.status, "cyan"))
    a, b = fmt_reward(ep.reward_a), fmt_reward(ep.reward_b)
    rewards = {"only_a": a, "only_b": b}.get(ep.status, f"{a} → {b}")
    head.append(f"  reward {rewards}")
    if ep.delta is not None and ep.change != "unchanged":
        head.append(f" ({fmt_delta(ep.delta)}) {ep.change}", style=_STYLE.get(ep.change or ""))
    console.print(head)
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    d = ep.divergence
    if ep.fork is not None:
        grid.add_row("  fork", Text(fork_line(ep.fork), style="cyan"))
    if d is not None:
        grid.add_row("  first divergence", Text(describe(d).replace(" at ", "\nat ", 1)))
        if d.part != "step":
            grid.add_row(Text("    A", style="blue"), Text(value_of(d, "a", 200), style="blue"))
            grid.add_row(
                Text("    B", style="magenta"), Text(value_of(d, "b", 200), style="magenta")
            )
    focus = d.step if d is not None else None
    if ep.alignment:
        print_aligned(ep, grid, console.width)
    elif ep.status != "only_b":
        grid.add_row("  tool calls A", Text(tool_line(ep.tool_calls_a, focus), style="dim"))
    if ep.status != "only_a" and not ep.alignment:
        grid.add_row("  tool calls B", Text(tool_line(ep.tool_calls_b, focus), style="dim"))
    console.print(grid)


def render_text(diff: RunDiff, *, color: bool = False, width: int = 100, limit: int = 50) -> str:
    """The diff as terminal text; ``color`` adds ANSI styles. At most ``limit`` episodes that
    differ are detailed (regressed first); the rest are counted."""
    out = io.StringIO()
    console = text_console(out, color, width)
    console.print(Text(f"cassette diff  A: {diff.a.label}  B: {diff.b.label}", style="bold"))
    console.print(_summary(diff))
    c = diff.counts
    console.print(
        f"episodes: {len(diff.episodes)}  identical {c['identical']}, diverged {c['diverged']}, "
        f"only in A {c['only_a']}, only in B {c['only_b']}",
        markup=False,
    )
    console.print(
        f"reward:   improved {c['improved']}, regressed {c['regressed']}, "
        f"unchanged {c['unchanged']}",
        markup=False,
    )
    forked = forks_line(diff)
    if forked is not None:
        console.print(f"forks:    {forked}", markup=False)
    print_analysis(diff, console)
    differing = [ep for ep in ordered(diff) if ep.status != "identical"]
    for ep in differing[:limit]:
        console.print()
        _episode(ep, console)
    if len(differing) > limit:
        console.print(
            f"\n… and {len(differing) - limit} more episodes that differ (see --format json)"
        )
    console.print()
    if diff.volatile_seen:
        seen = ", ".join(diff.volatile_seen)
        console.print(
            Text(f"ignored as volatile (they differ between the runs): {seen}", style="dim")
        )
    verdict = headline(diff)
    console.print(Text(verdict, style="bold green" if diff.equivalent else "bold red"))
    return "\n".join(line.rstrip() for line in out.getvalue().split("\n"))


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
