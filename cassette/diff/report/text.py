"""The diff for a terminal (rich): summary, analysis, then the episodes that differ."""

from __future__ import annotations

import io
from collections.abc import Callable

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..types import Divergence, EpisodeDiff, RunDiff
from . import common as c

__all__ = ["print_analysis", "render_text", "rendered", "table"]

_STYLE = {"regressed": "red", "improved": "green", "only_a": "yellow", "only_b": "yellow"}
_OP_STYLE = {"~": "yellow", "+": "magenta", c.MINUS: "blue", "=": "dim"}


def table(*columns: str, right: Callable[[int, str], bool] = lambda i, _: i > 0) -> Table:
    """A table with a rule under its head; ``right(i, name)``: is column i right-aligned."""
    out = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for i, name in enumerate(columns):
        out.add_column(name, justify="right" if right(i, name) else "left", overflow="fold")
    return out


def _grid(padding: int = 1, *, ratio: bool = False) -> Table:
    grid = Table.grid(padding=(0, padding))
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold", ratio=1 if ratio else None)
    if ratio:
        grid.add_column(overflow="fold", ratio=1)
    return grid


def _summary(diff: RunDiff) -> Table:
    out = table("", f"A  {diff.a.label}", f"B  {diff.b.label}", f"B {c.MINUS} A")
    for key, (va, vb, delta) in c.summary_rows(diff).items():
        out.add_row(f"  {key}" if key in ("prompt", "completion") else key, va, vb, delta)
    return out


def _counts(diff: RunDiff) -> str:
    n, forked = diff.counts, c.forks_line(diff)
    return (
        f"episodes: {len(diff.episodes)}  identical {n['identical']}, diverged {n['diverged']}, "
        f"only in A {n['only_a']}, only in B {n['only_b']}\n"
        f"reward:   improved {n['improved']}, regressed {n['regressed']}, "
        f"unchanged {n['unchanged']}" + (f"\nforks:    {forked}" if forked else "")
    )


def _head(ep: EpisodeDiff) -> Text:
    head = Text()
    head.append(f"episode {ep.env_index}", style="bold")
    head.append(f"  {c.STATUS_LABEL[ep.status]}", style=_STYLE.get(ep.status, "cyan"))
    a, b = c.fmt_reward(ep.reward_a), c.fmt_reward(ep.reward_b)
    head.append(f"  reward {({'only_a': a, 'only_b': b}).get(ep.status, f'{a} → {b}')}")
    if ep.delta is not None and ep.change != "unchanged":
        head.append(f" ({c.fmt_delta(ep.delta)}) {ep.change}", style=_STYLE.get(ep.change or ""))
    return head


def _divergence(d: Divergence, grid: Table) -> None:
    grid.add_row("  first divergence", Text(c.describe(d).replace(" at ", "\nat ", 1)))
    if d.part != "step":
        grid.add_row(Text("    A", style="blue"), Text(c.value_of(d, "a", 200), style="blue"))
        grid.add_row(Text("    B", style="magenta"), Text(c.value_of(d, "b", 200), style="magenta"))


def _episode(ep: EpisodeDiff, console: Console) -> None:
    console.print(_head(ep))
    grid, d = _grid(), ep.divergence
    if ep.fork is not None:
        grid.add_row("  fork", Text(c.fork_line(ep.fork), style="cyan"))
    if d is not None:
        _divergence(d, grid)
    if ep.alignment:
        _aligned(ep, grid, console.width)
    else:
        _calls(ep, grid)
    console.print(grid)


def _calls(ep: EpisodeDiff, grid: Table) -> None:
    focus = ep.divergence.step if ep.divergence is not None else None
    for side, calls in c.calls_by_side(ep):
        grid.add_row(f"  tool calls {side}", Text(c.tool_line(calls, focus), style="dim"))


def render_text(diff: RunDiff, *, color: bool = False, width: int = 100, limit: int = 50) -> str:
    """The diff as terminal text (``color``: ANSI styles), ``limit`` differing episodes shown."""
    return rendered(color, width, lambda console: _draw(diff, console, limit))


def _draw(diff: RunDiff, console: Console, limit: int) -> None:
    console.print(Text(f"cassette diff  A: {diff.a.label}  B: {diff.b.label}", style="bold"))
    console.print(_summary(diff))
    console.print(_counts(diff), markup=False)
    print_analysis(diff, console)
    differing = [ep for ep in c.ordered(diff) if ep.status != "identical"]
    for ep in differing[:limit]:
        console.print()
        _episode(ep, console)
    if len(differing) > limit:
        more = len(differing) - limit
        console.print(f"\n… and {more} more episodes that differ (see --format json)")
    console.print()
    if diff.volatile_seen:
        seen = ", ".join(diff.volatile_seen)
        console.print(Text(f"ignored as volatile (they differ between the runs): {seen}", "dim"))
    console.print(Text(c.headline(diff), "bold green" if diff.equivalent else "bold red"))


def rendered(color: bool, width: int, draw: Callable[[Console], None]) -> str:
    """What ``draw`` prints on a rich Console (ANSI styles only with ``color``), lines trimmed."""
    out = io.StringIO()
    console = Console(
        file=out,
        width=width,
        force_terminal=color,
        no_color=not color,
        color_system="standard" if color else None,
        highlight=False,
        emoji=False,
    )
    draw(console)
    return "\n".join(line.rstrip() for line in out.getvalue().split("\n"))


def _stats(diff: RunDiff, console: Console) -> None:
    console.print()
    console.print(Text("statistics (episodes paired by env_index)", style="bold"))
    grid = _grid(2)
    for label, value in c.stats_rows(diff.stats):
        grid.add_row(f"  {label}", Text(value, style="bold" if label == "verdict" else ""))
    console.print(grid)
    if diff.stats.pass_k:
        out = table(f"  {diff.stats.tasks} tasks", "A", "B", f"B {c.MINUS} A")
        for row in c.pass_k_rows(diff.stats):
            out.add_row(f"  {row[0]}", *row[1:])
        console.print(out)


def print_analysis(diff: RunDiff, console: Console) -> None:
    """Paired statistics, pass^k, grouped causes and the noise floor."""
    _stats(diff, console)
    causes = c.cause_lines(diff)
    if causes:
        console.print("\n[bold]why episodes diverged[/bold]")
    for text, path in causes:
        console.print(f"  {text}", markup=False)
        if path:
            console.print(Text(f"    e.g. at {path}", style="dim"))
    _noise(diff, console)


def _noise(diff: RunDiff, console: Console) -> None:
    if diff.noise is None:
        return
    console.print(Text(f"\nnoise floor: A vs B against A vs {diff.noise.baseline}", "bold"))
    out = table("metric", "A vs B", "A vs A2", "", right=lambda _, name: "vs" in name)
    for metric, observed, noise, word in c.noise_rows(diff.noise):
        style = "bold" if word == "exceeds noise" else "dim"
        out.add_row(metric, observed, noise, Text(word, style))
    console.print(out)


def _aligned(ep: EpisodeDiff, grid: Table, width: int) -> None:
    inner = _grid(ratio=True)
    for mark, a, b in c.aligned_rows(ep, width=max(24, (width - 24) // 2)):
        style = _OP_STYLE.get(mark, "dim")
        inner.add_row(Text(mark, style=style), Text(a, style=style), Text(b, style=style))
    grid.add_row("  tool calls A | B", inner)
