"""Compare two runs episode by episode: alignment, first divergence, reward deltas.

Pure data, no printing: :func:`diff_runs` returns a :class:`RunDiff` that the renderers in
``cassette.report`` turn into text, JSON, Markdown or HTML.

A step is compared without rebuilding full requests where it can: equal
``request_sha256`` means equal requests; otherwise two delta-encoded requests are equal
when their bases were equal and their stored parts are equal after normalisation.
Responses are compared raw, then normalised (volatile fields dropped, JSON-string tool
arguments parsed). The structure is walked only at the first divergence, to name its path.
"""

from __future__ import annotations

import contextlib
import gc
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any, Literal

import orjson

from .codec import decode_messages
from .index import Entry, Index, load_index
from .matching import DEFAULT_IGNORE, Difference, Matcher, first_difference, format_path

__all__ = [
    "VOLATILE",
    "Channels",
    "Divergence",
    "EpisodeDiff",
    "Rules",
    "RunDiff",
    "RunSummary",
    "ToolCall",
    "diff_runs",
    "group_by_episode",
    "parse_args",
    "tool_calls_of",
]

Json = dict[str, Any]
EnvIndex = int | str
Status = Literal["identical", "diverged", "only_a", "only_b"]
Progress = Callable[[int, int], None]


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


# Fields that differ between two recordings of the same behaviour: generated ids, clocks.
VOLATILE = _words(
    """
    request.messages[*].tool_call_id request.messages[*].tool_calls[*].id
    request.input[*].id request.input[*].call_id
    response.id response.created response.created_at response.system_fingerprint
    response._hidden_params response.choices[*].message.tool_calls[*].id
    response.output[*].id response.output[*].call_id response.message.tool_calls[*].id
    response.chunks[*].id response.chunks[*].created response.chunks[*].system_fingerprint
    response.chunks[*].obfuscation response.chunks[*].choices[*].delta.tool_calls[*].id
    response.chunks[*].item_id response.chunks[*].item.id response.chunks[*].item.call_id
    response.chunks[*].response.id response.chunks[*].response.created_at
    """
)
# Never compared at all (listed so that a reader knows).
_NOT_COMPARED = ("meta.latency_ms", "meta.recorded_at", "meta.usage", "outcome.info")
# JSON-string tool arguments, parsed so that a path can go inside them.
_ARGUMENTS = _words(
    """
    request.messages[*].tool_calls[*].function.arguments request.input[*].arguments
    response.choices[*].message.tool_calls[*].function.arguments
    response.message.tool_calls[*].function.arguments response.output[*].arguments
    """
)
_TOKEN = re.compile(r"\[(\*|\d+)\]|\.?(\*\*|\*|[^.\[\]]+)")
_STAR = "*"
_GONE = object()
_NO_JSON = {"json": False}  # fields left out of to_dict()


# --- result types ------------------------------------------------------------------------


def _jsonable(obj: Any) -> Any:
    if is_dataclass(obj) and isinstance(obj, _Data):
        out = {f.name: _jsonable(getattr(obj, f.name)) for f in fields(obj) if not f.metadata}
        out.update((name, getattr(obj, name)) for name in obj._extra)
        return out
    return [_jsonable(v) for v in obj] if isinstance(obj, list) else obj


class _Data:
    _extra: tuple[str, ...] = ()

    def to_dict(self) -> Json:
        """A JSON-able dict (what ``--format json`` prints)."""
        return dict(_jsonable(self))


@dataclass
class ToolCall(_Data):
    """One tool call the model asked for: name and arguments (parsed when JSON)."""

    channel: str
    step: int
    name: str
    arguments: Any

    def signature(self, width: int = 60) -> str:
        args = self.arguments
        text = args if isinstance(args, str) else orjson.dumps(args).decode()
        return f"{self.name}({text if len(text) <= width else text[: width - 1] + '…'})"


