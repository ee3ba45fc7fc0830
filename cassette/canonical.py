"""A request's canonical form, its hash, and why two requests differ.

The walk of a request through :meth:`cassette.Cassette.call`, in order: :class:`Matcher`
leaves out the ignored keys (:meth:`Matcher.normalise`, paths from :mod:`cassette.paths`),
:func:`canonical_parts` writes the rest as sorted-key JSON with integral floats as ints
(the conversation as written), :meth:`Canonical.sha256_from` hashes it (going on from the
previous request of the same episode and channel), and on a hash that is not the
recording's :meth:`Matcher.verify` names the first path where the two requests part
(:func:`first_difference`, from :mod:`cassette.difference`, re-exported here). Pure:
dicts in, bytes and strings out, no IO.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Hashable, Iterable
from contextlib import suppress
from typing import TYPE_CHECKING, Any, NamedTuple

import orjson

from .codec import check_finite, dumps_sorted, messages_finite
from .difference import Difference, first_difference, format_path
from .errors import CassetteMismatch
from .paths import parse_ignore, remove_path

if TYPE_CHECKING:
    from .index import Entry

__all__ = [
    "DEFAULT_IGNORE",
    "MESSAGE_FIELDS",
    "Canonical",
    "Difference",
    "HashChain",
    "Matcher",
    "canonical_bytes",
    "canonical_parts",
    "check_finite",
    "conversation_field",
    "first_difference",
    "format_path",
    "normalise_numbers",
    "normalise_request",
]

MESSAGE_FIELDS = ("messages", "input")  # the conversation of a request
# A number token that normalisation could change: an integral float ("1.0", "-0.0") or an
# exponent, standing right after a JSON delimiter. Matching inside a string only costs the
# slow (exact) path, never a wrong hash.
_FLOAT_TOKEN = re.compile(rb"[:,\[]-?\d+(?:\.0(?=[,}\]])|(?:\.\d+)?[eE])")


def normalise_numbers(value: Any) -> Any:
    """Integral floats become ints (1.0 -> 1, -0.0 -> 0); containers are copied."""
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 2**63:
            return int(value)
        return value
    if isinstance(value, dict):
        return {k: normalise_numbers(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [normalise_numbers(v) for v in value]
    return value


def conversation_field(request: dict[str, Any]) -> str | None:
    """The key of the request's conversation: ``messages``, else ``input``, if a list."""
    for key in MESSAGE_FIELDS:
        if type(request.get(key)) is list:
            return key
    return None


def _is_conversation(key: str, value: Any) -> bool:
    return key in MESSAGE_FIELDS and type(value) is list


def normalise_request(request: dict[str, Any]) -> dict[str, Any]:
    """Integral floats as ints in every parameter of a request (temperature, tools, ...);
    the conversation (``messages``/``input`` lists) is text and is kept as written."""
    return {k: v if _is_conversation(k, v) else normalise_numbers(v) for k, v in request.items()}


def _normal_json(params: dict[str, Any]) -> bytes:
    """Sorted-key JSON of ``params`` with integral floats as ints."""
    raw = dumps_sorted(params)
    if _FLOAT_TOKEN.search(raw) is None:
        return raw
    return dumps_sorted(normalise_numbers(params))


def _split(params: dict[str, Any], key: str) -> tuple[bytes, bytes]:
    """(head, tail): the canonical JSON of ``params`` around a ``key`` placed in sorted
    order, e.g. ``{"model":"m","messages":`` and ``,"tools":[...]}``."""
    before = _normal_json({k: v for k, v in params.items() if k < key})
    after = _normal_json({k: v for k, v in params.items() if k > key})
    head = before[:-1] + (b',"' if len(before) > 2 else b'"') + key.encode() + b'":'
    return head, (b"," + after[1:] if len(after) > 2 else b"}")


# Parameters are small and the same call after call: their canonical parts are made once
# per distinct value, in a cache keyed by their raw bytes (and the conversation's key).
_Parts = tuple[bytes, bytes, bool]  # (head, tail, whether the parameters' JSON holds a null)
_PARAMS_CACHE: dict[tuple[str, bytes], _Parts] = {}
_last: list[tuple[str, bytes, _Parts]] = [("", b"", (b"", b"", False))]  # the latest
_dumps = orjson.dumps
_SORT = orjson.OPT_SORT_KEYS
_tuple_new = tuple.__new__  # a NamedTuple made without its Python-level __new__


