"""Iterators that a wrapped policy returns: recorded as streams, replayed chunk by chunk as
the same kind of iterator (a litellm ``CustomStreamWrapper`` comes back as one)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any, cast

from pydantic import BaseModel

from ...types import Json
from .._common.objects import STREAM_KEY, Tee, TeeStream, plain, type_path

__all__ = [
    "PolicyStream",
    "replayed_stream",
    "stream_info",
    "stream_kind",
    "stream_of",
    "stream_tee",
]

_LITELLM_STREAM = "litellm.litellm_core_utils.streaming_handler:CustomStreamWrapper"


class PolicyStream(TeeStream):
    """An iterator that a wrapped policy returned: while recording it hands over the live
    chunks (other attributes are the live iterator's); on replay it yields the recorded
    chunks rebuilt as their types. Iterate it as the policy's iterator was iterated."""

    def __init__(
        self,
        source: Iterator[Json] | AsyncIterator[Json],
        tee: Tee,
        *,
        sync: bool = True,
        aio: bool = True,
        live: Any = None,
    ) -> None:
        super().__init__(source, tee, live)
        self._sync, self._aio = sync, aio

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


def stream_kind(result: Any) -> tuple[bool, bool] | None:
    """(sync, async) iteration of an iterator result; None for an answer."""
    if isinstance(result, (dict, list, tuple, str, bytes, BaseModel)):
        return None
    cls = type(result)
    sync, aio = hasattr(cls, "__next__"), hasattr(cls, "__anext__")
    return (sync, aio) if sync or aio else None


def stream_tee(result: Any, info: Json) -> Tee:
    """The tee of a stream that a policy returned (``info``: :func:`stream_info`)."""
    if info["type"] == _LITELLM_STREAM:
        from ..litellm import LiteLLMTee

        tee: Tee = LiteLLMTee(None)
        tee.head = lambda: {**cast(Any, tee).stream_head(result), **info}
        return tee
    return Tee(head=lambda: info)


def stream_of(
    source: Iterator[Json] | AsyncIterator[Json], tee: Tee, info: Json, live: Any = None
) -> Any:
    if info.get("type") == _LITELLM_STREAM:
        from ..litellm import LiteLLMStream, LiteLLMTee

        if live is None:  # replay: the first chunk holds the stream's state
            tee = LiteLLMTee(None)
            first = next(cast(Iterator[Json], source), None)
            if first is not None:
                return LiteLLMStream(source, tee, first=first)
        return LiteLLMStream(source, tee, live=live)
    sync, aio = bool(info.get("sync", True)), bool(info.get("async", True))
    return PolicyStream(source, tee, sync=sync, aio=aio, live=live)


def replayed_stream(response: Json) -> Any:
    chunks = cast(list[Json], plain(response["chunks"]))
    head = chunks[0].get(STREAM_KEY) if chunks and isinstance(chunks[0], dict) else None
    return stream_of(iter(chunks), Tee(), head if isinstance(head, dict) else {})


def stream_info(result: Any, kind: tuple[bool, bool]) -> Json:
    return {"type": type_path(result), "sync": kind[0], "async": kind[1]}
