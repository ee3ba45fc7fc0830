"""The streams of the ``create`` fast path: the SDK's own ``Stream`` / ``AsyncStream``
(same name) over the cassette's chunk dicts. A plain chat chunk goes to the client's
``_process_response_data`` as the SDK's loop sends it; from the first other event on (one
kept as it came, a typed one, one with an ``"error"``, or options that change the loop),
the SDK's own loop reads the rest, fed them as parsed events: its errors, ``thread.*``
events and ``[DONE]`` are its own."""

from __future__ import annotations

import functools
import inspect
import itertools
from collections.abc import AsyncIterator, Iterator
from typing import Any, TypeVar

import pydantic
from openai import AsyncStream, Stream
from openai._streaming import ServerSentEvent

from ...types import Json
from .._common.http import SSE
from ._http import Processor

__all__ = ["open_stream", "stream_class"]

_T = TypeVar("_T")
_OPTIONS = "options" in inspect.signature(Stream.__init__).parameters  # (not in openai 1.x)


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


def _validation(stream: Any) -> Any:
    """What the SDK's loop does with a plain chunk (an unnamed event, no ``"error"``), when
    that is only the wrapped client's pydantic validation; else None."""
    process, options = stream._client._process_response_data, getattr(stream, "_options", None)
    if not isinstance(process, Processor) or getattr(options, "synthesize_event_and_data", None):
        return None
    return process.validator(stream._cast_to)


def _source(response: Any) -> Any:
    """The rebuilt response's byte stream: its ``first`` chunk and the other ``chunks``."""
    return response.stream  # (``byte_streams``)


async def _prepend(chunk: Json, chunks: AsyncIterator[Json]) -> AsyncIterator[Json]:
    yield chunk
    async for more in chunks:
        yield more


class _Events(Stream[_T]):
    _rest: Iterator[Json]  # the chunks not read yet

    def _iter_events(self) -> Iterator[ServerSentEvent]:
        return map(_event, self._rest)

    def __stream__(self) -> Iterator[_T]:
        response, source = self.response, _source(self.response)
        chunks = iter(source.chunks)
        self._rest = chunks if source.first is None else itertools.chain((source.first,), chunks)
        process, cast_to = self._client._process_response_data, self._cast_to
        validate = _validation(self)
        try:
            if validate is not None:
                for chunk in self._rest:
                    if SSE in chunk or "type" in chunk or chunk.get("error"):  # (not plain)
                        self._rest = itertools.chain((chunk,), self._rest)
                        break
                    try:
                        item = validate(chunk)
                    except pydantic.ValidationError:
                        item = process(data=chunk, cast_to=cast_to, response=response)
                    yield item
                else:
                    return
            yield from super().__stream__()
        finally:
            response.close()


class _AsyncEvents(AsyncStream[_T]):
    _rest: AsyncIterator[Json]

    async def _iter_events(self) -> AsyncIterator[ServerSentEvent]:
        async for chunk in self._rest:
            yield _event(chunk)

    async def __stream__(self) -> AsyncIterator[_T]:
        response, source = self.response, _source(self.response)
        chunks = source.chunks
        self._rest = chunks if source.first is None else _prepend(source.first, chunks)
        process, cast_to = self._client._process_response_data, self._cast_to
        validate = _validation(self)
        try:
            if validate is not None:
                async for chunk in self._rest:
                    if SSE in chunk or "type" in chunk or chunk.get("error"):  # (not plain)
                        self._rest = _prepend(chunk, self._rest)
                        break
                    try:
                        item = validate(chunk)
                    except pydantic.ValidationError:
                        item = process(data=chunk, cast_to=cast_to, response=response)
                    yield item
                else:
                    return
            async for item in super().__stream__():
                yield item
        finally:
            await response.aclose()


for _cls, _base in ((_Events, Stream), (_AsyncEvents, AsyncStream)):
    _cls.__name__, _cls.__qualname__ = _base.__name__, _base.__qualname__
    _cls.__module__ = _base.__module__


@functools.lru_cache(maxsize=8)
def stream_class(chunk: Any, aio: bool) -> Any:
    """The stream class of a fast-path ``create(stream=True)`` of ``chunk`` objects."""
    return (_AsyncEvents if aio else _Events)[chunk]


def open_stream(cls: Any, chunk: Any, response: Any, client: Any, options: Any) -> Any:
    """A stream of ``cls`` (from :func:`stream_class`) as the SDK's ``APIResponse.parse``
    makes it."""
    if _OPTIONS:
        return cls(cast_to=chunk, response=response, client=client, options=options)
    return cls(cast_to=chunk, response=response, client=client)
