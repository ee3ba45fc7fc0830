"""wrap_openai: the real openai SDK over real HTTP to the scripted server, recorded and
replayed offline."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Callable, Iterator
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import openai
import pytest
from openai import AsyncOpenAI, OpenAI
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.responses import Response

import cassette
from cassette import CassetteError, CassetteMismatch
from cassette.adapters.openai import wrap_openai
from cassette.storage.index import Entry, load_index
from tests.helpers.chat import MakeServer

USER = [{"role": "user", "content": "What is the weather like in Paris tomorrow?"}]
WEATHER: dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
    "required": ["city", "days"],
}
CHAT_TOOLS: list[Any] = [
    {"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}}
]
RESP_TOOLS: list[Any] = [{"type": "function", "name": "get_weather", "parameters": WEATHER}]
NOWHERE = "http://127.0.0.1:9/v1"  # the discard port: nothing listens there


@pytest.fixture
def clients() -> Iterator[Callable[..., Any]]:
    made: list[Any] = []

    def make(base_url: str, api_key: str = "sk-test-0123456789abcdef", aio: bool = False) -> Any:
        cls = AsyncOpenAI if aio else OpenAI
        client = cls(base_url=base_url, api_key=api_key, max_retries=0)
        made.append(client)
        return client

    try:
        yield make
    finally:
        for client in made:
            if isinstance(client, OpenAI):
                client.close()


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "run.jsonl"


def entries(path: Path) -> dict[tuple[Any, str, int], Entry]:
    return load_index([path]).entries


def chat(client: Any, messages: list[Any] = USER, **kwargs: Any) -> Any:
    return client.chat.completions.create(model="gpt-test", messages=messages, **kwargs)


def stream_helper(client: Any) -> Any:
    """``chat.completions.stream`` (``beta.chat.completions.stream`` before openai 1.9x)."""
    completions = client.chat.completions
    return completions if hasattr(type(completions), "stream") else client.beta.chat.completions


def deltas(chunks: list[Any]) -> list[str | None]:
    return [c.choices[0].delta.content if c.choices else None for c in chunks]


# -- chat, not streamed ----------------------------------------------------------------------
def test_chat_replays_offline_as_the_recorded_chat_completion(
    make_server: MakeServer, clients: Callable[..., Any], path: Path
) -> None:
    server = make_server("random")
    client = clients(server.base_url)
    with cassette.open(path, mode="record") as cas:
        wrapped = wrap_openai(client, cas)
        assert isinstance(wrapped, OpenAI)
        assert wrapped is not client
        assert "create" not in vars(client.chat.completions)  # the original is untouched
        recorded = chat(wrapped)
        assert chat(client).choices[0].message.content != recorded.choices[0].message.content
    server.stop()
    text = path.read_text()
    assert "127.0.0.1" not in text
    assert "sk-test" not in text
    with cassette.open(path, mode="replay") as cas:
        replayed = chat(wrap_openai(clients(NOWHERE, api_key="another-key"), cas))
    assert type(replayed) is ChatCompletion
    assert replayed.model_dump() == recorded.model_dump()
    assert replayed.model_fields_set == recorded.model_fields_set
    assert entries(path)[(0, "llm", 0)].request == {
        "endpoint": "chat.completions",
        "model": "gpt-test",
        "messages": USER,
    }


def test_wrapped_results_are_the_sdk_own(
    make_server: MakeServer, clients: Callable[..., Any], path: Path
) -> None:
    client = clients(make_server("script").base_url)

    def strip(obj: Any) -> Any:
        return obj.model_dump(exclude={"created", "created_at"})

    with cassette.open(path, mode="record") as cas:
        wrapped = wrap_openai(client, cas)
        assert strip(chat(wrapped)) == strip(chat(client))
        live = [strip(c) for c in chat(client, stream=True)]
        assert [strip(c) for c in chat(wrapped, stream=True)] == live
        plain = client.responses.create(model="m", input="hi")
        mine = wrapped.responses.create(model="m", input="hi")
        assert type(mine) is type(plain)
        assert strip(mine) == strip(plain)


def test_request_is_the_json_body_without_transport(
    make_server: MakeServer, clients: Callable[..., Any], path: Path
) -> None:
    client = clients(make_server("script").base_url)
    with cassette.open(path, mode="record") as cas:
        chat(
            wrap_openai(client, cas),
            messages=(m for m in USER),  # an iterator: read for the key and for the call
            temperature=openai.NOT_GIVEN,
            extra_body={"top_k": 3},
            extra_headers={"X-Trace": "abc"},
            extra_query={"q": "1"},
            timeout=5,
        )
    assert entries(path)[(0, "llm", 0)].request == {
        "endpoint": "chat.completions",
        "model": "gpt-test",
        "messages": USER,
        "top_k": 3,
    }


# -- chat, streamed --------------------------------------------------------------------------
def test_streamed_chat_replays_the_same_chunks(
    make_server: MakeServer, clients: Callable[..., Any], path: Path
) -> None:
    client = clients(make_server("random").base_url)
    with cassette.open(path, mode="record") as cas:
        wrapped = wrap_openai(client, cas)
        with chat(wrapped, stream=True, stream_options={"include_usage": True}) as stream:
            assert isinstance(stream, openai.Stream)
            recorded = list(stream)
        with stream_helper(wrapped).stream(model="gpt-test", messages=USER) as helper:
            final = helper.get_final_completion().choices[0].message.content
    assert len(recorded) > 3
    stored = entries(path)[(0, "llm", 0)].response or {}
    assert stored["message"]["content"] == "".join(d or "" for d in deltas(recorded))
    with cassette.open(path, mode="replay") as cas:
        wrapped = wrap_openai(clients(NOWHERE), cas)
        with chat(wrapped, stream=True, stream_options={"include_usage": True}) as stream:
            assert isinstance(stream, openai.Stream)
            replayed = list(stream)
        with stream_helper(wrapped).stream(model="gpt-test", messages=USER) as helper:
            assert helper.get_final_completion().choices[0].message.content == final
    assert all(type(c) is ChatCompletionChunk for c in replayed)
    assert deltas(replayed) == deltas(recorded)
    assert [c.model_dump() for c in replayed] == [c.model_dump() for c in recorded]
    assert replayed[-1].usage == recorded[-1].usage is not None


def test_a_stream_recorded_through_the_client_replays_through_create_and_back(
    make_server: MakeServer, clients: Callable[..., Any], path: Path
) -> None:
    """create(stream=True) builds its request dict without the SDK: it must be the one the
    SDK's own request path makes (strict matching serves each from the other's recording),
    and its stream is the SDK's own, raw and streaming-response forms included."""
    client = clients(make_server("random").base_url)
    body = {"model": "gpt-test", "messages": USER, "stream": True}
    with cassette.open(path, mode="record") as cas:
        wrapped = wrap_openai(client, cas)
        via_post = wrapped.post(
            "/chat/completions", body=body, cast_to=ChatCompletion, stream=True,
            stream_cls=openai.Stream[ChatCompletionChunk],
        )  # fmt: skip
        posted = [c.model_dump() for c in via_post]
        created = [c.model_dump() for c in chat(wrapped, stream=True, temperature=0.5)]
    with cassette.open(path, mode="replay") as cas:
        wrapped = wrap_openai(clients(NOWHERE), cas)
        stream = chat(wrapped, stream=True)
        assert isinstance(stream, openai.Stream) and type(stream).__name__ == "Stream"
        assert [c.model_dump() for c in stream] == posted
        raw = wrapped.chat.completions.with_raw_response.create(
            model="gpt-test", messages=USER, stream=True, temperature=0.5
        )
        assert [c.model_dump() for c in raw.parse()] == created
    with cassette.open(path, mode="replay") as cas:
        wrapped = wrap_openai(clients(NOWHERE), cas)
        with wrapped.chat.completions.with_streaming_response.create(
            model="gpt-test", messages=USER, stream=True
        ) as response:
            assert [c.model_dump() for c in response.parse()] == posted
        again = wrapped.post(
            "/chat/completions", body={**body, "temperature": 0.5}, cast_to=ChatCompletion,
            stream=True, stream_cls=openai.Stream[ChatCompletionChunk],
        )  # fmt: skip
        assert [c.model_dump() for c in again] == created


