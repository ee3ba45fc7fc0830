"""``cassette diff``: compare two runs under a progress bar, write the HTML file, and print
the report in the chosen format (the engine and the renderers are :mod:`cassette.diff`)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..errors import CassetteError
from .console import (
    Console,
    existing,
    large_bytes,
    load,
    overwritten,
    size,
    uploaded,
    working,
)

if TYPE_CHECKING:
    from ..diff import ManyDiff, RunDiff

__all__ = ["compare", "compare_many", "diff", "print_many", "print_report", "write_html"]

MAX_RUNS = 8


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
@click.option(
    "--baseline",
    metavar="A2",
    help="A second run of A's configuration: report how much of each difference exceeds "
    "A vs A2 (the noise floor), per metric.",
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

    Episodes are aligned by env_index: identical, diverged, or only in A / only in B. For a
    diverged one: the first (channel, step) where the runs part, whether the request or
    the response parted, the exact path and both values, and both tool-call sequences;
    rewards and their delta; tokens, cost and mean reward of each run. Volatile fields
    (response ids, timestamps, generated tool-call ids) are ignored and listed.

    Paired statistics over the episodes rewarded in both runs: improved / regressed /
    unchanged / still failing, the mean reward delta with a bootstrap interval, an exact
    McNemar test (binary rewards) or a permutation and Wilcoxon test (continuous), pass^k
    for tau2 trials; divergences grouped by cause; both tool-call sequences aligned.

    Exit 0 when the runs are equivalent, 1 when they differ, 2 on a usage or file error.

    \b
    Examples:
      cassette diff runs/a.jsonl runs/b.jsonl
      cassette diff runs/a.jsonl runs/b.jsonl --format markdown > comment.md
      cassette diff runs/a.jsonl runs/b.jsonl --html report.html --ignore model
      cassette diff runs/a/ runs/b/ --env 3 --format json | jq '.episodes[0].divergence'
      cassette diff runs/a.jsonl runs/b.jsonl --baseline runs/a2.jsonl
      cassette diff runs/a.jsonl runs/b.jsonl runs/c.jsonl runs/d.jsonl
    """
    console = Console()
    if schema:
        from ..diff.schema import SCHEMA

        console.json(SCHEMA)
        return
    if not 2 <= len(runs) <= MAX_RUNS:
        console.fail(f"diff takes 2 to {MAX_RUNS} runs, got {len(runs)}; e.g. cassette diff A B")
    paths = [existing(console, r) for r in runs]
    base = existing(console, baseline) if baseline is not None else None
    if html_out is not None and Path(html_out).is_dir():
        console.fail(f"--html {html_out} is a directory; name the file, e.g. report.html")
    html = html_out is not None
    if len(paths) == 2 and base is None:
        pair = (paths[0], paths[1])
        result, page = compare(
            console,
            pair,
            (runs[0], runs[1]),
            ignore=ignore,
            env=env,
            html=html,
            large=large_bytes(),
            seed=seed,
        )
        if page is not None and html_out is not None:
            write_html(console, page, html_out)
        print_report(console, result, fmt)
        sys.exit(0 if result.equivalent else 1)
    labels = [*runs, baseline] if baseline is not None else list(runs)
    many, page = compare_many(
        console, paths, base, labels, ignore=ignore, env=env, html=html, seed=seed
    )
    if page is not None and html_out is not None:
        write_html(console, page, html_out)
    if len(paths) == 2:
        print_report(console, many.diffs[0], fmt)
    else:
        print_many(console, many, fmt)
    sys.exit(0 if many.equivalent else 1)


def compare(
    console: Console,
    paths: tuple[Path, Path],
    labels: tuple[str, str],
    *,
    ignore: tuple[str, ...],
    env: str | None,
    html: bool,
    large: int,
    seed: int = 0,
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
                index_a,
                index_b,
                ignore=ignore,
                env=env,
                progress=progress,
                labels=labels,
                seed=seed,
            )
            page = render_html(result) if html else None
    except (ValueError, CassetteError) as exc:
        console.fail(str(exc))
    except TypeError as exc:  # orjson: an int beyond 64 bits, nesting deeper than 254 levels
        console.fail(f"a run holds a value the report cannot write ({exc}); {_VALIDATE}")
    return result, page


def compare_many(
    console: Console,
    paths: list[Path],
    baseline: Path | None,
    labels: list[str],
    *,
    ignore: tuple[str, ...],
    env: str | None,
    html: bool,
    seed: int,
) -> tuple[ManyDiff, str | None]:
    """Each run diffed against the first (and the first against ``baseline``, the noise
    floor), and the HTML page when ``html``: the two-run page with the noise floor for
    two runs, else the many-run table. Errors as :func:`compare`."""
    from ..diff import Rules, diff_many
    from ..diff.report import render_html, render_many_html

    try:
        Rules(ignore)
    except ValueError as exc:
        console.fail(f"--ignore: {exc}")
    indexes = [load(console, p) for p in paths]
    base = load(console, baseline) if baseline is not None else None
    try:
        with working(console, "comparing runs", show=False):
            many = diff_many(
                indexes, baseline=base, labels=labels, ignore=ignore, env=env, seed=seed
            )
            page = None
            if html:
                page = render_html(many.diffs[0]) if len(paths) == 2 else render_many_html(many)
    except (ValueError, CassetteError) as exc:
        console.fail(str(exc))
    return many, page


def print_many(console: Console, many: ManyDiff, fmt: str) -> None:
    """The many-run report on stdout: one table, then each run's statistics."""
    from ..diff.report import render_many_json, render_many_markdown, render_many_text

    if fmt == "json":
        console.echo(render_many_json(many).rstrip("\n"))
    elif fmt == "markdown":
        console.echo(render_many_markdown(many).rstrip("\n"))
    else:
        width = shutil.get_terminal_size((100, 24)).columns if console.terminal else 100
        click.echo(render_many_text(many, color=console.color, width=width), color=console.color)


def write_html(console: Console, page: str, out: str) -> None:
    """Write the page to ``out`` (a URL: uploaded) and say so on stderr; exit 2 if it
    cannot be written."""
    from ..view import write_page

    target = overwritten(console, out)  # a URL's private file: not a local folder "s3:"
    try:
        write_page(page, target)  # private (0600): the page holds transcripts
    except OSError as exc:
        console.fail(f"cannot write {out}: {exc.strerror}; check the path")
    uploaded(console)
    click.echo(f"wrote {out}", err=True)


def print_report(console: Console, result: RunDiff, fmt: str) -> None:
    """The report on stdout: ``json``, ``markdown``, or text as wide as the terminal."""
    try:
        _print_report(console, result, fmt)
    except (TypeError, CassetteError) as exc:  # see compare()
        console.fail(f"a run holds a value the report cannot write ({exc}); {_VALIDATE}")


_VALIDATE = "run `cassette validate` on both runs"


def _print_report(console: Console, result: RunDiff, fmt: str) -> None:
    from ..diff.report import render_json, render_markdown, render_text

    if fmt == "json":
        console.echo(render_json(result).rstrip("\n"))
    elif fmt == "markdown":
        console.echo(render_markdown(result).rstrip("\n"))
    else:
        width = shutil.get_terminal_size((100, 24)).columns if console.terminal else 100
        click.echo(render_text(result, color=console.color, width=width), color=console.color)