@dataclass
class Divergence(_Data):
    """Where an episode's two trajectories first part.

    ``part`` is ``request`` or ``response`` (errors count as responses), ``step`` when the
    step was recorded on one side only, ``outcome`` when only the outcome differs.
    ``path`` is from the step's root, e.g.
    ``response.choices[0].message.tool_calls[0].function.arguments.city``.
    """

    channel: str | None
    step: int | None
    part: Literal["request", "response", "step", "outcome"]
    path: str
    a: Any = None
    b: Any = None
    a_missing: bool = False
    b_missing: bool = False

    @property
    def where(self) -> str:
        return "outcome" if self.step is None else f"{self.channel} step {self.step}"


@dataclass
class EpisodeDiff(_Data):
    """One episode aligned across both runs."""

    env_index: EnvIndex
    status: Status
    divergence: Divergence | None = None
    reward_a: float | None = None
    reward_b: float | None = None
    steps_a: int = 0
    steps_b: int = 0
    tool_calls_a: list[ToolCall] = field(default_factory=list)
    tool_calls_b: list[ToolCall] = field(default_factory=list)
    _extra = ("delta", "change")

    @property
    def delta(self) -> float | None:
        """reward B - reward A, when both runs have a reward for this episode."""
        if self.reward_a is None or self.reward_b is None:
            return None
        return self.reward_b - self.reward_a

    @property
    def change(self) -> Literal["improved", "regressed", "unchanged"] | None:
        d = self.delta
        if d is None:
            return None
        return "improved" if d > 1e-12 else "regressed" if d < -1e-12 else "unchanged"


@dataclass
class RunSummary(_Data):
    """Totals of one run (over the episodes that were diffed)."""

    label: str
    episodes: int = 0
    interactions: int = 0
    rewarded: int = 0
    mean_reward: float | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cost: float = 0.0


@dataclass
class RunDiff(_Data):
    """The diff of two runs. ``equivalent``: no episode diverged or is on one side only."""

    a: RunSummary
    b: RunSummary
    episodes: list[EpisodeDiff]
    ignored: list[str]
    volatile_seen: list[str]
    # the loaded runs, for renderers that show whole trajectories (not part of to_dict)
    index_a: Index | None = field(default=None, repr=False, compare=False, metadata=_NO_JSON)
    index_b: Index | None = field(default=None, repr=False, compare=False, metadata=_NO_JSON)
    _extra = ("equivalent", "counts")

    def _count(self, attr: str, value: str) -> int:
        return sum(1 for e in self.episodes if getattr(e, attr) == value)

    @property
    def counts(self) -> dict[str, int]:
        """identical / diverged / only_a / only_b, and improved / regressed / unchanged."""
        out = {s: self._count("status", s) for s in ("identical", "diverged", "only_a", "only_b")}
        out.update({c: self._count("change", c) for c in ("improved", "regressed", "unchanged")})
        return out

    @property
    def equivalent(self) -> bool:
        return all(e.status == "identical" for e in self.episodes)

    def episode(self, env_index: EnvIndex) -> EpisodeDiff:
        for ep in self.episodes:
            if ep.env_index == env_index and type(ep.env_index) is type(env_index):
                return ep
        raise KeyError(env_index)

    def to_dict(self) -> Json:
        out: Json = {"format": "rollout-cassette/diff", "version": 1}
        out.update(_jsonable(self))
        return out


# --- normalisation -----------------------------------------------------------------------


class _Rule:
    __slots__ = ("children", "drop", "parse", "skip", "walk")

    def __init__(self) -> None:
        self.children: dict[str | int, _Rule] = {}
        self.drop = False
        self.parse = False
        self.walk: tuple[tuple[str | int, _Rule], ...] = ()  # children to descend into
        self.skip: frozenset[str | int] = frozenset()  # every named child

    def finish(self) -> None:
        for sub in self.children.values():
            sub.finish()
        self.walk = tuple((k, r) for k, r in self.children.items() if k != _STAR and not r.drop)
        self.skip = frozenset(k for k in self.children if k != _STAR)


