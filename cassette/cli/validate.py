"""``cassette validate``: check every line of a cassette and list every fault."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from .console import (
    Console,
    count_lines,
    existing,
    format_option,
    large_bytes,
    plural,
    size,
    working,
)

if TYPE_CHECKING:
    from ..dataset.validate import Fault

__all__ = ["validate", "validate_command"]


@click.command()
@click.argument("path")
@click.option(
    "--ignore",
    multiple=True,
    metavar="PATH",
    help="An ignore rule the cassette was recorded with, e.g. temperature or "
    "'messages[*].name' (it changes request_sha256), where its header does not name it "
    "(meta.ignore, which is used as well); repeatable.",
)
@format_option
def validate(path: str, ignore: tuple[str, ...], fmt: str) -> None:
    """Check every line of a cassette; list every fault.

    Checks the schema, the header and its version, the delta references (each request is
    rebuilt), request_sha256 against the rebuilt request (except where secrets were
    redacted), meta.checksum against the response and error, and that no key is recorded
    twice. Exit 0 with one OK line, or 1 with a `path:line: what` line for every fault
    (`--format json`: one object with ok, summary, faults and warnings; the same exit).

    \b
    Examples:
      cassette validate runs/a.jsonl
      cassette validate runs/shards/ --ignore temperature
      cassette validate runs/a.jsonl --format json | jq '.faults[].message'
    """
    console = Console()
    target = existing(console, path)
    ok = validate_command(
        console, target, path, ignore=ignore, large=large_bytes(), as_json=fmt == "json"
    )
    if not ok:
        sys.exit(1)


def validate_command(
    console: Console,
    target: Path,
    path: str,
    *,
    ignore: tuple[str, ...],
    large: int,
    as_json: bool = False,
) -> bool:
    """Print every fault and warning of ``target``, then OK or the count of faults;
    returns whether it is OK."""
    from ..dataset.validate import validate
    from ..replay.matching import Matcher

    try:
        Matcher(ignore)
    except ValueError as exc:
        console.fail(str(exc))
    big = size(target) >= large
    total = count_lines(target) if big and console.terminal else None
    try:
        with working(console, f"validating {target.name}", total, show=big) as advance:
            report = validate(target, ignore=ignore, progress=advance)
    except OSError as exc:
        console.fail(f"cannot read {path}: {exc.strerror}; check the path and its permissions")
    if as_json:
        console.json(
            {
                "path": path,
                "ok": report.ok,
                "summary": report.summary(),
                "faults": [_fault_json(f) for f in report.faults],
                "warnings": [_fault_json(w) for w in report.warnings],
            }
        )
        return report.ok
    found = [(f, "") for f in report.faults] + [(w, "warning: ") for w in report.warnings]
    for fault, kind in sorted(found, key=lambda pair: (pair[0].path, pair[0].line)):
        where = f"{fault.path}:{fault.line}: " if fault.line else f"{fault.path}: "
        console.line((where + kind, "yellow" if kind else "red"), fault.message)
    notes = f", {plural(len(report.warnings), 'warning')}" if report.warnings else ""
    if report.ok:
        console.print(f"OK {path}: {report.summary()}{notes}", "green")
        return True
    faults = plural(len(report.faults), "fault")
    console.print(f"{faults} in {path}: {report.summary()}{notes}", "red")
    return False


def _fault_json(fault: Fault) -> dict[str, Any]:
    return {"path": str(fault.path), "line": fault.line or None, "message": fault.message}
