"""The current episode, a context variable (asyncio tasks inherit it; :func:`bind` and
:class:`ContextExecutor` carry it into threads), and :data:`LIVE`, the cassette whose live
call is running."""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, ParamSpec, Protocol, TypeVar

from ..types import EnvIndex, Json

__all__ = [
    "EPISODE", "LIVE", "ContextExecutor", "Episodes", "bind", "current_episode", "episode",
    "inside",
]  # fmt: skip

P = ParamSpec("P")
R = TypeVar("R")

EPISODE: contextvars.ContextVar[int | str | None] = contextvars.ContextVar(
    "cassette_episode", default=None
)
# the cassette whose live call runs here: a call on it from inside that call is part of it
LIVE: contextvars.ContextVar[object] = contextvars.ContextVar("cassette_live", default=None)


class Episodes(Protocol):
    """Names the episode of a call made outside any :func:`episode` (``episodes=``), and
    hears each reply (a response dict, its JSON bytes, or a stream's chunks) to a call it named."""

    def name(self, request: Json) -> EnvIndex: ...

    def heard(self, env_index: EnvIndex, reply: Any) -> None: ...


@contextmanager
def episode(env_index: int | str) -> Iterator[int | str]:
    """Calls made inside (in this thread or task) belong to episode ``env_index``."""
    if not isinstance(env_index, (int, str)) or isinstance(env_index, bool):
        raise TypeError(f"env_index must be an int or a str, not {type(env_index).__name__}")
    token = EPISODE.set(env_index)
    try:
        yield env_index
    finally:
        EPISODE.reset(token)


def current_episode() -> int | str | None:
    """The env_index set by the innermost :func:`episode`, or None."""
    return EPISODE.get()


def bind(fn: Callable[P, R]) -> Callable[P, R]:
    """Wrap ``fn`` to run in a copy of the caller's context (episode included), e.g.
    ``threading.Thread(target=cassette.bind(work))``."""
    ctx = contextvars.copy_context()

    @functools.wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        return ctx.copy().run(fn, *args, **kwargs)

    return run


class ContextExecutor(ThreadPoolExecutor):
    """A ThreadPoolExecutor whose tasks run in the context of the code that submitted them."""

    def submit(self, fn: Callable[..., R], /, *args: Any, **kwargs: Any) -> Future[R]:
        ctx = contextvars.copy_context()
        return super().submit(ctx.run, fn, *args, **kwargs)


def inside(owner: object, fn: Callable[..., R], *args: Any) -> R:
    """``fn(*args)`` as a live call of ``owner`` (calls on it meanwhile are part of it)."""
    token = LIVE.set(owner)
    try:
        return fn(*args)
    finally:
        LIVE.reset(token)
