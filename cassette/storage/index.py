"""The in-memory index of a cassette: entries by (env_index, channel, step), from files and
shard directories."""

from __future__ import annotations

import warnings
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import CassetteFormatError, CassetteWarning, reporting_paths
from ..format.entry import Entry, Key, Rebuilder
from ..types import EnvIndex, Json
from .gc import paused_gc
from .reader import Reader, irregular
from .store import shard_files

__all__ = ["Entry", "Index", "Key", "load_index", "reason_of", "warn_left_out"]


@dataclass
class Index:
    """Entries and outcomes of one cassette (a file, or a directory of shards)."""

    entries: dict[Key, Entry] = field(default_factory=dict)
    outcomes: dict[EnvIndex, dict[str, Any]] = field(default_factory=dict)
    headers: list[dict[str, Any]] = field(default_factory=list)
    eval_protocol: bool = False
    duplicates: list[tuple[Entry, Entry]] = field(default_factory=list)  # (served, repeat)

    def episodes(self) -> list[EnvIndex]:
        """Every episode, in the order first seen: those with calls, then outcomes alone."""
        return list(dict.fromkeys([*(key[0] for key in self.entries), *self.outcomes]))

    def describe_episode(self, env_index: EnvIndex) -> str:
        """What the cassette holds for one episode (for a CassetteMiss)."""
        steps: dict[str, list[int]] = defaultdict(list)
        for env, channel, step in self.entries:
            if env == env_index and type(env) is type(env_index):
                steps[channel].append(step)
        if not steps:
            return f"it holds no episode {env_index!r} (episodes: {self._shown()})"
        parts = (_steps(channel, sorted(got)) for channel, got in sorted(steps.items()))
        return f"episode {env_index!r} holds " + ", ".join(parts)

    def add_line(self, line: Json) -> None:
        """Keep a header or outcome line."""
        if line["type"] == "outcome":
            self.outcomes[line["env_index"]] = line
        else:
            self.headers.append(line)

    def _shown(self) -> str:
        eps = self.episodes()
        return ", ".join(repr(e) for e in eps[:8]) + (", …" if len(eps) > 8 else "") or "none"

    def iter_full(self) -> Iterator[tuple[Entry, Json]]:
        """Every entry with its full request; those that cannot be rebuilt are warned of."""
        rebuilder = Rebuilder()
        for entry in self.entries.values():
            if entry.broken is not None:  # found on load, and warned about then
                continue
            try:
                full = rebuilder.full(entry)
            except CassetteFormatError as exc:
                warn_left_out(entry, exc, stacklevel=2)
                continue
            yield entry, full


def _steps(channel: str, got: list[int]) -> str:
    span = f"step {got[0]}" if len(got) == 1 else f"steps {got[0]}-{got[-1]}"
    return f"{channel}: {len(got)} ({span})"


def reason_of(exc: CassetteFormatError) -> str:
    """The reason of a reader error, without its path:line prefix and its advice."""
    text = str(exc).removeprefix(f"{exc.path}:{exc.line}: ")
    return text.split("; fix or delete the line")[0].split("; run `cassette validate")[0]


def warn_left_out(entry: Entry, exc: CassetteFormatError, stacklevel: int) -> None:
    warnings.warn(
        f"{entry.source}:{entry.line}: left out, its request cannot be rebuilt "
        f"({reason_of(exc)}); run `cassette validate {entry.source}`",
        CassetteWarning,
        stacklevel=stacklevel + 1,
    )


def _load_file(index: Index, path: Path, lean: bool) -> None:
    reader = Reader(path, lean=lean)
    twice: list[tuple[Entry, Entry]] = []
    for _, record in reader:
        if not isinstance(record, Entry):
            index.add_line(record)
            continue
        prior = index.entries.setdefault(record.key, record)
        if prior is not record and not reader.eval_protocol:  # (eval-protocol: the first)
            twice.append((prior, record))
    index.eval_protocol = index.eval_protocol or reader.eval_protocol
    index.duplicates += twice
    if twice:
        _warn_twice(str(path), twice)
    if reader.broken:
        _warn_broken(str(path), reader.broken)


def _where(old: Entry, new: Entry) -> str:
    key = f"(env_index={new.env_index!r}, channel={new.channel!r}, step={new.step}) at "
    if old.source == new.source:
        return f"{key}lines {old.line} and {new.line}"
    return f"{key}{old.source}:{old.line} and {new.source}:{new.line}"


def _warn_twice(spath: str, twice: list[tuple[Entry, Entry]]) -> None:
    shown = ", ".join(_where(old, new) for old, new in twice[:3])
    more = f" and {len(twice) - 3} more" if len(twice) > 3 else ""
    across = any(old.source != new.source for old, new in twice)
    cassette = f"{Path(spath).parent}/" if across else spath
    warnings.warn(
        f"{spath}: {len(twice)} key{'s' if len(twice) != 1 else ''} recorded twice: "
        f"{shown}{more}; the first line of each is served. `cassette merge OUT {cassette} "
        "--on-conflict first` writes a copy without the repeats",
        CassetteWarning,
        stacklevel=4,
    )


def _warn_broken(spath: str, broken: list[Entry]) -> None:
    shown = ", ".join(str(e.line) for e in broken[:5]) + (", …" if len(broken) > 5 else "")
    warnings.warn(
        f"{spath}: {len(broken)} interaction{'s' if len(broken) != 1 else ''} with a "
        f"broken delta chain cannot be served (lines {shown}); the other steps replay. "
        f"Run `cassette validate {spath}`; re-record those episodes",
        CassetteWarning,
        stacklevel=4,
    )


@reporting_paths
def load_index(paths: Iterable[Path], *, lean: bool = False) -> Index:
    """Load files (or shard directories) into one index; ``lean``: entries keep their bytes."""
    index = Index()
    with paused_gc():
        for path in paths:
            if irregular(path):
                raise CassetteFormatError(
                    f"{path} is not a regular file (a pipe, socket or device); copy it to a "
                    "file and read that",
                    path=str(path),
                )
            files = shard_files(path) if path.is_dir() else [path]
            for file in files:
                _load_file(index, file, lean)
    return index
