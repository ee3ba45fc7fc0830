"""wrap_openai: every entry point of the openai SDK records and replays offline, through
the real SDK over real HTTP to the scripted server."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openai
import pydantic
import pytest
from openai import AsyncOpenAI, OpenAI

import cassette
from cassette.adapters.openai import wrap_openai
from cassette.storage.index import load_index
from tests.helpers.chat import MakeServer
from tests.helpers.offline import KEY, NOWHERE, offline

USER = [{"role": "user", "content": "What is the weather like in Paris tomorrow?"}]
HEADERS = {
    "x-request-id": "req_abc123",
    "x-ratelimit-remaining-requests": "99",
    "x-ratelimit-remaining-tokens": "149000",
    "openai-processing-ms": "12",
    "set-cookie": "__cf_bm=cookie-secret-value",
    "openai-organization": "org-private-name",
}


class Weather(pydantic.BaseModel):
    city: str
    days: int


@pytest.fixture
def server(make_server: MakeServer) -> Any:
    return make_server("random", response_headers=HEADERS)


def sync_client(base_url: str) -> OpenAI:
    return OpenAI(base_url=base_url, api_key=KEY, max_retries=0)


def run_twice(path: Path, base_url: str, run: Callable[[Any], Any]) -> tuple[Any, Any]:
    """``run(wrapped client)`` recorded against ``base_url``, then replayed offline."""
    with cassette.open(path, mode="record") as cas, sync_client(base_url) as client:
        recorded = run(wrap_openai(client, cas))
    with offline(), cassette.open(path, mode="replay") as cas, sync_client(NOWHERE) as client:
        replayed = run(wrap_openai(client, cas))
    return recorded, replayed


def requests(path: Path) -> list[dict[str, Any]]:
    entries = load_index([path]).entries
    return [entries[k].full_request() for k in sorted(entries, key=lambda k: k[2])]


def chat(client: Any, **kwargs: Any) -> Any:
    return client.chat.completions.create(model="gpt-test", messages=USER, **kwargs)


# -- one request dict whatever the entry point ---------------------------------------------
@pytest.mark.parametrize("recorded_via", ["create", "raw"])
def test_create_and_with_raw_response_replay_each_other(
    server: Any, tmp_path: Path, recorded_via: str
) -> None:
    path = tmp_path / "run.jsonl"
    with cassette.open(path, mode="record") as cas, sync_client(server.base_url) as client:
        wrapped = wrap_openai(client, cas)
        if recorded_via == "create":
            recorded = chat(wrapped)
        else:
            raw = wrapped.chat.completions.with_raw_response.create(model="gpt-test", messages=USER)
            assert raw.headers["x-request-id"] == "req_abc123"
            recorded = raw.parse()
    text = path.read_text()
    assert "req_abc123" in text
    assert "cookie-secret" not in text and "org-private" not in text and "sk-test" not in text
    with offline(), cassette.open(path, mode="replay") as cas, sync_client(NOWHERE) as client:
        wrapped = wrap_openai(client, cas)
        if recorded_via == "create":
            raw = wrapped.chat.completions.with_raw_response.create(model="gpt-test", messages=USER)
            assert raw.http_response.status_code == 200
            assert raw.headers["x-request-id"] == "req_abc123"
            assert raw.headers["x-ratelimit-remaining-requests"] == "99"
            assert raw.headers["x-ratelimit-remaining-tokens"] == "149000"
            assert "set-cookie" not in raw.headers
            replayed = raw.parse()
        else:
            replayed = chat(wrapped)
    assert type(replayed) is type(recorded)
    assert replayed.model_dump() == recorded.model_dump()
    assert requests(path) == [
        {"endpoint": "chat.completions", "model": "gpt-test", "messages": USER}
    ]


def test_with_streaming_response_replays_headers_lines_and_parse(
    server: Any, tmp_path: Path
) -> None:
    def run(client: Any) -> Any:
        completions = client.chat.completions.with_streaming_response
        with completions.create(model="gpt-test", messages=USER) as response:
            whole = (response.headers["x-request-id"], response.http_response.status_code)
            parsed = response.parse().model_dump()
        with completions.create(model="gpt-test", messages=USER, stream=True) as response:
            assert response.headers["x-request-id"] == "req_abc123"  # kept for streams too
            lines = list(response.iter_lines())
        with client.responses.with_streaming_response.create(
            model="m", input="hi", stream=True
        ) as response:
            events = [e.type for e in response.parse()]
        return whole, parsed, lines, events

    recorded, replayed = run_twice(tmp_path / "run.jsonl", server.base_url, run)
    assert replayed == recorded
    whole, _, lines, events = recorded
    assert whole == ("req_abc123", 200)
    assert [line for line in lines if line][-1] == "data: [DONE]"
    assert sum(line.startswith("data: {") for line in lines) > 3
    assert events[0] == "response.created" and events[-1] == "response.completed"


def test_a_stream_recorded_one_way_replays_the_other(server: Any, tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"

    def texts(chunks: Any) -> list[str | None]:
        return [c.choices[0].delta.content if c.choices else None for c in chunks]

    with cassette.open(path, mode="record") as cas, sync_client(server.base_url) as client:
        streaming = wrap_openai(client, cas).chat.completions.with_streaming_response
        with streaming.create(model="gpt-test", messages=USER, stream=True) as response:
            recorded = texts(response.parse())
    with offline(), cassette.open(path, mode="replay") as cas, sync_client(NOWHERE) as client:
        stream = chat(wrap_openai(client, cas), stream=True)
        with stream:
            assert texts(stream) == recorded
    assert len(recorded) > 3


# -- parse and the stream helpers ----------------------------------------------------------
def test_parse_and_stream_helpers(make_server: MakeServer, tmp_path: Path) -> None:
    server = make_server("random")

    def run(client: Any) -> Any:
        parsed = client.chat.completions.parse(
            model="gpt-test", messages=USER, response_format=Weather
        )
        out: list[Any] = [parsed.choices[0].message.parsed]
        result = client.responses.parse(model="m", input="Paris weather", text_format=Weather)
        out.append(result.output_parsed)
        with client.chat.completions.stream(model="gpt-test", messages=USER) as stream:
            out.append([e.type for e in stream])
            out.append(stream.get_final_completion().choices[0].message.content)
        with client.responses.stream(model="m", input="hello") as events:
            out.append([e.type for e in events])
            out.append(events.get_final_response().output_text)
        beta_chat = getattr(client.beta, "chat", None)  # older SDKs: beta.chat.completions
        if beta_chat is not None:
            beta = beta_chat.completions.parse(model="m", messages=USER, response_format=Weather)
            out.append(beta.choices[0].message.parsed)
            with beta_chat.completions.stream(model="m", messages=USER) as stream:
                out.append(stream.get_final_completion().choices[0].message.content)
        raw = client.with_raw_response.chat.completions.create(model="m", messages=USER)
        out.append((raw.http_response.status_code, raw.parse().choices[0].message.content))
        return out

    recorded, replayed = run_twice(tmp_path / "run.jsonl", server.base_url, run)
    assert replayed == recorded
    assert isinstance(recorded[0], Weather) and isinstance(recorded[1], Weather)
    assert recorded[2][0] == "chunk" and recorded[2][-1] == "content.done"
    assert recorded[3] and recorded[5].startswith("Answer")


# -- the other endpoints, client.post / client.get, pages, binary bodies -------------------
def test_other_endpoints_post_get_and_pages(server: Any, tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"

    def run(client: Any) -> Any:
        return [
            client.embeddings.create(model="e", input="hello").data[0].embedding,
            client.completions.create(model="c", prompt="say").choices[0].text,
            client.moderations.create(input="fine").results[0].flagged,
            client.images.generate(prompt="a cat").data[0].b64_json,
            [m.id for m in client.models.list()],
            client.models.retrieve("gpt-x").id,
            client.audio.speech.create(model="tts", voice="alloy", input="hi").content,
            client.post("/embeddings", body={"model": "e", "input": "x"}, cast_to=object),
            client.get("/models", cast_to=object)["data"][0]["id"],
        ]

    recorded, replayed = run_twice(path, server.base_url, run)
    assert replayed == recorded
    assert recorded[6].startswith(b"ID3")
    assert [r["endpoint"] for r in requests(path)] == [
        "embeddings",
        "completions",
        "moderations",
        "images.generations",
        "GET models",
        "GET models.gpt-x",
        "audio.speech",
        "embeddings",
        "GET models",
    ]
    first = {"endpoint": "embeddings", "model": "e", "input": "hello"}
    assert requests(path)[0] == {**first, "encoding_format": "base64"}  # as the SDK sends it


# -- errors through the raw path -----------------------------------------------------------
def test_status_errors_replay_through_every_entry_point(server: Any, tmp_path: Path) -> None:
    limited = {"status": 429, "headers": {"x-request-id": "req_429"}}
    server.enqueue({"error": limited}, {"error": limited}, {"error": 400})

    def run(client: Any) -> Any:
        seen = []
        attempts = [
            lambda: client.chat.completions.with_raw_response.create(model="m", messages=USER),
            lambda: client.embeddings.create(model="e", input="x"),  # not queued: answered
            lambda: chat(client, stream=True),
            lambda: (
                client.responses.with_streaming_response.create(model="m", input="x")
                .__enter__()
                .parse()
            ),
        ]
        for attempt in attempts:
            try:
                result = attempt()
            except openai.APIStatusError as exc:
                seen.append((type(exc), exc.status_code, exc.request_id, exc.body))
            else:
                seen.append(type(result))
        return seen

    recorded, replayed = run_twice(tmp_path / "run.jsonl", server.base_url, run)
    assert replayed == recorded
    assert recorded[0] == (openai.RateLimitError, 429, "req_429", recorded[0][3])
    assert recorded[2][0] is openai.RateLimitError
    assert recorded[3][0] is openai.BadRequestError


# -- async ---------------------------------------------------------------------------------
def test_async_entry_points(server: Any, tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"

    async def run(base_url: str, mode: str) -> Any:
        async with (
            cassette.open(path, mode=mode) as cas,
            AsyncOpenAI(base_url=base_url, api_key=KEY, max_retries=0) as client,
        ):
            wrapped = wrap_openai(client, cas)
            raw = await wrapped.chat.completions.with_raw_response.create(model="m", messages=USER)
            out: list[Any] = [raw.headers["x-request-id"], raw.parse().model_dump()]
            async with wrapped.chat.completions.with_streaming_response.create(
                model="m", messages=USER, stream=True
            ) as response:
                out.append([line async for line in response.iter_lines()])
            async with wrapped.responses.stream(model="m", input="hi") as events:
                out.append([e.type async for e in events])
            out.append((await wrapped.embeddings.create(model="e", input="x")).data[0].embedding)
            out.append([m.id async for m in wrapped.models.list()])
            stream = await wrapped.chat.completions.create(model="m", messages=USER, stream=True)
            out.append([c.model_dump() async for c in stream])
            return out

    recorded = asyncio.run(run(server.base_url, "record"))
    with offline():
        replayed = asyncio.run(run(NOWHERE, "replay"))
    assert replayed == recorded
    assert recorded[0] == "req_abc123"


def test_transport_options_stay_out_of_the_request_whatever_the_entry_point(
    server: Any, tmp_path: Path
) -> None:
    path = tmp_path / "run.jsonl"
    transport: dict[str, Any] = {
        "extra_headers": {"X-Trace": "abc"},
        "extra_query": {"q": "1"},
        "extra_body": {"top_k": 3},
        "timeout": 5,
    }
    with cassette.open(path, mode="record") as cas, sync_client(server.base_url) as client:
        wrapped = wrap_openai(client, cas)
        chat(wrapped, **transport)
        wrapped.chat.completions.with_raw_response.create(
            model="gpt-test", messages=USER, **transport
        ).parse()
        with chat(wrapped, stream=True, **transport) as stream:
            list(stream)
        wrapped.models.list(extra_query={"limit": 2})
    want = {"endpoint": "chat.completions", "model": "gpt-test", "messages": USER, "top_k": 3}
    assert requests(path) == [
        want,
        want,
        {**want, "stream": True},
        {"endpoint": "GET models?limit=2"},
    ]


def test_concurrent_async_episodes_get_their_own_answers(server: Any, tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"

    async def episode(client: Any, i: int) -> Any:
        with cassette.episode(i):
            messages = [{"role": "user", "content": f"episode {i}"}]
            raw = await client.chat.completions.with_raw_response.create(
                model="m", messages=messages
            )
            stream = await client.chat.completions.create(model="m", messages=messages, stream=True)
            chunks = [c.choices[0].delta.content async for c in stream if c.choices]
            plain = await client.chat.completions.create(model="m", messages=messages)
            return raw.parse().choices[0].message.content, chunks, plain.id

    async def run(base_url: str, mode: str) -> Any:
        async with (
            cassette.open(path, mode=mode) as cas,
            AsyncOpenAI(base_url=base_url, api_key=KEY, max_retries=0) as client,
        ):
            wrapped = wrap_openai(client, cas)
            return await asyncio.gather(*(episode(wrapped, i) for i in range(8)))

    recorded = asyncio.run(run(server.base_url, "record"))
    with offline():
        assert asyncio.run(run(NOWHERE, "replay")) == recorded
    assert len({r[0] for r in recorded}) == 8  # random answers: each episode its own
    assert {key[0] for key in load_index([path]).entries} == set(range(8))


# -- streams reach the caller as they arrive -----------------------------------------------
def test_streamed_lines_reach_the_caller_while_the_server_sends(
    make_server: MakeServer, tmp_path: Path
) -> None:
    server = make_server("script", chunk_delay_ms=40, chunk_words=2)
    with cassette.open(tmp_path / "run.jsonl", mode="record") as cas:
        wrapped = wrap_openai(sync_client(server.base_url), cas)
        start = time.perf_counter()
        with wrapped.chat.completions.with_streaming_response.create(
            model="m", messages=USER, stream=True
        ) as response:
            arrivals = [time.perf_counter() - start for line in response.iter_lines() if line]
        total = time.perf_counter() - start
    assert len(arrivals) >= 6
    assert arrivals[0] < total / 3  # the first event came long before the last was sent


# -- wrap_openai's own cost ----------------------------------------------------------------
def test_wrap_openai_touches_nothing_new() -> None:
    """wrap_openai loads no openai module the caller has not (its cost is a bench row:
    bench/bench_openai.py, not a timed test)."""
    probe = """
import sys
import openai
import cassette
from cassette.adapters.openai import wrap_openai
client = openai.OpenAI(api_key="k", base_url="http://127.0.0.1:9/v1")
before = set(sys.modules)
cas = cassette.open(sys.argv[1], mode="record")
wrapped = wrap_openai(client, cas)
print("-", sorted(m for m in set(sys.modules) - before if m.startswith("openai")))
"""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run(
            [sys.executable, "-c", probe, str(Path(tmp) / "a.jsonl")],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split(" ", 1)
    assert out[1].strip() == "[]", out  # no resource, no beta: the caller's code loads them