def test_async_client_records_and_replays_streams(
    make_server: MakeServer, clients: Callable[..., Any], path: Path
) -> None:
    async def run(client: AsyncOpenAI, mode: str) -> tuple[str | None, list[str | None]]:
        async with cassette.open(path, mode=mode) as cas:
            wrapped = wrap_openai(client, cas)
            assert isinstance(wrapped, AsyncOpenAI)
            plain = await chat(wrapped)
            stream = await chat(wrapped, stream=True)
            assert isinstance(stream, openai.AsyncStream)
            async with stream:
                chunks = [c async for c in stream]
            assert all(type(c) is ChatCompletionChunk for c in chunks)
            await client.close()
            return plain.choices[0].message.content, deltas(chunks)

    recorded = asyncio.run(run(clients(make_server("random").base_url, aio=True), "record"))
    assert asyncio.run(run(clients(NOWHERE, aio=True), "replay")) == recorded


def test_stream_reaches_the_caller_while_the_server_is_still_sending(
    make_server: MakeServer, clients: Callable[..., Any], path: Path
) -> None:
    server = make_server("script", chunk_delay_ms=40, chunk_words=2)
    with cassette.open(path, mode="record") as cas:
        wrapped = wrap_openai(clients(server.base_url), cas)
        start = time.perf_counter()
        stream = chat(wrapped, stream=True)
        arrivals = [time.perf_counter() - start for _ in stream]
    total = time.perf_counter() - start
    assert len(arrivals) >= 6
    assert arrivals[0] < total / 3  # the first chunk came long before the last was sent
    assert arrivals[-1] - arrivals[0] > 0.04 * (len(arrivals) - 2)


