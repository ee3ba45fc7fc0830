"""wrap_anthropic: the real anthropic SDK over real HTTP to the scripted server's Messages
endpoint, recorded and replayed offline under a socket guard."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

anthropic = pytest.importorskip("anthropic")

import cassette  # noqa: E402
from cassette import CassetteError, CassetteMismatch  # noqa: E402
from cassette.adapters.anthropic import AnthropicErrors, is_wrapped, wrap_anthropic  # noqa: E402
from cassette.storage.index import load_index  # noqa: E402
from tests.helpers.chat import MakeServer  # noqa: E402

NOWHERE = "http://127.0.0.1:9"  # the discard port: nothing listens there
USER = [{"role": "user", "content": "What is the weather like in Paris tomorrow?"}]
TOOLS: list[Any] = [
    {
        "name": "get_weather",
        "description": "The forecast",
        "input_schema": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city", "days"],
        },
    }
]


@pytest.fixture
def clients() -> Iterator[Callable[..., Any]]:
    made: list[Any] = []

    def make(base_url: str, aio: bool = False, api_key: str = "sk-ant-test-0123456789") -> Any:
        cls = anthropic.AsyncAnthropic if aio else anthropic.Anthropic
        client = cls(base_url=base_url, api_key=api_key, max_retries=0)
        made.append(client)
        return client

    try:
        yield make
    finally:
        for client in made:
            if isinstance(client, anthropic.Anthropic):
                client.close()


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "run.jsonl"


@contextlib.contextmanager
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A socket guard: any connection attempt fails, and fails the test."""
    attempts: list[Any] = []

    def refuse(self: socket.socket, address: Any, *args: Any) -> Any:
        attempts.append(address)
        raise OSError(f"socket guard: this test may not connect to {address!r}")

    with monkeypatch.context() as patch:
        patch.setattr(socket.socket, "connect", refuse)
        patch.setattr(socket.socket, "connect_ex", refuse)
        yield
    assert not attempts, f"the replay tried to connect to {attempts}"


def create(client: Any, messages: list[Any] = USER, **kwargs: Any) -> Any:
    return client.messages.create(model="claude-test", max_tokens=256, messages=messages, **kwargs)


def run_everything(client: Any, cas: Any) -> list[Any]:
    """Every entry point, with what each returns (dumped for comparison)."""
    wrapped = wrap_anthropic(client, cas)
    assert isinstance(wrapped, anthropic.Anthropic) and is_wrapped(wrapped)
    assert not is_wrapped(client)
    out: list[Any] = []
    with cassette.episode(0):
        message = create(wrapped, system="be brief")
        assert isinstance(message, anthropic.types.Message)
        out.append(message.model_dump())
        events = list(create(wrapped, [{"role": "user", "content": "stream this"}], stream=True))
        out.append([e.model_dump() for e in events])
        with wrapped.messages.stream(
            model="claude-test", max_tokens=64, messages=[{"role": "user", "content": "helper"}]
        ) as stream:
            out.append(list(stream.text_stream))
            out.append(stream.get_final_message().model_dump())
        raw = wrapped.messages.with_raw_response.create(
            model="claude-test", max_tokens=64, messages=USER
        )
        out.append((raw.status_code, raw.parse().model_dump()))
        with wrapped.messages.with_streaming_response.create(
            model="claude-test", max_tokens=64, messages=USER
        ) as streamed:
            out.append(streamed.parse().model_dump())
        out.append(wrapped.with_options(timeout=5).messages.create(
            model="claude-test", max_tokens=64, messages=[{"role": "user", "content": "copy"}]
        ).model_dump())  # fmt: skip
    with cassette.episode(1):  # a tool loop: tool_use, then the tool's result
        first = create(wrapped, tools=TOOLS)
        use = next(b for b in first.content if b.type == "tool_use")
        out.append((first.stop_reason, use.name, use.input))
        blocks = first.content
        history = [
            *USER,
            {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in blocks]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": use.id, "content": "sunny"}
            ]},
        ]  # fmt: skip
        second = create(wrapped, history, tools=TOOLS)
        out.append(second.content[0].text)
        with wrapped.messages.stream(
            model="claude-test", max_tokens=64, messages=USER, tools=TOOLS
        ) as stream:
            final = stream.get_final_message()
        out.append([b.model_dump() for b in final.content])
    return out


