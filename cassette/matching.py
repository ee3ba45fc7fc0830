"""Request normalisation, ignore rules, and the explanation of a mismatch."""

from __future__ import annotations

import re
import threading
from collections.abc import Hashable, Iterable, Iterator
from typing import Any

from .codec import HashChain, canonical_bytes, canonical_parts, normalise_request
from .errors import CassetteMismatch
from .index import Entry

__all__ = [
    "DEFAULT_IGNORE",
    "Difference",
    "Matcher",
    "first_difference",
    "format_path",
    "parse_path",
]

# Request keys that never decide what a model answers: transport, credentials, retries.
DEFAULT_IGNORE: tuple[str, ...] = (
    "api_key",
    "api_base",
    "base_url",
    "organization",
    "project",
    "headers",
    "extra_headers",
    "extra_query",
    "timeout",
    "request_timeout",
    "max_retries",
)

CHAINS = 256  # (env_index, channel) keys whose hashing state is kept (most recent ones)

_TOKEN = re.compile(r"\[(\*|\d+)\]|\.?(\*\*|\*|[^.\[\]]+)")
_ANY = object()
_DEEP = object()
Token = Any  # str key | int index | _ANY | _DEEP


def parse_path(path: str, *, star: Any = _ANY, deep: Any = _DEEP) -> list[Any]:
    """The tokens of an ignore path: keys, list indices, ``star`` for ``[*]`` or ``.*``
    and ``deep`` for ``**``. Raises ValueError where the path does not parse."""
    tokens: list[Any] = []
    pos = 0
    while pos < len(path):
        m = _TOKEN.match(path, pos)
        if m is None or m.end() == pos:
            raise ValueError(f"cannot parse ignore path {path!r}; write e.g. 'messages[*].name'")
        idx, key = m.group(1), m.group(2)
        if idx is not None:
            tokens.append(star if idx == "*" else int(idx))
        else:
            tokens.append(deep if key == "**" else star if key == "*" else key)
        pos = m.end()
    return tokens


def _parse(path: str) -> tuple[Token, ...]:
    tokens = parse_path(path)
    if not tokens or tokens[-1] is _DEEP:
        raise ValueError(f"ignore path {path!r} must end in a key or index")
    return tuple(tokens)


def _remove(node: Any, tokens: tuple[Token, ...]) -> Any:
    """Copy of ``node`` without what ``tokens`` selects (shares what it does not touch)."""
    if not tokens:
        return node
    head, rest = tokens[0], tokens[1:]
    if head is _DEEP:
        node = _remove(node, rest)  # zero levels
        if isinstance(node, dict):
            return {k: _remove(v, tokens) for k, v in node.items()}
        if isinstance(node, list):
            return [_remove(v, tokens) for v in node]
        return node
    if isinstance(node, dict):
        keys = list(node) if head is _ANY else [head] if head in node else []
        if not keys:
            return node
        out = dict(node)
        for k in keys:
            if rest:
                out[k] = _remove(node[k], rest)
            else:
                del out[k]
        return out
    if isinstance(node, list):
        idxs = range(len(node)) if head is _ANY else [head] if isinstance(head, int) else []
        idxs = [i for i in idxs if 0 <= i < len(node)]
        if not idxs:
            return node
        if not rest:
            drop = set(idxs)
            return [v for i, v in enumerate(node) if i not in drop]
        out_list = list(node)
        for i in idxs:
            out_list[i] = _remove(node[i], rest)
        return out_list
    return node


