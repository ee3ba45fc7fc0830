"""wrap_policy: OpenAI-style chat functions and eval-protocol-style policies."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from openai.types import CompletionUsage
from openai.types.chat import ChatCompletion

import cassette
from cassette.adapters.policy import RecordedPolicy, wrap_policy

TOOLS = [{"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}]


def completion(content: str, calls: int = 0) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [
            {"id": f"call_{i}", "type": "function", "function": {"name": "add", "arguments": "{}"}}
            for i in range(calls)
        ]
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
    }


class Model:
    """A chat function that answers ``answer`` and counts its calls, in four flavours."""

    def __init__(self, answer: str, *, pydantic: bool = False) -> None:
        self.answer, self.pydantic, self.calls = answer, pydantic, 0
        self.seen: list[dict[str, Any]] = []

    def _reply(self, messages: list[Any], tools: Any, kwargs: dict[str, Any]) -> Any:
        self.calls += 1
        self.seen.append({"messages": messages, "tools": tools, **kwargs})
        body = completion(f"{self.answer} #{len(messages)}")
        return ChatCompletion.model_validate(body) if self.pydantic else body

    def sync(self, messages: list[Any], tools: Any = None, **kwargs: Any) -> Any:
        return self._reply(messages, tools, kwargs)

    async def async_(self, messages: list[Any], tools: Any = None, **kwargs: Any) -> Any:
        await asyncio.sleep(0)
        return self._reply(messages, tools, kwargs)


def run(fn: Any, *args: Any, **kwargs: Any) -> Any:
    result = fn(*args, **kwargs)
    if asyncio.iscoroutine(result):
        return asyncio.run(result)
    return result


def conversation(wrapped: Any, turns: int = 3) -> list[Any]:
    """Feed each answer back, as an agent loop does; returns the answers."""
    messages: list[Any] = [{"role": "user", "content": "hi"}]
    answers = []
    for turn in range(turns):
        answer = run(wrapped, messages, TOOLS, temperature=0.0)
        answers.append(answer)
        # a pydantic message goes back into the next request as it is
        msg = (
            answer["choices"][0]["message"]
            if isinstance(answer, dict)
            else answer.choices[0].message
        )
        messages = [*messages, msg, {"role": "user", "content": f"more {turn}"}]
    return answers


@pytest.mark.parametrize("flavour", ["sync", "async_"])
@pytest.mark.parametrize("pydantic", [False, True], ids=["dict", "pydantic"])
def test_record_then_replay_serves_the_same_answers_and_type(
    tmp_path: Path, flavour: str, pydantic: bool
) -> None:
    path = tmp_path / "run.jsonl"
    live = Model("recorded", pydantic=pydantic)
    with cassette.open(path, "record") as cas:
        recorded = conversation(wrap_policy(getattr(live, flavour), cas))
    assert live.calls == 3

    other = Model("a different answer now", pydantic=pydantic)
    with cassette.open(path, "replay") as cas:
        wrapped = wrap_policy(getattr(other, flavour), cas)
        assert asyncio.iscoroutinefunction(wrapped) == (flavour == "async_")
        replayed = conversation(wrapped)
    assert other.calls == 0
    assert replayed == recorded
    assert [type(r) for r in replayed] == [ChatCompletion if pydantic else dict] * 3

    lines = [json.loads(x) for x in path.read_text().splitlines()[1:]]
    assert lines[0]["request"]["tools"] == TOOLS
    assert lines[0]["request"]["temperature"] == 0
    assert ("$type" in lines[0]["response"]) == pydantic
    # the answer fed back into the next request is stored as a reference, not a copy
    assert any("$ref" in m for m in lines[1]["request"]["messages"])


def test_live_call_gets_the_original_arguments_and_result(tmp_path: Path) -> None:
    live = Model("x", pydantic=True)
    with cassette.open(tmp_path / "a.jsonl", "record") as cas:
        wrapped = wrap_policy(live.sync, cas)
        out = wrapped([{"role": "user", "content": "q"}], TOOLS, env_index=4, top_p=0.5)
    assert isinstance(out, ChatCompletion)
    assert live.seen == [
        {"messages": [{"role": "user", "content": "q"}], "tools": TOOLS, "top_p": 0.5}
    ]
    line = json.loads((tmp_path / "a.jsonl").read_text().splitlines()[1])
    assert (line["env_index"], line["step"]) == (4, 0)  # env_index= is the wrapper's


def test_a_changed_request_is_a_mismatch(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with cassette.open(path, "record") as cas:
        wrap_policy(Model("a").sync, cas)([{"role": "user", "content": "hello"}])
    with cassette.open(path, "replay") as cas:
        wrapped = wrap_policy(Model("b").sync, cas)
        with pytest.raises(cassette.CassetteMismatch, match=r"messages\[0\]\.content"):
            wrapped([{"role": "user", "content": "goodbye"}])


def test_a_recorded_exception_is_replayed(tmp_path: Path) -> None:
    calls = []

    async def failing(messages: list[Any], tools: Any = None) -> dict[str, Any]:
        calls.append(1)
        raise TimeoutError("model took too long")

    path = tmp_path / "run.jsonl"
    with cassette.open(path, "record") as cas, pytest.raises(TimeoutError):
        asyncio.run(wrap_policy(failing, cas)([{"role": "user", "content": "q"}]))
    assert calls == [1]
    with cassette.open(path, "replay") as cas:
        wrapped = wrap_policy(failing, cas)
        with pytest.raises(cassette.RecordedError, match="model took too long") as info:
            asyncio.run(wrapped([{"role": "user", "content": "q"}]))
    assert info.value.type_name == "builtins.TimeoutError"
    assert calls == [1]


def test_episodes_key_the_calls(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    live = Model("ep")
    with cassette.open(path, "record") as cas:
        wrapped = wrap_policy(live.sync, cas)
        for env in range(3):
            with cassette.episode(env):
                wrapped([{"role": "user", "content": f"task {env}"}])
    other = Model("other")
    with cassette.open(path, "replay") as cas:
        wrapped = wrap_policy(other.sync, cas)
        for env in (2, 0, 1):  # any order: each episode has its own steps
            with cassette.episode(env):
                out = wrapped([{"role": "user", "content": f"task {env}"}])
                assert out["choices"][0]["message"]["content"] == "ep #1"
        assert cas.unused() == []
    assert other.calls == 0


def test_a_sync_function_returning_an_awaitable_is_refused(tmp_path: Path) -> None:
    live = Model("x")
    with cassette.open(tmp_path / "a.jsonl", "passthrough") as cas:
        wrapped = wrap_policy(lambda messages: live.async_(messages), cas)
        with pytest.raises(cassette.CassetteError, match="async def"):
            wrapped([{"role": "user", "content": "q"}])


def test_only_models_and_dataclasses_are_rebuilt(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with cassette.open(path, "record") as cas:
        cas.call({"messages": [], "tools": None}, live=lambda: {"$type": "os:system", "a": 1})
    with cassette.open(path, "replay") as cas:
        wrapped = wrap_policy(Model("x").sync, cas)
        with pytest.warns(cassette.CassetteWarning, match="os:system"):
            assert wrapped([]) == {"a": 1}


# --- eval-protocol style ------------------------------------------------------------------


@dataclass
class ToolCall:
    """Shaped like eval_protocol.types.MCPToolCall."""

    tool_name: str
    arguments: dict[str, Any]
    tool_call_id: str | None = None


@dataclass
class FakePolicy:
    """The documented interface of an eval-protocol policy: async ``__call__(tool_schemas,
    env_index, conversation_history) -> (tool_calls, usage, finish_reason)`` that appends
    the assistant message to the history, and ``add_tool_response``."""

    flavour: str
    model_id: str = "fake-model"
    calls: int = 0
    responses: list[tuple[int, str]] = field(default_factory=list)

    async def __call__(
        self, tool_schemas: list[dict[str, Any]], env_index: int, conversation_history: list[Any]
    ) -> tuple[list[ToolCall], CompletionUsage, str]:
        self.calls += 1
        await asyncio.sleep(0.001 * (3 - env_index))  # interleave the episodes
        turn = sum(m["role"] == "assistant" for m in conversation_history)
        name = tool_schemas[0]["name"]
        if turn >= 2:
            calls = [ToolCall("_no_tool_call", {"reason": "done"})]
            conversation_history.append({"role": "assistant", "content": f"{self.flavour} done"})
            return (
                calls,
                CompletionUsage(prompt_tokens=1, completion_tokens=1, total_tokens=2),
                "stop",
            )
        call_id = f"{self.flavour}-{env_index}-{turn}"
        args = {"step": turn, "note": self.flavour}
        conversation_history.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(args)},
                    }
                ],
            }
        )
        usage = CompletionUsage(prompt_tokens=10, completion_tokens=turn, total_tokens=10 + turn)
        return [ToolCall(name, args, call_id)], usage, "tool_calls"

    def add_tool_response(
        self,
        env_index: int,
        tool_call: ToolCall,
        tool_response: str,
        conversation_history: list[Any],
        reward: float = 0.0,
        terminated: bool = False,
        info: dict[str, Any] | None = None,
    ) -> None:
        self.responses.append((env_index, tool_call.tool_name))
        message = {"role": "tool", "tool_call_id": tool_call.tool_call_id, "content": tool_response}
        conversation_history.append(message)


async def rollouts(policy: Any, n: int = 3) -> tuple[list[list[Any]], list[list[Any]]]:
    """Drive the policy like eval-protocol's ExecutionManager, episodes concurrently."""
    schemas = [{"name": "move", "input_schema": {"type": "object"}}]

    async def one(env_index: int) -> tuple[list[Any], list[Any]]:
        history: list[Any] = [
            {"role": "system", "content": "play"},
            {"role": "user", "content": f"level {env_index}"},
        ]
        seen: list[Any] = []
        for _ in range(5):
            tool_calls, usage, finish = await policy(schemas, env_index, history)
            seen.append((tool_calls, usage, finish))
            if finish == "stop":
                break
            for call in tool_calls:
                result = f"moved {call.arguments['step']} in {env_index}"
                policy.add_tool_response(env_index, call, result, history, 0.0, False, {})
                history[-1]["control_plane_step"] = {"step": len(seen) - 1}  # as the manager does
        return history, seen

    results = await asyncio.gather(*(one(i) for i in range(n)))
    return [r[0] for r in results], [r[1] for r in results]


