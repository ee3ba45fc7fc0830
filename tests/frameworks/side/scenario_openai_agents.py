"""openai-agents over a wrapped AsyncOpenAI: Runner.run and Runner.run_streamed with the
Responses model and the Chat Completions model, a function tool and a structured output.

Its tracing exporter posts every run to the OpenAI API unless disabled: a replay with it on
would reach for the network (the socket guard would catch it), hence set_tracing_disabled.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agents import (
    Agent,
    Model,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    Runner,
    function_tool,
    set_tracing_disabled,
)
from pydantic import BaseModel

from ._harness import (
    Clients,
    concurrent_episodes,
    record_and_replay,
    run_with_cassette,
    socket_guard,
)

PROMPT = "What is the weather in Lisbon for the next 3 days?"
MODELS = ("responses", "chat_completions")


@pytest.fixture(autouse=True)
def no_tracing() -> None:
    set_tracing_disabled(True)


class Forecast(BaseModel):
    city: str
    days: int
    summary: str


@function_tool
def get_weather(city: str, days: int) -> str:
    """The weather in a city for the next days."""
    return f"{city}: sunny for {days} days"


def model(clients: Clients, kind: str) -> Model:
    if kind == "responses":
        return OpenAIResponsesModel(model="gpt-4o-mini", openai_client=clients.aio)
    return OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=clients.aio)


def agent(clients: Clients, kind: str, output: type[BaseModel] | None = None) -> Agent[Any]:
    return Agent(
        name="forecaster",
        instructions="Answer with the weather; use the tool.",
        tools=[get_weather],
        model=model(clients, kind),
        output_type=output,
    )


def summary(result: Any) -> dict[str, Any]:
    final = result.final_output
    return {
        "final": final.model_dump() if isinstance(final, BaseModel) else final,
        "items": result.to_input_list(),
        "responses": [
            {"id": r.response_id, "usage": repr(r.usage), "output": [o.model_dump() for o in out]}
            for r in result.raw_responses
            if (out := r.output) is not None
        ],
    }


def run(kind: str, output: type[BaseModel] | None = None) -> Any:
    async def scenario(clients: Clients, prompt: str) -> Any:
        return summary(await Runner.run(agent(clients, kind, output), prompt))

    return scenario


def run_streamed(kind: str) -> Any:
    async def scenario(clients: Clients, prompt: str) -> Any:
        result = Runner.run_streamed(agent(clients, kind), prompt)
        events = []
        async for event in result.stream_events():
            data = getattr(event, "data", None)
            events.append([event.type, getattr(data, "type", None) or getattr(event, "name", None)])
        return {**summary(result), "events": events}

    return scenario


@pytest.mark.parametrize("kind", MODELS)
def test_run_with_a_function_tool(tmp_path: Path, kind: str) -> None:
    out = record_and_replay(tmp_path, run(kind), PROMPT)
    assert out["final"] and len(out["responses"]) == 2  # the tool call, then the answer
    assert "sunny" in str(out["items"])  # the tool ran and its output went back


@pytest.mark.parametrize("kind", MODELS)
def test_run_streamed_with_a_function_tool(tmp_path: Path, kind: str) -> None:
    out = record_and_replay(tmp_path, run_streamed(kind), PROMPT)
    assert out["final"] and len(out["responses"]) == 2
    assert ["raw_response_event", "response.output_text.delta"] in out["events"]


@pytest.mark.parametrize("kind", MODELS)
def test_run_with_a_structured_output(tmp_path: Path, kind: str) -> None:
    out = record_and_replay(tmp_path, run(kind, Forecast), PROMPT)
    assert Forecast.model_validate(out["final"])


@pytest.mark.parametrize("kind", MODELS)
def test_eight_concurrent_episodes(tmp_path: Path, kind: str) -> None:
    for out in concurrent_episodes(tmp_path, run(kind), PROMPT):
        assert out["final"] and len(out["responses"]) == 2


def test_the_tracing_exporter_reaches_for_the_network_unless_disabled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The trap the README warns of: with tracing on (the default) and an OPENAI_API_KEY set,
    a replayed run posts its trace to the OpenAI API; the socket guard catches it."""
    from agents.tracing import get_trace_provider

    record_and_replay(tmp_path, run("chat_completions"), PROMPT)  # tracing off
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-a-real-key")
    set_tracing_disabled(False)
    try:
        with socket_guard() as guard:
            run_with_cassette(tmp_path / "run.jsonl", "replay", "http://127.0.0.1:9/v1",
                              lambda c: run("chat_completions")(c, PROMPT), None)  # fmt: skip
            get_trace_provider().force_flush()  # the exporter's batch, sent now
    finally:
        set_tracing_disabled(True)
    assert any("api.openai.com" in attempt for attempt in guard.attempts), guard.attempts
