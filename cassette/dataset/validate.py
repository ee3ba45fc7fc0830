"""Every fault of a cassette, as data: the checks behind ``cassette validate``.

Unlike the reader (:func:`cassette.storage.index.load_index`), which stops at the first bad line,
this walks every line and collects every fault: lines that are not JSON, lines that do
not fit the schema, a missing or misplaced header, a newer format version, delta
references that do not resolve, request hashes that do not match the rebuilt request,
and keys recorded twice (across the shards of a directory too).
"""

from __future__ import annotations

import re
import stat
import warnings
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError

from ..errors import CassetteError, CassetteFormatError, CassetteWarning, reporting_paths
from ..format.checksum import CHECKSUM_KEY, checksum
from ..format.codec import dumps
from ..format.entry import Entry, EnvIndex, Key, ep_entry
from ..format.models import FORMAT, LINE_ADAPTER, VERSION
from ..redact import REDACTED
from ..replay.matching import Matcher
from ..storage.index import reason_of
from ..storage.lines import numbered_lines
from ..storage.store import shard_files
from ..types import Json
from .validate_report import Fault, Report

__all__ = ["Fault", "Report", "validate"]

_MARK = REDACTED.encode()

_EP_KEYS = frozenset({"env_index", "step", "messages"})
_PROGRESS_EVERY = 4096


def _schema_faults(obj: Json) -> list[str]:
    """Every schema error of one line, strictly typed as the reader expects."""
    try:
        LINE_ADAPTER.validate_python(obj, strict=True)
    except ValidationError as exc:
        found: dict[str, list[str]] = {}
        for err in exc.errors():
            loc = ".".join(str(p) for p in err["loc"][1:] if p not in ("int", "str"))
            found.setdefault(loc or "line", []).append(err["msg"])
        return [f"{loc}: {' or '.join(dict.fromkeys(msgs))}" for loc, msgs in found.items()]
    return []


