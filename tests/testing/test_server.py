"""Tests of the scripted OpenAI-compatible server, driven by the real ``openai`` SDK."""

from __future__ import annotations

import asyncio
import http.client
import json
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import openai
import pydantic
import pytest
from openai import AsyncOpenAI, OpenAI

from cassette.testing.server import ScriptedServer, split_words, tool_arguments
from tests.helpers.chat import MakeServer

REPO_ROOT = Path(__file__).resolve().parents[2]
USER = [{"role": "user", "content": "What is the weather like in Paris tomorrow?"}]
WEATHER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "days": {"type": "integer", "minimum": 1, "maximum": 7},
        "units": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        "verbose": {"type": "boolean"},
    },
    "required": ["city", "days", "units"],
}
CHAT_TOOLS: list[Any] = [
    {"type": "function", "function": {"name": "get_weather", "parameters": WEATHER_SCHEMA}},
    {"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}},
]
RESP_TOOLS: list[Any] = [
    {"type": "function", "name": "get_weather", "parameters": WEATHER_SCHEMA, "strict": False},
]
RESPONSE_TEXT_EVENTS = [
    "response.created",
    "response.in_progress",
    "response.output_item.added",
    "response.content_part.added",
    "response.output_text.delta",
    "response.output_text.done",
    "response.content_part.done",
    "response.output_item.done",
    "response.completed",
]

MakeClient = Callable[..., OpenAI]


@pytest.fixture
def make_client() -> Iterator[MakeClient]:
    clients: list[OpenAI] = []

    def make(server: ScriptedServer, max_retries: int = 0) -> OpenAI:
        client = OpenAI(base_url=server.base_url, api_key="test-key", max_retries=max_retries)
        clients.append(client)
        return client

    try:
        yield make
    finally:
        for client in clients:
            client.close()


@pytest.fixture
def server(make_server: MakeServer) -> ScriptedServer:
    return make_server()


@pytest.fixture
def client(server: ScriptedServer, make_client: MakeClient) -> OpenAI:
    return make_client(server)


# The Responses API arrived in openai 1.66; the chat stream helper left `beta` in 1.9x.
needs_responses = pytest.mark.skipif(
    not hasattr(OpenAI, "responses"), reason="openai SDK without the Responses API"
)


def chat(client: OpenAI, messages: list[Any] = USER, **kwargs: Any) -> Any:
    return client.chat.completions.create(model="gpt-test", messages=messages, **kwargs)


def respond(client: OpenAI, **kwargs: Any) -> Any:
    return client.responses.create(**kwargs)


def stream_helper(client: OpenAI) -> Any:
    completions = client.chat.completions
    return completions if hasattr(completions, "stream") else client.beta.chat.completions


# -- helpers ---------------------------------------------------------------------------------
def test_split_words_round_trips() -> None:
    for text in ["", " ", "one", "  lead and trail  ", "a b\nc\td e f g"]:
        assert "".join(split_words(text, 3)) == text
    assert split_words("a b c d e f g", 3) == ["a b c ", "d e f ", "g"]


def test_tool_arguments_follow_schema() -> None:
    args = tool_arguments(WEATHER_SCHEMA, "Paris")
    assert args == {"city": "Paris", "days": 6, "units": "celsius"}
    assert tool_arguments(None, "hello") == {"query": "hello"}
    assert tool_arguments({"type": "object", "properties": {}}, "x") == {}
    rnd = tool_arguments(WEATHER_SCHEMA, "Paris", rnd=True)
    assert rnd["city"].startswith("Paris ")
    assert 1 <= rnd["days"] <= 7
    assert rnd["units"] == "celsius"


def test_unknown_mode_is_rejected() -> None:
    with pytest.raises(ValueError, match="mode must be one of"):
        ScriptedServer("chatty")  # type: ignore[arg-type]


# -- chat completions ------------------------------------------------------------------------
def test_models_list(server: ScriptedServer, client: OpenAI) -> None:
    assert [m.id for m in client.models.list()] == ["scripted-model"]
    assert client.models.retrieve("other").id == "other"
    assert server.base_url == f"http://127.0.0.1:{server.port}/v1"


def test_chat_non_streamed(server: ScriptedServer, client: OpenAI) -> None:
    first = chat(client)
    assert first.object == "chat.completion"
    assert first.model == "gpt-test"
    assert first.id.startswith("chatcmpl-")
    assert first.created > 0
    choice = first.choices[0]
    assert choice.message.role == "assistant"
    assert choice.finish_reason == "stop"
    assert choice.message.content
    assert choice.message.tool_calls is None
    assert first.usage.total_tokens == first.usage.prompt_tokens + first.usage.completion_tokens
    second = chat(client)
    assert second.choices[0].message.content == choice.message.content  # script: deterministic
    other = chat(client, [{"role": "user", "content": "Something else entirely"}])
    assert other.choices[0].message.content != choice.message.content
    assert len(server.requests) == 3
    assert server.request_count == 3
    assert server.requests[0]["messages"] == USER
    assert server.requests[0]["model"] == "gpt-test"


def test_chat_streamed(client: OpenAI) -> None:
    expected = chat(client).choices[0].message.content
    chunks = list(chat(client, stream=True, stream_options={"include_usage": True}))
    assert all(c.object == "chat.completion.chunk" for c in chunks)
    assert len({c.id for c in chunks}) == 1
    assert chunks[0].choices[0].delta.role == "assistant"
    pieces = [
        c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content
    ]
    assert len(pieces) >= 3
    assert all(len(p.split()) <= 3 for p in pieces)
    assert "".join(pieces) == expected
    assert chunks[-2].choices[0].finish_reason == "stop"
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens > 0
    plain = list(chat(client, stream=True))
    assert all(c.usage is None and len(c.choices) == 1 for c in plain)
    with stream_helper(client).stream(model="gpt-test", messages=USER) as stream:
        final = stream.get_final_completion()
    assert final.choices[0].message.content == expected


def test_chat_tool_call_then_final_text(client: OpenAI) -> None:
    first = chat(client, tools=CHAT_TOOLS)
    assert first.choices[0].finish_reason == "tool_calls"
    message = first.choices[0].message
    assert message.content is None
    assert len(message.tool_calls) == 1
    call = message.tool_calls[0]
    assert call.type == "function"
    assert call.id.startswith("call_")
    assert call.function.name == "get_weather"
    args = json.loads(call.function.arguments)
    assert args == {"city": USER[0]["content"], "days": args["days"], "units": "celsius"}
    assert 1 <= args["days"] <= 7
    assert chat(client, tools=CHAT_TOOLS).choices[0].message.tool_calls[0].id == call.id
    history = [
        *USER,
        message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "Sunny, 24 degrees"},
    ]
    final = chat(client, history, tools=CHAT_TOOLS)
    assert final.choices[0].finish_reason == "stop"
    assert "Sunny, 24 degrees" in final.choices[0].message.content
    no_tools = chat(client, tools=CHAT_TOOLS, tool_choice="none")
    assert no_tools.choices[0].message.tool_calls is None
    forced = chat(
        client, tools=CHAT_TOOLS, tool_choice={"type": "function", "function": {"name": "search"}}
    )
    assert forced.choices[0].message.tool_calls[0].function.name == "search"
    assert json.loads(forced.choices[0].message.tool_calls[0].function.arguments) == {
        "query": USER[0]["content"]
    }


