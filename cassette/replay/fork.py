"""Fork a recorded run: replay each episode from a base cassette while its requests match,
then call live from the first request that differs (or from a step you name) and record
everything into a new cassette that replays on its own.

.. code-block:: python

    with cassette.replay.fork("runs/b.jsonl", from_cassette="runs/a.jsonl", fork_at={17: 6}) as cas:
        client = wrap_openai(OpenAI(), cas)    # any adapter: wrap_openai, wrap_anthropic,
        ...                                    # wrap_policy, patch_tau2, mcp_session

- A call of an episode that has not forked is looked up in the base at the same key; if
  the base holds it and the request matches, the base's answer (or error) is served and
  copied into the new cassette. Otherwise the episode forks there: this call and every
  later call of the episode, on every channel, go live and are recorded.
- ``fork_at={env: step}`` forks episode ``env`` at step ``step`` of channel ``"llm"``
  (``fork_channel=``) even if the request matches; ``fork_at=callable(env, step) -> bool``
  for any rule.
- ``live_channels={"mcp"}``: calls on these channels always go live (a tool server whose
  state the prefix must rebuild); they still count as matching the base.
- Where each episode forked is recorded in the new cassette as one interaction on channel
  ``"fork"`` (step 0): ``{"base": path, "base_run": run id, "channel", "step", "why"}``.
  ``cassette diff BASE NEW`` shows them per episode (not as calls); :func:`fork_points`
  reads them.

``cassette fork BASE NEW -- cmd`` runs a command with ``$CASSETTE_FORK_FROM`` set, so the
cassettes it opens (and ``cassette run``'s zero-code recording) fork from BASE.
"""

from __future__ import annotations

import os
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson

from ..errors import CassetteMismatch, CassetteMiss
from ..format.runid import set_run_id
from ..storage.index import load_index
from ..types import Json
from .cassette import Cassette, Mode
from .context import current_episode
from .modes import FORCE_VARIABLE

__all__ = [
    "FORK_AT_VARIABLE",
    "FORK_CHANNEL",
    "FORK_VARIABLE",
    "ForkCassette",
    "fork",
    "fork_points",
]

FORK_CHANNEL = "fork"  # where the new cassette records each episode's fork point
FORK_VARIABLE = "CASSETTE_FORK_FROM"  # the base cassette of every cassette.open()
FORK_AT_VARIABLE = "CASSETTE_FORK_AT"  # JSON {"env": step} for fork_at
_UNFORCED = threading.Lock()
ForkAt = Mapping[Any, int] | Callable[[Any, int], bool] | None


