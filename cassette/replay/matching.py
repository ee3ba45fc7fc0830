"""Matching a request to the recording: ignore rules, the hash chained over an episode
(each byte hashed once, not once a step), and where two requests part. Pure, no IO."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Hashable, Iterable
from contextlib import suppress
from typing import TYPE_CHECKING, Any

from ..errors import CassetteMismatch
from ..format.canonical import canonical_bytes, canonical_parts, normalise_request, sha256_of
from ..format.codec import check_finite, dumps_sorted, messages_finite
from ..format.difference import Difference, first_difference
from ..format.paths import Paths

if TYPE_CHECKING:
    from ..storage.index import Entry

__all__ = ["CHAINS", "DEFAULT_IGNORE", "HashChain", "Matcher"]

_sha256 = hashlib.sha256
# (head, conversation JSON less its closing bracket, sha256 state after both, messages)
HashChain = tuple[bytes, memoryview, Any, int]

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
    """Turns a request into the canonical form that is hashed and compared. ``ignore``
    adds paths to leave out: ``"temperature"``, ``"messages[*].name"``, ``"**.timestamp"``
    (any depth); :data:`DEFAULT_IGNORE` applies too unless ``defaults=False``."""

    def __init__(self, ignore: Iterable[str] = (), *, defaults: bool = True) -> None:
        self.ignore = (ignore,) if isinstance(ignore, str) else tuple(ignore)  # one rule
        self._chains: dict[Hashable, HashChain] = {}  # by (env_index, channel)
        self._expected: dict[Hashable, str] = {}  # eval-protocol entries' digests, by key
        self._lock = threading.Lock()
        self._paths = Paths((*DEFAULT_IGNORE, *self.ignore) if defaults else self.ignore)
        self._top = self._paths.drops  # top-level keys left out (checked, not hashed)

    def normalise(self, request: dict[str, Any]) -> dict[str, Any]:
        """The request without ignored parts (numbers are normalised when hashing)."""
        out: dict[str, Any] = self._paths.apply(request)
        return out

    def canonical(self, request: dict[str, Any]) -> bytes:
        return canonical_bytes(self.normalise(request))

    def digest(self, request: dict[str, Any], key: Hashable = None) -> str:
        """sha256 (hex) of :meth:`canonical`. With a ``key`` (env_index, channel) the
        hashing goes on from the previous request of that key where this one extends it."""
        return self.digest_parts(request, key)[0]

    def digest_parts(
        self, request: dict[str, Any], key: Hashable = None
    ) -> tuple[str, bytes | None]:
        """(:meth:`digest`, the conversation's JSON as hashed, None if the ignore rules
        changed it). With a ``key`` (a live request) what a cassette cannot store raises
        :class:`~cassette.format.codec.NotJSONError`."""
        normal = self.normalise(request)
        if key is None:
            parts = canonical_parts(normal)
            fld = parts[3]
            same = fld is not None and normal[fld] is request.get(fld)
            return sha256_of(parts), parts[1] if same else None
        head, conv, tail, fld = canonical_parts(normal, live=True)
        chain = self._chains.pop(key, None)  # re-inserted last: the order is least recent first
        if fld is None:
            return sha256_of((head, conv, tail, fld)), None
        messages = normal[fld]
        end = len(conv) - 1  # the conversation list without its closing bracket
        state, start = _resume(chain, head, conv, end)
        if not messages_finite(messages, start):
            for i in range(start, len(messages)):
                check_finite(messages[i], f"{fld}[{i}]")
        final = state.copy()
        final.update(b"]")  # (conv[end:]: a list's JSON ends with its bracket)
        final.update(tail)
        self._keep(key, (head, memoryview(conv)[:end], state, len(messages)))
        return final.hexdigest(), conv if messages is request.get(fld) else None

    def _keep(self, key: Hashable, chain: HashChain) -> None:
        """Keep ``chain`` for the next request of ``key`` (at most :data:`CHAINS` kept)."""
        chains = self._chains
        chains[key] = chain
        if len(chains) > CHAINS:
            with self._lock, suppress(KeyError, RuntimeError, StopIteration):
                while len(chains) > CHAINS:  # (another thread may insert meanwhile)
                    del chains[next(iter(chains))]

    def check_ignored(self, request: dict[str, Any]) -> None:
        """Raise ``NotJSONError`` if an ignored top-level key holds what cannot be stored."""
        if not self._top.isdisjoint(request):
            dumps_sorted({k: request[k] for k in self._top.intersection(request)})

    def verify_entry(self, entry: Entry, request: dict[str, Any], fix: str) -> None:
        """:meth:`verify` ``request`` against ``entry`` (an eval-protocol line: its messages)."""
        __tracebackhide__ = True  # pytest: show the caller, not this frame
        want = entry.sha
        if want is not None:
            got = self.digest_parts(request, (entry.env_index, entry.channel))[0]
            if got != want:
                self.explain(entry, request, got, fix)
            return
        want = self._expected.get(entry.key)
        if want is None:
            want = self._expected[entry.key] = self.digest(entry.request)
        self.verify(entry, {"messages": request.get("messages")}, want, fix)

    def verify(self, entry: Entry, request: dict[str, Any], want: str, fix: str) -> None:
        """Raise :class:`CassetteMismatch` unless ``request`` hashes to ``want`` or equals
        the recorded request under this matcher's rules."""
        __tracebackhide__ = True  # pytest: show the caller, not this frame
        got = self.digest(request, (entry.env_index, entry.channel))
        if got != want:
            self.explain(entry, request, got, fix)

    def explain(self, entry: Entry, request: dict[str, Any], got: str, fix: str) -> None:
        """Raise :class:`CassetteMismatch` where ``request`` parts from the recording."""
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
            f"  {fix}",
            path=entry.source,
            field=diff.where if diff is not None else "",
        )

    def first_difference(self, recorded: dict[str, Any], live: dict[str, Any]) -> Difference | None:
        a = normalise_request(self.normalise(recorded))
        b = normalise_request(self.normalise(live))
        return first_difference(a, b)


def _resume(chain: HashChain | None, head: bytes, conv: bytes, end: int) -> tuple[Any, int]:
    """(sha256 state after ``head`` + ``conv[:end]``, first new message): only bytes
    past ``chain``'s are hashed."""
    if chain is not None and chain[0] == head and conv.startswith(chain[1]):
        offset, state = len(chain[1]), chain[2]
        state.update(conv[offset:end])  # (a copy: cheaper than a view)
        return state, chain[3]
    state = _sha256(head)
    state.update(memoryview(conv)[:end])
    return state, 0