def test_chat_tool_call_streamed(client: OpenAI) -> None:
    expected = chat(client, tools=CHAT_TOOLS).choices[0].message.tool_calls[0]
    chunks = list(chat(client, tools=CHAT_TOOLS, stream=True))
    deltas = [tc for c in chunks if c.choices for tc in c.choices[0].delta.tool_calls or []]
    assert deltas[0].index == 0
    assert deltas[0].id == expected.id
    assert deltas[0].function.name == "get_weather"
    arg_pieces = [d.function.arguments for d in deltas if d.function.arguments]
    assert len(arg_pieces) >= 2
    assert "".join(arg_pieces) == expected.function.arguments
    assert chunks[-1].choices[0].finish_reason == "tool_calls"
    with stream_helper(client).stream(model="m", messages=USER, tools=CHAT_TOOLS) as stream:
        final = stream.get_final_completion()
    assert final.choices[0].message.tool_calls[0].function.arguments == expected.function.arguments


# -- responses API ---------------------------------------------------------------------------
@needs_responses
def test_responses_non_streamed(server: ScriptedServer, client: OpenAI) -> None:
    response = respond(client, model="gpt-test", input="Say hello", instructions="Be brief")
    assert response.object == "response"
    assert response.status == "completed"
    assert response.id.startswith("resp_")
    assert response.model == "gpt-test"
    assert response.output[0].type == "message"
    assert response.output[0].role == "assistant"
    assert response.output[0].content[0].type == "output_text"
    assert response.output_text
    assert response.output_text.startswith("Answer ")
    assert response.usage.total_tokens == response.usage.input_tokens + response.usage.output_tokens
    assert server.requests[-1]["input"] == "Say hello"
    again = respond(client, model="gpt-test", input="Say hello", instructions="Be brief")
    assert again.output_text == response.output_text