def test_every_entry_point_replays_offline_as_sdk_objects(
    make_server: MakeServer, clients: Callable[..., Any], path: Path, monkeypatch: Any
) -> None:
    server = make_server("random")
    with cassette.open(path, mode="record") as cas:
        recorded = run_everything(clients(server.root_url), cas)
    assert recorded[7][0] == "tool_use" and set(recorded[7][2]) == {"city", "days"}
    assert "sunny" in recorded[8]
    assert recorded[3]["content"][0]["text"] == "".join(recorded[2])
    kinds = [e["type"] for e in recorded[1]]
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    assert "content_block_delta" in kinds and "ping" not in kinds  # the SDK skips pings
    count = server.request_count
    server.stop()
    for _ in range(2):
        with no_network(monkeypatch), cassette.open(path, mode="replay") as cas:
            assert run_everything(clients(NOWHERE), cas) == recorded
    assert count == 9
    assert "sk-ant-test" not in path.read_text()
    entries = load_index([path]).entries
    streamed = entries[(0, "llm", 1)]
    assert streamed.param("endpoint") == "messages" and streamed.param("stream") is True
    assembled = (streamed.response or {})["message"]
    text = "".join(e["delta"]["text"] for e in recorded[1] if e["type"] == "content_block_delta")
    assert assembled["content"][0]["text"] == text and assembled["stop_reason"] == "end_turn"


def test_async_client_records_and_replays_streams_and_helpers(
    make_server: MakeServer, clients: Callable[..., Any], path: Path, monkeypatch: Any
) -> None:
    async def run(client: Any, mode: str) -> list[Any]:
        async with cassette.open(path, mode=mode) as cas:
            wrapped = wrap_anthropic(client, cas)
            assert isinstance(wrapped, anthropic.AsyncAnthropic)

            async def one(env: int) -> list[Any]:
                with cassette.episode(env):
                    msgs = [{"role": "user", "content": f"conversation {env}"}]
                    message = await create(wrapped, msgs)
                    stream = await create(wrapped, msgs, stream=True)
                    events = [e.type async for e in stream]
                    async with wrapped.messages.stream(
                        model="claude-test", max_tokens=64, messages=msgs, tools=TOOLS
                    ) as helper:
                        final = await helper.get_final_message()
                    return [message.model_dump(), events, final.model_dump()]

            try:
                return list(await asyncio.gather(*(one(env) for env in range(4))))
            finally:
                await client.close()

    recorded = asyncio.run(run(clients(make_server("random").root_url, aio=True), "record"))
    assert len({r[0]["content"][0]["text"] for r in recorded}) == 4
    with no_network(monkeypatch):
        assert asyncio.run(run(clients(NOWHERE, aio=True), "replay")) == recorded


def test_api_errors_replay_as_the_same_exceptions(
    make_server: MakeServer, clients: Callable[..., Any], path: Path
) -> None:
    server = make_server("random")
    limited = {"status": 429, "headers": {"request-id": "req_42", "retry-after": "1"}}
    server.enqueue({"error": limited}, {"error": 529})

    def run(client: Any, mode: str) -> list[Any]:
        seen = []
        with cassette.open(path, mode=mode) as cas:
            wrapped = wrap_anthropic(client, cas)
            attempts: list[Callable[[], Any]] = [
                lambda: create(wrapped),
                lambda: create(wrapped, stream=True),  # raises at create(), as the SDK does
                lambda: create(wrapped, [{"role": "user", "content": "no [[error:400]]"}]),
                lambda: wrapped.messages.stream(
                    model="claude-test",
                    max_tokens=9,
                    messages=[{"role": "user", "content": "[[error:404]]"}],
                ).__enter__(),
            ]
            for attempt in attempts:
                with pytest.raises(anthropic.APIStatusError) as info:
                    attempt()
                exc = info.value
                seen.append((type(exc), exc.status_code, exc.body, str(exc), exc.request_id))
        return seen

    recorded = run(clients(server.root_url), "record")
    kinds = [r[0] for r in recorded]
    assert kinds == [
        anthropic.RateLimitError, anthropic.OverloadedError, anthropic.BadRequestError,
        anthropic.NotFoundError,
    ]  # fmt: skip
    assert recorded[0][4] == "req_42"
    assert recorded[2][2]["error"]["type"] == "invalid_request_error"
    server.stop()
    assert run(clients(NOWHERE), "replay") == recorded


