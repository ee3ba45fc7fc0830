"""The scripted server's endpoints beyond chat, Responses and Messages (embeddings, legacy
completions, ...), driven by the real ``openai`` SDK: legacy completions stream as SSE, and
these endpoints are counted, kept and failed like the chat ones."""

from __future__ import annotations

from collections.abc import Iterator

import openai
import pytest
from openai import OpenAI

from cassette.testing.server import ScriptedServer
from tests.helpers.chat import MakeServer


@pytest.fixture
def clients() -> Iterator[list[OpenAI]]:
    made: list[OpenAI] = []
    yield made
    for client in made:
        client.close()


def client_of(server: ScriptedServer, clients: list[OpenAI]) -> OpenAI:
    clients.append(OpenAI(base_url=server.base_url, api_key="test-key", max_retries=0))
    return clients[-1]


def test_legacy_completions_stream_the_text_they_answer_whole(
    make_server: MakeServer, clients: list[OpenAI]
) -> None:
    server = make_server("script", chunk_words=1)
    client = client_of(server, clients)
    whole = client.completions.create(model="c", prompt="A lake is")
    assert whole.choices[0].finish_reason == "stop" and len(whole.choices[0].text.split()) == 4
    chunks = list(
        client.completions.create(
            model="c", prompt="A lake is", stream=True, stream_options={"include_usage": True}
        )
    )
    texts = [c.choices[0].text for c in chunks if c.choices]
    assert len(texts) == 5  # one word a chunk, then the finish chunk
    assert "".join(texts) == whole.choices[0].text
    assert [c.choices[0].finish_reason for c in chunks[:5]] == [None] * 4 + ["stop"]
    assert chunks[-1].choices == [] and chunks[-1].usage == whole.usage
    plain = list(client.completions.create(model="c", prompt="A lake is", stream=True))
    assert all(c.choices for c in plain)  # no usage chunk unless asked for


def test_other_endpoints_are_counted_kept_and_failed(
    make_server: MakeServer, clients: list[OpenAI]
) -> None:
    server = make_server(errors={1: 400, 3: {"status": 404, "message": "no such model"}})
    client = client_of(server, clients)
    with pytest.raises(openai.BadRequestError):
        client.embeddings.create(model="e", input="a river")
    assert client.embeddings.create(model="e", input="a river").data[0].embedding
    with pytest.raises(openai.NotFoundError, match="no such model"):
        client.completions.create(model="c", prompt="A lake is")
    with pytest.raises(openai.RateLimitError):
        client.completions.create(model="c", prompt="fail [[error:429]]")
    with pytest.raises(openai.AuthenticationError):
        client.embeddings.create(model="e", input=["x", "[[error:401]]"])
    assert server.request_count == 5
    assert [r.get("input", r.get("prompt")) for r in server.requests][:3] == [
        "a river",
        "a river",
        "A lake is",
    ]
    server.enqueue({"content": "queued"})  # the queue is the chat endpoints' alone
    assert client.completions.create(model="c", prompt="A lake is").choices[0].text != "queued"
    assert (
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        .choices[0]
        .message.content
        == "queued"
    )


def test_random_mode_answers_other_endpoints_at_random(
    make_server: MakeServer, clients: list[OpenAI]
) -> None:
    script = client_of(make_server("script"), clients)
    rand = client_of(make_server("random"), clients)

    def both(client: OpenAI) -> list[object]:
        return [
            client.embeddings.create(model="e", input="a river").data[0].embedding,
            client.completions.create(model="c", prompt="A lake is").choices[0].text,
        ]

    assert both(script) == both(script)
    first, second = both(rand), both(rand)
    assert first[0] != second[0] and first[1] != second[1]