def _tokens(path: str) -> list[str | int]:
    out: list[str | int] = []
    pos = 0
    while pos < len(path):
        m = _TOKEN.match(path, pos)
        if m is None or m.end() == pos:
            raise ValueError(f"cannot parse ignore path {path!r}; write e.g. 'messages[*].id'")
        idx, key = m.group(1), m.group(2)
        out.append(key if idx is None else _STAR if idx == "*" else int(idx))
        pos = m.end()
    return out


def parse_args(value: Any) -> Any:
    """A JSON-string tool argument as its value; anything else unchanged."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


def _apply(node: Any, rule: _Rule) -> Any:
    """``node`` with what ``rule`` selects dropped or parsed (copies only what changes)."""
    if rule.parse:
        node = parse_args(node)
    if not rule.children:
        return node
    if isinstance(node, dict):
        out: Any = None
        for key, sub in rule.children.items():
            cur = node if out is None else out  # later rules see what earlier ones did
            for k in list(cur) if key == _STAR else [key] if key in cur else ():
                old = cur[k]
                new = _GONE if sub.drop else _apply(old, sub)
                if new is not old:
                    out = dict(node) if out is None else out
                    if new is _GONE:
                        del out[k]
                    else:
                        out[k] = new
        return node if out is None else out
    if isinstance(node, list):
        out = None
        for key, sub in rule.children.items():
            if key == _STAR:
                idxs: Iterable[int] = range(len(node))
            elif isinstance(key, int) and 0 <= key < len(node):
                idxs = (key,)
            else:
                continue
            for i in idxs:
                old = node[i] if out is None else out[i]
                if old is _GONE:
                    continue
                new = _GONE if sub.drop else _apply(old, sub)
                if new is not old:
                    out = list(node) if out is None else out
                    out[i] = new
        return node if out is None else [v for v in out if v is not _GONE]
    return node


def _equal(a: Any, b: Any, rule: _Rule) -> bool:
    """``_apply(a, rule) == _apply(b, rule)``, walking (and copying) only where they differ."""
    if a == b:
        return True
    if rule.parse:
        a, b = parse_args(a), parse_args(b)
        if a == b:
            return True
    kids = rule.children
    star = kids.get(_STAR)
    if not kids or (star is not None and len(kids) > 1):
        return bool(kids) and bool(_apply(a, rule) == _apply(b, rule))
    if isinstance(a, dict) and isinstance(b, dict):
        if star is not None:
            return star.drop or (a.keys() == b.keys() and all(_equal(a[k], b[k], star) for k in a))
        for k, sub in rule.walk:
            x, y = a.get(k, _GONE), b.get(k, _GONE)
            if x is not y and (x is _GONE or y is _GONE or not _equal(x, y, sub)):
                return False
        skip = rule.skip
        return {k: v for k, v in a.items() if k not in skip} == {
            k: v for k, v in b.items() if k not in skip
        }
    if isinstance(a, list) and isinstance(b, list):
        if any(r.drop for r in kids.values()):
            return bool(_apply(a, rule) == _apply(b, rule))
        if len(a) != len(b):
            return False
        for i, x in enumerate(a):
            y = b[i]
            item = star or kids.get(i)
            if x != y and (item is None or not _equal(x, y, item)):
                return False
        return True
    return False


# The default rules, hand-written for the common shapes (a chat completion, a chat request);
# each returns None for any other shape, which then takes the generic path. Arguments are
# parsed (``parse``) only when the two sides differ without parsing.
_TOP_VOLATILE = frozenset(("id", "created", "created_at", "system_fingerprint", "_hidden_params"))
_TRANSPORT = frozenset(DEFAULT_IGNORE)
_SLOW: Any = None


def _fast_call(call: Any, parse: bool) -> Any:
    if call.__class__ is not dict:
        return call
    out = {k: v for k, v in call.items() if k != "id"}
    fn = out.get("function")
    if parse and fn.__class__ is dict and "arguments" in fn:
        out["function"] = {**fn, "arguments": parse_args(fn["arguments"])}
    return out


def _fast_message(msg: Any, in_request: bool, parse: bool) -> Any:
    if msg.__class__ is not dict:
        return msg
    calls = msg.get("tool_calls")
    if not calls and not (in_request and "tool_call_id" in msg):
        return msg
    if calls is not None and calls.__class__ is not list:
        return _SLOW
    out = {k: v for k, v in msg.items() if not (in_request and k == "tool_call_id")}
    if calls:
        out["tool_calls"] = [_fast_call(c, parse) for c in calls]
    return out


def _fast_request(req: Any, parse: bool) -> Any:
    if req.__class__ is not dict or "input" in req:
        return _SLOW
    out = {k: v for k, v in req.items() if k not in _TRANSPORT}
    msgs = out.get("messages")
    if msgs is not None:
        if msgs.__class__ is not list:
            return _SLOW
        out["messages"] = new = [_fast_message(m, True, parse) for m in msgs]
        if _SLOW in new:
            return _SLOW
    return out


def _fast_response(resp: Any, parse: bool) -> Any:
    if resp.__class__ is not dict or "chunks" in resp or "output" in resp or "message" in resp:
        return _SLOW
    out = {k: v for k, v in resp.items() if k not in _TOP_VOLATILE}
    choices = out.get("choices")
    if choices is not None:
        if choices.__class__ is not list:
            return _SLOW
        new = []
        for choice in choices:
            if choice.__class__ is dict and "message" in choice:
                msg = _fast_message(choice["message"], False, parse)
                if msg is _SLOW:
                    return _SLOW
                choice = {**choice, "message": msg}
            new.append(choice)
        out["choices"] = new
    return out


class Rules:
    """What is left out of the comparison: volatile fields, transport keys, user paths.

    Paths start at a step's root (``request.``, ``response.``, ``error.``, ``outcome.``);
    a path without one of these is a request path (as in ``cassette.open(ignore=...)``),
    and ``**.x`` applies at any depth of every part.
    """

    def __init__(self, user: Iterable[str] = ()) -> None:
        self.user = [p for p in user if p]
        self.root = _Rule()
        for path in VOLATILE:
            self._add(path).drop = True
        for key in DEFAULT_IGNORE:
            self._add(f"request.{key}").drop = True
        for path in _ARGUMENTS:
            self._add(path).parse = True
        deep: list[str] = []
        self.by_delta = True  # stored parts of delta-encoded requests may be compared
        for path in self.user:
            full = path if path.split(".")[0].split("[")[0] in _PARTS else f"request.{path}"
            try:
                tokens = _tokens(full)
            except ValueError:
                raise ValueError(
                    f"cannot parse ignore path {path!r}; write e.g. 'messages[*].id' or "
                    "'response.choices[0].message.content'"
                ) from None
            if "**" in tokens:
                deep.append(full)
                self.by_delta = False
            elif tokens[0] != "meta":
                self._add(full).drop = True
                self.by_delta &= not any(isinstance(t, int) for t in tokens)
        self.deep = Matcher(deep, defaults=False) if deep else None
        self.root.finish()
        self._fast = {} if self.user else {"request": _fast_request, "response": _fast_response}

    def _add(self, path: str) -> _Rule:
        node = self.root
        for token in _tokens(path):
            node = node.children.setdefault(token, _Rule())
        return node

    def listed(self) -> list[str]:
        return [*VOLATILE, *_NOT_COMPARED, *self.user]

    def norm(self, wrapper: Json) -> Json:
        out: Json = _apply(wrapper, self.root)
        return self.deep.normalise(out) if self.deep is not None else out

    def equal(self, part: str, a: Any, b: Any) -> bool:
        """Whether the ``part`` ("request", "response", "error", "outcome") of two steps
        is the same once normalised."""
        if a == b:
            return True
        fast = self._fast.get(part)
        if fast is not None:
            x, y = fast(a, False), fast(b, False)
            if x is not _SLOW and y is not _SLOW:
                return bool(x == y or fast(a, True) == fast(b, True))
        if self.deep is not None:
            return self.norm({part: a}) == self.norm({part: b})
        rule = self.root.children.get(part)
        return a == b if rule is None else rule.drop or _equal(a, b, rule)


_PARTS = frozenset({"request", "response", "error", "outcome", "meta", "**"})


# --- comparing steps ---------------------------------------------------------------------

Channels = dict[str, dict[int, Entry]]


def group_by_episode(index: Index) -> dict[EnvIndex, Channels]:
    """Entries of each episode, by channel and step (each in file order)."""
    out: dict[EnvIndex, Channels] = {}
    for (env, channel, step), entry in index.entries.items():
        by_channel = out.get(env)
        if by_channel is None:
            by_channel = out[env] = {}
        steps = by_channel.get(channel)
        if steps is None:
            steps = by_channel[channel] = {}
        steps[step] = entry
    return out


def _paths(a: Any, b: Any, path: tuple[str | int, ...], out: list[str]) -> None:
    """Every path where ``a`` and ``b`` differ (list indices generalised to ``[*]``)."""
    if len(out) >= 16:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(a.keys() | b.keys(), key=str):
            if a.get(key, _GONE) != b.get(key, _GONE):
                _paths(a.get(key, _GONE), b.get(key, _GONE), (*path, key), out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if x != y:
                _paths(x, y, (*path, i), out)
    else:
        out.append(re.sub(r"\[\d+\]", "[*]", format_path(path)))


def _value(v: Any) -> tuple[Any, bool]:
    return (None, True) if v is Difference.MISSING else (v, False)


class _Comparer:
    """Compares the steps of two runs; remembers which volatile fields it saw differ."""

    def __init__(self, rules: Rules) -> None:
        self.rules = rules
        self.volatile_seen: dict[str, None] = {}
        self._samples = 0
        self._full: dict[int, Json] = {}  # id(entry) -> full request, within one episode

    def full(self, entry: Entry) -> Json:
        """The full request, rebuilt from the nearest cached or undelta'd base."""
        chain: list[Entry] = []
        node: Entry | None = entry
        while node is not None and node.delta is not None and id(node) not in self._full:
            chain.append(node)
            node = node.base
        full = {} if node is None else self._full.get(id(node), node.request)
        for link in reversed(chain):
            full = self._full[id(link)] = link.rebuild(full)
        return full

    def _sample(self, a: Json, b: Json) -> None:
        if self._samples < 64:
            self._samples += 1
            found: list[str] = []
            _paths(a, b, (), found)
            self.volatile_seen.update(dict.fromkeys(found))

    def _same_by_delta(self, a: Entry, b: Entry, equal: set[int]) -> bool:
        """Both delta-encoded on equal bases, with equal stored parts after normalisation."""
        da = a.delta
        if da is None or da != b.delta or not self.rules.by_delta or da["base"] not in equal:
            return False
        sa, sb = a.request, b.request
        if self.rules.user:  # user paths may reach into referenced messages: resolve them
            sa, sb = self._resolved(a), self._resolved(b)
        return self.rules.equal("request", sa, sb)

    @staticmethod
    def _resolved(entry: Entry) -> Json:
        fld = (entry.delta or {}).get("field", "messages")
        base = entry.base.response if entry.base is not None else None
        stored = entry.request.get(fld) or []
        return {**entry.request, fld: decode_messages(stored, 0, [], base, ValueError)}

    def step(self, a: Entry, b: Entry, equal: set[int]) -> Divergence | None:
        if a.sha is None or a.sha != b.sha:
            if not self._same_by_delta(a, b, equal):
                fa, fb = self.full(a), self.full(b)
                if not self.rules.equal("request", fa, fb):
                    wa, wb = self.rules.norm({"request": fa}), self.rules.norm({"request": fb})
                    return _divergence(a.channel, a.step, "request", wa, wb)
            self._sample({"request": a.request}, {"request": b.request})
        rules = self.rules
        if a.response != b.response or a.error != b.error:
            ra: Json = {"response": a.response, "error": a.error}
            rb: Json = {"response": b.response, "error": b.error}
            if not (
                rules.equal("response", a.response, b.response)
                and rules.equal("error", a.error, b.error)
            ):
                wa, wb = self.rules.norm(ra), self.rules.norm(rb)
                return _divergence(a.channel, a.step, "response", wa, wb)
            self._sample(ra, rb)
        return None

    def channel(self, channel: str, sa: dict[int, Entry], sb: dict[int, Entry]) -> Any:
        """(order, divergence) of the first step of ``channel`` that parts, else None."""
        keys = sa.keys() if sa.keys() == sb.keys() else sa.keys() | sb.keys()
        equal: set[int] = set()
        for step in sorted(keys):
            a, b = sa.get(step), sb.get(step)
            if (
                a is not None
                and b is not None
                and a.sha == b.sha
                and a.sha is not None
                and a.response == b.response
                and a.error == b.error
            ):
                equal.add(step)
                continue
            if a is None or b is None:
                d: Divergence | None = Divergence(
                    channel, step, "step", "", a_missing=a is None, b_missing=b is None
                )
            else:
                d = self.step(a, b, equal)
            if d is not None:
                order = (0, a.line, channel) if a is not None else (1, b.line if b else 0, channel)
                return order, d
            equal.add(step)
        return None

    def episode(self, ga: Channels, gb: Channels) -> Divergence | None:
        found = []
        for channel in ga.keys() | gb.keys():
            hit = self.channel(channel, ga.get(channel, {}), gb.get(channel, {}))
            if hit is not None:
                found.append(hit)
        self._full.clear()
        return min(found, key=lambda hit: hit[0])[1] if found else None