def _params_parts(params: dict[str, Any], key: str, raw: bytes) -> _Parts:
    """The canonical parts of ``params`` (whose JSON is ``raw``) around ``key``, cached."""
    parts = _PARAMS_CACHE.get((key, raw))
    if parts is None:
        # NaN is written as null: where the bytes hold one, the values are looked at
        parts = (*_split(params, key), b"null" in raw)
        if len(_PARAMS_CACHE) >= 512:
            _PARAMS_CACHE.clear()
        _PARAMS_CACHE[key, raw] = parts
    _last[0] = (key, raw, parts)
    return parts


class Canonical(NamedTuple):
    """:func:`canonical_bytes` in three parts, ``head + conversation + tail``, so that the
    conversation's JSON (the bulk of a request) is at hand on its own, and is hashed
    without being copied into one buffer."""

    head: bytes
    conversation: bytes
    tail: bytes
    field: str | None  # the key of the conversation, if the request has one list of it

    def sha256(self) -> str:
        h = hashlib.sha256(self.head)
        h.update(self.conversation)
        h.update(self.tail)
        return h.hexdigest()

    def sha256_from(self, chain: HashChain | None, count: int = 0) -> tuple[str, HashChain | None]:
        """(:meth:`sha256`, the chain for the next request of the same key). The same
        hash, but when this request extends the one ``chain`` was taken from (equal head,
        conversation JSON that starts with the earlier one's) only the new bytes are
        hashed: over an episode each byte is hashed once, not once a step. ``count``: the
        number of messages of this request (kept in the chain)."""
        sha, next_chain, _ = self.hash_from(chain, count)
        return sha, next_chain

    def hash_from(
        self, chain: HashChain | None, count: int = 0
    ) -> tuple[str, HashChain | None, int]:
        """:meth:`sha256_from`, and how many leading messages ``chain`` covered (0 unless
        this request extends the chain's)."""
        conv = self.conversation
        if self.field is None or len(conv) < 2:
            return self.sha256(), None, 0
        end = len(conv) - 1  # the conversation list without its closing bracket
        start = 0
        if chain is not None and chain[0] == self.head and conv.startswith(chain[1]):
            state = chain[2].copy()
            state.update(conv[len(chain[1]) : end])  # (a copy: cheaper than a view)
            start = chain[3]
        else:
            state = hashlib.sha256(self.head)
            state.update(memoryview(conv)[:end])
        final = state.copy()
        final.update(b"]")  # (conv[end:]: a list's JSON ends with its bracket)
        final.update(self.tail)
        chained = _tuple_new(HashChain, (self.head, conv[:end], state, count))
        return final.hexdigest(), chained, start


class HashChain(NamedTuple):
    """sha256 state after a request's head and its conversation less the closing bracket."""

    head: bytes
    prefix: bytes
    state: Any  # hashlib's sha256 object (its type is private)
    size: int = 0  # the number of messages of that request


def canonical_parts(request: dict[str, Any], *, live: bool = False) -> Canonical:
    """:func:`canonical_bytes` of ``request`` as :class:`Canonical` parts. A value that
    JSON cannot hold raises :class:`~cassette.codec.NotJSONError`; ``live`` (a request
    being made, not one read from a file) also refuses NaN and infinities outside the
    conversation (the caller checks the conversation's new messages)."""
    key = conversation_field(request)
    if key is None:
        raw = _normal_json(request)
        if live and b"null" in raw:
            check_finite(request)
        return Canonical(raw, b"", b"", None)
    if key == "messages" and type(request.get("input")) is list:  # both (never seen)
        whole = dumps_sorted(normalise_request(request))
        if live and b"null" in whole:
            check_finite(request)
        return Canonical(whole, b"", b"", None)
    params = dict(request)
    del params[key]
    try:  # (the cache's key need not be canonical: the bytes tell the values apart)
        raw = _dumps(params)
    except TypeError:  # a pydantic model, bytes, ... (or what JSON cannot hold: raises)
        raw = dumps_sorted(params)
    last = _last[0]  # the parameters of the call before, most often the same: no lookup
    parts = last[2] if raw == last[1] and key == last[0] else _params_parts(params, key, raw)
    if live and parts[2]:
        check_finite(params)
    try:
        conversation = _dumps(request[key], option=_SORT)
    except TypeError:
        conversation = dumps_sorted(request[key])  # a pydantic model...; or NotJSONError
    return _tuple_new(Canonical, (parts[0], conversation, parts[1], key))


def canonical_bytes(request: dict[str, Any]) -> bytes:
    """Sorted-key compact JSON of :func:`normalise_request` of ``request``: integral
    floats in the parameters as ints; the conversation as written."""
    head, conversation, tail, _ = canonical_parts(request)
    return head + conversation + tail


# --- matching: ignore rules, hashing with chains, the explanation of a mismatch ------

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