@needs_responses
def test_responses_tool_call_then_final_text(client: OpenAI) -> None:
    response = respond(client, model="m", input="Weather in Oslo?", tools=RESP_TOOLS)
    [call] = response.output
    assert call.type == "function_call"
    assert call.name == "get_weather"
    assert call.call_id.startswith("call_")
    assert call.id.startswith("fc_")
    assert json.loads(call.arguments)["city"] == "Weather in Oslo?"
    assert response.output_text == ""
    follow_up = [
        {"role": "user", "content": "Weather in Oslo?"},
        {"type": "function_call", "call_id": call.call_id, "name": call.name, "arguments": "{}"},
        {"type": "function_call_output", "call_id": call.call_id, "output": "Snow, -3 degrees"},
    ]
    final = respond(client, model="m", input=follow_up, tools=RESP_TOOLS)
    assert "Snow, -3 degrees" in final.output_text


@needs_responses
def test_responses_streamed(client: OpenAI) -> None:
    expected = respond(client, model="m", input="Tell me a story").output_text
    events = list(respond(client, model="m", input="Tell me a story", stream=True))
    types = [e.type for e in events]
    deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
    assert len(deltas) >= 3
    assert "".join(deltas) == expected
    assert [t for i, t in enumerate(types) if i == 0 or t != types[i - 1]] == RESPONSE_TEXT_EVENTS
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert events[0].response.status == "in_progress"
    assert events[0].response.output == []
    assert events[-1].response.status == "completed"
    assert events[-1].response.output_text == expected
    done = next(e for e in events if e.type == "response.output_text.done")
    assert done.text == expected
    with client.responses.stream(model="m", input="Tell me a story") as stream:
        assert stream.get_final_response().output_text == expected


@needs_responses
def test_responses_streamed_tool_call(client: OpenAI) -> None:
    events = list(respond(client, model="m", input="Oslo", tools=RESP_TOOLS, stream=True))
    pieces = [e.delta for e in events if e.type == "response.function_call_arguments.delta"]
    done = next(e for e in events if e.type == "response.function_call_arguments.done")
    assert len(pieces) >= 2
    assert "".join(pieces) == done.arguments
    assert json.loads(done.arguments)["city"] == "Oslo"
    added = next(e for e in events if e.type == "response.output_item.added")
    assert added.item.type == "function_call"
    assert added.item.arguments == ""
    assert events[-1].response.output[0].arguments == done.arguments
    with client.responses.stream(model="m", input="Oslo", tools=RESP_TOOLS) as stream:
        final: Any = stream.get_final_response()
    assert final.output[0].arguments == done.arguments


@needs_responses
@pytest.mark.parametrize("tools", [False, True])
def test_payloads_validate_strictly_against_sdk_types(server: ScriptedServer, tools: bool) -> None:
    """The SDK parses leniently; validate the raw payloads against its pydantic types."""
    from openai.types.chat import ChatCompletion, ChatCompletionChunk
    from openai.types.responses import Response, ResponseStreamEvent
    from pydantic import TypeAdapter

    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)

    def post(path: str, body: dict[str, Any]) -> list[str]:
        conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        response = conn.getresponse()
        assert response.status == 200
        return [e for e in response.read().decode().split("\n\n") if e]

    chat_body: dict[str, Any] = {"model": "m", "messages": USER, "tools": CHAT_TOOLS}
    resp_body: dict[str, Any] = {"model": "m", "input": "Oslo", "tools": RESP_TOOLS}
    if not tools:
        del chat_body["tools"], resp_body["tools"]
    stream = {"stream": True, "stream_options": {"include_usage": True}}
    event_adapter: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)
    try:
        ChatCompletion.model_validate_json(post("/v1/chat/completions", chat_body)[0])
        events = post("/v1/chat/completions", {**chat_body, **stream})
        assert events[-1] == "data: [DONE]"
        for event in events[:-1]:
            ChatCompletionChunk.model_validate_json(event.removeprefix("data: "))
        Response.model_validate_json(post("/v1/responses", resp_body)[0])
        for event in post("/v1/responses", {**resp_body, "stream": True}):
            name, data = event.split("\n")
            parsed = event_adapter.validate_json(data.removeprefix("data: "))
            assert name == f"event: {parsed.type}"
    finally:
        conn.close()


