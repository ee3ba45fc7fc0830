"""The streams of the ``create`` fast path: the SDK's own ``Stream`` / ``AsyncStream``
(same name) over the cassette's chunk dicts. A plain chat chunk goes to the client's
``_process_response_data`` as the SDK's loop sends it; from the first other event on (one
kept as it came, a typed one, one with an ``"error"``, or options that change the loop),
the SDK's own loop reads the rest, fed them as parsed events: its errors, ``thread.*``
events and ``[DONE]`` are its own."""

from __future__ import annotations

import contextlib
import functools
import inspect
import itertools
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, TypeVar

import pydantic
from openai import AsyncStream, Stream
from openai._streaming import ServerSentEvent

from ...types import Json
from .._common.http import HTTP, SSE
from ._http import Processor

__all__ = ["open_stream", "stream_class"]

_T = TypeVar("_T")
_OTHER: Any = object()  # (an event the SDK's own loop reads)
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


def _item(stream: Any, validate: Any, chunk: Json) -> Any:
    """What the SDK's loop yields for a plain chunk; ``_OTHER`` for any other event."""
    if validate is None or SSE in chunk or "type" in chunk or chunk.get("error"):
        return _OTHER
    try:
        return validate(chunk)
    except pydantic.ValidationError:  # the SDK's own way: constructed leniently
        process: Processor = stream._client._process_response_data  # (else no validate)
        return process.sdks(data=chunk, cast_to=stream._cast_to, response=stream.response)


class _Pending:
    """A stream's HTTP response until first read (rebuilding it costs as much as
    validating a chunk): what makes it, and the chunks (``first`` without its head)."""

    def __init__(self, make: Callable[[], Any], first: Json | None, chunks: Any) -> None:
        self.make, self.chunks, self.closed = make, chunks, False
        self.made: Any = None
        self.first = None if first is None or HTTP in first else first

    def response(self) -> Any:
        """The HTTP response, made now if not yet."""
        if self.made is None:
            self.made = self.make()
            self.made.is_closed = self.closed  # (the stream has closed its chunks)
        return self.made

    def close(self) -> None:
        """Close the response if made, else its chunks."""
        if self.made is not None:
            self.made.close()
        else:
            self.closed = True
            self.chunks.close()

    async def aclose(self) -> None:
        if self.made is not None:
            await self.made.aclose()
        else:
            self.closed = True
            await self.chunks.aclose()


def _set_response(stream: Any, value: Any) -> None:
    if not isinstance(value, _Pending):  # a response rebuilt at once (``byte_streams``)
        made, value = value, _Pending(lambda: None, value.stream.first, value.stream.chunks)
        value.made = made
    vars(stream)["_pending"] = value


async def _chained(first: Json | None, chunks: AsyncIterator[Json]) -> AsyncIterator[Json]:
    if first is not None:
        yield first
    async for chunk in chunks:
        yield chunk


class _Events(Stream[_T]):
    _rest: Iterator[Json]  # the chunks not read yet
    _pending: _Pending

    def _iter_events(self) -> Iterator[ServerSentEvent]:
        return map(_event, self._rest)

    def close(self) -> None:  # (the SDK's would make the response only to close it)
        self._pending.close()

    def __stream__(self) -> Iterator[_T]:
        pending, validate = self._pending, _validation(self)
        first = () if pending.first is None else (pending.first,)
        rest = self._rest = itertools.chain(first, pending.chunks)
        try:
            for chunk in rest:
                item = _item(self, validate, chunk)
                if item is _OTHER:  # the SDK's own loop from here on
                    self._rest = itertools.chain((chunk,), rest)
                    yield from super().__stream__()
                    return
                yield item
        finally:
            pending.close()


class _AsyncEvents(AsyncStream[_T]):
    _rest: AsyncIterator[Json]
    _pending: _Pending

    async def _iter_events(self) -> AsyncIterator[ServerSentEvent]:
        async for chunk in self._rest:
            yield _event(chunk)

    async def close(self) -> None:  # (the SDK's would make the response only to close it)
        await self._pending.aclose()

    async def __stream__(self) -> AsyncIterator[_T]:
        pending, validate = self._pending, _validation(self)
        rest = self._rest = _chained(pending.first, pending.chunks)
        try:
            async for chunk in rest:
                item = _item(self, validate, chunk)
                if item is _OTHER:
                    self._rest = _chained(chunk, rest)
                    sdk: Any = super().__stream__()
                    async with contextlib.aclosing(sdk):  # (closed with this one)
                        async for item in sdk:
                            yield item
                    return
                yield item
        finally:
            await pending.aclose()


for _cls, _base in ((_Events, Stream), (_AsyncEvents, AsyncStream)):
    _cls.__name__, _cls.__qualname__ = _base.__name__, _base.__qualname__
    _cls.__module__ = _base.__module__
    _cls.response = property(lambda self: self._pending.response(), _set_response)  # type: ignore[assignment]


@functools.lru_cache(maxsize=8)
def stream_class(chunk: Any, aio: bool) -> Any:
    """The stream class of a fast-path ``create(stream=True)`` of ``chunk`` objects."""
    return (_AsyncEvents if aio else _Events)[chunk]


def open_stream(cls: Any, chunk: Any, client: Any, options: Any, *http: Any) -> Any:
    """A stream of ``cls`` (from :func:`stream_class`) as the SDK's ``APIResponse.parse``
    makes it, its HTTP response ``make()`` made when first read: ``http`` is ``(make,
    first, chunks)``, the chunks it rebuilds."""
    response = _Pending(*http)
    if _OPTIONS:
        return cls(cast_to=chunk, response=response, client=client, options=options)
    return cls(cast_to=chunk, response=response, client=client)
