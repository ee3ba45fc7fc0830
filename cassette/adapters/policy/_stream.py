"""Iterators that a wrapped policy returns: recorded as streams, replayed chunk by chunk as
the same kind of iterator (a litellm ``CustomStreamWrapper`` comes back as one)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any, cast

from pydantic import BaseModel

from ...types import Json
from .._common.objects import STREAM_KEY, Tee, TeeStream, plain, type_path

__all__ = ["PolicyStream", "replayed_stream", "stream_of", "teed"]

_LITELLM_STREAM = "litellm.litellm_core_utils.streaming_handler:CustomStreamWrapper"


class PolicyStream(TeeStream):
    """An iterator a wrapped policy returned (live, or rebuilt on replay), iterating as the
    policy's did; other attributes are the live iterator's."""

    def __init__(
        self, source: Iterator[Json] | AsyncIterator[Json], tee: Tee, info: Json, live: Any
    ) -> None:
        super().__init__(source, tee, live)
        self._sync, self._aio = bool(info.get("sync", True)), bool(info.get("async", True))

    def __iter__(self) -> PolicyStream:
        if not (self._sync and isinstance(self._source, Iterator)):
            raise TypeError("this stream is asynchronous; use `async for`")
        return self

    def __aiter__(self) -> PolicyStream:
        if not self._aio:
            raise TypeError("this stream is synchronous; use `for`")
        return self

    def __enter__(self) -> PolicyStream:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def __aenter__(self) -> PolicyStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __getattr__(self, name: str) -> Any:
        live = self.__dict__.get("_live")
        if live is None or name.startswith("__"):
            raise AttributeError(name)
        return getattr(live, name)


def teed(result: Any) -> tuple[Tee, Json] | None:
    """The tee and description (type, sync, async) of an iterator; None for an answer."""
    if isinstance(result, (dict, list, tuple, str, bytes, BaseModel)):
        return None
    cls = type(result)
    info = {
        "type": type_path(result),
        "sync": hasattr(cls, "__next__"),
        "async": hasattr(cls, "__anext__"),
    }
    if not (info["sync"] or info["async"]):
        return None
    if info["type"] != _LITELLM_STREAM:
        return Tee(head=lambda: info), info
    from ..litellm import LiteLLMTee

    tee = LiteLLMTee(None)
    tee.head = lambda: {**tee.stream_head(result), **info}
    return tee, info


def stream_of(
    source: Iterator[Json] | AsyncIterator[Json], tee: Tee, info: Json, live: Any = None
) -> Any:
    """The iterator the caller gets: a litellm stream as a ``CustomStreamWrapper``."""
    if info.get("type") != _LITELLM_STREAM:
        return PolicyStream(source, tee, info, live)
    from ..litellm import LiteLLMStream, LiteLLMTee

    if live is None:  # replay: the first chunk holds the stream's state
        first = next(cast(Iterator[Json], source), None)
        if first is not None:
            return LiteLLMStream(source, LiteLLMTee(None), first=first)
    return LiteLLMStream(source, tee, live=live)


def replayed_stream(response: Json) -> Any:
    chunks = cast(list[Json], plain(response["chunks"]))
    head = chunks[0].get(STREAM_KEY) if chunks and isinstance(chunks[0], dict) else None
    return stream_of(iter(chunks), Tee(), head if isinstance(head, dict) else {})