# -- canned replies, errors ------------------------------------------------------------------
@needs_responses
def test_enqueued_replies_are_used_in_order(server: ScriptedServer, client: OpenAI) -> None:
    server.enqueue(
        {"content": "canned answer"},
        {"tool_calls": [{"name": "lookup", "arguments": {"q": "x"}, "id": "call_fixed"}]},
    )
    assert chat(client).choices[0].message.content == "canned answer"
    response = respond(client, model="m", input="anything")
    assert response.output[0].call_id == "call_fixed"
    assert json.loads(response.output[0].arguments) == {"q": "x"}
    assert chat(client).choices[0].message.content.startswith("Answer ")  # queue drained


@needs_responses
def test_enqueued_errors(server: ScriptedServer, client: OpenAI) -> None:
    body = {
        "message": "Slow down",
        "type": "requests",
        "param": None,
        "code": "rate_limit_exceeded",
    }
    server.enqueue(
        {"error": {"status": 429, "body": {"error": body}}},
        {"error": {"status": 400, "message": "Bad tool schema"}},
        {"error": 500},
        {"error": {"status": 429}},
    )
    with pytest.raises(openai.RateLimitError) as rate:
        chat(client)
    assert rate.value.status_code == 429
    assert rate.value.body == body
    assert rate.value.code == "rate_limit_exceeded"
    with pytest.raises(openai.BadRequestError) as bad:
        respond(client, model="m", input="hi")
    assert bad.value.status_code == 400
    assert bad.value.body == {
        "message": "Bad tool schema",
        "type": "invalid_request_error",
        "param": None,
        "code": None,
    }
    with pytest.raises(openai.InternalServerError) as internal:
        chat(client)
    assert internal.value.status_code == 500
    assert internal.value.type == "server_error"
    with pytest.raises(openai.RateLimitError):
        chat(client, stream=True)
    assert chat(client).choices[0].message.content  # back to normal


@needs_responses
def test_error_marker_in_message_or_metadata(client: OpenAI) -> None:
    with pytest.raises(openai.RateLimitError) as rate:
        chat(client, [{"role": "user", "content": "please fail [[error:429]]"}])
    assert rate.value.status_code == 429
    with pytest.raises(openai.BadRequestError):
        respond(client, model="m", input="hi", metadata={"trigger": "[[error:400]]"})
    with pytest.raises(openai.InternalServerError):
        chat(client, metadata={"trigger": "[[error:503]]"})
    assert chat(client).choices[0].message.content


def test_errors_by_request_number(make_server: MakeServer, make_client: MakeClient) -> None:
    server = make_server(errors={1: 429, 3: {"status": 500, "message": "boom"}})
    client = make_client(server)
    with pytest.raises(openai.RateLimitError):
        chat(client)
    assert chat(client).choices[0].message.content
    with pytest.raises(openai.InternalServerError, match="boom"):
        chat(client)
    assert chat(client).choices[0].message.content


def test_sdk_retries_use_error_headers(make_server: MakeServer, make_client: MakeClient) -> None:
    server = make_server(errors={1: {"status": 429, "headers": {"retry-after-ms": "10"}}})
    client = make_client(server, max_retries=2)
    assert chat(client).choices[0].message.content
    assert server.request_count == 2


def test_bad_requests_get_openai_errors(server: ScriptedServer) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        conn.request("POST", "/v1/chat/completions", b"not json")
        response = conn.getresponse()
        assert response.status == 400
        assert json.loads(response.read())["error"]["type"] == "invalid_request_error"
        conn.request("GET", "/v1/nowhere")
        response = conn.getresponse()
        assert response.status == 404
        assert "error" in json.loads(response.read())
    finally:
        conn.close()