def test_a_stream_closed_early_is_kept_as_incomplete(
    make_server: MakeServer, clients: Callable[..., Any], path: Path
) -> None:
    with cassette.open(path, mode="record") as cas:
        stream = chat(wrap_openai(clients(make_server("random").base_url), cas), stream=True)
        next(iter(stream))
        stream.close()
    entry = entries(path)[(0, "llm", 0)]
    assert entry.meta["incomplete"] is True
    assert len((entry.response or {})["chunks"]) == 1


# -- tool calls ------------------------------------------------------------------------------
@pytest.mark.parametrize("stream", [False, True])
def test_tool_calls_round_trip(
    make_server: MakeServer, clients: Callable[..., Any], path: Path, stream: bool
) -> None:
    def call(client: Any) -> list[tuple[str, str, str]]:
        if not stream:
            calls = chat(client, tools=CHAT_TOOLS).choices[0].message.tool_calls
            return [(c.id, c.function.name, c.function.arguments) for c in calls]
        parts: dict[int, list[str]] = {}
        for chunk in chat(client, tools=CHAT_TOOLS, stream=True):
            for tc in chunk.choices[0].delta.tool_calls or []:
                slot = parts.setdefault(tc.index, ["", "", ""])
                slot[0] += tc.id or ""
                slot[1] += tc.function.name or "" if tc.function else ""
                slot[2] += tc.function.arguments or "" if tc.function else ""
        return [(a, b, c) for a, b, c in parts.values()]

    with cassette.open(path, mode="record") as cas:
        recorded = call(wrap_openai(clients(make_server("random").base_url), cas))
    assert recorded
    assert json.loads(recorded[0][2])["city"].startswith("What is")
    with cassette.open(path, mode="replay") as cas:
        assert call(wrap_openai(clients(NOWHERE), cas)) == recorded
    if stream:
        message = (entries(path)[(0, "llm", 0)].response or {})["message"]
        assert message["content"] is None
        got = [
            (c["id"], c["function"]["name"], c["function"]["arguments"])
            for c in message["tool_calls"]
        ]
        assert got == recorded


