"""The Cassette: modes, the index, step counters, and call/acall/stream/astream."""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

from ..errors import CassetteError, CassetteMiss, CassetteModeError, RecordedError
from ..format.keys import check_key, outcome_line
from ..redact import Redactor
from ..storage.index import Entry, Key
from ..storage.recorder import line_meta, now_iso
from ..storage.remote import local_or_url
from ..types import EnvIndex, Json
from . import streaming
from .context import current_episode
from .matching import Matcher
from .modes import FIX, ErrorCodec, Mode, chosen_mode, default_error
from .opening import open_parts
from .slots import Slot, Steps

__all__ = ["Cassette", "ErrorCodec", "Mode", "open"]

# the modes as module constants: ``Mode.REPLAY`` (an enum's attribute) costs ~90 ns a call
_REPLAY, _APPEND, _PASSTHROUGH = Mode.REPLAY, Mode.APPEND, Mode.PASSTHROUGH


class Cassette:
    """One cassette file (or shard directory) open in one mode. Use :func:`open`."""

    def __init__(
        self,
        path: str | os.PathLike[str] | None,
        mode: Mode | str | None = None,
        *,
        match: str = "strict",
        ignore: Iterable[str] = (),
        redact: Redactor | None = None,
        meta: Json | None = None,
        fsync: bool = False,
    ) -> None:
        if path is None:
            path = os.environ.get("CASSETTE_PATH")
            if not path:
                raise CassetteModeError(
                    "no cassette path: pass one to cassette.open(), or set CASSETTE_PATH"
                )
        local = local_or_url(path)
        self.url = local if isinstance(local, str) else None  # an fsspec URL (s3://...)
        self.path = Path(local)
        self.requested_mode, forced_fix = chosen_mode(mode)
        self.forced = forced_fix is not None  # $CASSETTE_FORCE_MODE overrode ``mode``
        # how to re-record, as misses and mismatches print it (the pytest plugin names its flag)
        self.fix = forced_fix or FIX
        if match not in ("strict", "key"):
            raise CassetteModeError(f"unknown match {match!r}; use 'strict' or 'key'")
        self.match = match
        self.matcher = Matcher(ignore)
        self.redactor = redact or Redactor()
        self.meta = dict(meta or {})
        if self.matcher.ignore:
            self.meta.setdefault("ignore", list(self.matcher.ignore))
        self._steps = Steps()
        self.closed = False

        opened = open_parts(
            self.path, self.url, path, self.requested_mode, self.redactor, self.meta, fsync
        )
        self.path, self.mode, self.index = opened.path, opened.mode, opened.index
        self._sink = opened.sink

    # --- lifecycle ----------------------------------------------------------------------

    def close(self) -> None:
        """Finish: in record mode the side file replaces the cassette now, atomically."""
        if not self.closed:
            self.closed = True
            if self._sink is not None:
                self._sink.close()

    async def aclose(self) -> None:
        self.close()

    def abort(self, exc: BaseException | None = None) -> None:
        """Stop without replacing the cassette (record mode keeps its side file)."""
        if not self.closed:
            self.closed = True
            if self._sink is not None:
                self._sink.abort(exc)

    def __enter__(self) -> Cassette:
        return self

    def __exit__(
        self, et: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc is None:
            self.close()
        else:
            self.abort(exc)

    async def __aenter__(self) -> Cassette:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.__exit__(et, exc, tb)

    def __repr__(self) -> str:
        return (
            f"<Cassette {str(self.url or self.path)!r} mode={self.mode.value} match={self.match}>"
        )

    # --- keys ---------------------------------------------------------------------------

    def _begin(
        self, request: Json, env_index: EnvIndex | None, channel: str, step: int | None
    ) -> Entry | Slot:
        """The entry to serve, or the :class:`Slot` of a call to make live."""
        __tracebackhide__ = True  # pytest: show the caller, not this frame
        if self.closed:
            raise CassetteError(f"{self.path} is closed; open it again to make more calls")
        if type(request) is not dict and not isinstance(request, dict):
            raise CassetteError(
                f"a request must be a dict, not {type(request).__name__}; the adapter builds it"
            )
        env = env_index if env_index is not None else current_episode()
        env = 0 if env is None else env
        if step is not None and (type(step) is not int or step < 0):
            check_key(env, channel, step)  # a step the counters cannot take: refused
        mode = self.mode
        entry: Entry | None
        if mode is _REPLAY:
            entry = self._steps.serve(env, channel, step, self.index.entries, self._miss)
        else:
            key, entry = self._steps.take(
                env,
                channel,
                step,
                self.index.entries if mode is _APPEND else None,
                mode is not _PASSTHROUGH,
                self.path,
                self.redactor.check_key,
            )
        if entry is not None:
            if entry.broken is not None or not entry.checked:
                entry.check()  # a line that cannot be served (broken delta chain, changed response)
            if self.match == "strict":  # (Matcher.verify_entry, its common case inline)
                want = entry.sha
                if want is None:  # an eval-protocol line: the digest of its messages
                    self.matcher.verify_entry(entry, request, self.fix)
                elif (got := self.matcher.digest_parts(request, (env, channel))[0]) != want:
                    self.matcher.explain(entry, request, got, self.fix)
            return entry
        slot = Slot(env, channel, key[2], mode is not _PASSTHROUGH)
        if slot.write:  # hashed now: what cannot be recorded is refused before the live call
            try:
                slot.sha, slot.conversation = self.matcher.digest_parts(request, (env, channel))
                self.matcher.check_ignored(request)
            except CassetteError as exc:
                self._steps.give_back(key)
                raise CassetteError(
                    f"cannot record step {key[2]} of ({env!r}, {channel!r}): {exc}; "
                    "nothing was sent"
                ) from None
        return slot

    def _miss(self, key: Key) -> CassetteMiss:
        env, channel, step = key
        if not self.path.exists():
            held = f"{self.url or self.path} does not exist"
        else:
            held = f"{self.url or self.path}: " + self.index.describe_episode(env)
        return CassetteMiss(
            f"no recording for env_index={env!r} channel={channel!r} step={step}; {held}. "
            f"The code made a call the recording never saw: {self.fix}, or append mode to add it"
        )

    # --- serving and recording ----------------------------------------------------------

    def _unservable(
        self, entry: Entry, response: Json | None, error: Json | None, errors: ErrorCodec | None
    ) -> Json:
        """What a recorded line that holds no response raises: its error, rebuilt."""
        if error is not None:
            raise self._rebuild_error(error, errors)
        if response is None:
            raise CassetteError(f"{entry.source}:{entry.line} holds no response; {self.fix}")
        return response

    def _rebuild_error(self, info: Json, errors: ErrorCodec | None) -> BaseException:
        exc = errors.load(info) if errors is not None else None
        if exc is None:
            type_name, message = str(info.get("type")), str(info.get("message"))
            return RecordedError(type_name, message, info.get("data"), fix=self.fix)
        return exc

    def _record(
        self,
        slot: Slot,
        request: Json,
        response: Json | None,
        exc: BaseException | None,
        started: float,
        errors: ErrorCodec | None,
        extra: Json | None = None,
    ) -> None:
        if not slot.write:
            return
        if response is not None and not isinstance(response, dict):
            raise CassetteError(
                f"live call returned {type(response).__name__}, not a dict; the adapter must "
                "turn its response into a JSON-able dict"
            )
        error = None
        if exc is not None:
            error = (errors.dump(exc) if errors is not None else None) or default_error(exc)
        assert self._sink is not None  # slot.write: record or append mode
        self._sink.recorder().interaction(
            slot.env_index,
            slot.channel,
            slot.step,
            request,
            slot.sha,
            response,
            error,
            line_meta(time.perf_counter() - started, now_iso(), request, response, extra),
            slot.conversation,
        )

    def call(
        self,
        request: Json,
        live: Callable[[], Json],
        *,
        env_index: EnvIndex | None = None,
        channel: str = "llm",
        step: int | None = None,
        errors: ErrorCodec | None = None,
    ) -> Json:
        """Serve ``request`` from the recording, or call ``live()`` and record its result."""
        __tracebackhide__ = True  # pytest: show the caller, not this frame
        slot = self._begin(request, env_index, channel, step)
        if not isinstance(slot, Slot):  # served
            response, error = slot.served()
            if error is None and response is not None:
                return response
            return self._unservable(slot, response, error, errors)
        started = time.perf_counter()
        try:
            response = live()
        except Exception as exc:
            self._record(slot, request, None, exc, started, errors)
            raise
        self._record(slot, request, response, None, started, errors)
        return response

    async def acall(
        self,
        request: Json,
        live: Callable[[], Awaitable[Json]],
        *,
        env_index: EnvIndex | None = None,
        channel: str = "llm",
        step: int | None = None,
        errors: ErrorCodec | None = None,
    ) -> Json:
        """Async twin of :meth:`call`; ``live`` returns an awaitable."""
        __tracebackhide__ = True  # pytest: show the caller, not this frame
        slot = self._begin(request, env_index, channel, step)
        if not isinstance(slot, Slot):  # served
            response, error = slot.served()
            if error is None and response is not None:
                return response
            return self._unservable(slot, response, error, errors)
        started = time.perf_counter()
        try:
            response = await live()
        except Exception as exc:
            self._record(slot, request, None, exc, started, errors)
            raise
        self._record(slot, request, response, None, started, errors)
        return response

    def stream(
        self,
        request: Json,
        live: Callable[[], Iterable[Json]],
        *,
        env_index: EnvIndex | None = None,
        channel: str = "llm",
        step: int | None = None,
        assemble: Callable[[list[Json]], Json] | None = None,
        errors: ErrorCodec | None = None,
    ) -> Iterator[Json]:
        """Yield chunk dicts as they arrive, recording them (and ``assemble(chunks)``) at the
        end; on replay yield the recorded chunks in order. The key is taken now."""
        __tracebackhide__ = True  # pytest: show the caller, not this frame
        slot = self._begin(request, env_index, channel, step)
        if not isinstance(slot, Slot):
            return streaming.replay(*self._replayed(slot, errors))
        return streaming.record(live, self._stream_done(slot, request, assemble, errors))

    def astream(
        self,
        request: Json,
        live: Callable[[], AsyncIterator[Json]],
        *,
        env_index: EnvIndex | None = None,
        channel: str = "llm",
        step: int | None = None,
        assemble: Callable[[list[Json]], Json] | None = None,
        errors: ErrorCodec | None = None,
    ) -> AsyncIterator[Json]:
        """Async twin of :meth:`stream`; use with ``async for``."""
        __tracebackhide__ = True  # pytest: show the caller, not this frame
        slot = self._begin(request, env_index, channel, step)
        if not isinstance(slot, Slot):
            return streaming.areplay(*self._replayed(slot, errors))
        return streaming.arecord(live, self._stream_done(slot, request, assemble, errors))

    def _replayed(
        self, entry: Entry, errors: ErrorCodec | None
    ) -> tuple[list[Json], Callable[[], BaseException] | None]:
        response, info = entry.served()  # (one decode of a lean line, not one for each)
        chunks = streaming.recorded_chunks(entry, self.fix, response)
        return chunks, None if info is None else lambda: self._rebuild_error(info, errors)

    def _stream_done(
        self,
        slot: Slot,
        request: Json,
        assemble: Callable[[list[Json]], Json] | None,
        errors: ErrorCodec | None,
    ) -> streaming.Done:
        started = time.perf_counter()

        def done(chunks: list[Json], exc: BaseException | None, complete: bool) -> None:
            response, extra = streaming.stream_response(chunks, assemble, complete and not exc)
            if not complete:
                extra["incomplete"] = True
            self._record(slot, request, response, exc, started, errors, extra)

        return done

    # --- outcomes and queries -----------------------------------------------------------

    def outcome(
        self,
        env_index: EnvIndex | None = None,
        *,
        reward: float | None = None,
        terminated: bool | None = None,
        info: Json | None = None,
    ) -> None:
        """Record an episode's result (replay and passthrough check and write nothing)."""
        env = env_index if env_index is not None else current_episode()
        line = outcome_line(0 if env is None else env, reward, terminated, info)
        if self.mode not in (Mode.RECORD, Mode.APPEND):
            return
        self.redactor.check_key("env_index", line["env_index"])
        assert self._sink is not None  # record or append mode
        self._sink.recorder().outcome(line)
        self.index.outcomes[line["env_index"]] = line

    def unused(self) -> list[Key]:
        """Recorded interactions that this run has not served (replay and append)."""
        return self._steps.unused(self.index.entries)

    @property
    def redacted(self) -> int:
        """How many secret values this cassette has replaced in what it wrote."""
        return self._sink.redacted if self._sink is not None else 0

    @property
    def side_path(self) -> Path | None:
        """Where ``record`` mode writes until a clean close (None in other modes)."""
        return self._sink.side if self._sink is not None else None


def open(
    path: str | os.PathLike[str] | None = None,
    mode: Mode | str | None = None,
    *,
    match: str = "strict",
    ignore: Iterable[str] = (),
    redact: Redactor | None = None,
    meta: Json | None = None,
    fsync: bool = False,
) -> Cassette:
    """Open a cassette. ``path`` defaults to ``$CASSETTE_PATH``; ``mode`` to
    ``$CASSETTE_MODE``, else ``auto`` (what ``cassette run`` sets for a command). With
    ``$CASSETTE_FORK_FROM`` set (``cassette fork``), a fork of that cassette
    (:func:`cassette.replay.fork.fork`), whatever ``mode``."""
    if os.environ.get("CASSETTE_FORK_FROM"):
        from .fork import fork

        forked: Any = fork(path, match=match, ignore=ignore, redact=redact, meta=meta, fsync=fsync)
        return forked  # type: ignore[no-any-return]
    return Cassette(path, mode, match=match, ignore=ignore, redact=redact, meta=meta, fsync=fsync)
