"""Every fault of a cassette, as data: the checks behind ``cassette validate``. The reader
hands each fault of a line here instead of raising, so all are collected."""

from __future__ import annotations

import re
import warnings
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import CassetteError, CassetteFormatError, CassetteWarning, reporting_paths
from ..format.check import header_fault, line_faults
from ..format.codec import dumps
from ..format.entry import Entry, Key, Rebuilder
from ..redact import REDACTED
from ..replay.matching import Matcher
from ..storage.index import reason_of
from ..storage.reader import Reader, irregular
from ..storage.store import shard_files
from ..types import EnvIndex, Json

__all__ = ["Fault", "Report", "validate"]

_MARK = REDACTED.encode()
_PROGRESS_EVERY = 4096
_KINDS = ("header", "interaction", "outcome")
_SIDE_FILE = (
    "side file of an interrupted record run; delete it, or open it with mode='replay' to see "
    "what it holds"
)
Progress = Callable[[int], None]


@dataclass(frozen=True)
class Fault:
    """One problem at ``path:line`` (line 0: the file as a whole)."""

    path: str
    line: int
    message: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.message}"


def _many(count: int, what: str) -> str:
    return f"{count} {what}{'s' if count != 1 else ''}"


@dataclass
class Report:
    """What ``validate`` found: faults (the file is broken) and warnings (tolerated)."""

    faults: list[Fault] = field(default_factory=list)
    warnings: list[Fault] = field(default_factory=list)
    files: int = 0
    lines: Counter[str] = field(default_factory=Counter)
    episodes: set[EnvIndex] = field(default_factory=set)

    @property
    def ok(self) -> bool:
        return not self.faults

    def summary(self) -> str:
        kinds = ", ".join(_many(n, kind) for kind, n in self.lines.items())
        total = sum(self.lines.values())
        episodes = _many(len(self.episodes), "episode")
        return f"{_many(self.files, 'file')}, {total} lines ({kinds or 'none'}), {episodes}"


def _kind_name(kind: object, eval_protocol: bool) -> str:
    if eval_protocol:
        return "eval-protocol line"
    return str(kind) if kind in _KINDS else "unknown-type line"


class _FileCheck:
    """The checks of one file; ``seen`` holds the keys of every file checked so far."""

    def __init__(self, path: Path, report: Report, seen: dict[Key, str], matcher: Matcher) -> None:
        self.path, self.spath = path, str(path)
        self.report, self.seen, self.matcher = report, seen, matcher
        self.reader = Reader(path, fault=self.bad_line)
        self.first = 0  # the line number of the first record (0: none yet)
        self.junk = 0  # lines that no writer of cassettes wrote (not JSON, not an object)
        self.rebuilder = Rebuilder()
        self.scrubbed: set[Entry] = set()

    def fault(self, line: int, message: str) -> None:
        self.report.faults.append(Fault(self.spath, line, message))

    def warn(self, line: int, message: str) -> None:
        self.report.warnings.append(Fault(self.spath, line, message))

    def run(self, tick: Progress) -> None:
        """Check every line, calling ``tick`` now and then with the lines read since."""
        lineno = done = 0
        try:
            for lineno, record in self.reader:
                self.line(lineno, record)
                if lineno - done >= _PROGRESS_EVERY:
                    tick(lineno - done)
                    done = lineno
        except CassetteFormatError as exc:  # corrupt gzip data
            self.fault(lineno, reason_of(exc))
        if lineno > done:
            tick(lineno - done)

    def kind(self, lineno: int, obj: Json) -> str:
        """Count a JSON-object line by its kind; the first one must be a header."""
        kind = obj.get("type")
        self.placed(lineno, kind)
        name = _kind_name(kind, self.reader.eval_protocol)
        self.report.lines[name] += 1
        env = obj.get("env_index")
        if name != "header" and isinstance(env, (int, str)) and not isinstance(env, bool):
            self.report.episodes.add(env)
        return name

    def placed(self, lineno: int, kind: object) -> None:
        """A header is the first line of a file (but an eval-protocol file), and only it."""
        if not self.first:
            self.first = lineno
            if not self.reader.eval_protocol and kind != "header":
                self.fault(
                    lineno, 'no header: a cassette file starts with a {"type":"header"} line'
                )
        elif kind == "header" and lineno != self.first:
            self.fault(lineno, "a header after the first line; a file has one, on its first line")

    def bad_line(self, exc: CassetteFormatError, obj: Json | None) -> None:
        """A line the reader refused: every fault of it."""
        line = exc.line or 0
        if obj is None:
            self.junk += 1
            self.fault(line, reason_of(exc))
            return
        for problem in _refused(self.kind(line, obj), obj, exc):
            self.fault(line, problem)

    def line(self, lineno: int, record: Entry | Json) -> None:
        if not isinstance(record, Entry):
            self.kind(lineno, record)
            if record["type"] == "header":
                self.header(lineno, record)
            return
        self.kind(lineno, record.kept or {})
        self.repeat(record)
        if record.sha is not None:  # (not an eval-protocol line)
            self.interaction(record)

    def header(self, lineno: int, obj: Json) -> None:
        meta = obj.get("meta")
        recorded = meta.get("ignore") if isinstance(meta, dict) else None
        if lineno == self.first and isinstance(recorded, list) and recorded:
            # the ignore rules cassette.open recorded with: its hashes were made under them
            try:
                self.matcher = Matcher([*self.matcher.ignore, *map(str, recorded)])
            except (ValueError, CassetteError) as exc:  # a path that does not parse
                self.fault(lineno, f"header meta.ignore: {exc}")

    def repeat(self, entry: Entry) -> None:
        here = f"{self.spath}:{entry.line}"
        other = self.seen.setdefault(entry.key, here)
        if other == here:
            return
        if entry.sha is None:
            self.warn(
                entry.line,
                f"env_index={entry.env_index!r} step={entry.step} again "
                f"(also {other}); readers play the first",
            )
            return
        cassette = self.spath if other.startswith(f"{self.spath}:") else f"{self.path.parent}/"
        self.fault(
            entry.line,
            f"key (env_index={entry.env_index!r}, channel={entry.channel!r}, step={entry.step}) "
            f"is recorded twice (also {other}); readers serve the first: `cassette merge OUT "
            f"{cassette} --on-conflict first` writes a copy without the repeats",
        )

    def interaction(self, entry: Entry) -> None:
        self.checksummed(entry)
        full = self.rebuilt(entry)
        if full is not None:
            self.hashed(entry, full)

    def checksummed(self, entry: Entry) -> None:
        try:
            entry.check()
        except CassetteFormatError as exc:
            if entry.broken is None:  # (a broken chain: reported by rebuilt)
                self.fault(entry.line, reason_of(exc))

    def hashed(self, entry: Entry, full: Json) -> None:
        # scrubbed lines (and deltas inheriting scrubbed values) hash the live request
        if entry.meta.get("redacted") or (entry.base in self.scrubbed and _MARK in _json(full)):
            self.scrubbed.add(entry)
        elif self.digest(entry.line, full) not in (None, entry.sha):
            self.fault(
                entry.line,
                "request_sha256 does not match the request rebuilt from the file (a line "
                "was edited, or the cassette was recorded with ignore rules: pass them "
                "with --ignore); re-record this episode",
            )

    def rebuilt(self, entry: Entry) -> Json | None:
        """The full request of ``entry`` (None, with a fault, if it cannot be rebuilt)."""
        if entry.broken is not None:
            if entry.base is None or entry.base.broken is None:  # (else reported on its base)
                self.fault(entry.line, reason_of(entry.broken))
            return None
        try:
            return self.rebuilder.full(entry)
        except CassetteFormatError as exc:
            self.fault(entry.line, reason_of(exc))
            return None

    def digest(self, lineno: int, full: Json) -> str | None:
        """The hash of a rebuilt request (None, with a fault, if it cannot be hashed)."""
        try:
            return self.matcher.digest(full)
        except CassetteError as exc:
            self.fault(lineno, f"the request cannot be hashed: {exc}")
            return None


