"""Streams for :mod:`cassette.adapters.openai`: the SDK's Stream types fed from a cassette,
and the functions that assemble a recorded stream into a readable message."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, TypeVar

from openai import AsyncOpenAI, AsyncStream, OpenAI, Stream

__all__ = ["CassetteAsyncStream", "CassetteStream", "assemble_chat", "assemble_response", "dump"]

T = TypeVar("T")
Json = dict[str, Any]


def dump(item: Any) -> Json:
    """The JSON an SDK object was built from: the keys the server sent, by their API names."""
    if isinstance(item, dict):
        return item
    data: Json = item.model_dump(mode="json", by_alias=True, exclude_unset=True, warnings=False)
    return data


class CassetteStream(Stream[T]):
    """An ``openai.Stream`` whose chunks come from :meth:`cassette.Cassette.stream`.

    ``first`` is the chunk already taken from ``chunks`` (so that ``create`` raises where the
    SDK raises); ``build`` turns a chunk dict into the SDK's own chunk type.
    """

    def __init__(
        self,
        *,
        cast_to: Any,
        response: Any,
        client: OpenAI,
        chunks: Iterator[Json],
        first: Json | None,
        build: Callable[[Json], T],
    ) -> None:
        self._chunks, self._first, self._build = chunks, first, build
        super().__init__(cast_to=cast_to, response=response, client=client)

    def __stream__(self) -> Iterator[T]:
        first, self._first = self._first, None
        if first is None:
            return
        yield self._build(first)
        for chunk in self._chunks:
            yield self._build(chunk)

    def close(self) -> None:
        """Stop: a recording made so far is kept (marked incomplete); the response closes."""
        close = getattr(self._chunks, "close", None)
        if close is not None:
            close()
        self.response.close()


class CassetteAsyncStream(AsyncStream[T]):
    """The async twin of :class:`CassetteStream` (``async for``, ``async with``)."""

    def __init__(
        self,
        *,
        cast_to: Any,
        response: Any,
        client: AsyncOpenAI,
        chunks: AsyncIterator[Json],
        first: Json | None,
        build: Callable[[Json], T],
    ) -> None:
        self._chunks, self._first, self._build = chunks, first, build
        super().__init__(cast_to=cast_to, response=response, client=client)

    async def __stream__(self) -> AsyncIterator[T]:
        first, self._first = self._first, None
        if first is None:
            return
        yield self._build(first)
        async for chunk in self._chunks:
            yield self._build(chunk)

    async def close(self) -> None:
        aclose = getattr(self._chunks, "aclose", None)
        if aclose is not None:
            await aclose()
        await self.response.aclose()


def assemble_chat(chunks: list[Json]) -> Json:
    """The assistant message of choice 0, merged from the deltas of a chat stream."""
    message: Json = {"role": "assistant", "content": None}
    content: list[str] = []
    refusal: list[str] = []
    calls: dict[int, Json] = {}
    for chunk in chunks:
        for choice in chunk.get("choices") or ():
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            if delta.get("role"):
                message["role"] = delta["role"]
            if isinstance(delta.get("content"), str):
                content.append(delta["content"])
            if isinstance(delta.get("refusal"), str):
                refusal.append(delta["refusal"])
            for call in delta.get("tool_calls") or ():
                slot = calls.setdefault(
                    call.get("index", len(calls)),
                    {"id": None, "type": "function", "function": {"name": "", "arguments": ""}},
                )
                if call.get("id"):
                    slot["id"] = call["id"]
                if call.get("type"):
                    slot["type"] = call["type"]
                function = call.get("function") or {}
                for key in ("name", "arguments"):
                    if isinstance(function.get(key), str):
                        slot["function"][key] += function[key]
    if content:
        message["content"] = "".join(content)
    if refusal:
        message["refusal"] = "".join(refusal)
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return message


_FINAL_EVENTS = ("response.completed", "response.incomplete", "response.failed")


def assemble_response(chunks: list[Json]) -> Json:
    """The final response of a Responses API stream (from its last terminal event)."""
    for event in reversed(chunks):
        if event.get("type") in _FINAL_EVENTS and isinstance(event.get("response"), dict):
            response: Json = event["response"]
            return response
    return {}