def test_tool_loop_across_episodes_replays_identically(
    make_server: MakeServer, clients: Callable[..., Any], path: Path
) -> None:
    def run(client: Any, mode: str) -> list[str]:
        transcript: list[str] = []
        with cassette.open(path, mode=mode) as cas:
            wrapped = wrap_openai(client, cas)
            for env in range(3):
                messages: list[Any] = [{"role": "user", "content": f"Weather in city {env}?"}]
                with cassette.episode(env):
                    for _ in range(3):
                        message = chat(wrapped, messages, tools=CHAT_TOOLS).choices[0].message
                        messages.append(message)  # the SDK object itself, as agents do
                        if not message.tool_calls:
                            transcript.append(f"{env}: {message.content}")
                            break
                        for tc in message.tool_calls:
                            transcript.append(f"{env}: {tc.function.arguments}")
                            result = {"role": "tool", "tool_call_id": tc.id, "content": "sunny"}
                            messages.append(result)
        return transcript

    recorded = run(clients(make_server("random").base_url), "record")
    assert len(recorded) == 6
    assert run(clients(NOWHERE), "replay") == recorded
    second = entries(path)[(1, "llm", 1)]
    assert second.request["messages"][0] == {"$ref": ["choices", 0, "message"]}  # stored once


# -- responses -------------------------------------------------------------------------------
def test_responses_replay_text_and_event_order(
    make_server: MakeServer, clients: Callable[..., Any], path: Path
) -> None:
    def run(client: Any, mode: str) -> tuple[str, list[str], list[str]]:
        with cassette.open(path, mode=mode) as cas:
            wrapped = wrap_openai(client, cas)
            response = wrapped.responses.create(model="m", input="hello")
            assert type(response) is Response
            with wrapped.responses.create(model="m", input="Oslo", stream=True) as events:
                kinds = [f"{type(e).__name__}:{e.type}" for e in events]
            tools = wrapped.responses.create(model="m", input="Oslo", tools=RESP_TOOLS)
            return response.output_text, kinds, [tools.output[0].arguments]

    recorded = run(clients(make_server("random").base_url), "record")
    assert recorded[1][0] == "ResponseCreatedEvent:response.created"
    assert recorded[1][-1] == "ResponseCompletedEvent:response.completed"
    assert run(clients(NOWHERE), "replay") == recorded
    final = (entries(path)[(0, "llm", 1)].response or {})["message"]
    assert final["status"] == "completed"
    assert final["output"][0]["content"][0]["text"].startswith("Answer ")


# -- errors ----------------------------------------------------------------------------------
def test_api_errors_replay_as_the_same_exceptions(
    make_server: MakeServer, clients: Callable[..., Any], path: Path
) -> None:
    server = make_server("random")
    limited = {"status": 429, "headers": {"x-request-id": "req_42", "retry-after-ms": "10"}}
    server.enqueue({"error": limited}, {"error": 429})

    def run(client: Any, mode: str) -> list[tuple[type[Exception], int, Any, str, Any]]:
        seen = []
        with cassette.open(path, mode=mode) as cas:
            wrapped = wrap_openai(client, cas)
            attempts: list[Callable[[], Any]] = [
                lambda: chat(wrapped),
                lambda: chat(wrapped, stream=True),  # raises at create(), as the SDK does
                lambda: chat(wrapped, [{"role": "user", "content": "no [[error:400]]"}]),
                lambda: wrapped.responses.create(model="m", input="bad [[error:400]]"),
            ]
            for attempt in attempts:
                with pytest.raises(openai.APIStatusError) as info:
                    attempt()
                exc = info.value
                seen.append((type(exc), exc.status_code, exc.body, str(exc), exc.request_id))
        return seen

    recorded = run(clients(server.base_url), "record")
    kinds = [r[0] for r in recorded]
    assert kinds == [openai.RateLimitError] * 2 + [openai.BadRequestError] * 2
    assert recorded[0][4] == "req_42"
    assert recorded[0][2]["code"] == "rate_limit_exceeded"
    server.stop()
    assert run(clients(NOWHERE), "replay") == recorded
    assert "sk-test" not in path.read_text()


