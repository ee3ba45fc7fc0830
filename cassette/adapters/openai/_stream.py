"""The streams of the ``create`` fast path: the SDK's own ``Stream`` / ``AsyncStream``
(same name), fed the cassette's chunk dicts as parsed events rather than as bytes to parse
again; the SDK's own loop (``[DONE]``, error events, chunk objects) runs as when live."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Iterator
from typing import Any, TypeVar

from openai import AsyncStream, Stream
from openai._streaming import ServerSentEvent

from ...types import Json
from .._common.http import SSE

__all__ = ["stream_class"]

_T = TypeVar("_T")


class _Parsed(ServerSentEvent):
    """A chunk as the event the SDK's stream reads: ``json()`` is the chunk itself."""

    def __init__(self, chunk: Json, event: str | None = None) -> None:
        super().__init__(event=event, data="")
        self._chunk = chunk

    def json(self) -> Any:
        return self._chunk


def _event(chunk: Json) -> ServerSentEvent:
    """The event a chunk dict was received as (see ``encode_event``)."""
    if SSE not in chunk and "type" not in chunk:  # (a chat chunk)
        return _Parsed(chunk)
    kept = chunk.get(SSE)
    if isinstance(kept, dict):
        return ServerSentEvent(event=kept.get("event"), data=str(kept.get("data", "")))
    kind = chunk.get("type")
    return _Parsed(chunk, kind if isinstance(kind, str) else None)


class _Events(Stream[_T]):
    def _iter_events(self) -> Iterator[ServerSentEvent]:
        source: Any = self.response.stream  # the rebuilt response's chunks (``byte_streams``)
        if source.first is not None:
            yield _event(source.first)
        for chunk in source.chunks:
            yield _event(chunk)


class _AsyncEvents(AsyncStream[_T]):
    async def _iter_events(self) -> AsyncIterator[ServerSentEvent]:
        source: Any = self.response.stream
        if source.first is not None:
            yield _event(source.first)
        async for chunk in source.chunks:
            yield _event(chunk)


for _cls, _base in ((_Events, Stream), (_AsyncEvents, AsyncStream)):
    _cls.__name__, _cls.__qualname__ = _base.__name__, _base.__qualname__
    _cls.__module__ = _base.__module__


@functools.lru_cache(maxsize=8)
def stream_class(chunk: Any, aio: bool) -> Any:
    """The stream class of a fast-path ``create(stream=True)`` of ``chunk`` objects."""
    return (_AsyncEvents if aio else _Events)[chunk]
