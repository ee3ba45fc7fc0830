"""The keys an open cassette hands out: each call's step (a counter per episode and
channel, unless the caller names one), which keys this run wrote and which it served.

:class:`Steps` is the bookkeeping (thread-safe): :meth:`Steps.serve` hands replay its
entry, :meth:`Steps.take` the other modes theirs or a key to call live; :class:`Slot`
is a call made live: its key and whether its result is recorded.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Mapping
from pathlib import Path

from ..errors import CassetteError
from ..format.entry import Entry, EnvIndex, Key
from ..format.keys import check_key

__all__ = ["Slot", "Steps"]


class Slot:
    """A call made live: its key, whether its result is recorded, and (if so) the hash
    of its request and its conversation's JSON as hashed, taken before the live call."""

    __slots__ = ("channel", "conversation", "env_index", "sha", "step", "write")

    def __init__(self, env_index: EnvIndex, channel: str, step: int, write: bool) -> None:
        self.env_index = env_index
        self.channel = channel
        self.step = step
        self.write = write
        self.sha = ""
        self.conversation: bytes | None = None


class Steps:
    """Step counters and the keys written and served, for one open cassette."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counters: dict[tuple[EnvIndex, str], int] = {}
        self._written: set[Key] = set()
        self._served: set[Key] = set()
        self._next: dict[tuple[EnvIndex, str], Callable[[], int]] = {}  # serve's counters

    def serve(
        self,
        env: EnvIndex,
        channel: str,
        step: int | None,
        entries: Mapping[Key, Entry],
        miss: Callable[[Key], Exception],
    ) -> Entry:
        """The recorded entry of the next call of (``env``, ``channel``) (``step``, if
        given), marked served; ``miss(key)`` is raised if there is none (replay mode)."""
        __tracebackhide__ = True  # pytest: show the caller, not this frame
        # no lock: each counter is an itertools.count, whose next() is atomic, and the
        # dict and set operations are too (a replay-mode cassette takes no other key)
        counter = (env, channel)
        if step is None:
            nxt = self._next.get(counter)
            if nxt is None:
                nxt = self._next.setdefault(counter, itertools.count().__next__)
            step = nxt()
        else:
            self._next[counter] = itertools.count(step + 1).__next__
        key = (env, channel, step)
        entry = entries.get(key)
        if entry is None:
            raise miss(key)
        self._served.add(key)
        return entry

    def take(
        self,
        env: EnvIndex,
        channel: str,
        step: int | None,
        entries: Mapping[Key, Entry] | None,
        record: bool,
        where: Path,
        check: Callable[[str, EnvIndex], None],
    ) -> tuple[Key, Entry | None]:
        """The key of the next call of (``env``, ``channel``) (``step``, if given) and its
        recorded entry in ``entries`` (None: not served from them). With no entry, if
        ``record``, ``check(name, value)`` may refuse its env_index or channel, and the
        key is taken for writing (a key written twice in one run is refused)."""
        __tracebackhide__ = True  # pytest: show the caller, not this frame
        with self._lock:
            counter = (env, channel)
            if step is None:
                step = self._counters.get(counter, 0)
            self._counters[counter] = step + 1
            key = (env, channel, step)
            entry = entries.get(key) if entries is not None else None
            if entry is None and record:
                check_key(env, channel, step)  # what the file cannot read back, refused
                check("env_index", env)  # before the live call
                check("channel", channel)
                if key in self._written:
                    raise CassetteError(
                        f"step {step} of env_index={env!r} channel={channel!r} was already "
                        f"recorded in this run of {where}; pass another step= or leave it "
                        "to the counter"
                    )
                self._written.add(key)
            if entry is not None:
                self._served.add(key)
        return key, entry

    def give_back(self, key: Key) -> None:
        """Free a key taken for writing whose call was refused before it was made."""
        env, channel, step = key
        with self._lock:
            self._written.discard(key)
            if self._counters.get((env, channel)) == step + 1:
                self._counters[(env, channel)] = step

    def unused(self, entries: Mapping[Key, Entry]) -> list[Key]:
        """The keys of ``entries`` not served in this run."""
        with self._lock:
            return [k for k in entries if k not in self._served]