def test_connection_errors_replay_as_connection_errors(
    clients: Callable[..., Any], path: Path
) -> None:
    with socket.socket() as sock:  # a port that was free a moment ago: connection refused
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    for mode in ("record", "replay"):
        with cassette.open(path, mode=mode) as cas:
            wrapped = wrap_openai(clients(f"http://127.0.0.1:{port}/v1"), cas)
            with pytest.raises(openai.APIConnectionError) as info:
                chat(wrapped)
            assert type(info.value) is openai.APIConnectionError


# -- matching --------------------------------------------------------------------------------
def test_host_port_and_key_stay_out_of_the_match(
    make_server: MakeServer, clients: Callable[..., Any], path: Path
) -> None:
    first, second = make_server("random"), make_server("random")
    with cassette.open(path, mode="record") as cas:
        recorded = chat(wrap_openai(clients(first.base_url, api_key="sk-aaaaaaaaaaaaaaaa"), cas))
    with cassette.open(path, mode="replay") as cas:
        other = wrap_openai(clients(second.base_url, api_key="sk-bbbbbbbbbbbbbbbb"), cas)
        assert chat(other).model_dump() == recorded.model_dump()
    assert second.request_count == 0


def test_a_changed_request_raises_mismatch(
    make_server: MakeServer, clients: Callable[..., Any], path: Path
) -> None:
    with cassette.open(path, mode="record") as cas:
        chat(wrap_openai(clients(make_server("random").base_url), cas))
    with cassette.open(path, mode="replay") as cas:
        wrapped = wrap_openai(clients(NOWHERE), cas)
        with pytest.raises(CassetteMismatch, match=r"messages\[0\]\.content"):
            chat(wrapped, [{"role": "user", "content": "something else"}])
    with (  # the endpoints never answer each other
        cassette.open(path, mode="replay") as cas,
        pytest.raises(CassetteMismatch, match="endpoint"),
    ):
        wrap_openai(clients(NOWHERE), cas).responses.create(model="gpt-test", input=USER)