def test_eval_protocol_policy_replays_identical_rollouts(tmp_path: Path) -> None:
    path = tmp_path / "ep.jsonl"
    live = FakePolicy("recorded")
    with cassette.open(path, "record") as cas:
        wrapped = wrap_policy(live, cas)
        assert isinstance(wrapped, RecordedPolicy) and isinstance(wrapped, FakePolicy)
        histories, seen = asyncio.run(rollouts(wrapped))
    assert live.calls == 9 and len(live.responses) == 6

    other = FakePolicy("now different")
    with cassette.open(path, "replay") as cas:
        wrapped = wrap_policy(other, cas, style="eval_protocol")
        assert wrapped.model_id == "fake-model"  # attributes are the policy's
        wrapped.model_id = "renamed"
        assert other.model_id == "renamed"
        histories2, seen2 = asyncio.run(rollouts(wrapped))
        assert cas.unused() == []
    assert other.calls == 0
    assert len(other.responses) == 6  # add_tool_response still reaches the policy
    assert histories2 == histories
    assert seen2 == seen
    flat = [x for episode in seen2 for x in episode]
    assert {type(c) for tcs, _, _ in flat for c in tcs} == {ToolCall}
    assert {type(usage) for _, usage, _ in flat} == {CompletionUsage}

    lines = [json.loads(x) for x in path.read_text().splitlines()[1:]]
    first = next(x for x in lines if x["env_index"] == 1 and x["step"] == 0)
    assert first["request"]["tools"][0]["name"] == "move"
    assert first["response"]["tool_calls"][0]["tool_name"] == "move"
    assert first["response"]["message"]["tool_calls"][0]["id"] == "recorded-1-0"


