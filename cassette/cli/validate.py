"""``cassette validate``: check every line of a cassette and list every fault."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from ..types import Json
from .console import Console, existing, format_option, plural, working

if TYPE_CHECKING:
    from ..dataset.validate import Fault, Report

__all__ = ["validate"]


@click.command()
@click.argument("path")
@click.option(
    "--ignore",
    multiple=True,
    metavar="PATH",
    help="An ignore rule the cassette was recorded with (it changes request_sha256), e.g. "
    "temperature, where its header's meta.ignore does not name it; repeatable.",
)
@format_option
def validate(path: str, ignore: tuple[str, ...], fmt: str) -> None:
    """Check every line of a cassette; list every fault.

    Checks the schema, the header, the delta references, request_sha256, meta.checksum
    and repeated keys. Exit 0 with one OK line, or 1 with a `path:line: what` line for
    every fault (`--format json`: one object with ok, summary, faults and warnings).

    \b
    Examples:
      cassette validate runs/a.jsonl
      cassette validate runs/shards/ --ignore temperature
      cassette validate runs/a.jsonl --format json | jq '.faults[].message'
    """
    from ..dataset.validate import validate
    from ..replay.matching import Matcher

    console = Console()
    target = existing(console, path)
    try:
        Matcher(ignore)
    except ValueError as exc:
        console.fail(str(exc))
    with working(console, f"validating {target.name}", [target], lines=True) as advance:
        report = validate(target, ignore=ignore, progress=advance)
    if fmt == "json":
        console.json(_json(path, report))
    else:
        _print(console, path, report.faults, report.warnings, report.summary())
    sys.exit(int(not report.ok))


def _print(
    console: Console, path: str, faults: list[Fault], warnings: list[Fault], summary: str
) -> None:
    found = [(f, "", "red") for f in faults] + [(w, "warning: ", "yellow") for w in warnings]
    for fault, kind, style in sorted(found, key=lambda t: (t[0].path, t[0].line)):
        where = f"{fault.path}:{fault.line}: " if fault.line else f"{fault.path}: "
        console.line((where + kind, style), fault.message)
    notes = f", {plural(len(warnings), 'warning')}" if warnings else ""
    if not faults:
        console.print(f"OK {path}: {summary}{notes}", "green")
    else:
        console.print(f"{plural(len(faults), 'fault')} in {path}: {summary}{notes}", "red")


def _json(path: str, report: Report) -> Json:
    found = {kind: [_fault(f) for f in getattr(report, kind)] for kind in ("faults", "warnings")}
    return {"path": path, "ok": report.ok, "summary": report.summary(), **found}


def _fault(fault: Fault) -> Json:
    return {"path": str(fault.path), "line": fault.line or None, "message": fault.message}
