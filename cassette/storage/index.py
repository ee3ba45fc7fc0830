"""The in-memory index of a cassette: entries keyed by (env_index, channel, step)
(:mod:`cassette.format.entry`), loaded from files and shard directories.

Loading parses each line once and checks its structure; full requests are rebuilt from
the delta encoding only when asked for (a mismatch, ``show``, ``diff``), so replay stays
O(1) a call and memory stays linear in the file.
"""

from __future__ import annotations

import stat
import warnings
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import CassetteFormatError, CassetteWarning, reporting_paths
from ..format.entry import (
    Entry,
    Key,
    check_header,
    check_interaction,
    ep_entry,
    format_error,
    validate_line,
)
from ..types import EnvIndex
from .gc import paused_gc
from .lines import numbered_lines, parse_line, read_records
from .store import shard_files

__all__ = ["Entry", "Index", "Key", "load_index"]

_EP_KEYS = frozenset({"env_index", "step", "messages"})


@dataclass
class Index:
    """Entries and outcomes of one cassette (a file, or a directory of shards)."""

    entries: dict[Key, Entry] = field(default_factory=dict)
    outcomes: dict[EnvIndex, dict[str, Any]] = field(default_factory=dict)
    headers: list[dict[str, Any]] = field(default_factory=list)
    eval_protocol: bool = False
    # lines of a key recorded before (the first is served): (the served entry, this one)
    duplicates: list[tuple[Entry, Entry]] = field(default_factory=list)

    def episodes(self) -> list[EnvIndex]:
        seen: dict[EnvIndex, None] = {}
        for env, _, _ in self.entries:
            seen.setdefault(env, None)
        for env in self.outcomes:
            seen.setdefault(env, None)
        return list(seen)

    def describe_episode(self, env_index: EnvIndex) -> str:
        """What the cassette holds for one episode, for a CassetteMiss message."""
        steps: dict[str, list[int]] = defaultdict(list)
        for env, channel, step in self.entries:
            if env == env_index and type(env) is type(env_index):
                steps[channel].append(step)
        if not steps:
            eps = self.episodes()
            shown = ", ".join(repr(e) for e in eps[:8]) + (", …" if len(eps) > 8 else "")
            return f"it holds no episode {env_index!r} (episodes: {shown or 'none'})"
        parts = []
        for channel, got in sorted(steps.items()):
            got.sort()
            span = f"step {got[0]}" if len(got) == 1 else f"steps {got[0]}-{got[-1]}"
            parts.append(f"{channel}: {len(got)} ({span})")
        return f"episode {env_index!r} holds " + ", ".join(parts)

    def iter_full(self) -> Iterator[tuple[Entry, dict[str, Any]]]:
        """Every entry with its full request, in file order (rebuilt incrementally).

        Entries that cannot be rebuilt (a broken delta chain) are left out, each with a
        :class:`CassetteWarning` naming its line; so are the delta lines built on them."""
        last: dict[Entry, dict[str, Any]] = {}
        for entry in self.entries.values():
            if entry.broken is not None:  # found on load, and warned about then
                continue
            full = entry.request
            if entry.delta is not None:
                base = entry.base
                try:
                    base_full = last.pop(base, None) if base is not None else {}
                    if base_full is None and base is not None:  # a line not served (a
                        base_full = base.full_request()  # repeat of a key), or broken
                    full = entry.rebuild(base_full or {})
                except CassetteFormatError as exc:
                    entry.broken = exc
            if entry.broken is not None:
                warn_left_out(entry, entry.broken, stacklevel=2)
                continue
            last[entry] = full
            yield entry, full


def reason_of(exc: CassetteFormatError) -> str:
    """The reason of a reader error, without its path:line prefix and its advice."""
    text = str(exc).removeprefix(f"{exc.path}:{exc.line}: ")
    return text.split("; fix or delete the line")[0].split("; run `cassette validate")[0]


def warn_left_out(entry: Entry, exc: CassetteFormatError, stacklevel: int) -> None:
    """Warn that ``entry`` is left out of a walk of full requests, as ``exc`` says why
    (``stacklevel``: as the caller's own ``warnings.warn`` would take it)."""
    warnings.warn(
        f"{entry.source}:{entry.line}: left out, its request cannot be rebuilt "
        f"({reason_of(exc)}); run `cassette validate {entry.source}`",
        CassetteWarning,
        stacklevel=stacklevel + 1,
    )


def _base_of(
    delta: dict[str, Any], previous: Entry | None, again: dict[Key, Entry], index: Index, spath: str
) -> Entry | None:
    """The delta base of a line: the previous interaction of its (env_index, channel) in
    this file, if that is the step its delta names; where a key was recorded twice (two
    writers of one episode), the latest earlier line of that step in this file."""
    base = delta["base"]
    if previous is not None and previous.step == base:
        return previous
    if previous is None:
        return None
    key = (previous.env_index, previous.channel, base)
    found = again.get(key) or index.entries.get(key)
    return found if found is not None and found.source == spath else None


def _records(path: Path, lean: bool) -> Iterator[tuple[int, dict[str, Any] | Entry]]:
    """The file's lines as parsed objects, or (``lean``) interaction lines as entries."""
    from ..format.lean import lean_entry  # it builds on Entry

    if not lean:
        yield from read_records(path)
        return
    spath = str(path)
    deltas: dict[bytes, Any] = {}  # lines with equal deltas share one dict
    for lineno, line in numbered_lines(path):
        if line.startswith(b'{"type":"interaction"'):
            entry = lean_entry(line, spath, lineno, deltas)
            if entry is not None:
                yield lineno, entry
                continue
        obj = parse_line(path, lineno, line, stacklevel=3)
        if obj is None:
            return
        yield lineno, obj