def test_eval_protocol_changed_history_is_a_mismatch(tmp_path: Path) -> None:
    path = tmp_path / "ep.jsonl"
    schemas = [{"name": "move"}]
    with cassette.open(path, "record") as cas:
        asyncio.run(
            wrap_policy(FakePolicy("r"), cas)(schemas, 0, [{"role": "user", "content": "a"}])
        )
    with cassette.open(path, "replay") as cas:
        wrapped = wrap_policy(FakePolicy("r"), cas)
        with pytest.raises(cassette.CassetteMismatch):
            asyncio.run(wrapped(schemas, 0, [{"role": "user", "content": "b"}]))


def test_make_llm_call_through_the_wrapper_is_recorded(tmp_path: Path) -> None:
    class WithLLM(FakePolicy):
        async def _make_llm_call(self, messages: list[Any], tools: list[Any]) -> dict[str, Any]:
            self.calls += 1
            return completion(f"{self.flavour} {len(messages)}")

    path = tmp_path / "llm.jsonl"
    with cassette.open(path, "record") as cas:
        first = asyncio.run(wrap_policy(WithLLM("a"), cas)._make_llm_call(messages=[], tools=[]))
    other = WithLLM("b")
    with cassette.open(path, "replay") as cas:
        again = asyncio.run(wrap_policy(other, cas)._make_llm_call(messages=[], tools=[]))
    assert again == first and other.calls == 0


def test_style_detection(tmp_path: Path) -> None:
    with cassette.open(tmp_path / "unused.jsonl", "passthrough") as cas:
        assert isinstance(wrap_policy(FakePolicy("x"), cas), RecordedPolicy)

        async def ep(tool_schemas: Any, env_index: int, conversation_history: Any) -> Any:
            return [], None, "stop"

        assert isinstance(wrap_policy(ep, cas), RecordedPolicy)
        assert not isinstance(wrap_policy(Model("x").sync, cas), RecordedPolicy)
        with pytest.raises(ValueError, match="unknown style"):
            wrap_policy(Model("x").sync, cas, style="langchain")  # type: ignore[arg-type]


def test_older_two_tuple_policies_and_plain_dict_tool_calls(tmp_path: Path) -> None:
    calls = []

    async def old_style(tool_schemas: Any, env_index: int, conversation_history: Any) -> Any:
        calls.append(env_index)  # appends nothing; returns (tool_calls, usage) only
        return [{"tool_name": "look", "arguments": {}}], {"total_tokens": 1}

    path = tmp_path / "old.jsonl"
    with cassette.open(path, "record") as cas:
        first = asyncio.run(wrap_policy(old_style, cas)([], 7, []))
    with cassette.open(path, "replay") as cas:
        history: list[Any] = []
        again = asyncio.run(wrap_policy(old_style, cas)([], 7, history))
    assert again == first == ([{"tool_name": "look", "arguments": {}}], {"total_tokens": 1})
    assert isinstance(again, tuple) and history == [] and calls == [7]