class Matcher:
    """Turns a request into the canonical form that is hashed and compared.

    ``ignore`` adds paths to leave out: ``"temperature"``, ``"metadata.trace_id"``,
    ``"messages[*].name"``, ``"**.timestamp"`` (any depth). The defaults
    (:data:`DEFAULT_IGNORE`, top-level transport keys) apply unless ``defaults=False``.
    """

    def __init__(self, ignore: Iterable[str] = (), *, defaults: bool = True) -> None:
        self.ignore = tuple(ignore)
        self._chains: dict[Hashable, HashChain] = {}  # by (env_index, channel)
        self._lock = threading.Lock()
        self._top = frozenset(DEFAULT_IGNORE if defaults else ())
        self._paths: list[tuple[Token, ...]] = []
        for path in self.ignore:
            tokens = _parse(path)
            if len(tokens) == 1 and isinstance(tokens[0], str):
                self._top |= {tokens[0]}
            else:
                self._paths.append(tokens)

    def normalise(self, request: dict[str, Any]) -> dict[str, Any]:
        """The request without ignored parts (numbers are normalised when hashing)."""
        top = self._top
        out = (
            request
            if top.isdisjoint(request)
            else {k: v for k, v in request.items() if k not in top}
        )
        for tokens in self._paths:
            out = _remove(out, tokens)
        return out

    def canonical(self, request: dict[str, Any]) -> bytes:
        return canonical_bytes(self.normalise(request))

    def digest(self, request: dict[str, Any], key: Hashable = None) -> str:
        """sha256 (hex) of :meth:`canonical`. With a ``key`` (env_index, channel) the
        hashing goes on from the previous request of that key where this one extends it."""
        if key is None:
            return canonical_parts(self.normalise(request)).sha256()
        return self.digest_parts(request, key)[0]

    def digest_parts(
        self, request: dict[str, Any], key: Hashable = None
    ) -> tuple[str, bytes | None]:
        """(:meth:`digest`, the JSON of the request's conversation list as hashed), the
        latter None unless the ignore rules left the conversation as it is."""
        normal = self.normalise(request)
        parts = canonical_parts(normal)
        fld = parts.field
        same = fld is not None and normal[fld] is request.get(fld)
        if key is None:
            return parts.sha256(), parts.conversation if same else None
        chains = self._chains
        sha, chain = parts.sha256_from(chains.get(key))
        with self._lock:
            chains.pop(key, None)  # re-inserted last: the dict's order is least recent first
            if chain is not None:
                chains[key] = chain
                if len(chains) > CHAINS:
                    del chains[next(iter(chains))]
        return sha, parts.conversation if same else None

    def verify(self, entry: Entry, request: dict[str, Any], want: str, fix: str) -> None:
        """Raise :class:`CassetteMismatch` unless ``request`` hashes to ``want`` (the
        recorded hash), or equals the recorded request under this matcher's rules."""
        __tracebackhide__ = True  # pytest: show the caller, not this frame
        got = self.digest(request, (entry.env_index, entry.channel))
        if got == want:
            return
        recorded = entry.request if entry.sha is None else entry.full_request()
        if self.digest(recorded) == got:
            return  # the recording was hashed under other ignore rules; equal under these
        diff = self.first_difference(recorded, request)
        detail = diff.describe() if diff is not None else "no field differs after normalisation"
        if entry.meta.get("redacted") and diff is not None and "[REDACTED]" in repr(diff.a):
            detail += "\n  (the recorded request had secrets redacted; [REDACTED] stands for them)"
        raise CassetteMismatch(
            f"request differs from the recording at {entry.source}:{entry.line}\n"
            f"  env_index={entry.env_index!r} channel={entry.channel!r} step={entry.step}\n"
            f"  {detail}\n"
            f"  {fix}, or open with match='key' to serve by key alone",
            path=entry.source,
            field=diff.where if diff is not None else "",
        )

    def first_difference(self, recorded: dict[str, Any], live: dict[str, Any]) -> Difference | None:
        a = normalise_request(self.normalise(recorded))
        b = normalise_request(self.normalise(live))
        return first_difference(a, b)


class Difference:
    """Where two JSON values first part: a path and both values (``MISSING`` if absent)."""

    MISSING: Any = type("Missing", (), {"__repr__": lambda self: "<missing>"})()

    __slots__ = ("a", "b", "path")

    def __init__(self, path: tuple[str | int, ...], a: Any, b: Any) -> None:
        self.path = path
        self.a = a
        self.b = b

    @property
    def where(self) -> str:
        return format_path(self.path)

    def describe(self, a_label: str = "recorded", b_label: str = "live", width: int = 80) -> str:
        a, b = _shorten(self.a, self.b, width)
        pad = max(len(a_label), len(b_label)) + 1
        return (
            f"first difference at {self.where or '<root>'}\n"
            f"    {(a_label + ':').ljust(pad)} {a}\n"
            f"    {(b_label + ':').ljust(pad)} {b}"
        )


def format_path(path: Iterable[str | int]) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_$][\w$-]*", part):
            out += f".{part}" if out else part
        else:
            out += f"[{part!r}]"
    return out


def _walk_diff(a: Any, b: Any, path: tuple[str | int, ...]) -> Iterator[Difference]:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            if key not in a or key not in b or a[key] != b[key]:
                yield from _walk_diff(
                    a.get(key, Difference.MISSING), b.get(key, Difference.MISSING), (*path, key)
                )
                return
        return
    if isinstance(a, list) and isinstance(b, list):
        for i in range(max(len(a), len(b))):
            x = a[i] if i < len(a) else Difference.MISSING
            y = b[i] if i < len(b) else Difference.MISSING
            if x is Difference.MISSING or y is Difference.MISSING or x != y:
                yield from _walk_diff(x, y, (*path, i))
                return
        return
    if a != b or type(a) is not type(b):
        yield Difference(path, a, b)


def first_difference(a: Any, b: Any) -> Difference | None:
    """The first path (keys in sorted order, lists in order) where ``a`` and ``b`` differ."""
    return next(_walk_diff(a, b, ()), None)


def _short(value: Any, width: int) -> str:
    text = value if isinstance(value, str) else repr(value)
    text = repr(text) if isinstance(value, str) else text
    return text if len(text) <= width else text[: width - 1] + "…"


def _shorten(a: Any, b: Any, width: int) -> tuple[str, str]:
    """Both values shortened; two long strings are shown around where they part."""
    if isinstance(a, str) and isinstance(b, str) and max(len(a), len(b)) > width - 2:
        i = 0
        while i < min(len(a), len(b)) and a[i] == b[i]:
            i += 1
        start = max(0, i - width // 3)
        la, lb = a[start : start + width - 8], b[start : start + width - 8]
        lead = "…" if start else ""
        return (
            lead + repr(la) + ("…" if start + len(la) < len(a) else ""),
            lead + repr(lb) + ("…" if start + len(lb) < len(b) else ""),
        )
    return _short(a, width), _short(b, width)