def _load_file(index: Index, path: Path, lean: bool = False) -> None:
    spath = str(path)
    records = _records(path, lean)
    last: dict[tuple[EnvIndex, str], Entry] = {}
    again: dict[Key, Entry] = {}  # the latest line of each key recorded twice in this file
    broken: list[Entry] = []
    first = True
    for line, obj in records:
        if isinstance(obj, Entry):  # a LeanEntry
            first = False
            _add(index, obj, obj.delta, last, again, broken, spath, line)
            continue
        kind = obj.get("type")
        if first and kind is None and obj.keys() >= _EP_KEYS:
            index.eval_protocol = True
        first = False
        if index.eval_protocol:
            entry = ep_entry(obj, spath, line)
            index.entries.setdefault(entry.key, entry)  # eval-protocol plays the first
            continue
        if kind == "interaction":
            check_interaction(obj, spath, line)
            env, channel, step = obj["env_index"], obj.get("channel", "llm"), obj["step"]
            delta = obj.get("delta")
            entry = Entry(
                env_index=env,
                channel=channel,
                step=step,
                request=obj["request"],
                sha=obj["request_sha256"],
                response=obj.get("response"),
                error=obj.get("error"),
                meta=obj.get("meta") or {},
                delta=delta,
                source=spath,
                line=line,
            )
            _add(index, entry, delta, last, again, broken, spath, line)
        elif kind == "outcome":
            validate_line(obj, spath, line)
            index.outcomes[obj["env_index"]] = obj
        elif kind == "header":
            check_header(obj, spath, line)
            index.headers.append(obj)
        else:
            raise format_error(
                spath, line, f"unknown line type {kind!r} (expected header, interaction, outcome)"
            )
    _warn_damage(spath, broken, [d for d in index.duplicates if d[1].source == spath])


def _add(
    index: Index,
    entry: Entry,
    delta: dict[str, Any] | None,
    last: dict[tuple[EnvIndex, str], Entry],
    again: dict[Key, Entry],
    broken: list[Entry],
    spath: str,
    line: int,
) -> None:
    """Index one interaction: link its delta base, note a repeat of its key."""
    env, channel = entry.env_index, entry.channel
    if delta is not None:
        base = _base_of(delta, last.get((env, channel)), again, index, spath)
        if base is None:
            entry.broken = format_error(
                spath,
                line,
                f"delta base step {delta['base']} is not an earlier interaction of "
                f"({env!r}, {channel!r}) in this file (lines lost or mixed up); this "
                "step and the later ones built on it cannot be served: re-record them",
            )
        elif base.broken is not None:
            entry.broken = format_error(
                spath,
                line,
                f"its delta base (line {base.line}) cannot be rebuilt; this step "
                "cannot be served: re-record it",
            )
        entry.base = base
        if entry.broken is not None:
            broken.append(entry)
    prior = index.entries.get(entry.key)
    if prior is not None:
        index.duplicates.append((prior, entry))
        again[entry.key] = entry
    else:
        index.entries[entry.key] = entry
    last[(env, channel)] = entry


def _warn_damage(spath: str, broken: list[Entry], twice: list[tuple[Entry, Entry]]) -> None:
    """One CassetteWarning per kind of damage that a file holds and readers tolerate."""
    if twice:
        shown = ", ".join(
            f"(env_index={new.env_index!r}, channel={new.channel!r}, step={new.step}) at "
            + (
                f"lines {old.line} and {new.line}"
                if old.source == new.source
                else f"{old.source}:{old.line} and {new.source}:{new.line}"
            )
            for old, new in twice[:3]
        )
        more = f" and {len(twice) - 3} more" if len(twice) > 3 else ""
        # repeats across shards: the copy without them is a merge of the whole directory
        across = any(old.source != new.source for old, new in twice)
        cassette = f"{Path(spath).parent}/" if across else spath
        warnings.warn(
            f"{spath}: {len(twice)} key{'s' if len(twice) != 1 else ''} recorded twice: "
            f"{shown}{more}; the first line of each is served. `cassette merge OUT {cassette} "
            "--on-conflict first` writes a copy without the repeats",
            CassetteWarning,
            stacklevel=4,
        )
    if broken:
        shown = ", ".join(str(e.line) for e in broken[:5]) + (", …" if len(broken) > 5 else "")
        warnings.warn(
            f"{spath}: {len(broken)} interaction{'s' if len(broken) != 1 else ''} with a "
            f"broken delta chain cannot be served (lines {shown}); the other steps replay. "
            f"Run `cassette validate {spath}`; re-record those episodes",
            CassetteWarning,
            stacklevel=4,
        )


def _regular(path: Path) -> None:
    """Refuse what is neither a file nor a directory (a FIFO would block the reader)."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return  # reading it says what is wrong
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise CassetteFormatError(
            f"{path} is not a regular file (a pipe, socket or device); copy it to a file "
            "and read that",
            path=str(path),
        )


@reporting_paths
def load_index(paths: Iterable[Path], *, lean: bool = False) -> Index:
    """Load one or more files (or shard directories) into one index.

    The garbage collector is paused meanwhile: loading allocates millions of containers
    that all stay alive, and the collector's passes over them were most of the time.
    ``lean`` (replay): interactions keep their line's bytes (``cassette.format.lean.LeanEntry``),
    decoded when served, so memory stays near the file's size. A path that cannot be read
    raises :class:`~cassette.errors.CassettePathError`.
    """
    index = Index()
    with paused_gc():
        for path in paths:
            _regular(path)
            files = shard_files(path) if path.is_dir() else [path]
            for file in files:
                _load_file(index, file, lean)
    return index
