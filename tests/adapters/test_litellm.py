"""patch_litellm: the real litellm over real HTTP to the scripted server, recorded in random
mode and replayed offline, three times, with a socket guard."""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm: no fetch at import

import asyncio
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import litellm
import openai
import pytest
from litellm import ModelResponse
from litellm import completion as held_completion  # a reference a user may hold
from litellm.litellm_core_utils.streaming_handler import CustomStreamWrapper
from litellm.types.utils import ModelResponseStream

import cassette
from cassette import CassetteError, CassetteMismatch
from cassette.adapters.litellm import LiteLLMStream, patch_litellm
from cassette.storage.index import load_index
from tests.helpers.chat import MakeServer
from tests.helpers.litellm_calls import KEY, TOOLS, USER, Weather, args, router, run, same

pytestmark = pytest.mark.usefixtures("litellm_leftovers")


def tool_loop(base: str) -> list[Any]:
    """A tool call, its answer, then a streamed reply: what an agent step does."""
    first = litellm.completion(messages=USER, tools=TOOLS, **args(base))
    call = first.choices[0].message.tool_calls[0]
    messages = [
        *USER,
        first.choices[0].message,
        {"role": "tool", "tool_call_id": call.id, "content": "sunny, 21C"},
    ]
    second = litellm.completion(messages=messages, tools=TOOLS, temperature=0.2, **args(base))
    messages += [second.choices[0].message, {"role": "user", "content": "and in Rome?"}]
    stream = litellm.completion(messages=messages, stream=True, **args(base))
    assert isinstance(stream, CustomStreamWrapper)
    chunks = list(stream)
    return [first, second, chunks]


async def atool_loop(base: str) -> list[Any]:
    first = await litellm.acompletion(messages=USER, tools=TOOLS, **args(base))
    call = first.choices[0].message.tool_calls[0]
    messages = [
        *USER,
        first.choices[0].message,
        {"role": "tool", "tool_call_id": call.id, "content": "rain"},
    ]
    stream = await litellm.acompletion(
        messages=messages, stream=True, stream_options={"include_usage": True}, **args(base)
    )
    assert isinstance(stream, CustomStreamWrapper)
    chunks = [chunk async for chunk in stream]
    return [first, chunks]


def test_completion_tools_and_stream_replay_offline(
    make_server: MakeServer, path: Path, request: pytest.FixtureRequest
) -> None:
    server = make_server("random")
    with cassette.open(path, "record") as cas, patch_litellm(cas) as patch:
        recorded = tool_loop(server.base_url)
    assert patch.live_calls == 3 == server.request_count
    assert recorded[0].choices[0].finish_reason == "tool_calls"
    base = server.base_url
    server.stop()
    text = path.read_text()
    assert KEY not in text and "127.0.0.1" not in text
    request.getfixturevalue("no_network")
    for _ in range(3):
        with cassette.open(path, "replay") as cas, patch_litellm(cas) as patch:
            replayed = tool_loop(base)
        assert patch.live_calls == 0
        same(recorded, replayed)
    chunks = replayed[2]
    assert all(type(c) is ModelResponseStream for c in chunks)
    built = litellm.stream_chunk_builder(chunks)
    assert isinstance(built, ModelResponse)
    assert built.choices[0].message.content == "".join(
        c.choices[0].delta.content or "" for c in recorded[2]
    )


def test_acompletion_and_async_stream_replay_offline(
    make_server: MakeServer, path: Path, request: pytest.FixtureRequest
) -> None:
    server = make_server("random")
    with cassette.open(path, "record") as cas, patch_litellm(cas):
        recorded = run(atool_loop(server.base_url))
    assert recorded[1][-1].usage.total_tokens > 0  # include_usage: the last chunk has it
    base = server.base_url
    server.stop()
    request.getfixturevalue("no_network")
    for _ in range(3):
        with cassette.open(path, "replay") as cas, patch_litellm(cas):
            replayed = run(atool_loop(base))
        same(recorded, replayed)


def test_the_request_is_model_messages_and_json_params(make_server: MakeServer, path: Path) -> None:
    server = make_server("random")
    with cassette.open(path, "record") as cas, patch_litellm(cas):
        litellm.completion(
            messages=USER, temperature=0.0, timeout=30, extra_headers={"x-a": "b"},
            metadata={"run": 1}, logger_fn=print, **args(server.base_url),
        )  # fmt: skip
        litellm.completion(messages=USER, response_format=Weather, **args(server.base_url))
    entries = load_index([path]).entries
    assert entries[(0, "llm", 0)].request == {
        "model": "openai/scripted",
        "messages": USER,
        "temperature": 0.0,
    }
    sent = server.requests[1]["response_format"]  # the JSON schema litellm sent
    assert entries[(0, "llm", 1)].request["response_format"] == sent
    assert sent["json_schema"]["schema"]["required"] == ["city", "days"]


def test_concurrent_episodes_get_their_own_answers(
    make_server: MakeServer, path: Path, request: pytest.FixtureRequest
) -> None:
    async def episode(env: int, base: str) -> list[str]:
        with cassette.episode(env):
            messages: list[Any] = [{"role": "user", "content": f"task {env}"}]
            answers = []
            for turn in range(3):
                reply = await litellm.acompletion(messages=messages, **args(base))
                await asyncio.sleep(0.001 * ((env + turn) % 3))  # interleave the episodes
                answers.append(reply.choices[0].message.content)
                messages += [reply.choices[0].message, {"role": "user", "content": "more"}]
            return answers

    async def run_all(base: str) -> list[list[str]]:
        return list(await asyncio.gather(*(episode(i, base) for i in range(8))))

    server = make_server("random")
    with cassette.open(path, "record") as cas, patch_litellm(cas):
        recorded = run(run_all(server.base_url))
    base = server.base_url
    server.stop()
    assert len({a for answers in recorded for a in answers}) == 24  # random: all different
    request.getfixturevalue("no_network")
    for _ in range(3):
        with cassette.open(path, "replay") as cas, patch_litellm(cas):
            assert run(run_all(base)) == recorded
            assert cas.unused() == []