def test_changed_request_raises_mismatch_and_beta_header_is_part_of_it(
    make_server: MakeServer, clients: Callable[..., Any], path: Path
) -> None:
    with cassette.open(path, mode="record") as cas:
        wrapped = wrap_anthropic(clients(make_server("random").root_url), cas)
        create(wrapped)
        create(wrapped, extra_headers={"anthropic-beta": "some-beta-2025"})
    entry = load_index([path]).entries[(0, "llm", 1)]
    assert entry.param("$anthropic-beta") == "some-beta-2025"
    with cassette.open(path, mode="replay") as cas:
        wrapped = wrap_anthropic(clients(NOWHERE), cas)
        with pytest.raises(CassetteMismatch, match=r"messages\[0\]\.content"):
            create(wrapped, [{"role": "user", "content": "something else"}])


def test_refusals_and_type_errors(clients: Callable[..., Any], path: Path) -> None:
    with cassette.open(path, mode="record") as cas:
        with pytest.raises(TypeError, match="wrap_anthropic takes"):
            wrap_anthropic(object(), cas)  # type: ignore[type-var]
        wrapped = wrap_anthropic(clients(NOWHERE), cas)
        with pytest.raises(CassetteError, match="wrap_anthropic did not wrap"):
            wrapped.post("/v1/files", cast_to=object, body=None, files=[("file", b"x")])


def test_pages_raw_stream_lines_and_feature_probes(
    make_server: MakeServer, clients: Callable[..., Any], path: Path, monkeypatch: Any
) -> None:
    def run(client: Any, mode: str) -> list[Any]:
        with cassette.open(path, mode=mode) as cas:
            wrapped = wrap_anthropic(client, cas)
            probes = [hasattr(wrapped, n) for n in ("messages", "beta", "models", "no_such")]
            assert probes == [True, True, True, False]
            models = [m.id for m in wrapped.models.list().data]
            with wrapped.messages.with_streaming_response.create(
                model="claude-test", max_tokens=9, messages=USER, stream=True
            ) as raw:
                lines = list(raw.iter_lines())
            return [models, lines]

    recorded = run(clients(make_server("random").root_url), "record")
    assert "event: ping" in recorded[1] and recorded[1][0] == "event: message_start"
    with no_network(monkeypatch):
        assert run(clients(NOWHERE), "replay") == recorded
    endpoints = [e.param("endpoint") for e in load_index([path]).entries.values()]
    assert endpoints == ["GET models", "messages"]


@pytest.mark.parametrize(
    "data",
    [
        ["not", "a", "dict"],
        {"kind": "status"},  # no status code
        {"kind": "status", "status_code": "429"},
        {"kind": "status", "status_code": 429, "headers": ["x"]},
    ],
)
def test_a_damaged_recorded_error_is_not_rebuilt(data: Any) -> None:
    """A recorded anthropic error whose data was edited or damaged replays as a
    RecordedError (load gives None), never as a KeyError or AttributeError."""
    client = anthropic.Anthropic(api_key="fake-key", base_url="http://127.0.0.1:9")
    info = {"type": "anthropic.RateLimitError", "message": "slow down", "data": data}
    assert AnthropicErrors(client, "/v1/messages").load(info) is None
    client.close()


def test_without_anthropic_the_error_says_how_to_install(tmp_path: Path) -> None:
    code = "import sys; sys.modules['anthropic'] = None; import cassette.adapters.anthropic"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert done.returncode != 0
    assert done.stderr.strip().splitlines()[-1] == (
        "ImportError: cassette.adapters.anthropic needs anthropic: "
        "pip install 'rollout-cassette[anthropic]'"
    )
