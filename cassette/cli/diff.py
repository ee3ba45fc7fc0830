"""``cassette diff``: compare two runs under a progress bar, write the HTML file, and print
the report in the chosen format (the engine and the renderers are :mod:`cassette.diff`)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..errors import CassetteError
from .console import Console, existing, large_bytes, load, size, working

if TYPE_CHECKING:
    from ..diff import RunDiff

__all__ = ["compare", "diff", "print_report", "write_html"]


@click.command()
@click.argument("a", metavar="A")
@click.argument("b", metavar="B")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "markdown"]),
    default="text",
    show_default=True,
    help="text for a terminal, json for tools, markdown for a pull-request comment.",
)
@click.option(
    "--html",
    "html_out",
    metavar="OUT.html",
    help="Also write the report as one self-contained HTML file (sortable episode table, "
    "both trajectories side by side).",
)
@click.option(
    "--ignore",
    multiple=True,
    metavar="PATH",
    help="Leave PATH out of the comparison: a request key (temperature, 'messages[*].name'), "
    "a path as the diff prints it (response.choices[0].message.content), or '**.timestamp' "
    "at any depth; repeatable.",
)
@click.option("--env", metavar="E", help="Only this episode (its env_index).")
def diff(
    a: str, b: str, fmt: str, html_out: str | None, ignore: tuple[str, ...], env: str | None
) -> None:
    """Compare two runs episode by episode.

    Episodes are aligned by env_index: identical, diverged, or only in A / only in B. For a
    diverged one: the first (channel, step) where the runs part, whether the request or
    the response parted, the exact path and both values, and both tool-call sequences;
    rewards and their delta; tokens, cost and mean reward of each run. Volatile fields
    (response ids, timestamps, generated tool-call ids) are ignored and listed.

    Exit 0 when the runs are equivalent, 1 when they differ, 2 on a usage or file error.

    \b
    Examples:
      cassette diff runs/a.jsonl runs/b.jsonl
      cassette diff runs/a.jsonl runs/b.jsonl --format markdown > comment.md
      cassette diff runs/a.jsonl runs/b.jsonl --html report.html --ignore model
      cassette diff runs/a/ runs/b/ --env 3 --format json | jq '.episodes[0].divergence'
    """
    console = Console()
    paths = existing(console, a), existing(console, b)
    if html_out is not None and Path(html_out).is_dir():
        console.fail(f"--html {html_out} is a directory; name the file, e.g. report.html")
    html = html_out is not None
    result, page = compare(
        console, paths, (a, b), ignore=ignore, env=env, html=html, large=large_bytes()
    )
    if page is not None and html_out is not None:
        write_html(console, page, html_out)
    print_report(console, result, fmt)
    if not result.equivalent:
        sys.exit(1)


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
    from ..diff import Rules, diff_runs
    from ..diff.report import render_html

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
    from ..diff.report import render_json, render_markdown, render_text

    if fmt == "json":
        console.echo(render_json(result).rstrip("\n"))
    elif fmt == "markdown":
        console.echo(render_markdown(result).rstrip("\n"))
    else:
        width = shutil.get_terminal_size((100, 24)).columns if console.terminal else 100
        click.echo(render_text(result, color=console.color, width=width), color=console.color)