def _divergence(channel: str | None, step: int | None, part: Any, wa: Json, wb: Json) -> Divergence:
    d = first_difference(wa, wb) or Difference((part,), wa.get(part), wb.get(part))
    (va, ma), (vb, mb) = _value(d.a), _value(d.b)
    return Divergence(channel, step, part, d.where, va, vb, ma or va is None, mb or vb is None)


def _outcome_view(outcome: Json | None) -> Json | None:
    if outcome is None:
        return None
    return {"reward": outcome.get("reward"), "terminated": outcome.get("terminated")}


# --- tool calls, usage -------------------------------------------------------------------


def tool_calls_of(entry: Entry) -> list[ToolCall]:
    """The tool calls in a response: chat ``choices[0].message.tool_calls``, Responses API
    ``output`` items of type ``function_call``, a stream's assembled ``message``."""
    resp = entry.response
    if not isinstance(resp, dict):
        return []
    out: list[ToolCall] = []
    messages: list[Any] = []
    choices = resp.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        messages.append(choices[0].get("message"))
    messages.append(resp.get("message"))
    items = resp.get("output")
    for msg in messages:
        if not isinstance(msg, dict):
            continue
        for call in msg.get("tool_calls") or ():
            fn = call.get("function") if isinstance(call, dict) else None
            if isinstance(fn, dict):
                args = parse_args(fn.get("arguments"))
                out.append(ToolCall(entry.channel, entry.step, str(fn.get("name")), args))
        items = items if items is not None else msg.get("output")
    for item in items if isinstance(items, list) else ():
        if isinstance(item, dict) and item.get("type") == "function_call":
            args = parse_args(item.get("arguments"))
            out.append(ToolCall(entry.channel, entry.step, str(item.get("name")), args))
    return out