# -- modes -----------------------------------------------------------------------------------
@needs_responses
def test_random_mode_differs_but_script_mode_repeats(
    make_server: MakeServer, make_client: MakeClient
) -> None:
    script = make_client(make_server("script"))
    rand = make_client(make_server("random"))
    a, b = chat(script), chat(script)
    assert a.choices[0].message.content == b.choices[0].message.content
    c, d = chat(rand), chat(rand)
    assert c.choices[0].message.content != d.choices[0].message.content
    s1, s2 = chat(script, tools=CHAT_TOOLS), chat(script, tools=CHAT_TOOLS)
    r1, r2 = chat(rand, tools=CHAT_TOOLS), chat(rand, tools=CHAT_TOOLS)
    assert s1.choices[0].message.tool_calls == s2.choices[0].message.tool_calls
    call1, call2 = r1.choices[0].message.tool_calls[0], r2.choices[0].message.tool_calls[0]
    assert call1.id != call2.id
    assert call1.function.arguments != call2.function.arguments
    assert json.loads(call1.function.arguments)["units"] == "celsius"  # enums are not free
    rs1 = respond(rand, model="m", input="hi").output_text
    assert rs1 != respond(rand, model="m", input="hi").output_text


@needs_responses
def test_echo_mode(make_server: MakeServer, make_client: MakeClient) -> None:
    client = make_client(make_server("echo"))
    messages = [{"role": "system", "content": "sys"}, {"role": "user", "content": "echo me back"}]
    assert chat(client, messages).choices[0].message.content == "echo me back"
    pieces = [c.choices[0].delta.content or "" for c in chat(client, messages, stream=True)]
    assert "".join(pieces) == "echo me back"
    parts = [{"role": "user", "content": [{"type": "input_text", "text": "from parts"}]}]
    assert respond(client, model="m", input=parts).output_text == "from parts"


def test_latency(make_server: MakeServer, make_client: MakeClient) -> None:
    client = make_client(make_server(latency_ms=150))
    start = time.perf_counter()
    chat(client)
    assert time.perf_counter() - start >= 0.15


# -- transport -------------------------------------------------------------------------------
@needs_responses
def test_async_client(server: ScriptedServer) -> None:
    async def run() -> tuple[str, str, str]:
        async with AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0) as aclient:
            client: Any = aclient
            plain = await client.chat.completions.create(model="m", messages=USER)
            stream = await client.chat.completions.create(model="m", messages=USER, stream=True)
            pieces = [c.choices[0].delta.content or "" async for c in stream if c.choices]
            events = await respond(client, model="m", input="hi", stream=True)
            deltas = [e.delta async for e in events if e.type == "response.output_text.delta"]
            return plain.choices[0].message.content or "", "".join(pieces), "".join(deltas)

    plain, streamed, responses = asyncio.run(run())
    assert plain
    assert streamed == plain
    assert responses.startswith("Answer ")


def test_keep_alive_and_chunked_streams(server: ScriptedServer) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    body = json.dumps({"model": "m", "messages": USER, "stream": True})
    try:
        conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
        response = conn.getresponse()
        sock = conn.sock
        assert response.getheader("Transfer-Encoding") == "chunked"
        assert response.getheader("Content-Type", "").startswith("text/event-stream")
        events = response.read().decode().split("\n\n")
        assert events[-2] == "data: [DONE]"
        assert events[-1] == ""
        conn.request("GET", "/v1/models")
        assert json.loads(conn.getresponse().read())["object"] == "list"
        assert conn.sock is sock  # the same connection served both requests
    finally:
        conn.close()


def test_stop_with_idle_keep_alive_connection(make_server: MakeServer) -> None:
    server = make_server()
    with OpenAI(base_url=server.base_url, api_key="k", max_retries=0) as client:
        chat(client)  # leaves a pooled keep-alive connection open
        start = time.perf_counter()
        server.stop()
        assert time.perf_counter() - start < 5
        server.stop()  # idempotent
        with pytest.raises(openai.APIConnectionError):
            chat(client)


