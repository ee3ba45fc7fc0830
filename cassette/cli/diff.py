"""``cassette diff``: compare runs with :mod:`cassette.diff`, print or write the report."""

from __future__ import annotations

import contextlib
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from ..errors import CassetteError
from .console import Console, existing, load, overwritten, uploaded, working

__all__ = ["diff"]

MAX_RUNS = 8
_VALIDATE = "run `cassette validate` on both runs"


@click.command()
@click.argument("runs", metavar="A B [C ...]", nargs=-1)
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
    help="Also write the report as one self-contained HTML file.",
)
@click.option(
    "--ignore",
    multiple=True,
    metavar="PATH",
    help="Leave PATH out of the comparison: a request key (temperature, 'messages[*].name'), "
    "a path as the diff prints it, or '**.timestamp' at any depth; repeatable.",
)
@click.option("--env", metavar="E", help="Only this episode (its env_index).")
@click.option(
    "--baseline",
    metavar="A2",
    help="A second run of A's configuration: report how much of each difference exceeds "
    "A vs A2 (the noise floor).",
)
@click.option(
    "--seed",
    type=int,
    default=0,
    show_default=True,
    help="Seed of the bootstrap interval and the Monte Carlo permutation test.",
)
@click.option("--schema", is_flag=True, help="Print the JSON Schema of --format json, and exit.")
def diff(
    runs: tuple[str, ...],
    fmt: str,
    html_out: str | None,
    ignore: tuple[str, ...],
    env: str | None,
    baseline: str | None,
    seed: int,
    schema: bool,
) -> None:
    """Compare two runs episode by episode (or up to 8: each against the first).

    Episodes are aligned by env_index; for each that diverged: where the runs part and
    both values, rewards, tool calls; paired statistics over the rewarded episodes and
    divergences grouped by cause (docs/guides/comparing.md). Volatile fields are ignored.

    Exit 0 when the runs are equivalent, 1 when they differ, 2 on a usage or file error.

    \b
    Examples:
      cassette diff runs/a.jsonl runs/b.jsonl
      cassette diff runs/a.jsonl runs/b.jsonl --format markdown > comment.md
      cassette diff runs/a.jsonl runs/b.jsonl --html report.html --ignore model
      cassette diff runs/a/ runs/b/ --env 3 --format json | jq '.episodes[0].divergence'
      cassette diff runs/a.jsonl runs/b.jsonl --baseline runs/a2.jsonl
    """
    console = Console()
    if schema:
        from ..diff.schema import SCHEMA

        console.json(SCHEMA)
        return
    paths, base = _inputs(console, runs, baseline, html_out, ignore)
    labels = [*runs, baseline] if baseline is not None else list(runs)
    many = _compare(console, paths, base, labels, ignore=ignore, env=env, seed=seed)
    report = many.diffs[0] if len(paths) == 2 else many
    if html_out is not None:
        _write(console, report, html_out)
    _print(console, report, fmt)
    sys.exit(int(not many.equivalent))


def _inputs(
    console: Console,
    runs: tuple[str, ...],
    baseline: str | None,
    html_out: str | None,
    ignore: tuple[str, ...],
) -> tuple[list[Path], Path | None]:
    from ..diff import Rules

    if not 2 <= len(runs) <= MAX_RUNS:
        console.fail(f"diff takes 2 to {MAX_RUNS} runs, got {len(runs)}; e.g. cassette diff A B")
    paths = [existing(console, r) for r in runs]
    base = existing(console, baseline) if baseline is not None else None
    if html_out is not None and Path(html_out).is_dir():
        console.fail(f"--html {html_out} is a directory; name the file, e.g. report.html")
    try:
        Rules(ignore)
    except ValueError as exc:
        console.fail(f"--ignore: {exc}")
    return paths, base


@contextlib.contextmanager
def _writable_values(console: Console) -> Iterator[None]:
    """A value orjson cannot write (an int beyond 64 bits, nesting deeper than 254 levels)."""
    try:
        yield
    except (TypeError, CassetteError) as exc:
        console.fail(f"a run holds a value the report cannot write ({exc}); {_VALIDATE}")


def _compare(
    console: Console, paths: list[Path], baseline: Path | None, labels: list[str], **kw: Any
) -> Any:
    """Each run diffed against the first (and the first against ``baseline``)."""
    from ..diff import diff_many

    indexes = [load(console, p) for p in paths]
    base = load(console, baseline) if baseline is not None else None
    pair = len(indexes) == 2 and base is None
    total = len({*indexes[0].episodes(), *indexes[1].episodes()}) if pair else None
    with (
        _writable_values(console),
        working(console, "comparing episodes", paths if pair else (), total) as advance,
    ):
        done = [0]

        def progress(now: int, _total: int) -> None:
            advance(now - done[0])
            done[0] = now

        try:
            return diff_many(indexes, baseline=base, labels=labels, progress=progress, **kw)
        except (ValueError, CassetteError) as exc:
            console.fail(str(exc))


def _write(console: Console, report: Any, out: str) -> None:
    """Write the report's HTML page to ``out`` (a URL: uploaded) and say so on stderr."""
    from ..diff import ManyDiff
    from ..diff.report import render_html, render_many_html
    from ..view import write_page

    with _writable_values(console):
        page = (render_many_html if isinstance(report, ManyDiff) else render_html)(report)
    target = overwritten(console, out)  # a URL's private file: not a local folder "s3:"
    try:
        write_page(page, target)  # private (0600): the page holds transcripts
    except OSError as exc:
        console.fail(f"cannot write {out}: {exc.strerror}; check the path")
    uploaded(console)
    click.echo(f"wrote {out}", err=True)


def _print(console: Console, report: Any, fmt: str) -> None:
    from ..diff import ManyDiff
    from ..diff import report as renderers

    render = getattr(renderers, f"render_{'many_' * isinstance(report, ManyDiff)}{fmt}")
    width = shutil.get_terminal_size((100, 24)).columns if console.terminal else 100
    with _writable_values(console):
        if fmt != "text":
            click.echo(render(report).rstrip("\n"))
        else:
            click.echo(render(report, color=console.color, width=width), color=console.color)