def _num(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def _usage(entry: Entry) -> tuple[float, float, float, float]:
    """(prompt, completion, total tokens, cost) of one interaction; 0 where unknown (a
    total of 0 is taken as prompt + completion)."""
    resp = entry.response if isinstance(entry.response, dict) else {}
    meta = entry.meta
    usage = resp.get("usage") or meta.get("usage")
    chunks = resp.get("chunks")
    if not isinstance(usage, dict) and isinstance(chunks, list) and chunks:
        last = chunks[-1] if isinstance(chunks[-1], dict) else {}
        inner = last.get("response")
        usage = last.get("usage") or (inner.get("usage") if isinstance(inner, dict) else None)
    usage = usage if isinstance(usage, dict) else {}
    p = _num(usage.get("prompt_tokens", usage.get("input_tokens")))
    c = _num(usage.get("completion_tokens", usage.get("output_tokens")))
    total = _num(usage.get("total_tokens"))
    hidden = resp.get("_hidden_params")
    cost = (
        _num(meta.get("cost"))
        or _num(meta.get("cost_usd"))
        or _num(usage.get("cost"))
        or (_num(hidden.get("response_cost")) if isinstance(hidden, dict) else 0.0)
    )
    return p, c, total, cost


def _tally(run: RunSummary, channels: Channels | None, outcome: Json | None) -> None:
    if channels is None and outcome is None:
        return
    run.episodes += 1
    reward = outcome.get("reward") if outcome is not None else None
    if isinstance(reward, (int, float)) and not isinstance(reward, bool):
        run.rewarded += 1
        run.mean_reward = (run.mean_reward or 0.0) + reward  # a sum until _finish
    p = c = t = 0
    cost = 0.0
    for steps in (channels or {}).values():
        run.interactions += len(steps)
        for entry in steps.values():
            resp = entry.response
            try:  # the common shape first; anything odd takes the careful path
                u = resp["usage"]  # type: ignore[index]
                add = (
                    (u.get("prompt_tokens") or u.get("input_tokens") or 0) + 0,
                    (u.get("completion_tokens") or u.get("output_tokens") or 0) + 0,
                    (u.get("total_tokens") or 0) + 0,
                    (u.get("cost") or entry.meta.get("cost") or 0) + 0.0,
                )
                if "_hidden_params" in resp:  # type: ignore[operator]
                    raise TypeError
            except (KeyError, TypeError, AttributeError):
                add = _usage(entry)
            p += add[0]
            c += add[1]
            t += add[2] or add[0] + add[1]
            cost += add[3]
    run.prompt_tokens += int(p)
    run.completion_tokens += int(c)
    run.total_tokens += int(t)
    run.cost += cost


def _finish(run: RunSummary) -> None:
    if run.rewarded and run.mean_reward is not None:
        run.mean_reward /= run.rewarded
    run.cost = round(run.cost, 10)


# --- the diff ----------------------------------------------------------------------------


def _load(run: str | os.PathLike[str] | Index, default: str) -> tuple[Index, str]:
    if isinstance(run, Index):
        return run, default
    return load_index([Path(run)]), str(run)


def _sort_key(env: EnvIndex) -> tuple[bool, Any]:
    if isinstance(env, int):
        return (False, env)
    parts = re.split(r"(\d+)", env)
    return (True, [int(p) if i % 2 else p for i, p in enumerate(parts)])


def _select(envs: list[EnvIndex], env: EnvIndex) -> EnvIndex:
    for cand in envs:
        if cand == env and type(cand) is type(env):
            return cand
    if isinstance(env, str) and re.fullmatch(r"-?\d+", env) and int(env) in envs:
        return int(env)
    shown = ", ".join(repr(e) for e in envs[:8]) + (", …" if len(envs) > 8 else "")
    raise ValueError(f"episode {env!r} is in neither run (episodes: {shown or 'none'})")


def _episode_diff(
    env: EnvIndex, comparer: _Comparer, sides: tuple[Any, Any, Any, Any]
) -> EpisodeDiff:
    ga, gb, oa, ob = sides
    in_a, in_b = ga is not None or oa is not None, gb is not None or ob is not None
    ep = EpisodeDiff(env, "identical")
    ep.reward_a = (oa or {}).get("reward")
    ep.reward_b = (ob or {}).get("reward")
    ep.steps_a = sum(len(s) for s in (ga or {}).values())
    ep.steps_b = sum(len(s) for s in (gb or {}).values())
    if in_a and in_b:
        ep.divergence = comparer.episode(ga or {}, gb or {})
        if ep.divergence is None:
            wa, wb = (comparer.rules.norm({"outcome": _outcome_view(o)}) for o in (oa, ob))
            if wa != wb:
                ep.divergence = _divergence(None, None, "outcome", wa, wb)
        ep.status = "identical" if ep.divergence is None else "diverged"
    else:
        ep.status = "only_a" if in_a else "only_b"
    if ep.status != "identical":
        for group, calls in ((ga, ep.tool_calls_a), (gb, ep.tool_calls_b)):
            entries = sorted(
                (e for steps in (group or {}).values() for e in steps.values()),
                key=lambda e: (e.source, e.line),
            )
            for entry in entries:
                calls.extend(tool_calls_of(entry))
    return ep


def diff_runs(
    a: str | os.PathLike[str] | Index,
    b: str | os.PathLike[str] | Index,
    *,
    ignore: Iterable[str] = (),
    env: EnvIndex | None = None,
    progress: Progress | None = None,
    labels: tuple[str, str] | None = None,
) -> RunDiff:
    """Diff run ``a`` against run ``b`` (paths of files or shard directories, or indexes).

    ``ignore`` adds paths to leave out (``"response.choices[*].message.content"``,
    ``"temperature"`` for a request key, ``"**.timestamp"``); ``env`` limits the diff to
    one episode (a digit string matches an int env_index); ``progress(done, total)`` is
    called as episodes are compared; ``labels`` name the runs (default: their paths, or
    "A" and "B" for indexes). Raises ValueError for a malformed ignore path or an episode
    that neither run holds.
    """
    rules = Rules(ignore)
    with _gc_paused():
        (ia, la), (ib, lb) = _load(a, "A"), _load(b, "B")
        la, lb = labels or (la, lb)
        return _diff(rules, (ia, la), (ib, lb), env, progress)


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Loading and comparing make millions of acyclic objects: the cyclic collector would
    walk them over and over (about half the time of a large diff)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _diff(
    rules: Rules,
    loaded_a: tuple[Index, str],
    loaded_b: tuple[Index, str],
    env: EnvIndex | None,
    progress: Progress | None,
) -> RunDiff:
    (index_a, label_a), (index_b, label_b) = loaded_a, loaded_b
    groups_a, groups_b = group_by_episode(index_a), group_by_episode(index_b)
    envs = sorted({*groups_a, *groups_b, *index_a.outcomes, *index_b.outcomes}, key=_sort_key)
    if env is not None:
        envs = [_select(envs, env)]
    comparer = _Comparer(rules)
    run_a, run_b = RunSummary(label_a), RunSummary(label_b)
    episodes: list[EpisodeDiff] = []
    total = len(envs)
    tick = max(1, total // 200)
    for done, e in enumerate(envs, 1):
        sides = (groups_a.get(e), groups_b.get(e), index_a.outcomes.get(e), index_b.outcomes.get(e))
        episodes.append(_episode_diff(e, comparer, sides))
        _tally(run_a, sides[0], sides[2])
        _tally(run_b, sides[1], sides[3])
        if progress is not None and (done % tick == 0 or done == total):
            progress(done, total)
    _finish(run_a)
    _finish(run_b)
    return RunDiff(
        a=run_a,
        b=run_b,
        episodes=episodes,
        ignored=rules.listed(),
        volatile_seen=sorted(comparer.volatile_seen),
        index_a=index_a,
        index_b=index_b,
    )
