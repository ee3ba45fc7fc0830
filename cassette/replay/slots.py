"""The keys an open cassette hands out: each call's step (a counter per episode and
channel, unless the caller names one), which keys this run wrote and which it served.

:class:`Steps` is the bookkeeping (thread-safe); :class:`Slot` is a call made live: its
key and whether its result is recorded.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path

from ..errors import CassetteError
from ..format.entry import Entry, EnvIndex, Key

__all__ = ["Slot", "Steps"]


class Slot:
    """A call made live: its key, whether its result is recorded, and (if so) the hash
    of its request and its conversation's JSON as hashed, taken before the live call."""

    __slots__ = ("channel", "conversation", "env_index", "key", "sha", "step", "write")

    def __init__(self, key: Key, write: bool) -> None:
        self.key = key
        self.env_index, self.channel, self.step = key
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

    def next(self, env: EnvIndex, channel: str, step: int | None) -> Key:
        """The key of the next call of (``env``, ``channel``): ``step`` if given (the
        counter goes on from it), else the counter's."""
        counter = (env, channel)
        with self._lock:
            if step is None:
                step = self._counters.get(counter, 0)
            self._counters[counter] = step + 1
        return (env, channel, step)

    def serve(self, key: Key, entries: Mapping[Key, Entry]) -> Entry | None:
        """The entry recorded at ``key``, marked served (None: there is none)."""
        entry = entries.get(key)
        if entry is not None:
            self._served.add(key)
        return entry

    def claim(self, key: Key, where: Path) -> None:
        """Take ``key`` for writing: a key written twice in one run is refused."""
        with self._lock:
            if key in self._written:
                env, channel, step = key
                raise CassetteError(
                    f"step {step} of env_index={env!r} channel={channel!r} was already "
                    f"recorded in this run of {where}; pass another step= or leave it "
                    "to the counter"
                )
            self._written.add(key)

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
