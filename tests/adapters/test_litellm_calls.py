"""patch_litellm beyond completion: ``embedding``/``aembedding`` and ``text_completion``/
``atext_completion`` (streamed too), recorded by the real litellm over real HTTP to the
scripted server in random mode and replayed offline, three times, under a socket guard, as
litellm's own types; errors replay as litellm's exceptions."""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm: no fetch at import

from pathlib import Path
from typing import Any

import litellm
import openai
import pytest
from litellm import EmbeddingResponse, TextCompletionResponse
from litellm.text_completions.streaming_iterator import TextCompletionStreamWrapper

import cassette
from cassette import CassetteMismatch
from cassette.adapters.litellm import patch_litellm
from cassette.storage.index import load_index
from tests.helpers.chat import MakeServer
from tests.helpers.litellm_calls import KEY, args, router, run

pytestmark = pytest.mark.usefixtures("litellm_leftovers")

RIVER = ["a river", "the sea at night"]
EMBED = "openai/text-embedding-3-small"  # takes `dimensions`


def same(recorded: Any, replayed: Any) -> None:
    """Equal as litellm objects: type, fields, private state and dumps (lists item by item)."""
    if isinstance(recorded, list):
        assert len(replayed) == len(recorded)
        for a, b in zip(recorded, replayed, strict=True):
            same(a, b)
        return
    assert type(replayed) is type(recorded)
    assert replayed == recorded  # pydantic: fields, extra and private attributes
    assert replayed.model_dump() == recorded.model_dump()
    assert replayed._hidden_params == recorded._hidden_params
    assert replayed._response_ms == recorded._response_ms


def calls(base: str) -> list[Any]:
    """What a RAG step does: embed, then complete text, whole and streamed."""
    embedded = litellm.embedding(input=RIVER, dimensions=8, **args(base, model=EMBED))
    text = litellm.text_completion(prompt="A lake is", temperature=0.2, **args(base))
    stream = litellm.text_completion(prompt="A sea is", stream=True, **args(base))
    assert isinstance(stream, TextCompletionStreamWrapper)
    return [embedded, text, list(stream)]


async def acalls(base: str) -> list[Any]:
    embedded = await litellm.aembedding(input="a river", **args(base))
    text = await litellm.atext_completion(prompt=["A lake is"], max_tokens=8, **args(base))
    stream = await litellm.atext_completion(
        prompt="A sea is", stream=True, stream_options={"include_usage": True}, **args(base)
    )
    assert isinstance(stream, TextCompletionStreamWrapper)
    return [embedded, text, [chunk async for chunk in stream]]


def test_embedding_and_text_completion_replay_offline(
    make_server: MakeServer, path: Path, request: pytest.FixtureRequest
) -> None:
    server = make_server("random")
    with cassette.open(path, "record") as cas, patch_litellm(cas) as patch:
        recorded = calls(server.base_url)
        again = calls(server.base_url)  # random mode: a second live run answers otherwise
    assert patch.live_calls == 6 == server.request_count
    assert isinstance(recorded[0], EmbeddingResponse) and len(recorded[0].data) == 1
    assert isinstance(recorded[1], TextCompletionResponse) and recorded[1].choices[0].text
    assert all(type(c) is TextCompletionResponse for c in recorded[2])
    assert "".join(c.choices[0].text or "" for c in recorded[2]).strip()
    assert recorded[0].data != again[0].data and recorded[1].choices != again[1].choices
    base = server.base_url
    server.stop()
    text = path.read_text()
    assert KEY not in text and "127.0.0.1" not in text
    request.getfixturevalue("no_network")
    for _ in range(3):
        with cassette.open(path, "replay") as cas, patch_litellm(cas) as patch:
            replayed = calls(base)
            assert calls(base)[0].data == again[0].data  # the second run, in its order
        assert patch.live_calls == 0
        same(recorded, replayed)


def test_async_twins_replay_offline(
    make_server: MakeServer, path: Path, request: pytest.FixtureRequest
) -> None:
    server = make_server("random")
    with cassette.open(path, "record") as cas, patch_litellm(cas) as patch:
        recorded = run(acalls(server.base_url))
    assert patch.live_calls == 3 == server.request_count
    assert recorded[2][-1].usage.total_tokens > 0  # include_usage: the last chunk has it
    base = server.base_url
    server.stop()
    request.getfixturevalue("no_network")
    for _ in range(3):
        with cassette.open(path, "replay") as cas, patch_litellm(cas):
            replayed = run(acalls(base))
        same(recorded, replayed)