def test_a_router_records_and_replays_offline(
    make_server: MakeServer, path: Path, request: pytest.FixtureRequest
) -> None:
    def calls(base: str) -> list[Any]:
        routed = router(base)
        first = routed.completion(model="fast", messages=USER)
        return [first, run(routed.acompletion(model="fast", messages=USER, temperature=0.1))]

    server = make_server("random")
    with cassette.open(path, "record") as cas, patch_litellm(cas):
        recorded = calls(server.base_url)
    base = server.base_url
    server.stop()
    request.getfixturevalue("no_network")
    for _ in range(3):  # the Router's trace ids and deployment ids stay out of the request
        with cassette.open(path, "replay") as cas, patch_litellm(cas):
            same(recorded, calls(base))


def test_errors_replay_as_litellm_exceptions(
    make_server: MakeServer, path: Path, request: pytest.FixtureRequest
) -> None:
    server = make_server("random", errors={1: 429, 2: 401})
    recorded: list[BaseException] = []
    with cassette.open(path, "record") as cas, patch_litellm(cas):
        for _ in range(2):
            with pytest.raises(openai.APIStatusError) as info:
                litellm.completion(messages=USER, **args(server.base_url))
            recorded.append(info.value)
    assert [type(e) for e in recorded] == [
        litellm.exceptions.RateLimitError,
        litellm.exceptions.AuthenticationError,
    ]
    base = server.base_url
    server.stop()
    request.getfixturevalue("no_network")
    with cassette.open(path, "replay") as cas, patch_litellm(cas):
        for live in recorded:
            with pytest.raises(type(live)) as again:
                litellm.completion(messages=USER, **args(base))
            assert again.value.status_code == live.status_code  # type: ignore[attr-defined]
            assert str(again.value) == str(live)


def test_a_failed_stream_replays_its_error_when_called(
    make_server: MakeServer, path: Path, request: pytest.FixtureRequest
) -> None:
    server = make_server("random", errors={1: 503})
    with (
        cassette.open(path, "record") as cas,
        patch_litellm(cas),
        pytest.raises(openai.APIStatusError) as live,
    ):
        litellm.completion(messages=USER, stream=True, **args(server.base_url))
    base = server.base_url
    server.stop()
    request.getfixturevalue("no_network")
    with (
        cassette.open(path, "replay") as cas,
        patch_litellm(cas),
        pytest.raises(type(live.value)) as replayed,  # raised by the call, as live
    ):
        litellm.completion(messages=USER, stream=True, **args(base))
    assert replayed.value.status_code == live.value.status_code == 503


def test_a_changed_request_is_a_mismatch(make_server: MakeServer, path: Path) -> None:
    server = make_server("random")
    with cassette.open(path, "record") as cas, patch_litellm(cas):
        litellm.completion(messages=USER, **args(server.base_url))
    with (
        cassette.open(path, "replay") as cas,
        patch_litellm(cas),
        pytest.raises(CassetteMismatch),
    ):
        litellm.completion(messages=USER, temperature=1.5, **args(server.base_url))


def test_every_reference_is_patched_and_restored(make_server: MakeServer, path: Path) -> None:
    originals = (litellm.completion, litellm.acompletion, litellm.main.completion)
    server = make_server("random")
    with cassette.open(path, "record") as cas, patch_litellm(cas) as patch:
        this = sys.modules[__name__]
        assert this.held_completion is not originals[0]  # `from litellm import completion`
        this.held_completion(messages=USER, **args(server.base_url))
        assert patch.live_calls == 1
        with pytest.raises(CassetteError, match="already active"), patch_litellm(cas):
            pass
    assert (litellm.completion, litellm.acompletion, litellm.main.completion) == originals
    assert held_completion is originals[0]
    assert len(load_index([path]).entries) == 1


def test_a_stream_closed_early_is_recorded_incomplete(make_server: MakeServer, path: Path) -> None:
    server = make_server("random", chunk_words=1)
    with cassette.open(path, "record") as cas, patch_litellm(cas):
        stream = litellm.completion(messages=USER, stream=True, **args(server.base_url))
        assert isinstance(stream, LiteLLMStream)
        next(stream)
        stream.close()
    line = json.loads(path.read_text().splitlines()[1])
    assert line["meta"].get("incomplete") is True


def test_without_litellm_the_error_says_how_to_install(tmp_path: Path) -> None:
    code = "import sys; sys.modules['litellm'] = None; import cassette.adapters.litellm"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last == (
        "ImportError: cassette.adapters.litellm needs litellm: "
        "pip install 'rollout-cassette[litellm]'"
    )


def test_the_docs_example_records_and_replays(tmp_path: Path) -> None:
    page = (Path(__file__).parents[2] / "docs" / "adapters" / "litellm.md").read_text()
    (block,) = [b for b in re.findall(r"```python\n(.*?)```", page, re.S) if "A lake?" in b]
    (tmp_path / "example.py").write_text(block)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    env.pop("CASSETTE_MODE", None)
    done = subprocess.run(
        [sys.executable, "example.py"], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("Answer ")
    assert (tmp_path / "runs" / "litellm.jsonl").exists()
