"""pydantic-ai over a wrapped AsyncOpenAI: an Agent with a tool, run and run_stream, on the
Chat Completions model and the Responses model, and a structured (native) output."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic_ai import Agent, NativeOutput
from pydantic_ai.messages import ModelMessagesTypeAdapter
from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
from pydantic_ai.providers.openai import OpenAIProvider

from ._harness import Clients, concurrent_episodes, record_and_replay

PROMPT = "What is the weather in Lisbon for the next 3 days?"
MODELS = ("chat", "responses")


class Forecast(BaseModel):
    city: str
    days: int


def get_weather(city: str, days: int) -> str:
    """The weather in a city for the next days."""
    return f"{city}: sunny for {days} days"


def agent(clients: Clients, kind: str, output: Any = str) -> Agent[None, Any]:
    provider = OpenAIProvider(openai_client=clients.aio)
    cls = OpenAIChatModel if kind == "chat" else OpenAIResponsesModel
    return Agent(cls("gpt-4o-mini", provider=provider), tools=[get_weather], output_type=output)


def messages(result: Any) -> list[Any]:
    """The run's messages, but what pydantic-ai draws as it runs: the times it stamps on
    messages and request parts from its own clock, its run and conversation ids (the model's
    ids and times, ``provider_details.timestamp``, stay)."""
    dumped = ModelMessagesTypeAdapter.dump_python(result.all_messages(), mode="json")
    for message in dumped:
        for drawn in ("timestamp", "run_id", "conversation_id"):
            message[drawn] = None
        if message["kind"] == "request":
            for part in message["parts"]:
                part["timestamp"] = None
    return list(dumped)


def usage(result: Any) -> str:
    used = result.usage  # a method in older pydantic-ai
    return repr(used() if callable(used) else used)


def run(kind: str, output: Any = str) -> Any:
    async def scenario(clients: Clients, prompt: str) -> Any:
        result = await agent(clients, kind, output).run(prompt)
        final = result.output
        return {
            "output": final.model_dump() if isinstance(final, BaseModel) else final,
            "messages": messages(result),
            "usage": usage(result),
        }

    return scenario


def run_stream(kind: str) -> Any:
    async def scenario(clients: Clients, prompt: str) -> Any:
        async with agent(clients, kind).run_stream(prompt) as result:
            pieces = [text async for text in result.stream_text(delta=True, debounce_by=None)]
        return {"pieces": pieces, "messages": messages(result), "usage": usage(result)}

    return scenario


@pytest.mark.parametrize("kind", MODELS)
def test_run_with_a_tool(tmp_path: Path, kind: str) -> None:
    out = record_and_replay(tmp_path, run(kind), PROMPT)
    assert out["output"] and "sunny" in str(out["messages"])


@pytest.mark.parametrize("kind", MODELS)
def test_run_stream_with_a_tool(tmp_path: Path, kind: str) -> None:
    out = record_and_replay(tmp_path, run_stream(kind), PROMPT)
    assert len(out["pieces"]) > 1 and "sunny" in str(out["messages"])


@pytest.mark.parametrize("kind", MODELS)
def test_run_with_a_native_structured_output(tmp_path: Path, kind: str) -> None:
    out = record_and_replay(tmp_path, run(kind, NativeOutput(Forecast)), PROMPT)
    assert Forecast.model_validate(out["output"])


@pytest.mark.parametrize("kind", MODELS)
def test_eight_concurrent_episodes(tmp_path: Path, kind: str) -> None:
    for out in concurrent_episodes(tmp_path, run(kind), PROMPT):
        assert out["output"] and "sunny" in str(out["messages"])
