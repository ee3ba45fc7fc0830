"""The in-memory index of a cassette: entries keyed by (env_index, channel, step).

Loading parses each line once and checks its structure; full requests are rebuilt from
the delta encoding only when asked for (a mismatch, ``show``, ``diff``), so replay stays
O(1) a call and memory stays linear in the file.
"""

from __future__ import annotations

import stat
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._format import FORMAT, VERSION
from ._gc import paused_gc
from .checksum import CHECKSUM_KEY, checksum
from .codec import NotJSONError
from .delta import SAME_ALL, decode_messages
from .errors import CassetteFormatError, CassetteWarning
from .lines import read_records
from .store import shard_files

__all__ = ["Entry", "Index", "Key", "load_index"]

EnvIndex = int | str
Key = tuple[EnvIndex, str, int]

_INTERACTION_KEYS = frozenset(
    {
        "type",
        "env_index",
        "channel",
        "step",
        "delta",
        "request",
        "request_sha256",
        "response",
        "error",
        "meta",
    }
)
_REQUIRED = frozenset({"type", "env_index", "step", "request", "request_sha256"})
_DELTA_KEYS = frozenset({"base", "keep", "field", "same"})
_EP_KEYS = frozenset({"env_index", "step", "messages"})


@dataclass(eq=False)
class Entry:
    """One recorded interaction, as stored (the request may be delta-encoded)."""

    env_index: EnvIndex
    channel: str
    step: int
    request: dict[str, Any]
    sha: str | None  # None: an eval-protocol line, matched on messages alone
    response: dict[str, Any] | None
    error: dict[str, Any] | None
    meta: dict[str, Any]
    delta: dict[str, Any] | None = None
    base: Entry | None = None
    source: str = ""
    line: int = 0
    broken: CassetteFormatError | None = None  # set: this line cannot be served (why)
    checked: bool = False  # its meta.checksum was verified

    def check(self) -> None:
        """Raise :class:`CassetteFormatError` naming the line if it cannot be served: its
        delta chain is broken, or its response or error is not what was recorded (its
        ``meta.checksum`` does not match). Checked once; lines without a checksum pass."""
        if self.broken is not None:
            raise self.broken
        if self.checked:
            return
        want = self.meta.get(CHECKSUM_KEY)
        if want is not None:
            try:
                got = checksum(self.response, self.error)
            except NotJSONError as exc:
                got = str(exc)
            if got != want:
                raise _fmt(
                    self.source,
                    self.line,
                    "the response or error is not what was recorded (meta.checksum does "
                    "not match: the line was edited or damaged); restore the file, or "
                    "re-record this episode",
                )
        self.checked = True

    @property
    def key(self) -> Key:
        return (self.env_index, self.channel, self.step)

    def param(self, key: str) -> Any:
        """A top-level request value (``model``, ...), followed into the delta bases
        without rebuilding messages; None if the request has no such key."""
        node: Entry | None = self
        while node is not None:
            if key in node.request:
                return node.request[key]
            same = node.delta.get("same", ()) if node.delta is not None else ()
            if same != SAME_ALL and key not in same:
                return None
            node = node.base
        return None

    def full_request(self) -> dict[str, Any]:
        """The request as it was made, rebuilt along the chain of delta bases."""
        if self.broken is not None:
            raise self.broken
        if self.delta is None:
            return self.request
        chain: list[Entry] = []
        node: Entry | None = self
        while node is not None and node.delta is not None:
            chain.append(node)
            node = node.base
        full = node.request if node is not None else {}
        for entry in reversed(chain):
            full = entry.rebuild(full)
        return full

    def rebuild(self, base_full: dict[str, Any]) -> dict[str, Any]:
        """This entry's full request, given the full request of its delta base."""
        if self.delta is None:
            return self.request
        fld = self.delta.get("field", "messages")
        same = self.delta.get("same", ())
        if same == SAME_ALL:
            out = {key: value for key, value in base_full.items() if key != fld}
        else:
            out = {key: base_full[key] for key in same if isinstance(key, str) and key in base_full}
        out.update(self.request)
        out[fld] = decode_messages(
            _messages_of(self.request, fld) or [],
            int(self.delta.get("keep", 0)),
            _messages_of(base_full, fld) or [],
            self.base.response if self.base is not None else None,
            _error_for(self),
        )
        return out


def _error_for(entry: Entry) -> Callable[[str], Exception]:
    return lambda why: _fmt(entry.source, entry.line, why)


def _messages_of(request: dict[str, Any], fld: str) -> list[Any] | None:
    value = request.get(fld)
    return value if isinstance(value, list) else None


def _fmt(path: str, line: int, why: str) -> CassetteFormatError:
    return CassetteFormatError(
        f"{path}:{line}: {why}; run `cassette validate {path}` for every fault",
        path=path,
        line=line,
    )


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
                warnings.warn(
                    f"{entry.source}:{entry.line}: left out, its request cannot be rebuilt "
                    f"({_why(entry.broken)}); run `cassette validate {entry.source}`",
                    CassetteWarning,
                    stacklevel=2,
                )
                continue
            last[entry] = full
            yield entry, full


def _why(exc: CassetteFormatError) -> str:
    text = str(exc)
    prefix = f"{exc.path}:{exc.line}: "
    return text.removeprefix(prefix).split("; run `cassette validate")[0]


