"""The in-memory index of a cassette: entries keyed by (env_index, channel, step).

Loading parses each line once and checks its structure; full requests are rebuilt from
the delta encoding only when asked for (a mismatch, ``show``, ``diff``), so replay stays
O(1) a call and memory stays linear in the file.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._format import FORMAT, VERSION
from ._gc import paused_gc
from .delta import SAME_ALL, decode_messages
from .errors import CassetteFormatError
from .store import iter_records, shard_files

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
            out = {key: base_full[key] for key in same if key in base_full}
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
        """Every entry with its full request, in file order (rebuilt incrementally)."""
        last: dict[Entry, dict[str, Any]] = {}
        for entry in self.entries.values():
            if entry.delta is None:
                full = entry.request
            else:
                base_full = last.pop(entry.base, None) if entry.base is not None else None
                full = entry.rebuild(base_full if base_full is not None else {})
            last[entry] = full
            yield entry, full


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
        and (delta is None or _delta_ok(delta))
    )
    if not ok:
        _validate(obj, path, line)
        raise _fmt(path, line, "malformed interaction")


def _delta_ok(delta: Any) -> bool:
    return (
        isinstance(delta, dict)
        and delta.keys() <= _DELTA_KEYS
        and type(delta.get("base")) is int
        and type(delta.get("keep")) is int
        and delta.get("field", "messages") in ("messages", "input")
        and (isinstance(delta.get("same", []), list) or delta["same"] == SAME_ALL)
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


def _load_file(index: Index, path: Path) -> None:
    spath = str(path)
    records = iter_records(path)
    last: dict[tuple[EnvIndex, str], Entry] = {}
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
            base = None
            if delta is not None:
                base = last.get((env, channel))
                if base is None or base.step != delta["base"]:
                    raise _fmt(
                        spath,
                        line,
                        f"delta base step {delta['base']} is not the previous "
                        f"interaction of ({env!r}, {channel!r}) in this file",
                    )
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
                base=base,
                source=spath,
                line=line,
            )
            prior = index.entries.get(entry.key)
            if prior is not None:
                raise _fmt(
                    spath,
                    line,
                    f"key (env_index={env!r}, channel={channel!r}, step={step}) is recorded "
                    f"twice (also {prior.source}:{prior.line}); delete one, or re-record",
                )
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


def load_index(paths: Iterable[Path]) -> Index:
    """Load one or more files (or shard directories) into one index.

    The garbage collector is paused meanwhile: loading allocates millions of containers
    that all stay alive, and the collector's passes over them were most of the time.
    """
    index = Index()
    with paused_gc():
        for path in paths:
            files = shard_files(path) if path.is_dir() else [path]
            for file in files:
                _load_file(index, file)
    return index
