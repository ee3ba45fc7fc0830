"""patch_litellm and litellm's Responses API: ``responses``/``aresponses``, whole and streamed
(litellm's native SSE stream, and the stream it fakes for a model it does not know to
stream), recorded by the real litellm over real HTTP to the scripted server in random mode
and replayed offline, three times, under a socket guard, as litellm's own types
(``ResponsesAPIResponse``, its event objects, its streaming iterators); errors replay as
litellm's exceptions; no secret reaches the file."""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm: no fetch at import

import json
from pathlib import Path
from typing import Any

import litellm
import openai
import pytest
from litellm.responses.streaming_iterator import (
    BaseResponsesAPIStreamingIterator,
    ResponsesAPIStreamingIterator,
    SyncResponsesAPIStreamingIterator,
)
from litellm.types.llms.openai import ResponsesAPIResponse

import cassette
from cassette import CassetteMismatch
from cassette.adapters.litellm import patch_litellm
from cassette.storage.index import load_index
from tests.helpers.chat import MakeServer
from tests.helpers.litellm_calls import KEY, WEATHER, Weather, args, router, run

pytestmark = pytest.mark.usefixtures("litellm_leftovers")

NATIVE = "openai/gpt-4o-mini"  # litellm streams it natively (SSE)
FAKED = "openai/scripted"  # a model litellm does not know: it fakes the stream from one reply
TOOLS = [{"type": "function", "name": "get_weather", "parameters": WEATHER}]
SECRET = "sk-header-secret-0123456789"


def same(recorded: Any, replayed: Any) -> None:
    """Equal as litellm objects: type, fields, private state (a stream event's response's
    ``_hidden_params`` included) and dumps; lists item by item, in order."""
    if isinstance(recorded, list):
        assert len(replayed) == len(recorded)
        for a, b in zip(recorded, replayed, strict=True):
            same(a, b)
        return
    assert type(replayed) is type(recorded)
    assert replayed == recorded  # pydantic: fields, extra and private attributes
    assert replayed.model_dump() == recorded.model_dump()
    assert replayed.__pydantic_private__ == recorded.__pydantic_private__
    inner = getattr(recorded, "response", None)
    if isinstance(inner, ResponsesAPIResponse):
        assert replayed.response._hidden_params == inner._hidden_params


def streamed(stream: Any) -> list[Any]:
    """The events of a sync stream, checked as litellm's iterator is after the end."""
    assert isinstance(stream, SyncResponsesAPIStreamingIterator)
    events = list(stream)
    assert stream.finished and stream.completed_response is events[-1]
    return events


async def astreamed(stream: Any) -> list[Any]:
    assert isinstance(stream, ResponsesAPIStreamingIterator)
    events = [event async for event in stream]
    assert stream.finished and stream.completed_response is events[-1]
    return events


