"""Cassettes made from other files: eval-protocol playback files converted, secrets scrubbed,
shards or runs merged. Written through the real recorder; each output replaces its target
atomically once complete."""

from __future__ import annotations

import stat
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import CassetteError, reporting_paths
from ..format.checksum import CHECKSUM_KEY, checksum
from ..format.codec import dumps
from ..format.runid import kept_run_id
from ..redact import Redactor
from ..replay.cassette import open as open_cassette
from ..replay.matching import Matcher
from ..storage.index import Entry, Index, Key, load_index
from ..storage.recorder import Recorder
from ..storage.store import holding, iter_records, replacing, shard_files
from ..types import EnvIndex, Json

__all__ = ["CONFLICT_POLICIES", "MergeConflict", "Merged", "from_eval_protocol", "merge", "redact"]

Progress = Callable[[int], None]
Clash = tuple[EnvIndex, str]  # (episode, message)
CONFLICT_POLICIES = ("error", "first", "last", "renumber")


def _tick(progress: Progress | None) -> None:
    if progress is not None:
        progress(1)


def _returns(value: Json | None) -> Callable[[], Json]:
    return lambda: value or {}


@reporting_paths
def from_eval_protocol(src: Path, out: Path, *, progress: Progress | None = None) -> Index:
    """Write the eval-protocol playback file ``src`` as the cassette ``out``; ``src``'s index."""
    index = load_index([src])
    if not index.eval_protocol:
        if not (index.entries or index.outcomes or index.headers):
            raise CassetteError(f"{src} holds no line; name an eval-protocol playback file")
        raise CassetteError(
            f"{src} is not an eval-protocol playback file (lines of env_index, step, "
            f"messages); it is a cassette already: use it as it is (`cassette show {src}`)"
        )
    meta = {"converted_from": src.name, "source": "eval-protocol playback file"}
    with open_cassette(out, "record", meta=meta) as cas:
        for e in index.entries.values():
            cas.call(e.request, live=_returns(e.response), env_index=e.env_index, step=e.step)
            _tick(progress)
    return index


def _scrub(obj: Json, raw: bytes, redactor: Redactor) -> tuple[Json, int]:
    out, count = redactor.redact_line(obj, raw, dumps)
    if not count or out == obj:
        return obj, 0
    if obj.get("type") == "interaction":
        meta = _meta(out)
        out["meta"] = {**meta, "redacted": int(meta.get("redacted") or 0) + count}
        if CHECKSUM_KEY in meta:  # of what the line serves now
            out["meta"][CHECKSUM_KEY] = checksum(out.get("response"), out.get("error"))
    return out, count


def _redact_file(
    src: Path, dst: Path, redactor: Redactor, progress: Progress | None
) -> Counter[str]:
    counts: Counter[str] = Counter()
    try:  # a file that held secrets may be private: the copy keeps its mode
        mode = stat.S_IMODE(src.stat().st_mode)
    except OSError:
        mode = None
    with replacing(dst, mode) as writer:
        for _, obj in iter_records(src):
            raw = dumps(obj)
            obj, count = _scrub(obj, raw, redactor)
            if count:
                counts[str(obj.get("type", "eval-protocol"))] += count
                raw = dumps(obj)
            writer.write(raw)
            _tick(progress)
    return counts


@reporting_paths
def redact(
    src: Path,
    dst: Path | None = None,
    *,
    redactor: Redactor | None = None,
    progress: Progress | None = None,
) -> Counter[str]:
    """Scrub secrets from ``src`` (file or shard directory) into ``dst`` (default: in place);
    interactions gain ``meta.redacted``. Returns the values replaced, per line type."""
    redactor, dst = redactor or Redactor(), dst or src
    if not src.is_dir():
        return _redact_file(src, dst, redactor, progress)
    counts: Counter[str] = Counter()
    for shard in shard_files(src):
        target = dst / shard.name
        target.parent.mkdir(parents=True, exist_ok=True)
        counts.update(_redact_file(shard, target, redactor, progress))
    return counts


class MergeConflict(CassetteError):
    """Two inputs of a merge hold the same key (or an outcome of the same episode)."""


