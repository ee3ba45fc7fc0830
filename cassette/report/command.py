"""What ``cassette diff`` does once its arguments are checked: compare the two runs under
a progress bar, write the HTML file, and print the report in the chosen format."""

from __future__ import annotations

import shutil
from pathlib import Path

import click

from ..console import Console, load, size, working
from ..diff import Rules, RunDiff, diff_runs
from ..errors import CassetteError
from . import render_html, render_json, render_markdown, render_text

__all__ = ["compare", "print_report", "write_html"]


def compare(
    console: Console,
    paths: tuple[Path, Path],
    labels: tuple[str, str],
    *,
    ignore: tuple[str, ...],
    env: str | None,
    html: bool,
    large: int,
) -> tuple[RunDiff, str | None]:
    """The diff of the runs at ``paths`` and, when ``html``, its HTML page. A bad
    ``--ignore`` path, an unreadable run or an unknown ``env`` is one ``error:`` line and
    exit 2; a progress bar is drawn when the runs add up to ``large`` bytes or more."""
    try:
        Rules(ignore)
    except ValueError as exc:
        console.fail(f"--ignore: {exc}")
    index_a, index_b = load(console, paths[0]), load(console, paths[1])
    big = size(paths[0]) + size(paths[1]) >= large
    total = len({*index_a.episodes(), *index_b.episodes()})
    try:
        with working(console, "comparing episodes", total, show=big) as advance:
            done = [0]

            def progress(now: int, _total: int) -> None:
                advance(now - done[0])
                done[0] = now

            result = diff_runs(
                index_a, index_b, ignore=ignore, env=env, progress=progress, labels=labels
            )
            page = render_html(result) if html else None
    except (ValueError, CassetteError) as exc:
        console.fail(str(exc))
    return result, page


def write_html(console: Console, page: str, out: str) -> None:
    """Write the page to ``out`` and say so on stderr; exit 2 if it cannot be written."""
    try:
        Path(out).write_text(page, encoding="utf-8")
    except OSError as exc:
        console.fail(f"cannot write {out}: {exc.strerror}; check the path")
    click.echo(f"wrote {out}", err=True)


def print_report(console: Console, result: RunDiff, fmt: str) -> None:
    """The report on stdout: ``json``, ``markdown``, or text as wide as the terminal."""
    if fmt == "json":
        console.echo(render_json(result).rstrip("\n"))
    elif fmt == "markdown":
        console.echo(render_markdown(result).rstrip("\n"))
    else:
        width = shutil.get_terminal_size((100, 24)).columns if console.terminal else 100
        click.echo(render_text(result, color=console.color, width=width), color=console.color)
