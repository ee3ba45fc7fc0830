"""wrap_policy: pydantic answers rebuilt through their own constructor with their private
state, and iterator answers recorded as streams, replayed chunk by chunk."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from openai.types.chat import ChatCompletionChunk
from pydantic import BaseModel, PrivateAttr

import cassette
from cassette.adapters.policy import PolicyStream, wrap_policy

USER = [{"role": "user", "content": "hi"}]


class Reply(BaseModel):
    """A model whose constructor does work (as litellm's do) and that has private state."""

    text: str
    extra: str | None = None
    _hidden: dict[str, Any] = PrivateAttr(default_factory=dict)

    def __init__(self, **data: Any) -> None:
        super().__init__(**data)
        if self.extra is None:
            del self.extra  # a field the constructor drops, set again by its maker
        self._hidden["built"] = True


def make_reply(text: str) -> Reply:
    reply = Reply(text=text)
    reply.extra = None
    reply._hidden.update(cost=0.5, headers={"x-request-id": "req-1"})
    reply.__dict__["_ms"] = 12.5  # an attribute set on the instance, as litellm's _response_ms
    return reply


def chunk(i: int, text: str) -> ChatCompletionChunk:
    return ChatCompletionChunk.model_validate(
        {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
         "choices": [{"index": 0, "delta": {"content": f"{text}{i}"}, "finish_reason": None}]}
    )  # fmt: skip


class Streams:
    """Policies that return iterators, and what they were asked."""

    def __init__(self, text: str) -> None:
        self.text, self.calls, self.sent = text, 0, 0

    def dicts(self, messages: list[Any], tools: Any = None) -> Iterator[dict[str, Any]]:
        self.calls += 1
        for i in range(3):
            self.sent += 1
            yield {"delta": f"{self.text}{i}", "n": len(messages)}

    async def chunks(self, messages: list[Any], tools: Any = None) -> AsyncIterator[Any]:
        self.calls += 1
        for i in range(3):
            await asyncio.sleep(0)
            self.sent += 1
            yield chunk(i, self.text)

    def reply(self, messages: list[Any], tools: Any = None) -> Reply:
        self.calls += 1
        return make_reply(self.text)


def test_a_pydantic_answer_comes_back_through_its_constructor_with_private_state(
    tmp_path: Path,
) -> None:
    path = tmp_path / "run.jsonl"
    with cassette.open(path, "record") as cas:
        recorded = wrap_policy(Streams("live").reply, cas)(USER)
    other = Streams("other")
    with cassette.open(path, "replay") as cas:
        replayed = wrap_policy(other.reply, cas)(USER)
    assert other.calls == 0
    assert type(replayed) is Reply
    assert replayed == recorded  # fields, private state
    assert replayed.extra is None  # dropped by the constructor, put back
    assert replayed._hidden == {"built": True, "cost": 0.5, "headers": {"x-request-id": "req-1"}}
    assert replayed.__dict__["_ms"] == 12.5
    assert replayed.model_dump(exclude_unset=True) == recorded.model_dump(exclude_unset=True)


def test_a_sync_iterator_is_recorded_as_a_stream_and_replayed_chunk_by_chunk(
    tmp_path: Path,
) -> None:
    path = tmp_path / "run.jsonl"
    live = Streams("live")
    with cassette.open(path, "record") as cas:
        stream = wrap_policy(live.dicts, cas)(USER)
        assert isinstance(stream, PolicyStream)
        first = next(stream)
        assert live.sent == 1  # handed over as it arrives, not read whole first
        recorded = [first, *stream]
    line = json.loads(path.read_text().splitlines()[1])
    assert [c["delta"] for c in line["response"]["chunks"]] == ["live0", "live1", "live2"]
    other = Streams("other")
    for _ in range(3):
        with cassette.open(path, "replay") as cas:
            replayed = list(wrap_policy(other.dicts, cas)(USER))
        assert replayed == recorded == [{"delta": f"live{i}", "n": 1} for i in range(3)]
    assert other.calls == 0


def test_an_async_iterator_of_models_replays_the_same_chunk_types(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"

    async def consume(stream: Any) -> list[Any]:
        return [c async for c in stream]

    with cassette.open(path, "record") as cas:
        recorded = asyncio.run(consume(wrap_policy(Streams("live").chunks, cas)(USER)))
    with cassette.open(path, "replay") as cas:
        stream = wrap_policy(Streams("other").chunks, cas)(USER)
        with pytest.raises(TypeError, match="async for"):
            iter(stream)  # it was an async iterator: `for` is refused, as live
        replayed = asyncio.run(consume(stream))
    assert [type(c) for c in replayed] == [ChatCompletionChunk] * 3
    assert replayed == recorded


def test_append_mode_reads_a_new_stream_whole_and_hands_it_over(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with cassette.open(path, "append") as cas:
        wrapped = wrap_policy(Streams("live").dicts, cas)
        recorded = list(wrapped(USER))
    with cassette.open(path, "replay") as cas:
        assert list(wrap_policy(Streams("other").dicts, cas)(USER)) == recorded


def test_a_stream_that_fails_is_recorded_and_fails_on_replay(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"

    def broken(messages: list[Any], tools: Any = None) -> Iterator[dict[str, Any]]:
        yield {"delta": "a"}
        raise ValueError("model went away")

    with cassette.open(path, "record") as cas:
        stream = wrap_policy(broken, cas)(USER)
        assert next(stream) == {"delta": "a"}
        with pytest.raises(ValueError, match="went away"):
            next(stream)
    with cassette.open(path, "replay") as cas, pytest.raises(cassette.RecordedError) as info:
        list(wrap_policy(broken, cas)(USER))
    assert "went away" in str(info.value)


def test_chunks_keep_their_private_state_stored_as_differences(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"

    def replies(messages: list[Any], tools: Any = None) -> Iterator[Reply]:
        for i in range(4):
            reply = make_reply(f"part {i}")
            reply._hidden["at"] = i  # what differs from one chunk to the next
            if i == 3:
                reply._hidden.pop("headers")
            yield reply

    with cassette.open(path, "record") as cas:
        recorded = list(wrap_policy(replies, cas)(USER))
    chunks = json.loads(path.read_text().splitlines()[1])["response"]["chunks"]
    assert chunks[1]["$private"] == {"$diff": {"_hidden": {"$diff": {"at": 1}}}}
    assert chunks[3]["$private"]["$diff"]["_hidden"]["$diff"]["$gone"] == ["headers"]
    with cassette.open(path, "replay") as cas:
        replayed = list(wrap_policy(replies, cas)(USER))
    assert replayed == recorded
    assert [r._hidden for r in replayed] == [r._hidden for r in recorded]