@dataclass
class Merged:
    """What :func:`merge` wrote."""

    interactions: int = 0
    outcomes: int = 0
    episodes: int = 0
    dropped: list[tuple[EnvIndex, str]] = field(default_factory=list)  # (episode, input)
    prefixes: dict[str, str] = field(default_factory=dict)  # input -> renumber prefix
    repeats: int = 0  # lines of a key recorded twice in one input (the first is kept)
    unusable: list[str] = field(default_factory=list)  # "path:line: why" of lines left out


def _stem(path: Path) -> str:
    name = path.name
    for suffix in (".gz", ".jsonl", ".ndjson", ".json"):
        name = name.removesuffix(suffix)
    return name or "input"


def _prefixes(paths: Sequence[Path]) -> list[str]:
    out: list[str] = []
    for path in paths:
        stem = name = _stem(path)
        n = 1
        while name in out:
            n += 1
            name = f"{stem}-{n}"
        out.append(name)
    return out


def _conflicts(indexes: Sequence[tuple[Path, Index]]) -> Iterator[Clash]:
    """(episode, message) for each key or outcome held by two inputs."""
    owners: dict[Key, str] = {}
    outcome_owners: dict[EnvIndex, Path] = {}
    for path, index in indexes:
        yield from _key_clashes(path, index, owners)
        for env in index.outcomes:
            first = outcome_owners.setdefault(env, path)
            if first != path:
                yield env, f"the outcome of env_index={env!r} is in both {first} and {path}"


def _key_clashes(path: Path, index: Index, owners: dict[Key, str]) -> Iterator[Clash]:
    """(episode, message) for each key of ``index`` that ``owners`` held first elsewhere."""
    for key, entry in index.entries.items():
        where = f"{entry.source or path}:{entry.line}"
        first = owners.setdefault(key, where)
        if first != where:
            env, channel, step = key
            what = f"key (env_index={env!r}, channel={channel!r}, step={step})"
            yield env, f"{what} is in both {first} and {where}"


def _repeats(path: Path, index: Index, on_conflict: str) -> int:
    """How many lines of ``index`` repeat a key; under ``error``, any is a MergeConflict."""
    if index.duplicates and on_conflict == "error":
        old, new = index.duplicates[0]
        raise MergeConflict(
            f"key (env_index={new.env_index!r}, channel={new.channel!r}, step={new.step}) "
            f"is recorded twice in {path} (lines {old.line} and {new.line}); pass "
            "--on-conflict first to keep the first line of each key (what readers serve)"
        )
    return len(index.duplicates)


def _plan(
    indexes: Sequence[tuple[Path, Index]], on_conflict: str, merged: Merged
) -> list[set[EnvIndex]]:
    """Per input, the episodes to leave out (first/last keep a clashing episode whole)."""
    skip: list[set[EnvIndex]] = [set() for _ in indexes]
    merged.repeats += sum(_repeats(path, index, on_conflict) for path, index in indexes)
    held = [set(index.episodes()) for _, index in indexes]
    for env in _clashing(indexes, on_conflict):
        holders = [i for i, envs in enumerate(held) if env in envs]
        holders.pop(0 if on_conflict == "first" else -1)  # the one that keeps it
        for i in holders:
            skip[i].add(env)
            merged.dropped.append((env, str(indexes[i][0])))
    return skip


def _clashing(indexes: Sequence[tuple[Path, Index]], on_conflict: str) -> list[EnvIndex]:
    """The episodes held by two inputs (under ``error``, the first is a MergeConflict)."""
    clashing: dict[EnvIndex, None] = {}
    for env, message in _conflicts(indexes) if on_conflict != "renumber" else ():
        if on_conflict == "error":
            raise MergeConflict(
                f"{message}; pass --on-conflict first|last|renumber to say which to keep"
            )
        clashing.setdefault(env, None)
    return list(clashing)


# header meta that names one file's run, not what its calls were recorded with
_OWN_META = frozenset({"run_nonce", "run_id", "run", "merged_from"})
_NONE = object()


def _shared_meta(headers: list[Json]) -> Json:
    """The header meta every input agrees on (ignore rules, tau2's settings, own keys)."""
    first, *rest = [_meta(h) for h in headers] or [{}]
    shared = {k: v for k, v in first.items() if k not in _OWN_META}
    for meta in rest:
        shared = {k: v for k, v in shared.items() if meta.get(k, _NONE) == v}
    return shared