class ForkCassette:
    """A cassette that serves from ``base`` while episodes match and records into ``new``;
    made by :func:`fork`. Adapters take it wherever they take a :class:`Cassette`."""

    mode = Mode.APPEND  # serves and records: adapters neither skip the server nor the base

    def __init__(
        self,
        new: Cassette,
        base: Cassette,
        *,
        fork_at: ForkAt = None,
        live_channels: Iterable[str] = (),
        channel: str = "llm",
    ) -> None:
        self.new, self.base = new, base
        self.fork_at, self.live_channels, self.channel = fork_at, frozenset(live_channels), channel
        headers = base.index.headers
        self.base_run = set_run_id(headers) if headers else None  # the base's run id
        self._lock = threading.Lock()
        self._steps: dict[tuple[Any, str], int] = {}
        self.forked: dict[Any, Json] = {}  # env -> where it forked

    def __getattr__(self, name: str) -> Any:
        return getattr(self.new, name)

    # -- lifecycle -------------------------------------------------------------------------
    def close(self) -> None:
        self.base.close()
        self.new.close()

    async def aclose(self) -> None:
        self.close()

    def __enter__(self) -> ForkCassette:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is not None and exc[0] is not GeneratorExit:
            self.new.abort(exc[1] if isinstance(exc[1], BaseException) else None)
            self.base.close()
        else:
            self.close()

    async def __aenter__(self) -> ForkCassette:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.__exit__(*exc)

    # -- the rule ----------------------------------------------------------------------------
    def _key(self, env_index: Any, channel: str, step: int | None) -> tuple[Any, int, bool]:
        """The call's episode and step, and whether it goes live."""
        env = env_index if env_index is not None else current_episode()
        env = 0 if env is None else env
        with self._lock:
            if step is None:
                step = self._steps.get((env, channel), 0)
            self._steps[(env, channel)] = step + 1
            live = env in self.forked or channel in self.live_channels
            if not live and channel == self.channel and self._named(env, step):
                self._fork(env, channel, step, "fork_at")
                live = True
        return env, step, live

    def _named(self, env: Any, step: int) -> bool:
        if self.fork_at is None:
            return False
        if callable(self.fork_at):
            return bool(self.fork_at(env, step))
        at = self.fork_at.get(env, self.fork_at.get(str(env)))
        return at is not None and step >= at

    def _fork(self, env: Any, channel: str, step: int, why: str) -> None:
        """Mark ``env`` as forked (the caller holds the lock) and record where."""
        point = {
            "base": str(self.base.path),
            "base_run": self.base_run,
            "channel": channel,
            "step": step,
            "why": why,
        }
        self.forked[env] = point
        self.new.call(
            {"fork_of": str(self.base.path), "channel": channel, "step": step},
            lambda: dict(point),
            env_index=env,
            channel=FORK_CHANNEL,
            step=0,
        )

    def _diverged(self, env: Any, channel: str, step: int, exc: Exception) -> None:
        why = "mismatch" if isinstance(exc, CassetteMismatch) else "not in the base"
        with self._lock:
            if env not in self.forked:
                self._fork(env, channel, step, why)

    # -- the cassette's calls --------------------------------------------------------------
    def call(
        self, request: Json, live: Callable[[], Json], *, env_index: Any = None,
        channel: str = "llm", step: int | None = None, errors: Any = None,
    ) -> Json:  # fmt: skip
        env, step, go_live = self._key(env_index, channel, step)
        where = {"env_index": env, "channel": channel, "step": step, "errors": errors}
        if not go_live:
            try:
                answer: Json = self.base.call(request, _never, **where)
            except (CassetteMiss, CassetteMismatch) as exc:
                self._diverged(env, channel, step, exc)
            except Exception as exc:  # noqa: BLE001 - the base's recorded error: copied
                return self.new.call(request, _raising(exc), **where)
            else:
                return self.new.call(request, lambda: answer, **where)
        return self.new.call(request, live, **where)

    async def acall(
        self, request: Json, live: Callable[[], Any], *, env_index: Any = None,
        channel: str = "llm", step: int | None = None, errors: Any = None,
    ) -> Json:  # fmt: skip
        env, step, go_live = self._key(env_index, channel, step)
        where = {"env_index": env, "channel": channel, "step": step, "errors": errors}
        if not go_live:
            try:
                answer: Json = await self.base.acall(request, _anever, **where)
            except (CassetteMiss, CassetteMismatch) as exc:
                self._diverged(env, channel, step, exc)
            except Exception as exc:  # noqa: BLE001 - the base's recorded error: copied
                return await self.new.acall(request, _araising(exc), **where)
            else:

                async def served() -> Json:
                    return answer

                return await self.new.acall(request, served, **where)
        return await self.new.acall(request, live, **where)

    def stream(
        self, request: Json, live: Callable[[], Iterable[Json]], *, env_index: Any = None,
        channel: str = "llm", step: int | None = None, assemble: Any = None, errors: Any = None,
    ) -> Iterator[Json]:  # fmt: skip
        env, step, go_live = self._key(env_index, channel, step)
        where = {"env_index": env, "channel": channel, "step": step, "errors": errors}
        if not go_live:
            try:
                chunks = self.base.stream(request, _never, assemble=assemble, **where)
            except (CassetteMiss, CassetteMismatch) as exc:
                self._diverged(env, channel, step, exc)
            else:
                return self.new.stream(request, lambda: chunks, assemble=assemble, **where)
        return self.new.stream(request, live, assemble=assemble, **where)

    def astream(
        self, request: Json, live: Callable[[], AsyncIterator[Json]], *, env_index: Any = None,
        channel: str = "llm", step: int | None = None, assemble: Any = None, errors: Any = None,
    ) -> AsyncIterator[Json]:  # fmt: skip
        env, step, go_live = self._key(env_index, channel, step)
        where = {"env_index": env, "channel": channel, "step": step, "errors": errors}
        if not go_live:
            try:
                chunks = self.base.astream(request, _anever_stream, assemble=assemble, **where)
            except (CassetteMiss, CassetteMismatch) as exc:
                self._diverged(env, channel, step, exc)
            else:
                return self.new.astream(request, lambda: chunks, assemble=assemble, **where)
        return self.new.astream(request, live, assemble=assemble, **where)


