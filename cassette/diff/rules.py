"""What a diff leaves out, and comparing two parts of a step once that is left out.

The volatile fields (generated ids, clocks), the transport keys of
:data:`cassette.replay.matching.DEFAULT_IGNORE` and the user's ignore paths are dropped, and
JSON-string tool arguments are parsed, by a tree of rules walked alongside the data
(copying only what changes). The default rules also have hand-written fast paths for
the common shapes (a chat completion, a chat request).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..dataset.inspect import parse_args
from ..format.paths import parse_path
from ..replay.matching import DEFAULT_IGNORE, Matcher
from ..types import Json

__all__ = ["VOLATILE", "Rules"]


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
_STAR = "*"
_GONE = object()  # a dropped item, or an absent key


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
    return parse_path(path, star=_STAR, deep="**")


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