def _refused(kind: str, obj: Json, exc: CassetteFormatError) -> list[str]:
    """Every fault of a line the reader refused, parsed as ``obj`` and counted as ``kind``."""
    if kind not in _KINDS:
        return [reason_of(exc)]
    if kind == "header" and (why := header_fault(obj)) is not None:
        return [why]
    return [f"{kind} {problem}" for problem in line_faults(obj)]


def _json(value: Json) -> bytes:
    try:
        return dumps(value)
    except CassetteError:
        return b""


def _located(text: str, path: str) -> tuple[int, str]:
    """(line, message) of a reader warning that starts with ``path:line: `` or ``path: ``."""
    match = re.match(re.escape(path) + r"(?::(\d+))?: (.*)", text, re.DOTALL)
    return (int(match.group(1) or 0), match.group(2)) if match else (0, text)


def _files(path: Path, report: Report) -> list[Path]:
    if irregular(path):
        report.faults.append(
            Fault(str(path), 0, "not a regular file (a pipe, socket or device); copy it to a file")
        )
        return []
    if path.is_dir():
        files = shard_files(path)
        if not files:
            report.faults.append(Fault(str(path), 0, "directory holds no shard files (*.jsonl)"))
        leftovers = sorted(path.glob("*.partial"))
    else:
        files = [path]
        leftovers = sorted(path.parent.glob(f"{path.name}.*.partial"))
    report.warnings += [Fault(str(side), 0, _SIDE_FILE) for side in leftovers]
    return files


@reporting_paths
def validate(path: Path, *, ignore: Iterable[str] = (), progress: Progress | None = None) -> Report:
    """Check every line of a cassette file or shard directory (``ignore``: its ignore rules);
    ``progress(n)`` is called with the lines read since last time."""
    report = Report()
    seen: dict[Key, str] = {}
    matcher = Matcher(ignore)
    for file in _files(path, report):
        report.files += 1
        _check_file(_FileCheck(file, report, seen, matcher), progress or (lambda n: None))
    report.faults.sort(key=lambda f: (f.path, f.line))
    return report


def _check_file(check: _FileCheck, tick: Progress) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CassetteWarning)
        check.run(tick)
    if not check.first:  # with junk, each of its lines is a fault of its own
        junk = "no line is a JSON object: not a cassette; check the file name"
        check.fault(0, junk if check.junk else "empty file; record into it, or delete it")
    for w in caught:
        if issubclass(w.category, CassetteWarning):
            check.warn(*_located(str(w.message), check.spath))
