"""The keys an open cassette hands out (:class:`Steps`, thread-safe), and a call it makes
live (:class:`Slot`: its key, its request, and how its result is recorded)."""

from __future__ import annotations

import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import CassetteError
from ..format.entry import Entry, EnvIndex, Key
from ..format.keys import check_key
from ..storage.recorder import line_meta, now_iso
from ..types import Json
from . import streaming
from .context import LIVE
from .modes import ErrorCodec, dump_error

if TYPE_CHECKING:
    from .opening import AnySink

__all__ = ["Slot", "Steps"]


class Steps:
    """Step counters and the keys written and served, for one open cassette."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counters: dict[tuple[EnvIndex, str], int] = {}
        self._written: set[Key] = set()
        self._served: set[Key] = set()

    def next(self, env: EnvIndex, channel: str, step: int | None) -> Key:
        """The key of the next call (``step``, else the counter's), marked served."""
        if step is not None and (type(step) is not int or step < 0):
            check_key(env, channel, step)  # a step the counters cannot take: refused
        counter = (env, channel)
        with self._lock:
            if step is None:
                step = self._counters.get(counter, 0)
            self._counters[counter] = step + 1
        key = (env, channel, step)
        self._served.add(key)
        return key

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
        """Free a key whose call was refused before it was made."""
        env, channel, step = key
        with self._lock:
            self._written.discard(key)
            if self._counters.get((env, channel)) == step + 1:
                self._counters[(env, channel)] = step

    def restart(self, env: EnvIndex | None = None) -> None:
        """Start the step counters of ``env`` (every episode's, when None) at 0 again."""
        with self._lock:
            for counter in [c for c in self._counters if env is None or c[0] == env]:
                del self._counters[counter]

    def unused(self, entries: Mapping[Key, Entry]) -> list[Key]:
        """The keys of ``entries`` not served in this run."""
        with self._lock:
            return [k for k in entries if k not in self._served]


class Slot:
    """A call made live for ``owner``: key, request, hash, sink (None: passthrough)."""

    __slots__ = (
        "conversation", "env_index", "errors", "key", "owner", "request", "sha", "sink", "started",
    )  # fmt: skip

    def __init__(
        self,
        owner: object,
        key: Key,
        request: Json,
        sink: AnySink | None,
        errors: ErrorCodec | None,
    ) -> None:
        self.owner, self.key, self.env_index, self.request = owner, key, key[0], request
        self.sink, self.errors = sink, errors
        self.sha = ""
        self.conversation: bytes | None = None
        self.started = 0.0  # set when the live call starts

    def write(
        self, response: Json | None, error: Json | None, seconds: float, extra: Json | None = None
    ) -> None:
        """Write this call's line (nothing in passthrough mode)."""
        if self.sink is not None:
            meta = line_meta(seconds, now_iso(), self.request, response, extra)
            env, channel, step = self.key
            self.sink.recorder().interaction(
                env, channel, step, self.request, self.sha, response, error, meta, self.conversation
            )

    def record(
        self, response: Json | None, exc: BaseException | None, extra: Json | None = None
    ) -> None:
        """Write what the live call returned (``response``) or raised (``exc``)."""
        if response is not None and not isinstance(response, dict):
            raise CassetteError(
                f"live call returned {type(response).__name__}, not a dict; the adapter must "
                "turn its response into a JSON-able dict"
            )
        error = None if exc is None else dump_error(exc, self.errors)
        self.write(response, error, time.perf_counter() - self.started, extra)

    def run(self, live: Callable[[], Json]) -> Json:
        """Call ``live`` and record what it returns or raises."""
        self.started = time.perf_counter()
        token = LIVE.set(self.owner)
        try:
            response = live()
        except Exception as exc:
            self.record(None, exc)
            raise
        finally:
            LIVE.reset(token)
        self.record(response, None)
        return response

    async def arun(self, live: Callable[[], Awaitable[Json]]) -> Json:
        """Async twin of :meth:`run`."""
        self.started = time.perf_counter()
        token = LIVE.set(self.owner)
        try:
            response = await live()
        except Exception as exc:
            self.record(None, exc)
            raise
        finally:
            LIVE.reset(token)
        self.record(response, None)
        return response

    def stream_done(
        self, assemble: Callable[[list[Json]], Json] | None, heard: Callable[[Any, Any], None]
    ) -> streaming.Done:
        """What records a live stream when it ends (:func:`streaming.record`)."""
        self.started = time.perf_counter()

        def done(chunks: list[Json], exc: BaseException | None, complete: bool) -> None:
            response, extra = streaming.stream_response(chunks, assemble, complete and not exc)
            if not complete:
                extra["incomplete"] = True
            self.record(response, exc, extra)
            heard(self.env_index, chunks)

        return done
