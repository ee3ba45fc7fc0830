"""A streamed ``chat.completions.create`` replays what the SDK yields and raises for the
recorded events, live, recorded and replayed alike: chunks, error events (with and
without a name or message), ``thread.*`` events, typed events, data that is not JSON,
``[DONE]`` before the end, a chunk the SDK builds leniently; sync and async."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

import openai
import pytest
from pydantic import BaseModel

import cassette
from cassette.adapters.openai import wrap_openai

NOWHERE = "http://127.0.0.1:9/v1"  # the discard port: nothing listens there
USER = [{"role": "user", "content": "hi"}]


def chunk(text: str, **extra: Any) -> str:
    delta = {"index": 0, "delta": {"content": text}, "finish_reason": None}
    body = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    return "data: " + json.dumps({**body, "choices": [delta], **extra})


EVENTS = {
    "plain": [chunk("a"), chunk("b"), "data: [DONE]"],
    "error data": [chunk("a"), 'data: {"error": {"message": "boom", "code": "x"}}', chunk("b")],
    "error event": [chunk("a"), 'event: error\ndata: {"error": {"message": "bad"}}', chunk("b")],
    "error, no message": [chunk("a"), 'data: {"error": {"code": 1}}'],
    "error, a string": [chunk("a"), 'data: {"error": "overloaded"}'],
    "error first": ['data: {"error": {"message": "at once"}}', chunk("a")],
    "thread event": [chunk("a"), 'event: thread.run.step\ndata: {"id": "s"}', chunk("b")],
    "typed event": [chunk("a"), 'event: ping\ndata: {"type": "ping"}', chunk("b")],
    "typed thread event": [
        chunk("a"),
        'event: thread.run.step\ndata: {"type": "thread.run.step"}',
        chunk("b"),
    ],
    "named chunk": [chunk("a"), "event: extra\n" + chunk("b")],
    "not json": [chunk("a"), "data: not json", chunk("b")],
    "done early": [chunk("a"), "data: [DONE]", chunk("b")],
    "empty error": [chunk("a"), 'data: {"error": null}', chunk("b", error="")],
    "chunk not valid": [chunk("a"), chunk("b", created="soon"), chunk("c")],  # (lenient)
}


def seen(item: Any) -> Any:
    return (
        item.model_dump(mode="json", warnings=False) if isinstance(item, BaseModel) else repr(item)
    )


def failure(exc: Exception) -> tuple[str, str, Any]:
    return type(exc).__name__, str(exc), getattr(exc, "body", None)


def outcome(stream: Iterable[Any]) -> list[Any]:
    """What reading ``stream`` gives: each item, then the error it raised, if any."""
    got: list[Any] = []
    try:
        with stream:  # type: ignore[attr-defined]
            for item in stream:
                got.append(seen(item))
    except (openai.APIError, ValueError) as exc:  # (not JSON: the SDK's JSONDecodeError)
        got.append(failure(exc))
    return got


async def aoutcome(stream: AsyncIterator[Any]) -> list[Any]:
    got: list[Any] = []
    try:
        async with stream:  # type: ignore[attr-defined]
            async for item in stream:
                got.append(seen(item))
    except (openai.APIError, ValueError) as exc:  # (not JSON: the SDK's JSONDecodeError)
        got.append(failure(exc))
    return got


def create(client: Any) -> Any:
    return client.chat.completions.create(model="m", messages=USER, stream=True)


@pytest.mark.parametrize("events", EVENTS.values(), ids=EVENTS.keys())
def test_a_replayed_stream_yields_and_raises_as_the_sdk_live(
    event_server: Any, path: Path, events: list[str]
) -> None:
    event_server.serve(events, times=2)
    with openai.OpenAI(base_url=event_server.base_url, api_key="k", max_retries=0) as client:
        live = outcome(create(client))
        with cassette.open(path, mode="record") as cas:
            assert outcome(create(wrap_openai(client, cas))) == live
    assert live
    with (
        openai.OpenAI(base_url=NOWHERE, api_key="k", max_retries=0) as dead,
        cassette.open(path, mode="replay") as cas,
    ):
        stream = create(wrap_openai(dead, cas))
        assert type(stream).__name__ == "Stream"
        assert not stream.response.is_closed
        assert stream.response.headers["content-type"] == "text/event-stream"
        assert stream.response.headers["x-request-id"] == "req_events"
        assert str(stream.response.request.url) == NOWHERE + "/chat/completions"
        assert outcome(stream) == live
        assert stream.response.is_closed


@pytest.mark.parametrize("events", EVENTS.values(), ids=EVENTS.keys())
def test_an_async_replayed_stream_yields_and_raises_as_the_sdk_live(
    event_server: Any, path: Path, events: list[str]
) -> None:
    event_server.serve(events, times=2)

    async def run(url: str, mode: str | None) -> list[Any]:
        async with openai.AsyncOpenAI(base_url=url, api_key="k", max_retries=0) as client:
            if mode is None:
                return await aoutcome(await create(client))
            async with cassette.open(path, mode=mode) as cas:
                stream = await create(wrap_openai(client, cas))
                assert type(stream).__name__ == "AsyncStream"
                return await aoutcome(stream)

    live = asyncio.run(run(event_server.base_url, None))
    assert asyncio.run(run(event_server.base_url, "record")) == live
    assert asyncio.run(run(NOWHERE, "replay")) == live


def test_a_replayed_stream_read_or_closed_has_its_response_closed(
    event_server: Any, path: Path
) -> None:
    event_server.serve([chunk("a"), chunk("b"), chunk("c")], times=2)
    with (
        openai.OpenAI(base_url=event_server.base_url, api_key="k", max_retries=0) as client,
        cassette.open(path, mode="record") as cas,
    ):
        wrapped = wrap_openai(client, cas)
        assert len(list(create(wrapped))) == 3
        with create(wrapped) as stream:
            next(stream)
    with (
        openai.OpenAI(base_url=NOWHERE, api_key="k", max_retries=0) as dead,
        cassette.open(path, mode="replay") as cas,
    ):
        wrapped = wrap_openai(dead, cas)
        stream = create(wrapped)
        assert len(list(stream)) == 3  # its response read only once the stream has ended
        assert stream.response.is_closed
        assert stream.response.headers["x-request-id"] == "req_events"
        assert stream.response.status_code == 200
        with create(wrapped) as stream:
            assert next(stream).choices[0].delta.content == "a"
        assert stream.response.is_closed
        assert list(stream) == []