def calls(base: str) -> list[Any]:
    """What an agent step does: a reply, a tool call, then streamed replies."""
    first = litellm.responses(
        input="What is a lake?", instructions="Be brief.", temperature=0.2, **args(base)
    )
    tool = litellm.responses(
        input="Weather in Paris for 2 days?", tools=TOOLS, metadata={"run": "7"}, **args(base)
    )
    call = tool.output[0]  # fed back as litellm returned it, with the tool's answer
    result = {"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}
    answer = litellm.responses(input=[call, result], tools=TOOLS, **args(base))
    native = litellm.responses(input="And a sea?", stream=True, **args(base, model=NATIVE))
    faked = litellm.responses(input="And a river?", stream=True, **args(base))
    return [first, tool, answer, streamed(native), streamed(faked)]


async def acalls(base: str) -> list[Any]:
    first = await litellm.aresponses(input="What is a lake?", **args(base))
    native = await litellm.aresponses(
        input=[{"role": "user", "content": "And a sea?"}], stream=True, **args(base, model=NATIVE)
    )
    faked = await litellm.aresponses(input="And a river?", stream=True, **args(base))
    return [first, await astreamed(native), await astreamed(faked)]


def test_responses_and_streams_replay_offline(
    make_server: MakeServer, path: Path, request: pytest.FixtureRequest
) -> None:
    server = make_server("random")
    with cassette.open(path, "record") as cas, patch_litellm(cas) as patch:
        recorded = calls(server.base_url)
        again = calls(server.base_url)  # random mode: a second live run answers otherwise
    assert patch.live_calls == 10 == server.request_count
    first, tool, answer, native, faked = recorded
    assert isinstance(first, ResponsesAPIResponse) and first.output[0].content[0].text
    assert tool.output[0].type == "function_call" and tool.output[0].name == "get_weather"
    assert "sunny" in answer.output[0].content[0].text
    assert [e.type for e in native[:2]] == ["response.created", "response.in_progress"]
    assert native[-1].type == "response.completed" and faked[-1].type == "response.completed"
    deltas = "".join(e.delta for e in native if e.type == "response.output_text.delta")
    assert deltas == native[-1].response.output[0].content[0].text
    assert first.output != again[0].output
    base = server.base_url
    server.stop()
    text = path.read_text()
    assert KEY not in text and "127.0.0.1" not in text
    request.getfixturevalue("no_network")
    for _ in range(3):
        with cassette.open(path, "replay") as cas, patch_litellm(cas) as patch:
            replayed = calls(base)
            assert calls(base)[0].output == again[0].output  # the second run, in its order
        assert patch.live_calls == 0
        same(recorded, replayed)


def test_async_twins_replay_offline(
    make_server: MakeServer, path: Path, request: pytest.FixtureRequest
) -> None:
    server = make_server("random")
    with cassette.open(path, "record") as cas, patch_litellm(cas) as patch:
        recorded = run(acalls(server.base_url))
    assert patch.live_calls == 3 == server.request_count
    assert recorded[1][-1].response.usage.total_tokens > 0
    base = server.base_url
    server.stop()
    request.getfixturevalue("no_network")
    for _ in range(3):
        with cassette.open(path, "replay") as cas, patch_litellm(cas):
            replayed = run(acalls(base))
        same(recorded, replayed)


def test_a_stream_keeps_the_iterators_state(
    make_server: MakeServer, path: Path, request: pytest.FixtureRequest
) -> None:
    def state(base: str) -> tuple[Any, ...]:
        stream = litellm.responses(input="A sea?", stream=True, **args(base, model=NATIVE))
        assert isinstance(stream, BaseResponsesAPIStreamingIterator)
        streamed(stream)
        hidden = stream._hidden_params
        return stream.model, stream.custom_llm_provider, hidden["api_base"], hidden

    server = make_server("random")
    with cassette.open(path, "record") as cas, patch_litellm(cas):
        recorded = state(server.base_url)
    assert recorded[:3] == ("gpt-4o-mini", "openai", server.base_url)
    base = server.base_url
    server.stop()
    request.getfixturevalue("no_network")
    with cassette.open(path, "replay") as cas, patch_litellm(cas):
        assert state(base) == recorded


def test_the_requests_are_the_model_input_and_json_params(
    make_server: MakeServer, path: Path
) -> None:
    server = make_server("random")
    where = args(server.base_url)
    del where["model"]
    with cassette.open(path, "record") as cas, patch_litellm(cas):
        calls(server.base_url)
        run(acalls(server.base_url))
        litellm.responses("A pond?", FAKED, extra_headers={"x-token": SECRET}, **where)
        litellm.responses(input="Weather?", text_format=Weather, **args(server.base_url))
    requests = [e.request for _, e in sorted(load_index([path]).entries.items())]
    call = requests[2]["input"][0]  # the function call item litellm returned, as JSON
    schema = requests[-1]["text_format"]["json_schema"]["schema"]  # the model's, as litellm's
    assert schema["required"] == ["city", "days"]
    assert call["type"] == "function_call" and call["name"] == "get_weather"
    head = {"endpoint": "responses", "model": FAKED}
    native = {"endpoint": "responses", "model": NATIVE}
    assert requests == [
        {**head, "input": "What is a lake?", "instructions": "Be brief.", "temperature": 0.2},
        {**head, "input": "Weather in Paris for 2 days?", "metadata": {"run": "7"},
         "tools": TOOLS},
        {**head, "input": [call, {"type": "function_call_output", "call_id": call["call_id"],
         "output": "sunny"}], "tools": TOOLS},
        {**native, "input": "And a sea?", "stream": True},
        {**head, "input": "And a river?", "stream": True},
        {**head, "input": "What is a lake?"},
        {**native, "input": [{"role": "user", "content": "And a sea?"}], "stream": True},
        {**head, "input": "And a river?", "stream": True},
        {**head, "input": "A pond?"},
        {**head, "input": "Weather?", "text_format": {"type": "json_schema", "json_schema": {
         "name": "Weather", "schema": schema, "strict": True}}},
    ]  # fmt: skip
    assert SECRET not in path.read_text() and KEY not in path.read_text()


def test_errors_replay_as_litellm_exceptions(
    make_server: MakeServer, path: Path, request: pytest.FixtureRequest
) -> None:
    server = make_server("random", errors={1: 429, 2: 401, 3: 503, 4: 400})

    async def astream(base: str) -> Any:
        return await litellm.aresponses(input="A sea?", stream=True, **args(base, model=NATIVE))

    def failing(base: str) -> list[BaseException]:
        raised = []
        for call in (
            lambda: litellm.responses(input="A lake?", **args(base)),
            lambda: litellm.responses(input="A sea?", stream=True, **args(base, model=NATIVE)),
            lambda: run(litellm.aresponses(input="A lake?", **args(base))),
            lambda: run(astream(base)),  # the call fails, not the iteration, as live
        ):
            with pytest.raises(openai.APIStatusError) as info:
                call()
            raised.append(info.value)
        return raised

    with cassette.open(path, "record") as cas, patch_litellm(cas):
        recorded = failing(server.base_url)
    assert [type(e) for e in recorded] == [
        litellm.exceptions.RateLimitError,
        litellm.exceptions.AuthenticationError,
        litellm.exceptions.ServiceUnavailableError,
        litellm.exceptions.BadRequestError,
    ]
    base = server.base_url
    server.stop()
    request.getfixturevalue("no_network")
    with cassette.open(path, "replay") as cas, patch_litellm(cas):
        replayed = failing(base)
    assert [type(e) for e in replayed] == [type(e) for e in recorded]
    for live, again in zip(recorded, replayed, strict=True):
        assert again.status_code == live.status_code  # type: ignore[attr-defined]
        assert str(again) == str(live)


def test_a_router_responds_offline(
    make_server: MakeServer, path: Path, request: pytest.FixtureRequest
) -> None:
    async def astream(router: Any) -> list[Any]:
        stream = await router.aresponses(model="fast", input="A sea?", stream=True)
        return [event async for event in stream]  # (the Router wraps the stream in its own)

    def routed(base: str) -> list[Any]:
        fast = router(base, NATIVE)
        first = fast.responses(model="fast", input="A lake?")
        return [first, run(fast.aresponses(model="fast", input="A river?")), run(astream(fast))]

    server = make_server("random")
    with cassette.open(path, "record") as cas, patch_litellm(cas) as patch:
        recorded = routed(server.base_url)
    assert patch.live_calls == 3 == server.request_count
    base = server.base_url
    server.stop()
    request.getfixturevalue("no_network")
    for _ in range(3):  # the Router's ids and deployment ids stay out of the requests
        with cassette.open(path, "replay") as cas, patch_litellm(cas):
            same(recorded, routed(base))


def test_a_changed_input_is_a_mismatch(make_server: MakeServer, path: Path) -> None:
    server = make_server("random")
    with cassette.open(path, "record") as cas, patch_litellm(cas):
        litellm.responses(input="A lake?", **args(server.base_url))
    with (
        cassette.open(path, "replay") as cas,
        patch_litellm(cas),
        pytest.raises(CassetteMismatch, match="input"),
    ):
        litellm.responses(input="A pond?", **args(server.base_url))


def test_the_stream_is_stored_with_its_final_response(make_server: MakeServer, path: Path) -> None:
    server = make_server("random")
    with cassette.open(path, "record") as cas, patch_litellm(cas):
        events = streamed(
            litellm.responses(input="A sea?", stream=True, **args(server.base_url, model=NATIVE))
        )
    line = json.loads(path.read_text().splitlines()[1])
    message = line["response"]["message"]  # what diffs show: the final response
    assert message["output"][0]["content"][0]["text"] == events[-1].response.output_text


def test_a_stream_closed_early_is_recorded_incomplete(make_server: MakeServer, path: Path) -> None:
    server = make_server("random", chunk_words=1)
    with cassette.open(path, "record") as cas, patch_litellm(cas):
        stream = litellm.responses(
            input="A sea?", stream=True, **args(server.base_url, model=NATIVE)
        )
        assert next(stream).type == "response.created"
        stream.close()
        assert list(stream) == []
    line = json.loads(path.read_text().splitlines()[1])
    assert line["meta"].get("incomplete") is True


def test_response_headers_keep_no_credentials(make_server: MakeServer) -> None:
    """A Responses API reply carries the provider's headers twice (``additional_headers``
    and ``headers``): neither keeps cookies or organisation ids in the cassette."""
    from cassette.adapters.litellm._stream import dump_response

    server = make_server("random")
    reply = litellm.responses(input="A lake?", **args(server.base_url))
    hidden = reply._hidden_params
    hidden["headers"] |= {"set-cookie": f"session={SECRET}", "openai-organization": SECRET}
    hidden["additional_headers"]["llm_provider-set-cookie"] = SECRET
    stored = json.dumps(dump_response(reply, server.base_url))
    assert SECRET not in stored and "content-type" in stored