class Matcher:
    """Turns a request into the canonical form that is hashed and compared.

    ``ignore`` adds paths to leave out: ``"temperature"``, ``"metadata.trace_id"``,
    ``"messages[*].name"``, ``"**.timestamp"`` (any depth). The defaults
    (:data:`DEFAULT_IGNORE`, top-level transport keys) apply unless ``defaults=False``.
    """

    def __init__(self, ignore: Iterable[str] = (), *, defaults: bool = True) -> None:
        self.ignore = tuple(ignore)
        self._chains: dict[Hashable, HashChain] = {}  # by (env_index, channel)
        self._expected: dict[Hashable, str] = {}  # eval-protocol entries' digests, by key
        self._lock = threading.Lock()
        self._top = frozenset(DEFAULT_IGNORE if defaults else ())
        self._paths: list[tuple[Any, ...]] = []
        for path in self.ignore:
            tokens = parse_ignore(path)
            if len(tokens) == 1 and isinstance(tokens[0], str):
                self._top |= {tokens[0]}
            else:
                self._paths.append(tokens)
        self._plain = not self._paths  # only top-level keys are left out

    def normalise(self, request: dict[str, Any]) -> dict[str, Any]:
        """The request without ignored parts (numbers are normalised when hashing)."""
        top = self._top
        out = (
            request
            if top.isdisjoint(request)
            else {k: v for k, v in request.items() if k not in top}
        )
        for tokens in self._paths:
            out = remove_path(out, tokens)
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
        latter None unless the ignore rules left the conversation as it is.

        With a ``key`` the request is a live one: a value that a cassette cannot store
        exactly (NaN, an int beyond 64 bits, a set, ...) raises
        :class:`~cassette.codec.NotJSONError`, before any live call is made."""
        plain = self._plain and self._top.isdisjoint(request)  # nothing left out
        normal = request if plain else self.normalise(request)
        if key is None:
            parts = canonical_parts(normal)
            same = parts.field is not None and normal[parts.field] is request.get(parts.field)
            return parts.sha256(), parts.conversation if same else None
        parts = canonical_parts(normal, live=True)
        fld = parts.field
        chains = self._chains
        prev = chains.pop(key, None)  # re-inserted last: the order is least recent first
        if fld is None:
            return parts.sha256(), None
        messages = normal[fld]
        conv = parts.conversation
        sha, chain, start = parts.hash_from(prev, len(messages))
        # only the messages this request adds are looked at for NaN: from their first byte
        if not messages_finite(messages, start, conv, len(prev.prefix) if start and prev else 0):
            for i in range(start, len(messages)):
                check_finite(messages[i], f"{fld}[{i}]")
        if chain is not None:
            chains[key] = chain
            if len(chains) > CHAINS:
                with self._lock, suppress(KeyError, RuntimeError, StopIteration):
                    while len(chains) > CHAINS:  # (another thread may insert meanwhile)
                        del chains[next(iter(chains))]
        return sha, conv if messages is request.get(fld) else None

    def check_ignored(self, request: dict[str, Any]) -> None:
        """Raise :class:`~cassette.codec.NotJSONError` if a top-level key that is not
        hashed (``headers``, ``timeout``, ...) holds what a cassette cannot store."""
        if not self._top.isdisjoint(request):
            dumps_sorted({k: request[k] for k in self._top.intersection(request)})

    def verify_entry(self, entry: Entry, request: dict[str, Any], fix: str) -> None:
        """:meth:`verify` ``request`` against a recorded entry: its hash, or for an
        eval-protocol line (no hash) the digest of its messages (made once)."""
        __tracebackhide__ = True  # pytest: show the caller, not this frame
        want = entry.sha
        if want is not None:
            got = self.digest_parts(request, (entry.env_index, entry.channel))[0]
            if got != want:
                self._differs(entry, request, got, fix)
            return
        want = self._expected.get(entry.key)
        if want is None:
            want = self._expected[entry.key] = self.digest(entry.request)
        self.verify(entry, {"messages": request.get("messages")}, want, fix)

    def verify(self, entry: Entry, request: dict[str, Any], want: str, fix: str) -> None:
        """Raise :class:`CassetteMismatch` unless ``request`` hashes to ``want`` (the
        recorded hash), or equals the recorded request under this matcher's rules."""
        __tracebackhide__ = True  # pytest: show the caller, not this frame
        got = self.digest(request, (entry.env_index, entry.channel))
        if got != want:
            self._differs(entry, request, got, fix)

    def _differs(self, entry: Entry, request: dict[str, Any], got: str, fix: str) -> None:
        """Raise :class:`CassetteMismatch` naming where ``request`` (which hashes to
        ``got``, not to the recorded hash) parts from the recorded request, unless the two
        are equal under this matcher's rules (recorded under other ignore rules)."""
        __tracebackhide__ = True  # pytest: show the caller, not this frame
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