def _never() -> Any:  # pragma: no cover - a replaying base never calls live
    raise AssertionError("the base cassette of a fork called live")


async def _anever() -> Any:  # pragma: no cover
    raise AssertionError("the base cassette of a fork called live")


def _anever_stream() -> AsyncIterator[Json]:  # pragma: no cover
    raise AssertionError("the base cassette of a fork called live")


def _raising(exc: Exception) -> Callable[[], Json]:
    def live() -> Json:
        raise exc

    return live


def _araising(exc: Exception) -> Callable[[], Any]:
    async def live() -> Json:
        raise exc

    return live


def _fork_at_from_env() -> ForkAt:
    raw = os.environ.get(FORK_AT_VARIABLE)
    if not raw:
        return None
    named = orjson.loads(raw)
    return {(int(k) if str(k).lstrip("-").isdigit() else k): int(v) for k, v in named.items()}


def fork(
    path: str | os.PathLike[str] | None = None,
    *,
    from_cassette: str | os.PathLike[str] | None = None,
    fork_at: ForkAt = None,
    live_channels: Iterable[str] | None = None,
    fork_channel: str | None = None,
    **options: Any,
) -> ForkCassette:
    """Open ``path`` (default ``$CASSETTE_PATH``) as a fork of ``from_cassette`` (default
    ``$CASSETTE_FORK_FROM``); ``fork_at`` (steps of channel ``fork_channel``, e.g.
    ``"agent"`` under ``patch_tau2``) defaults to ``$CASSETTE_FORK_AT`` (JSON).
    ``options`` go to the new cassette (``match``, ``ignore``, ``redact``, ``meta``)."""
    from ..errors import CassetteModeError

    base_path = from_cassette or os.environ.get(FORK_VARIABLE)
    if not base_path:
        raise CassetteModeError(
            "a fork needs a base cassette: pass from_cassette=, or set CASSETTE_FORK_FROM"
        )
    if path is not None and Path(path).resolve() == Path(base_path).resolve():
        raise CassetteModeError(
            f"a fork cannot record into its base {base_path}; name another cassette for it"
        )
    meta = {**(options.pop("meta", None) or {}), "fork_of": str(base_path)}
    with _UNFORCED:  # CASSETTE_FORCE_MODE must not turn the base into a recording
        forced = os.environ.pop(FORCE_VARIABLE, None)
        try:
            base = Cassette(base_path, Mode.REPLAY, match=options.get("match", "strict"))
            new = Cassette(path, Mode.RECORD, meta=meta, **options)
        finally:
            if forced is not None:
                os.environ[FORCE_VARIABLE] = forced
    at = fork_at if fork_at is not None else _fork_at_from_env()
    if fork_channel is None:
        fork_channel = os.environ.get("CASSETTE_FORK_CHANNEL") or "llm"
    if live_channels is None:
        live_channels = [c for c in os.environ.get("CASSETTE_FORK_LIVE", "").split(",") if c]
    return ForkCassette(new, base, fork_at=at, live_channels=live_channels, channel=fork_channel)


def fork_points(path: str | os.PathLike[str]) -> dict[Any, Json]:
    """Where each episode of a forked cassette left its base: env -> fork point."""
    index = load_index([Path(path)])
    return {
        env: dict(entry.response or {})
        for (env, channel, _), entry in index.entries.items()
        if channel == FORK_CHANNEL
    }