def test_the_requests_are_the_model_input_and_json_params(
    make_server: MakeServer, path: Path
) -> None:
    server = make_server("random")
    with cassette.open(path, "record") as cas, patch_litellm(cas):
        calls(server.base_url)
        run(acalls(server.base_url))
    requests = [e.request for _, e in sorted(load_index([path]).entries.items())]
    model = "openai/scripted"
    assert requests == [
        {"endpoint": "embedding", "model": EMBED, "input": RIVER, "dimensions": 8},
        {"endpoint": "text_completion", "model": model, "prompt": "A lake is",
         "temperature": 0.2},
        {"endpoint": "text_completion", "model": model, "prompt": "A sea is", "stream": True},
        {"endpoint": "embedding", "model": model, "input": "a river"},
        {"endpoint": "text_completion", "model": model, "prompt": ["A lake is"],
         "max_tokens": 8},
        {"endpoint": "text_completion", "model": model, "prompt": "A sea is", "stream": True,
         "stream_options": {"include_usage": True}},
    ]  # fmt: skip


def test_errors_replay_as_litellm_exceptions(
    make_server: MakeServer, path: Path, request: pytest.FixtureRequest
) -> None:
    server = make_server("random", errors={1: 503, 2: 401, 3: 429, 4: 404, 5: 400})

    async def astream(base: str) -> list[Any]:
        stream = await litellm.atext_completion(prompt="A sea is", stream=True, **args(base))
        return [chunk async for chunk in stream]  # fails here, not in the call, as live

    def failing(base: str) -> list[BaseException]:
        stream = litellm.text_completion(prompt="A sea is", stream=True, **args(base))
        raised = []
        for call in (
            lambda: litellm.embedding(input=RIVER, **args(base)),
            lambda: litellm.text_completion(prompt="A lake is", **args(base)),
            lambda: list(stream),  # fails here, not in the call, as live
            lambda: run(litellm.aembedding(input="a river", **args(base))),
            lambda: run(astream(base)),
        ):
            with pytest.raises(openai.APIStatusError) as info:
                call()
            raised.append(info.value)
        return raised

    with cassette.open(path, "record") as cas, patch_litellm(cas):
        recorded = failing(server.base_url)
    assert [type(e) for e in recorded] == [
        litellm.exceptions.AuthenticationError,
        litellm.exceptions.RateLimitError,
        litellm.exceptions.ServiceUnavailableError,  # the stream's: its request went first
        litellm.exceptions.NotFoundError,
        litellm.exceptions.BadRequestError,
    ]
    assert server.request_count == 5  # (the openai SDK under embedding retries 429s and 5xx)
    base = server.base_url
    server.stop()
    request.getfixturevalue("no_network")
    with cassette.open(path, "replay") as cas, patch_litellm(cas):
        replayed = failing(base)
    assert [type(e) for e in replayed] == [type(e) for e in recorded]
    for live, again in zip(recorded, replayed, strict=True):
        assert again.status_code == live.status_code  # type: ignore[attr-defined]
        assert str(again) == str(live)


def test_a_router_embeds_and_completes_text_offline(
    make_server: MakeServer, path: Path, request: pytest.FixtureRequest
) -> None:
    def routed(base: str) -> list[Any]:
        fast = router(base)
        embedded = fast.embedding(model="fast", input=RIVER)
        text = run(fast.atext_completion(model="fast", prompt="A lake is"))
        return [embedded, run(fast.aembedding(model="fast", input="x")), text]

    server = make_server("random")
    with cassette.open(path, "record") as cas, patch_litellm(cas):
        recorded = routed(server.base_url)
    base = server.base_url
    server.stop()
    request.getfixturevalue("no_network")
    for _ in range(3):  # the Router's ids and deployment ids stay out of the requests
        with cassette.open(path, "replay") as cas, patch_litellm(cas):
            same(recorded, routed(base))


def test_a_changed_input_is_a_mismatch(make_server: MakeServer, path: Path) -> None:
    server = make_server("random")
    with cassette.open(path, "record") as cas, patch_litellm(cas):
        litellm.embedding(input=RIVER, **args(server.base_url))
    with (
        cassette.open(path, "replay") as cas,
        patch_litellm(cas),
        pytest.raises(CassetteMismatch, match="input"),
    ):
        litellm.embedding(input=["another river"], **args(server.base_url))


def test_positional_arguments_are_named(make_server: MakeServer, path: Path) -> None:
    server = make_server("random")
    where = args(server.base_url)
    model = where.pop("model")
    with cassette.open(path, "record") as cas, patch_litellm(cas):
        litellm.text_completion("A lake is", model, **where)
        run(litellm.aembedding(model, ["a river"], **where))  # (*args, **kwargs): embedding's
        run(litellm.atext_completion("A sea is", model, **where))
    requests = [e.request for _, e in sorted(load_index([path]).entries.items())]
    assert requests == [
        {"endpoint": "text_completion", "model": model, "prompt": "A lake is"},
        {"endpoint": "embedding", "model": model, "input": ["a river"]},
        {"endpoint": "text_completion", "model": model, "prompt": "A sea is"},
    ]
