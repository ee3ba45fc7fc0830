"""The Cassette: modes, the index, step counters, and call/acall/stream/astream."""

from __future__ import annotations

import difflib
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

from ..errors import CassetteError, CassetteMiss, CassetteModeError
from ..format.keys import check_key, outcome_line
from ..redact import Redactor
from ..storage.index import Entry, Key
from ..types import EnvIndex, Json
from . import streaming
from .context import EPISODE, LIVE, Episodes, current_episode
from .fork import FORK_CHANNEL, ForkAt, ForkBase
from .matching import Matcher
from .modes import BY_KEY, FIX, ErrorCodec, Mode, chosen_mode, load_error, served
from .opening import open_parts, where
from .slots import Slot, Steps

__all__ = ["Cassette", "ErrorCodec", "Mode", "fork", "open"]


class Cassette:
    """One cassette file (or shard directory) open in one mode. Use :func:`open` (or
    :func:`fork`: a cassette recording what it serves from its ``base``, whose ``mode``
    reads ``append``)."""

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
        base: ForkBase | None = None,
        episodes: Episodes | None = None,
    ) -> None:
        path, local = where(path)
        self.url = local if isinstance(local, str) else None  # an fsspec URL (s3://...)
        # a fork records, whatever $CASSETTE_FORCE_MODE says
        chosen = chosen_mode(mode) if base is None else (Mode.RECORD, None)
        self.requested_mode, forced_fix = chosen
        self.forced = forced_fix is not None  # $CASSETTE_FORCE_MODE overrode ``mode``
        self.fix = forced_fix or FIX  # how to re-record (the pytest plugin names its flag)
        self.by_key = BY_KEY  # how to serve by key alone (``cassette serve`` names its flag)
        if match not in ("strict", "key"):
            raise CassetteModeError(f"unknown match {match!r}; use 'strict' or 'key'")
        self.match, self.matcher = match, Matcher(ignore)
        self.redactor = redact or Redactor()
        self.meta = _header_meta(meta, self.redactor, self.matcher)
        self.base, self.episodes = base, episodes
        if base is not None:  # a fork: never into its base
            base.refuse(Path(local), self.url)
            self.meta["fork_of"] = str(base.path)
        self.closed = False
        opened = open_parts(
            Path(local), self.url, path, self.requested_mode, self.redactor, self.meta, fsync
        )
        self.path, self.index, self._sink = opened.path, opened.index, opened.sink
        self.mode = opened.mode if base is None else Mode.APPEND  # a fork serves and records
        self._steps = Steps()
        # (env_index, channel) checked: 1.3 µs a recorded call (bench/ab_replay.py, row c)
        self._keyed: set[tuple[EnvIndex, str]] = set()

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

    def _begin(
        self,
        request: Json,
        env_index: EnvIndex | None,
        channel: str,
        step: int | None,
        errors: ErrorCodec | None,
    ) -> Entry | Slot | None:
        """The entry to serve, the :class:`Slot` of a live call, or None inside a live call."""
        __tracebackhide__ = True  # pytest: show the caller, not this frame
        if self.closed or not isinstance(request, dict):
            self._refuse(request)
        replaying = self.mode is Mode.REPLAY  # (which calls no live, so none inside one)
        if not replaying and LIVE.get() is self:
            return None
        env = env_index if env_index is not None else EPISODE.get()
        if env is None:
            env = 0 if self.episodes is None else self.episodes.name(request)
        key = self._steps.next(env, channel, step)
        if not replaying:
            return self._take(key, request, errors)
        entry = self.index.entries.get(key)
        if entry is None:
            raise self._miss(key)
        self._check(entry, request)
        return entry

    def _refuse(self, request: object) -> None:
        if self.closed:
            raise CassetteError(f"{self.path} is closed; open it again to make more calls")
        raise CassetteError(
            f"a request must be a dict, not {type(request).__name__}; the adapter builds it"
        )

    def _check(self, entry: Entry, request: Json, got: str | None = None) -> None:
        """Raise unless ``entry`` may answer ``request`` (``got``: its hash, if known)."""
        __tracebackhide__ = True  # pytest: show the caller, not this frame
        if entry.broken is not None or not entry.checked:
            entry.check()
        if self.match != "strict":
            return
        if entry.sha is None:  # an eval-protocol line: the digest of its messages
            self.matcher.verify_entry(entry, request, self.mismatch_fix)
            return
        got = got or self.matcher.digest_parts(request, (entry.env_index, entry.channel))[0]
        if got != entry.sha:
            self.matcher.explain(entry, request, got, self.mismatch_fix)

    @property
    def mismatch_fix(self) -> str:
        """What a mismatch says to do: re-record, or serve by key alone."""
        return f"{self.fix}, or {self.by_key}"

    def _take(self, key: Key, request: Json, errors: ErrorCodec | None) -> Entry | Slot:
        """The entry append mode (or a fork's base) serves, else a live call's slot."""
        entry = self.index.entries.get(key) if self.mode is Mode.APPEND else None
        if entry is not None:
            self._check(entry, request)
            return entry
        slot = Slot(self, key, request, self._sink, errors)
        if self._sink is None:  # passthrough
            return slot
        env, channel, step = key
        if type(env) not in (int, str) or (env, channel) not in self._keyed:  # (False == 0)
            self._keyable(env, channel)  # (the step was checked as it was taken)
        self._steps.claim(key, self.path)
        try:
            slot.sha, slot.conversation = self.matcher.digest_parts(request, (env, channel))
            self.matcher.check_ignored(request)
        except CassetteError as exc:
            self._steps.give_back(key)
            raise CassetteError(
                f"cannot record step {step} of ({env!r}, {channel!r}): {exc}; nothing was sent"
            ) from None
        return slot if self.base is None else self._from_base(self.base, slot, request)

    def _keyable(self, env: EnvIndex, channel: str) -> None:
        """Refuse, before the first live call of an episode and channel, what the file cannot
        read back or what looks like a secret (a key is written as it is)."""
        check_key(env, channel, 0)
        self.redactor.check_key("env_index", env)
        self.redactor.check_key("channel", channel)
        self._keyed.add((env, channel))

    def _from_base(self, base: ForkBase, slot: Slot, request: Json) -> Entry | Slot:
        """A fork's call: the base's entry, copied into this cassette, or the live slot."""
        entry, point = base.take(slot.key, lambda e: self._check(e, request, slot.sha))
        if point is not None:
            env, channel, step = slot.key
            where = {"fork_of": str(base.path), "channel": channel, "step": step}
            self.call(where, lambda: dict(point), env_index=env, channel=FORK_CHANNEL, step=0)
        if entry is None:
            return slot
        slot.write(*entry.served(), 0.0)
        return entry

    def _miss(self, key: Key) -> CassetteMiss:
        env, channel, step = key
        if not self.path.exists():
            held = f"{self.url or self.path} does not exist"
        else:
            held = f"{self.url or self.path}: " + self.index.describe_episode(env)
            held += _nearest(env, self.index.episodes())
        return CassetteMiss(
            f"no recording for env_index={env!r} channel={channel!r} step={step}; {held}. "
            f"The code made a call the recording never saw: {self.fix}, or append mode to add it"
        )

    def _heard(self, env: EnvIndex, reply: Any) -> None:
        if self.episodes is not None:
            self.episodes.heard(env, reply)

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
        got = self._begin(request, env_index, channel, step, errors)
        if got is None:
            return live()
        response = got.run(live) if isinstance(got, Slot) else served(got, errors, self.fix)
        self._heard(got.env_index, response)
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
        got = self._begin(request, env_index, channel, step, errors)
        if got is None:
            return await live()
        response = await got.arun(live) if isinstance(got, Slot) else served(got, errors, self.fix)
        self._heard(got.env_index, response)
        return response

    def replayed(
        self,
        request: Json,
        *,
        env_index: EnvIndex | None = None,
        step: int | None = None,
        errors: ErrorCodec | None = None,
    ) -> Json | bytes:
        """:meth:`call` in replay mode, the response as the JSON bytes of its line where it
        can (``cassette serve`` sends them as they are: no decode, no encode)."""
        got = self._begin(request, env_index, "llm", step, errors)
        assert isinstance(got, Entry)  # replay: every call is served (or a miss raised)
        body = got.response_json()
        response = served(got, errors, self.fix) if body is None else body
        self._heard(got.env_index, response)
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
        got = self._begin(request, env_index, channel, step, errors)
        if got is None:
            return iter(live())
        if isinstance(got, Slot):
            return streaming.record(live, got.stream_done(assemble, self._heard), self)
        return streaming.replay(*self._replayed(got, errors))

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
        got = self._begin(request, env_index, channel, step, errors)
        if got is None:
            return live()
        if isinstance(got, Slot):
            return streaming.arecord(live, got.stream_done(assemble, self._heard), self)
        return streaming.areplay(*self._replayed(got, errors))

    def _replayed(
        self, entry: Entry, errors: ErrorCodec | None
    ) -> tuple[list[Json], Callable[[], BaseException] | None]:
        response, info = entry.served()  # (one decode of a lean line, not one for each)
        chunks = streaming.recorded_chunks(entry, self.fix, response)
        self._heard(entry.env_index, chunks)
        return chunks, None if info is None else lambda: load_error(info, errors, self.fix)

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

    def rewind(self, env_index: EnvIndex | None = None) -> None:
        """Replay an episode (every episode, when None) from its first step again (replay
        mode only): a client run twice against ``cassette serve`` gets the same answers."""
        if self.mode is not Mode.REPLAY:
            raise CassetteModeError(
                f"rewind replays an episode again, which a cassette in {self.mode.value} mode "
                "cannot do; open it with mode='replay'"
            )
        self._steps.restart(env_index)

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