def test_concurrent_requests_are_all_recorded(server: ScriptedServer, client: OpenAI) -> None:
    def call(i: int) -> str:
        reply = chat(client, [{"role": "user", "content": f"question {i}"}])
        return str(reply.choices[0].message.content)

    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(call, range(64)))
    assert len(answers) == 64
    assert all(answers)
    assert len(server.requests) == 64 == server.request_count
    contents = sorted(r["messages"][0]["content"] for r in server.requests)
    assert contents == sorted(f"question {i}" for i in range(64))
    server.reset()
    assert server.requests == []
    assert server.request_count == 0


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_subprocess_prints_ready_and_stops_on_signal(signum: int) -> None:
    command = [sys.executable, "-W", "error", "-m", "cassette.testing.server"]
    with subprocess.Popen(
        [*command, "--port", "0", "--mode", "random"],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            match = re.fullmatch(r"READY (http://127\.0\.0\.1:(\d+)/v1)\n", line)
            assert match, line
            with OpenAI(base_url=match.group(1), api_key="k", max_retries=0) as client:
                first, second = chat(client), chat(client)
                assert first.choices[0].message.content != second.choices[0].message.content
                proc.send_signal(signum)
                assert proc.wait(timeout=10) == 0
            out, err = proc.communicate(timeout=10)
            assert out == ""
            assert err == ""
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def test_subprocess_on_a_port_in_use_says_so_in_one_line() -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = str(held.getsockname()[1])
        command = [sys.executable, "-m", "cassette.testing.server", "--port", port]
        proc = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and proc.stdout == ""
    said = f"error: cannot listen on 127.0.0.1:{port} (Address already in use); pick another"
    assert proc.stderr == said + " --port\n"


# -- structured answers: JSON that fits the requested schema ----------------------------------
class _City(pydantic.BaseModel):
    name: str
    population: int = pydantic.Field(ge=1)
    districts: list[str]


class _Trip(pydantic.BaseModel):
    origin: _City
    stops: list[_City] = pydantic.Field(min_length=2)
    nights: int | None


@needs_responses
@pytest.mark.parametrize("mode", ["script", "random"])
def test_json_schema_answers_validate(
    make_server: MakeServer, make_client: MakeClient, mode: str
) -> None:
    client = make_client(make_server(mode))
    answers = [client.chat.completions.parse(model="m", messages=USER, response_format=_Trip)
               for _ in range(2)]  # fmt: skip
    trips = [a.choices[0].message.parsed for a in answers]
    assert all(isinstance(t, _Trip) and len(t.stops) == 2 for t in trips)
    assert (trips[0] == trips[1]) is (mode == "script")  # random answers differ
    text_format = client.responses.parse(model="m", input="Plan a trip", text_format=_Trip)
    assert isinstance(text_format.output_parsed, _Trip)
    fmt = {"type": "json_schema", "json_schema": {"name": "trip",
           "schema": _Trip.model_json_schema()}}  # fmt: skip
    pieces = [c.choices[0].delta.content or "" for c in chat(client, response_format=fmt,
              stream=True)]  # fmt: skip
    _Trip.model_validate_json("".join(pieces))


def test_json_object_answers_with_a_schema_from_the_messages(client: OpenAI) -> None:
    schema = json.dumps(_City.model_json_schema(), indent=2)
    system = f"Answer with JSON that matches this json_schema:\n\n{schema}\n\nOnly the JSON."
    messages = [{"role": "system", "content": system}, *USER]
    reply = chat(client, messages, response_format={"type": "json_object"})
    _City.model_validate_json(reply.choices[0].message.content or "")
    plain = chat(client, response_format={"type": "json_object"}).choices[0].message.content
    assert json.loads(plain or "") == {"answer": USER[0]["content"]}


@pytest.mark.parametrize("mode", ["script", "random"])
def test_forced_tool_arguments_fit_a_nested_model(
    make_server: MakeServer, make_client: MakeClient, mode: str
) -> None:
    client = make_client(make_server(mode))
    tool = {"type": "function", "function": {"name": "_Trip", "parameters":
            _Trip.model_json_schema()}}  # fmt: skip
    choice = {"type": "function", "function": {"name": "_Trip"}}
    reply = chat(client, tools=[*CHAT_TOOLS, tool], tool_choice=choice)
    (call,) = reply.choices[0].message.tool_calls or []
    assert call.function.name == "_Trip"
    _Trip.model_validate_json(call.function.arguments)


def test_after_a_tool_result_a_structured_request_gets_json(client: OpenAI) -> None:
    first = chat(client, tools=CHAT_TOOLS).choices[0].message
    (call,) = first.tool_calls or []
    messages = [*USER, first.model_dump(exclude_none=True),
                {"role": "tool", "tool_call_id": call.id, "content": "sunny"}]  # fmt: skip
    fmt = {"type": "json_schema", "json_schema": {"name": "c", "schema":
           _City.model_json_schema()}}  # fmt: skip
    reply = chat(client, messages, tools=CHAT_TOOLS, response_format=fmt)
    _City.model_validate_json(reply.choices[0].message.content or "")
    text = chat(client, messages, tools=CHAT_TOOLS).choices[0].message.content
    assert text == 'The tool returned: "sunny".'  # without a format: as before
