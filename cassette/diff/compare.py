"""Which (channel, step) of an episode parts first, and the path where it parts. Full
requests are rebuilt only where needed: equal hashes, or delta-encoded requests on equal
bases with equal stored parts, mean equal requests."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from ..format.delta import decode_messages
from ..format.difference import Difference, first_difference, format_path
from ..format.entry import Rebuilder
from ..replay.fork import FORK_CHANNEL
from ..storage.index import Entry, Index
from ..types import EnvIndex
from .rules import Rules
from .types import Divergence, Json

__all__ = ["Channels", "Comparer", "divergence", "group_by_episode", "in_file_order", "take_forks"]

_ABSENT = object()  # a key on one side only

Channels = dict[str, dict[int, Entry]]


def group_by_episode(index: Index) -> dict[EnvIndex, Channels]:
    """Entries of each episode, by channel and step (each in file order)."""
    out: dict[EnvIndex, Channels] = {}
    for (env, channel, step), entry in index.entries.items():
        out.setdefault(env, {}).setdefault(channel, {})[step] = entry
    return out


def in_file_order(entries: Iterable[Entry]) -> list[Entry]:
    return sorted(entries, key=lambda e: (e.source, e.line))


def take_forks(groups: dict[EnvIndex, Channels]) -> dict[EnvIndex, Json]:
    """Take the ``"fork"`` channel (fork records, not calls) out of ``groups``; its records."""
    forks: dict[EnvIndex, Json] = {}
    for env in list(groups):
        steps = groups[env].pop(FORK_CHANNEL, None)
        if steps:
            response = steps[min(steps)].response
            forks[env] = dict(response) if isinstance(response, dict) else {}
        if not groups[env]:
            del groups[env]
    return forks


def _children(a: Any, b: Any) -> list[tuple[str | int, Any, Any]] | None:
    """(key, value in a, value in b) of two dicts, or of two lists of one length."""
    if isinstance(a, dict) and isinstance(b, dict):
        keys = sorted(a.keys() | b.keys(), key=str)
        return [(k, a.get(k, _ABSENT), b.get(k, _ABSENT)) for k in keys]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return list(zip(range(len(a)), a, b, strict=True))
    return None


def _paths(a: Any, b: Any, path: tuple[str | int, ...], out: list[str]) -> None:
    """Every path where ``a`` and ``b`` differ (list indices generalised to ``[*]``)."""
    pairs = _children(a, b)
    if pairs is None:
        out.append(re.sub(r"\[\d+\]", "[*]", format_path(path)))
        return
    for key, x, y in pairs:
        if x != y and len(out) < 16:
            _paths(x, y, (*path, key), out)


def _value(v: Any) -> Any:
    return None if v is Difference.MISSING else v


class Comparer:
    """Compares the steps of two runs; remembers which volatile fields it saw differ."""

    def __init__(self, rules: Rules) -> None:
        self.rules = rules
        self.volatile_seen: dict[str, None] = {}
        self._samples = 0
        self._rebuilder = Rebuilder()  # the full requests rebuilt within one episode

    def full(self, entry: Entry) -> Json:
        return self._rebuilder.full(entry)

    def forget(self) -> None:
        self._rebuilder = Rebuilder()

    def _sample(self, a: Json, b: Json) -> None:
        if self._samples < 64:
            self._samples += 1
            found: list[str] = []
            _paths(a, b, (), found)
            self.volatile_seen.update(dict.fromkeys(found))

    def _same_by_delta(self, a: Entry, b: Entry, equal: set[int]) -> bool:
        """Both delta-encoded on equal bases, with equal normalised stored parts."""
        da = a.delta
        if da is None or da != b.delta or not self.rules.by_delta or da["base"] not in equal:
            return False
        sa, sb = a.request, b.request
        if self.rules.user:  # user paths may reach into referenced messages: resolve them
            sa, sb = self._resolved(a), self._resolved(b)
        return self.rules.same({"request": sa}, {"request": sb})

    @staticmethod
    def _resolved(entry: Entry) -> Json:
        fld = (entry.delta or {}).get("field", "messages")
        base = entry.base.response if entry.base is not None else None
        stored = entry.request.get(fld) or []
        return {**entry.request, fld: decode_messages(stored, 0, [], base, ValueError)}

    def _request(self, a: Entry, b: Entry, equal: set[int]) -> Divergence | None:
        if not self._same_by_delta(a, b, equal):
            d = self._part(a, {"request": self.full(a)}, {"request": self.full(b)})
            if d is not None:
                return d
        self._sample({"request": a.request}, {"request": b.request})
        return None

    def step(self, a: Entry, b: Entry, equal: set[int]) -> Divergence | None:
        d = self._request(a, b, equal) if a.sha is None or a.sha != b.sha else None
        return d or self._response(a, b)

    def _response(self, a: Entry, b: Entry) -> Divergence | None:
        ra: Json = {"response": a.response, "error": a.error}
        rb: Json = {"response": b.response, "error": b.error}
        if ra == rb:
            return None
        d = self._part(a, ra, rb)
        if d is None:
            self._sample(ra, rb)
        return d

    def _part(self, a: Entry, wa: Json, wb: Json) -> Divergence | None:
        if self.rules.same(wa, wb):
            return None
        norm = self.rules.norm
        return divergence(a.channel, a.step, next(iter(wa)), norm(wa), norm(wb))

    def channel(self, channel: str, sa: dict[int, Entry], sb: dict[int, Entry]) -> Any:
        """(order, divergence) of the first step of ``channel`` that parts, else None."""
        equal: set[int] = set()
        for step in sorted(sa.keys() | sb.keys()):
            a, b = sa.get(step), sb.get(step)
            if a is None or b is None:
                missing = {"a_missing": a is None, "b_missing": b is None}
                d: Divergence | None = Divergence(channel, step, "step", "", **missing)
            else:
                d = self.step(a, b, equal)
            if d is not None:
                return (a is None, (a or sb[step]).line, channel), d
            equal.add(step)
        return None

    def episode(self, ga: Channels, gb: Channels) -> Divergence | None:
        hits = [self.channel(c, ga.get(c, {}), gb.get(c, {})) for c in ga.keys() | gb.keys()]
        self.forget()
        found = [hit for hit in hits if hit is not None]
        return min(found, key=lambda hit: hit[0])[1] if found else None


def divergence(channel: str | None, step: int | None, part: Any, wa: Json, wb: Json) -> Divergence:
    d = first_difference(wa, wb) or Difference((part,), wa.get(part), wb.get(part))
    va, vb = _value(d.a), _value(d.b)
    return Divergence(channel, step, part, d.where, va, vb, va is None, vb is None)
