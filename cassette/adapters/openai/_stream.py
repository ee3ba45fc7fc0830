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
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, TypeVar

import pydantic
from openai import AsyncStream, Stream
from openai._streaming import ServerSentEvent

from ...types import Json
from .._common.http import HTTP, SSE
from ._http import Processor

__all__ = ["open_stream", "pending", "stream_class"]

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


class _Pending:
    """A stream's HTTP response until first read (rebuilding it costs as much as
    validating a chunk): what makes it, and the chunks (``first`` without its head)."""

    def __init__(self, make: Callable[[], Any], first: Json | None, chunks: Any) -> None:
        self.make, self.chunks, self.closed = make, chunks, False
        self.first = None if first is None or HTTP in first else first


def _response(stream: Any) -> Any:
    """A stream's ``response``: the rebuilt HTTP response, made when first read."""
    made = vars(stream)["_http"]
    if made is None:
        pending = vars(stream)["_pending"]
        made = vars(stream)["_http"] = pending.make()
        made.is_closed = pending.closed  # (the stream has closed its chunks)
    return made


def _set_response(stream: Any, value: Any) -> None:
    if not isinstance(value, _Pending):  # a response rebuilt at once (``byte_streams``)
        value, made = _Pending(lambda: None, value.stream.first, value.stream.chunks), value
    else:
        made = None
    vars(stream).update(_http=made, _pending=value)


async def _prepend(chunk: Json, chunks: AsyncIterator[Json]) -> AsyncIterator[Json]:
    yield chunk
    async for more in chunks:
        yield more


class _Events(Stream[_T]):
    _rest: Iterator[Json]  # the chunks not read yet
    _pending: _Pending

    def _iter_events(self) -> Iterator[ServerSentEvent]:
        return map(_event, self._rest)

    def __stream__(self) -> Iterator[_T]:
        pending = self._pending
        chunks = iter(pending.chunks)
        first = pending.first
        self._rest = chunks if first is None else itertools.chain((first,), chunks)
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
                        item = self._client._process_response_data(
                            data=chunk, cast_to=self._cast_to, response=self.response
                        )
                    yield item
                else:
                    return
            yield from super().__stream__()
        finally:
            if vars(self)["_http"] is None:
                pending.closed = True
                pending.chunks.close()
            else:
                self.response.close()


class _AsyncEvents(AsyncStream[_T]):
    _rest: AsyncIterator[Json]
    _pending: _Pending

    async def _iter_events(self) -> AsyncIterator[ServerSentEvent]:
        async for chunk in self._rest:
            yield _event(chunk)

    async def __stream__(self) -> AsyncIterator[_T]:
        pending = self._pending
        chunks, first = pending.chunks, pending.first
        self._rest = chunks if first is None else _prepend(first, chunks)
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
                        item = self._client._process_response_data(
                            data=chunk, cast_to=self._cast_to, response=self.response
                        )
                    yield item
                else:
                    return
            async for item in super().__stream__():
                yield item
        finally:
            if vars(self)["_http"] is None:
                pending.closed = True
                await pending.chunks.aclose()
            else:
                await self.response.aclose()


for _cls, _base in ((_Events, Stream), (_AsyncEvents, AsyncStream)):
    _cls.__name__, _cls.__qualname__ = _base.__name__, _base.__qualname__
    _cls.__module__ = _base.__module__
    _cls.response = property(_response, _set_response)  # type: ignore[assignment]


@functools.lru_cache(maxsize=8)
def stream_class(chunk: Any, aio: bool) -> Any:
    """The stream class of a fast-path ``create(stream=True)`` of ``chunk`` objects."""
    return (_AsyncEvents if aio else _Events)[chunk]


def open_stream(cls: Any, chunk: Any, http: Any, client: Any, options: Any) -> Any:
    """A stream of ``cls`` (from :func:`stream_class`) as the SDK's ``APIResponse.parse``
    makes it, over ``http``: a pending response (:func:`pending`)."""
    if _OPTIONS:
        return cls(cast_to=chunk, response=http, client=client, options=options)
    return cls(cast_to=chunk, response=http, client=client)


def pending(make: Callable[[], Any], first: Json | None, chunks: Any) -> Any:
    """The HTTP response ``make()`` rebuilds, of a stream of ``first`` and ``chunks``, made
    only when its stream's ``response`` is first read."""
    return _Pending(make, first, chunks)