# -- the wrapped client ----------------------------------------------------------------------
@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """A socket guard: any connection attempt fails, and fails the test at teardown."""
    attempts: list[Any] = []

    def refuse(self: socket.socket, address: Any, *args: Any) -> Any:
        attempts.append(address)
        raise OSError(f"socket guard: this test may not connect to {address!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    yield attempts
    assert not attempts, f"the replay tried to connect to {attempts}"


@pytest.mark.parametrize("mode", ["record", "replay", "passthrough"])
def test_what_the_wrapped_client_refuses(
    clients: Callable[..., Any], tmp_path: Path, mode: str, no_network: list[Any]
) -> None:
    client = clients(NOWHERE)
    path = tmp_path / "run.jsonl"
    if mode == "replay":
        path.write_text("")
    with cassette.open(path, mode=mode) as cas:
        wrapped = wrap_openai(client, cas)
        with pytest.raises(TypeError, match="messages"):  # as the SDK says, before any call
            wrapped.chat.completions.create(model="m")
        with pytest.raises(CassetteError, match=r"Files\.create \(POST /files\) sends a multi"):
            wrapped.files.create(file=("a.jsonl", b"{}"), purpose="batch")
        with pytest.raises(CassetteError, match="multipart"):
            wrapped.with_raw_response.audio.transcriptions.create(
                file=("a.wav", b"RIFF"), model="whisper-1"
            )
        # a websocket: refused where the SDK can open one (it needs the websockets package)
        refused = CassetteError if find_spec("websockets") else openai.OpenAIError
        with (
            pytest.raises(refused, match=r"websocket|realtime"),
            wrapped.realtime.connect(model="m"),
        ):
            pass
        # feature probes never raise (openai-agents probes the client this way)
        for name in ("with_raw_response", "with_streaming_response", "beta", "realtime", "x"):
            assert hasattr(wrapped, name) == hasattr(client, name)
        completions = wrapped.chat.completions
        for name in ("with_raw_response", "with_streaming_response", "parse", "stream", "nope"):
            assert hasattr(completions, name) == hasattr(client.chat.completions, name)
        assert getattr(wrapped.responses, "nope", None) is None
    assert "create" not in vars(client.chat.completions)  # the original is untouched
    assert type(wrapped).__name__ == type(client).__name__


def test_with_options_keeps_the_cassette(
    make_server: MakeServer, clients: Callable[..., Any], path: Path
) -> None:
    with cassette.open(path, mode="record") as cas:
        wrapped = wrap_openai(clients(make_server("random").base_url), cas).with_options(timeout=5)
        assert isinstance(wrapped, OpenAI)
        chat(wrapped)
    assert list(entries(path)) == [(0, "llm", 0)]


def test_error_codec_kinds() -> None:
    from cassette.adapters.openai import OpenAIErrors

    with OpenAI(base_url=NOWHERE, api_key="k", max_retries=0) as client:
        codec = OpenAIErrors(client, "/responses")
        request = codec.request()
        assert str(request.url) == "http://127.0.0.1:9/v1/responses"
        for exc in [
            openai.APITimeoutError(request=request),
            openai.APIConnectionError(message="refused", request=request),
            openai.APIError("stream broke", request, body={"code": "server_error"}),
        ]:
            info = codec.dump(exc)
            assert info is not None
            back = codec.load(json.loads(json.dumps(info)))
            assert type(back) is type(exc)
            assert str(back) == str(exc)
            assert getattr(back, "body", None) == exc.body
        assert codec.dump(ValueError("not ours")) is None
        assert codec.load({"type": "mylib.Boom", "message": "x", "data": {}}) is None
        # what the SDK raises before sending (a wrong argument) replays as itself
        back = codec.load({"type": "builtins.TypeError", "message": "bad", "data": {}})
        assert type(back) is TypeError and str(back) == "bad"


def test_build_request_fast_path_equals_the_sdk_transform() -> None:
    from openai._utils import maybe_transform
    from openai.types.chat import ChatCompletionMessage, completion_create_params

    from cassette.adapters.openai import build_request

    params = completion_create_params.CompletionCreateParamsNonStreaming
    answer = ChatCompletionMessage.model_validate(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        }
    )
    kwargs = {
        "model": "m",
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            answer,
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        ],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {}}},
        "temperature": 0.5,
        "seed": 3,
        "stop": ("a", "b"),
    }
    fast = build_request("chat.completions", params, kwargs)
    slow = dict(maybe_transform(kwargs, params))
    slow["stop"] = ["a", "b"]
    slow["endpoint"] = "chat.completions"
    assert fast == slow
    # JSON-native arguments are used as they are, not copied
    plain = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
    assert build_request("chat.completions", params, plain)["messages"] is plain["messages"]
    # an SDK sentinel nested in the arguments takes the slow walk, to the same result
    nested = {"model": "m", "messages": [{"role": "user", "content": "x", "name": openai.omit}]}
    assert build_request("chat.completions", params, nested) == {
        **plain,
        "endpoint": "chat.completions",
    }