def _meta(line: Json) -> Json:
    meta = line.get("meta")
    return meta if isinstance(meta, dict) else {}


@reporting_paths
def merge(
    out: Path,
    inputs: Sequence[Path],
    *,
    on_conflict: str = "error",
    progress: Progress | None = None,
) -> Merged:
    """Merge cassettes (files, shard directories, eval-protocol files) into the file ``out``,
    every request recorded again (hashes, responses, errors and meta kept). Keys held by two
    inputs raise :class:`MergeConflict` unless ``on_conflict`` is ``first`` / ``last`` (keep
    the episode from that input) or ``renumber`` (prefix env_index with the file stem)."""
    if on_conflict not in CONFLICT_POLICIES:
        raise CassetteError(f"unknown on_conflict {on_conflict!r}; use one of {CONFLICT_POLICIES}")
    with holding(out):  # appenders wait, so a merge in place loses none of their lines
        indexes = [(path, load_index([path])) for path in inputs]
        merged = Merged()
        skip = _plan(indexes, on_conflict, merged)
        prefixes = _renumbering(inputs, merged, on_conflict)
        with replacing(out) as writer:  # 0600, or the mode of the file it replaces
            copy = _Copy(Recorder(writer, Redactor()), merged, progress)
            headers = [h for _, index in indexes for h in index.headers]  # one run, one id
            sources = {"merged_from": [str(path) for path in inputs], **kept_run_id(headers)}
            copy.recorder.header({**_shared_meta(headers), **sources})
            for (_, index), left_out, prefix in zip(indexes, skip, prefixes, strict=True):
                copy.input(index, left_out, prefix)
        merged.episodes = len(copy.episodes)
        return merged


def _renumbering(inputs: Sequence[Path], merged: Merged, on_conflict: str) -> list[str | None]:
    """The env_index prefix of each input when renumbering (noted in ``merged``)."""
    if on_conflict != "renumber":
        return [None] * len(inputs)
    names = _prefixes(inputs)
    merged.prefixes = dict(zip(map(str, inputs), names, strict=True))
    return [*names]


def _renamed(env: EnvIndex, prefix: str | None) -> EnvIndex:
    return env if prefix is None else f"{prefix}/{env}"


@dataclass
class _Copy:
    """Records the inputs of a merge, counting in ``merged``."""

    recorder: Recorder
    merged: Merged
    progress: Progress | None
    matcher: Matcher = field(default_factory=Matcher)
    episodes: set[EnvIndex] = field(default_factory=set)

    def input(self, index: Index, left_out: set[EnvIndex], prefix: str | None) -> None:
        """Record one input but the episodes ``left_out``, env_index renamed by ``prefix``."""
        for entry, request in index.iter_full():
            if entry.env_index not in left_out and self.intact(entry):
                self.call(entry, request, _renamed(entry.env_index, prefix))
        broken = [e for e in index.entries.values() if e.broken and e.env_index not in left_out]
        self.merged.unusable += [str(e.broken).split("; ")[0] for e in broken]
        self.outcomes(index, left_out, prefix)

    def outcomes(self, index: Index, left_out: set[EnvIndex], prefix: str | None) -> None:
        kept = [(_renamed(e, prefix), o) for e, o in index.outcomes.items() if e not in left_out]
        for env, outcome in kept:
            self.recorder.outcome({**outcome, "env_index": env})
            self.episodes.add(env)
        self.merged.outcomes += len(kept)

    def intact(self, entry: Entry) -> bool:
        """Whether ``entry`` passes its checksum (a damaged one is noted and left out)."""
        try:
            entry.check()
        except CassetteError as exc:
            self.merged.unusable.append(str(exc).split("; run `cassette validate")[0])
            return False
        return True

    def call(self, entry: Entry, request: Json, env: EnvIndex) -> None:
        sha = entry.sha or self.matcher.digest(request)
        meta = {k: v for k, v in entry.meta.items() if k != CHECKSUM_KEY}
        self.recorder.interaction(env, entry.channel, entry.step, request, sha, entry.response,
                                  entry.error, meta)  # fmt: skip
        self.episodes.add(env)
        self.merged.interactions += 1
        _tick(self.progress)