def _header_meta(meta: Json | None, redactor: Redactor, matcher: Matcher) -> Json:
    """The header's ``meta``: the caller's, plus the redaction and ignore rules in force."""
    out = dict(meta or {})
    if redacting := redactor.described():  # the user's patterns, keywords, ...
        out.setdefault("redact", redacting)
    if matcher.ignore:
        out.setdefault("ignore", list(matcher.ignore))
    return out


def _nearest(env: EnvIndex, episodes: list[EnvIndex]) -> str:
    """``; the nearest recorded episode is 'NAME'`` for a missing named episode, or ""."""
    if not isinstance(env, str) or env in episodes:
        return ""
    names = [e for e in episodes if isinstance(e, str)]
    close = difflib.get_close_matches(env, names, n=1, cutoff=0.5)
    return f"; the nearest recorded episode is {close[0]!r}" if close else ""


def open(
    path: str | os.PathLike[str] | None = None,
    mode: Mode | str | None = None,
    *,
    match: str = "strict",
    ignore: Iterable[str] = (),
    redact: Redactor | None = None,
    meta: Json | None = None,
    fsync: bool = False,
    episodes: Episodes | None = None,
) -> Cassette:
    """Open a cassette. ``path`` defaults to ``$CASSETTE_PATH``; ``mode`` to
    ``$CASSETTE_MODE``, else ``auto`` (what ``cassette run`` sets for a command). With
    ``$CASSETTE_FORK_FROM`` set (``cassette fork``), a fork of that cassette, as
    :func:`fork` opens it, whatever ``mode``. ``episodes`` names the episodes of calls made
    outside :func:`cassette.episode` (else they are episode 0)."""
    return Cassette(
        path, mode, match=match, ignore=ignore, redact=redact, meta=meta, fsync=fsync,
        base=ForkBase.named(), episodes=episodes,
    )  # fmt: skip


def fork(
    path: str | os.PathLike[str] | None = None,
    *,
    from_cassette: str | os.PathLike[str] | None = None,
    fork_at: ForkAt = None,
    live_channels: Iterable[str] | None = None,
    fork_channel: str | None = None,
    **options: Any,
) -> Cassette:
    """Open ``path`` (default ``$CASSETTE_PATH``) as a fork of ``from_cassette`` (default
    ``$CASSETTE_FORK_FROM``): each episode replays from the base while its requests match,
    then goes live, and the new cassette records it all. ``fork_at``: ``{env: step}`` of
    channel ``fork_channel``, or ``callable(env, step)`` (default ``$CASSETTE_FORK_AT``,
    JSON); ``options`` go to the new cassette (``match``, ``ignore``, ``redact``, ``meta``)."""
    base = ForkBase.named(
        from_cassette, fork_at=fork_at, live_channels=live_channels, channel=fork_channel
    )
    if base is None:
        raise CassetteModeError(
            "a fork needs a base cassette: pass from_cassette=, or set CASSETTE_FORK_FROM"
        )
    return Cassette(path, Mode.RECORD, base=base, **options)