class _FileCheck:
    """The checks of one file; ``seen`` holds the keys of every file checked so far."""

    def __init__(self, path: Path, report: Report, seen: dict[Key, str], matcher: Matcher) -> None:
        self.path, self.spath = path, str(path)
        self.report, self.seen, self.matcher = report, seen, matcher
        self.first = 0  # the line number of the first record (0: none yet)
        self.junk = 0  # lines that no writer of cassettes wrote (not JSON, not an object)
        self.eval_protocol = False
        self.unparsed = 0  # lines that were not JSON: a delta base may have been one
        # per (env_index, channel): the last interaction and its full request (None: broken)
        self.last: dict[tuple[EnvIndex, str], tuple[Entry, Json | None] | None] = {}
        # per (env_index, channel): its recent lines by step (a key recorded twice by two
        # writers chains on the latest earlier line of the step its delta names)
        self.recent: dict[tuple[EnvIndex, str], dict[int, tuple[Entry, Json | None]]] = {}
        self.scrubbed: set[Entry] = set()

    def fault(self, line: int, message: str) -> None:
        self.report.faults.append(Fault(self.spath, line, message))

    def warn(self, line: int, message: str) -> None:
        self.report.warnings.append(Fault(self.spath, line, message))

    def records(self) -> Iterator[tuple[int, Json]]:
        """Every line that is a JSON object; each other line is a fault and reading goes
        on (the reader, :func:`~cassette.storage.store.iter_records`, stops at the first)."""
        lineno = 0
        try:
            for lineno, raw in numbered_lines(self.path):
                try:
                    obj = orjson.loads(raw)
                except orjson.JSONDecodeError as exc:
                    if raw.endswith(b"\n"):
                        self.unparsed += 1
                        self.junk += 1
                        self.fault(lineno, f"not valid JSON ({exc})")
                    else:
                        if not raw.lstrip().startswith(b"{"):  # not a record cut short
                            self.junk += 1
                        self.warn(
                            lineno,
                            "last line is cut short (a crash while writing?); "
                            "readers skip it, and appending cuts it off",
                        )
                    continue
                if isinstance(obj, dict):
                    yield lineno, obj
                else:
                    self.junk += 1
                    self.fault(lineno, f"expected a JSON object, got {type(obj).__name__}")
        except CassetteFormatError as exc:  # corrupt gzip data
            self.fault(lineno, reason_of(exc))

    def line(self, lineno: int, obj: Json) -> None:
        kind = obj.get("type")
        if not self.first:
            self.first = lineno
            self.eval_protocol = kind is None and obj.keys() >= _EP_KEYS
            if not self.eval_protocol and kind != "header":
                self.fault(
                    lineno, 'no header: a cassette file starts with a {"type":"header"} line'
                )
        if self.eval_protocol:
            self.ep_line(lineno, obj)
        elif kind == "header":
            self.header(lineno, obj)
        elif kind == "interaction":
            self.interaction(lineno, obj)
        elif kind == "outcome":
            self.report.lines["outcome"] += 1
            for problem in _schema_faults(obj):
                self.fault(lineno, f"outcome {problem}")
            if isinstance(obj.get("env_index"), (int, str)):
                self.report.episodes.add(obj["env_index"])
        else:
            self.report.lines["unknown-type line"] += 1
            self.fault(
                lineno, f"unknown line type {kind!r} (expected header, interaction, outcome)"
            )

    def header(self, lineno: int, obj: Json) -> None:
        self.report.lines["header"] += 1
        version = obj.get("version")
        if lineno != self.first:
            self.fault(lineno, "a header after the first line; a file has one, on its first line")
        if obj.get("format") != FORMAT:
            self.fault(lineno, f"not a rollout-cassette header (format {obj.get('format')!r})")
        elif type(version) is int and version > VERSION:
            self.fault(
                lineno,
                f"written in format version {version}, newer than this rollout-cassette reads "
                f"({VERSION}); upgrade with `pip install -U rollout-cassette`",
            )
        else:
            for problem in _schema_faults(obj):
                self.fault(lineno, f"header {problem}")
        meta = obj.get("meta")
        recorded = meta.get("ignore") if isinstance(meta, dict) else None
        if lineno == self.first and isinstance(recorded, list) and recorded:
            # the ignore rules the recording was made with (cassette.open writes them here):
            # its hashes were made under them, as under those passed with --ignore
            try:
                self.matcher = Matcher([*self.matcher.ignore, *map(str, recorded)])
            except (ValueError, CassetteError) as exc:  # a path that does not parse
                self.fault(lineno, f"header meta.ignore: {exc}")

    def ep_line(self, lineno: int, obj: Json) -> None:
        self.report.lines["eval-protocol line"] += 1
        try:
            entry = ep_entry(obj, self.spath, lineno)
        except CassetteFormatError as exc:
            self.fault(lineno, reason_of(exc))
            return
        self.report.episodes.add(entry.env_index)
        other = self.seen.setdefault(entry.key, f"{self.spath}:{lineno}")
        if other != f"{self.spath}:{lineno}":
            self.warn(
                lineno,
                f"env_index={entry.env_index!r} step={entry.step} again "
                f"(also {other}); readers play the first",
            )

    def interaction(self, lineno: int, obj: Json) -> None:
        self.report.lines["interaction"] += 1
        env, channel = obj.get("env_index"), obj.get("channel", "llm")
        problems = _schema_faults(obj)
        for problem in problems:
            self.fault(lineno, f"interaction {problem}")
        if isinstance(env, (int, str)) and not isinstance(env, bool):
            self.report.episodes.add(env)
        if problems:
            if isinstance(env, (int, str)) and isinstance(channel, str):
                self.last[(env, channel)] = None  # later deltas on it cannot be checked
            return
        entry = Entry(
            env_index=env,  # type: ignore[arg-type]
            channel=channel,
            step=obj["step"],
            request=obj["request"],
            sha=obj["request_sha256"],
            response=obj.get("response"),
            error=obj.get("error"),
            meta=obj.get("meta") or {},
            delta=obj.get("delta"),
            source=self.spath,
            line=lineno,
        )
        here = f"{self.spath}:{lineno}"
        other = self.seen.setdefault(entry.key, here)
        if other != here:
            # in another shard: the copy without the repeats is a merge of the directory
            cassette = self.spath if other.startswith(f"{self.spath}:") else f"{self.path.parent}/"
            self.fault(
                lineno,
                f"key (env_index={env!r}, channel={channel!r}, step={entry.step}) is recorded "
                f"twice (also {other}); readers serve the first: `cassette merge OUT "
                f"{cassette} --on-conflict first` writes a copy without the repeats",
            )
        want = entry.meta.get(CHECKSUM_KEY)
        if want is not None and self.checksum_of(entry) != want:
            self.fault(
                lineno,
                "the response or error is not what was recorded (meta.checksum does not "
                "match: the line was edited or damaged); restore the file, or re-record",
            )
        full = self.rebuild(entry)
        self.last[(entry.env_index, channel)] = (entry, full)
        recent = self.recent.setdefault((entry.env_index, channel), {})
        recent.pop(entry.step, None)
        recent[entry.step] = (entry, full)
        if len(recent) > 8:
            del recent[next(iter(recent))]
        # a scrubbed line, and a delta line that inherits scrubbed values from its base,
        # rebuild with the secrets replaced: their hash was of the live request
        inherited = entry.base in self.scrubbed and full is not None
        if entry.meta.get("redacted") or (inherited and _MARK in self.json(full)):
            self.scrubbed.add(entry)
        elif full is not None and self.digest(lineno, full) not in (None, entry.sha):
            self.fault(
                lineno,
                "request_sha256 does not match the request rebuilt from the file (a line "
                "was edited, or the cassette was recorded with ignore rules: pass them "
                "with --ignore); re-record this episode",
            )

    @staticmethod
    def checksum_of(entry: Entry) -> str:
        try:
            return checksum(entry.response, entry.error)
        except CassetteError as exc:
            return str(exc)

    @staticmethod
    def json(value: Any) -> bytes:
        try:
            return dumps(value)
        except CassetteError:
            return b""

    def digest(self, lineno: int, full: Json) -> str | None:
        """The hash of a rebuilt request (None, with a fault, if it cannot be hashed)."""
        try:
            return self.matcher.digest(full)
        except CassetteError as exc:
            self.fault(lineno, f"the request cannot be hashed: {exc}")
            return None

    def rebuild(self, entry: Entry) -> Json | None:
        """The full request of ``entry``, or None (with a fault) if its delta is broken."""
        if entry.delta is None:
            return entry.request
        key = (entry.env_index, entry.channel)
        base_step = entry.delta["base"]
        if key not in self.last:
            hint = " (an unparseable line above may have held it)" if self.unparsed else ""
            self.fault(
                entry.line,
                f"delta base step {base_step}: no earlier interaction of "
                f"({entry.env_index!r}, {entry.channel!r}) in this file{hint}",
            )
            return None
        previous = self.last[key]
        base, base_full = previous if previous is not None else (None, None)
        if base is not None and base.step != base_step and base_step in self.recent.get(key, {}):
            base, base_full = self.recent[key][base_step]  # a key recorded twice: see the reader
        if base is None or base_full is None:
            return None  # the base is broken; that fault is reported already
        if base.step != base_step:
            self.fault(
                entry.line,
                f"delta base step {base_step} is not the previous interaction of "
                f"({entry.env_index!r}, {entry.channel!r}) (step {base.step}, line {base.line})",
            )
            return None
        entry.base = base
        try:
            return entry.rebuild(base_full)
        except CassetteFormatError as exc:
            self.fault(entry.line, reason_of(exc))
            return None


