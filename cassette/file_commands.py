"""The work of the commands that check or rewrite cassette files (``validate``,
``convert``, ``redact``, ``merge``) once :mod:`cassette.cli` has checked their arguments:
each runs under a progress bar (drawn on a terminal when the inputs add up to ``large``
bytes or more) and reports in a few lines; a bad input is one ``error:`` line and exit 2.
"""

from __future__ import annotations

import re
from pathlib import Path

from .console import Console, count_lines, plural, size, working
from .errors import CassetteError

__all__ = ["convert_command", "merge_command", "redact_command", "validate_command"]


def validate_command(
    console: Console, target: Path, path: str, *, ignore: tuple[str, ...], large: int
) -> bool:
    """Print every fault and warning of ``target``, then OK or the count of faults;
    returns whether it is OK."""
    from .matching import Matcher
    from .validate import validate

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


def convert_command(
    console: Console, path: Path, target: Path, src: str, out: str, *, large: int
) -> None:
    """Convert the eval-protocol playback file ``path`` (given as ``src``) into ``target``
    (given as ``out``) and say how many interactions and episodes it wrote."""
    from .convert import from_eval_protocol

    big = size(path) >= large
    try:
        with working(console, f"converting {path.name}", show=big) as advance:
            index = from_eval_protocol(path, target, progress=advance)
    except CassetteError as exc:
        console.fail(str(exc))
    counts = (
        f"{plural(len(index.entries), 'interaction')}, {plural(len(index.episodes()), 'episode')}"
    )
    console.print(f"converted {src} to {out}: {counts}")


def redact_command(
    console: Console,
    path: Path,
    src: str,
    out: str | None,
    *,
    keys: tuple[str, ...],
    patterns: tuple[str, ...],
    large: int,
) -> None:
    """Scrub ``path`` (given as ``src``) into ``out`` (in place when None) and say how many
    values were replaced per line type."""
    from .convert import redact
    from .redact import Redactor

    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as exc:
            console.fail(f"--pattern {pattern!r} is not a regular expression ({exc}); fix it")
    redactor = Redactor(extra_keys=keys, extra_patterns=patterns)
    big = size(path) >= large
    total = count_lines(path) if big and console.terminal else None
    try:
        with working(console, f"redacting {path.name}", total, show=big) as advance:
            counts = redact(path, Path(out) if out else None, redactor=redactor, progress=advance)
    except CassetteError as exc:
        console.fail(str(exc))
    except OSError as exc:
        console.fail(f"cannot rewrite {out or src}: {exc.strerror}; check the path and permissions")
    where = f"{src} (in place)" if out is None else f"{src} into {out}"
    if not counts:
        console.print(f"nothing to redact in {where}")
        return
    per_type = ", ".join(f"{kind} {n}" for kind, n in sorted(counts.items()))
    console.print(f"redacted {plural(sum(counts.values()), 'value')} in {where}: {per_type}")


def merge_command(
    console: Console, target: Path, out: str, paths: list[Path], *, on_conflict: str, large: int
) -> None:
    """Merge ``paths`` into ``target`` (given as ``out``) and say what it wrote, dropped
    and renumbered."""
    from .convert import merge

    big = sum(size(path) for path in paths) >= large
    try:
        with working(console, "merging", show=big) as advance:
            merged = merge(target, paths, on_conflict=on_conflict, progress=advance)
    except CassetteError as exc:  # a MergeConflict names the key and both files
        console.fail(str(exc))
    counts = f"{plural(merged.interactions, 'interaction')}, {plural(merged.outcomes, 'outcome')}"
    counts += f", {plural(merged.episodes, 'episode')}"
    console.print(f"merged {plural(len(paths), 'input')} into {out}: {counts}")
    for env, source in merged.dropped:
        console.print(f"  dropped episode {env!r} of {source} (--on-conflict {on_conflict})")
    for source, prefix in merged.prefixes.items():
        console.print(f"  episodes of {source} are now {prefix}/<env_index>")
