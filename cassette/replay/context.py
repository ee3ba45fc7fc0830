"""The current episode: ``with cassette.episode(3): ...`` keys the calls made inside it.

It is a context variable, so asyncio tasks inherit it; a plain thread does not, so
:func:`bind` and :class:`ContextExecutor` carry it into worker threads.
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, ParamSpec, TypeVar

__all__ = ["ContextExecutor", "bind", "current_episode", "episode"]

P = ParamSpec("P")
R = TypeVar("R")

_EPISODE: contextvars.ContextVar[int | str | None] = contextvars.ContextVar(
    "cassette_episode", default=None
)


@contextmanager
def episode(env_index: int | str) -> Iterator[int | str]:
    """Calls made inside (in this thread or task) belong to episode ``env_index``."""
    if not isinstance(env_index, (int, str)) or isinstance(env_index, bool):
        raise TypeError(f"env_index must be an int or a str, not {type(env_index).__name__}")
    token = _EPISODE.set(env_index)
    try:
        yield env_index
    finally:
        _EPISODE.reset(token)


def current_episode() -> int | str | None:
    """The env_index set by the innermost :func:`episode`, or None."""
    return _EPISODE.get()


def bind(fn: Callable[P, R]) -> Callable[P, R]:
    """Wrap ``fn`` to run in a copy of the caller's context (episode included).

    ``threading.Thread(target=cassette.bind(work))`` or ``loop.run_in_executor(None,
    cassette.bind(work))`` then sees the episode that was current where ``bind`` was called.
    """
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