def _located(text: str, path: str) -> tuple[int, str]:
    """(line, message) of a reader warning that starts with ``path:line: `` or ``path: ``."""
    match = re.match(re.escape(path) + r"(?::(\d+))?: (.*)", text, re.DOTALL)
    return (int(match.group(1) or 0), match.group(2)) if match else (0, text)


def _files(path: Path, report: Report) -> list[Path]:
    try:
        mode = path.stat().st_mode
    except OSError:
        mode = stat.S_IFREG
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
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
    for side in leftovers:
        report.warnings.append(
            Fault(
                str(side),
                0,
                "side file of an interrupted record run; delete it, or open it "
                "with mode='replay' to see what it holds",
            )
        )
    return files


@reporting_paths
def validate(
    path: Path,
    *,
    ignore: Iterable[str] = (),
    progress: Callable[[int], None] | None = None,
) -> Report:
    """Check every line of a cassette file or shard directory; see the module docstring.

    ``ignore``: the ignore rules the cassette was recorded with (they change the hash).
    ``progress(n)`` is called now and then with the number of lines read since last time.
    """
    report = Report()
    seen: dict[Key, str] = {}
    matcher = Matcher(ignore)
    for file in _files(path, report):
        report.files += 1
        check = _FileCheck(file, report, seen, matcher)
        done = last = 0
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", CassetteWarning)
            for last, obj in check.records():
                check.line(last, obj)
                if progress is not None and last - done >= _PROGRESS_EVERY:
                    progress(last - done)
                    done = last
        if progress is not None and last > done:
            progress(last - done)
        if not check.first and check.junk:  # each of its lines is a fault of its own
            check.fault(0, "no line is a JSON object: not a cassette; check the file name")
        elif not check.first:
            check.fault(0, "empty file; record into it, or delete it")
        for w in caught:
            if issubclass(w.category, CassetteWarning):
                check.warn(*_located(str(w.message), str(file)))
    report.faults.sort(key=lambda f: (f.path, f.line))
    return report