def _check_interaction(obj: dict[str, Any], path: str, line: int) -> None:
    keys = obj.keys()
    env = obj.get("env_index")
    step = obj.get("step")
    delta = obj.get("delta")
    ok = (
        keys <= _INTERACTION_KEYS
        and keys >= _REQUIRED
        and isinstance(env, (int, str))
        and not isinstance(env, bool)
        and isinstance(obj.get("channel", "llm"), str)
        and type(step) is int
        and step >= 0
        and isinstance(obj["request"], dict)
        and isinstance(obj["request_sha256"], str)
        and len(obj["request_sha256"]) == 64
        and isinstance(obj.get("response"), (dict, type(None)))
        and isinstance(obj.get("error"), (dict, type(None)))
        and isinstance(obj.get("meta", {}), dict)
        and isinstance(obj.get("meta", {}).get(CHECKSUM_KEY, ""), str)
        and (delta is None or _delta_ok(delta))
    )
    if not ok:
        _validate(obj, path, line)
        raise _fmt(path, line, "malformed interaction")


def _delta_ok(delta: Any) -> bool:
    if not isinstance(delta, dict):
        return False
    base, keep, same = delta.get("base"), delta.get("keep"), delta.get("same", [])
    return (
        delta.keys() <= _DELTA_KEYS
        and type(base) is int
        and base >= 0
        and type(keep) is int
        and keep >= 0
        and delta.get("field", "messages") in ("messages", "input")
        and (same == SAME_ALL or (type(same) is list and all(type(k) is str for k in same)))
    )


def _validate(obj: dict[str, Any], path: str, line: int) -> None:
    """Full pydantic validation of one line, as a one-line CassetteFormatError."""
    from pydantic import ValidationError  # the models load on first use: a cheap import

    from .records import LINE_ADAPTER

    try:
        LINE_ADAPTER.validate_python(obj)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"][1:]) or "line"
        raise _fmt(path, line, f"{loc}: {err['msg']}") from None


def _check_header(obj: dict[str, Any], path: str, line: int) -> None:
    if obj.get("format") != FORMAT:
        raise _fmt(path, line, f"not a rollout-cassette file (format {obj.get('format')!r})")
    version = obj.get("version")
    if isinstance(version, int) and version > VERSION:
        raise CassetteFormatError(
            f"{path}: written in cassette format version {version}, newer than this "
            f"rollout-cassette reads (version {VERSION}); upgrade with "
            "`pip install -U rollout-cassette`",
            path=path,
            line=line,
        )
    _validate(obj, path, line)


def _ep_entry(obj: dict[str, Any], path: str, line: int) -> Entry:
    messages = obj.get("messages")
    env, step = obj.get("env_index"), obj.get("step")
    if (
        not isinstance(messages, list)
        or not isinstance(env, (int, str))
        or isinstance(env, bool)
        or type(step) is not int
    ):
        raise _fmt(path, line, "eval-protocol line needs env_index, an int step and messages")
    last = None
    for i in range(len(messages) - 1, -1, -1):
        msg = messages[i]
        if isinstance(msg, dict) and msg.get("role") == "assistant":
            last = i
            break
    if last is None:
        raise _fmt(path, line, "eval-protocol line has no assistant message to replay")
    return Entry(
        env_index=env,
        channel="llm",
        step=step,
        request={"messages": messages[:last]},
        sha=None,
        response={"choices": [{"index": 0, "message": messages[last]}]},
        error=None,
        meta={"source": "eval-protocol"},
        source=path,
        line=line,
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


def _load_file(index: Index, path: Path) -> None:
    spath = str(path)
    records = read_records(path)
    last: dict[tuple[EnvIndex, str], Entry] = {}
    again: dict[Key, Entry] = {}  # the latest line of each key recorded twice in this file
    broken: list[Entry] = []
    first = True
    for line, obj in records:
        kind = obj.get("type")
        if first and kind is None and obj.keys() >= _EP_KEYS:
            index.eval_protocol = True
        first = False
        if index.eval_protocol:
            entry = _ep_entry(obj, spath, line)
            index.entries.setdefault(entry.key, entry)  # eval-protocol plays the first
            continue
        if kind == "interaction":
            _check_interaction(obj, spath, line)
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
            if delta is not None:
                base = _base_of(delta, last.get((env, channel)), again, index, spath)
                if base is None:
                    entry.broken = _fmt(
                        spath,
                        line,
                        f"delta base step {delta['base']} is not an earlier interaction of "
                        f"({env!r}, {channel!r}) in this file (lines lost or mixed up); this "
                        "step and the later ones built on it cannot be served: re-record them",
                    )
                elif base.broken is not None:
                    entry.broken = _fmt(
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
        elif kind == "outcome":
            _validate(obj, spath, line)
            index.outcomes[obj["env_index"]] = obj
        elif kind == "header":
            _check_header(obj, spath, line)
            index.headers.append(obj)
        else:
            raise _fmt(
                spath, line, f"unknown line type {kind!r} (expected header, interaction, outcome)"
            )
    _warn_damage(spath, broken, [d for d in index.duplicates if d[1].source == spath])


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
        warnings.warn(
            f"{spath}: {len(twice)} key{'s' if len(twice) != 1 else ''} recorded twice: "
            f"{shown}{more}; the first line of each is served. `cassette merge OUT {spath} "
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


def load_index(paths: Iterable[Path]) -> Index:
    """Load one or more files (or shard directories) into one index.

    The garbage collector is paused meanwhile: loading allocates millions of containers
    that all stay alive, and the collector's passes over them were most of the time.
    """
    index = Index()
    with paused_gc():
        for path in paths:
            _regular(path)
            files = shard_files(path) if path.is_dir() else [path]
            for file in files:
                _load_file(index, file)
    return index
