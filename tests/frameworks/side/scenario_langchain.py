"""langchain-openai's ChatOpenAI over wrapped clients: every call path records and replays.

ChatOpenAI keeps four clients: ``client``/``async_client`` (the ``chat.completions``
resources) and ``root_client``/``root_async_client`` (the clients: structured output, the
Responses API and streamed parse go through them); all four must be the wrapped ones.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from pydantic import BaseModel, Field

from ._harness import Clients, concurrent_episodes, record_and_replay

PROMPT = "Plan a short trip to Lisbon"


class City(BaseModel):
    name: str
    population: int = Field(ge=1)


class Trip(BaseModel):
    """A trip: where it starts and its stops."""

    origin: City
    stops: list[City]
    nights: int


@tool
def get_weather(city: str, days: int) -> str:
    """The weather in ``city`` for the next ``days`` days."""
    return f"{city}: sunny for {days} days"


def chat(clients: Clients, **options: Any) -> ChatOpenAI:
    """A ChatOpenAI whose four clients are the wrapped ones."""
    return ChatOpenAI(
        model="gpt-4o-mini",
        api_key=clients.api_key,  # type: ignore[arg-type]
        client=clients.sync.chat.completions,
        async_client=clients.aio.chat.completions,
        root_client=clients.sync,
        root_async_client=clients.aio,
        max_retries=0,
        **options,
    )


def message(msg: BaseMessage) -> dict[str, Any]:
    """What the framework hands back of a message (but the run id that langchain draws at
    random for a streamed message)."""
    data = msg.model_dump()
    if str(data.get("id")).startswith("lc_run-"):
        data["id"] = "lc_run-*"
    if isinstance(msg, AIMessage):
        data["tool_calls"], data["usage_metadata"] = msg.tool_calls, msg.usage_metadata
    return data


def chunks(parts: list[Any]) -> dict[str, Any]:
    total = parts[0]
    for part in parts[1:]:
        total = total + part
    return {"pieces": [p.content for p in parts], "total": message(total)}


def turn_with_tool(llm: ChatOpenAI, prompt: str) -> list[BaseMessage]:
    bound = llm.bind_tools([get_weather])
    history: list[BaseMessage] = [HumanMessage(prompt)]
    first = bound.invoke(history)
    assert isinstance(first, AIMessage) and first.tool_calls, first
    history.append(first)
    for call in first.tool_calls:
        history.append(ToolMessage(get_weather.invoke(call["args"]), tool_call_id=call["id"]))
    history.append(bound.invoke(history))
    return history


async def aturn_with_tool(llm: ChatOpenAI, prompt: str) -> list[BaseMessage]:
    bound = llm.bind_tools([get_weather])
    history: list[BaseMessage] = [HumanMessage(prompt)]
    first = await bound.ainvoke(history)
    assert isinstance(first, AIMessage) and first.tool_calls, first
    history.append(first)
    for call in first.tool_calls:
        out = await get_weather.ainvoke(call["args"])
        history.append(ToolMessage(out, tool_call_id=call["id"]))
    history.append(await bound.ainvoke(history))
    return history


# -- the scenarios ---------------------------------------------------------------------------
def invoke(clients: Clients, prompt: str) -> Any:
    return message(chat(clients).invoke(prompt))


async def ainvoke(clients: Clients, prompt: str) -> Any:
    return message(await chat(clients).ainvoke(prompt))


def stream(clients: Clients, prompt: str) -> Any:
    return chunks(list(chat(clients, stream_usage=True).stream(prompt)))


async def astream(clients: Clients, prompt: str) -> Any:
    return chunks([c async for c in chat(clients, stream_usage=True).astream(prompt)])


def bind_tools(clients: Clients, prompt: str) -> Any:
    return [message(m) for m in turn_with_tool(chat(clients), prompt)]


def structured(method: str | None, include_raw: bool = False) -> Any:
    def run(clients: Clients, prompt: str) -> Any:
        options = {} if method is None else {"method": method}
        llm = chat(clients).with_structured_output(Trip, include_raw=include_raw, **options)
        out: Any = llm.invoke(prompt)
        if include_raw:
            return {"parsed": out["parsed"].model_dump(), "raw": message(out["raw"])}
        assert isinstance(out, Trip), out
        return out.model_dump()

    return run


def structured_stream(clients: Clients, prompt: str) -> Any:
    llm = chat(clients).with_structured_output(Trip)
    parts = list(llm.stream(prompt))
    assert parts and isinstance(parts[-1], Trip), parts
    return [p.model_dump() if isinstance(p, BaseModel) else p for p in parts]


def responses_invoke(clients: Clients, prompt: str) -> Any:
    llm = chat(clients, use_responses_api=True)
    return {"text": message(llm.invoke(prompt)), "tools": bind_tools_on(llm, prompt)}


def bind_tools_on(llm: ChatOpenAI, prompt: str) -> Any:
    return [message(m) for m in turn_with_tool(llm, prompt)]


def responses_stream(clients: Clients, prompt: str) -> Any:
    return chunks(list(chat(clients, use_responses_api=True).stream(prompt)))


async def responses_ainvoke(clients: Clients, prompt: str) -> Any:
    return message(await chat(clients, use_responses_api=True).ainvoke(prompt))


async def episode(clients: Clients, prompt: str) -> Any:
    return [message(m) for m in await aturn_with_tool(chat(clients), prompt)]


# -- the tests -------------------------------------------------------------------------------
def test_invoke(tmp_path: Path) -> None:
    out = record_and_replay(tmp_path, invoke, PROMPT)
    assert out["content"] and out["usage_metadata"]["total_tokens"] > 0


def test_ainvoke(tmp_path: Path) -> None:
    assert record_and_replay(tmp_path, ainvoke, PROMPT)["content"]


def test_stream(tmp_path: Path) -> None:
    out = record_and_replay(tmp_path, stream, PROMPT)
    assert len(out["pieces"]) > 2 and out["total"]["usage_metadata"]["total_tokens"] > 0


def test_astream(tmp_path: Path) -> None:
    assert len(record_and_replay(tmp_path, astream, PROMPT)["pieces"]) > 2


def test_bind_tools(tmp_path: Path) -> None:
    history = record_and_replay(tmp_path, bind_tools, PROMPT)
    assert history[1]["tool_calls"][0]["name"] == "get_weather"
    assert history[-1]["content"]


def test_with_structured_output_default_method(tmp_path: Path) -> None:
    assert Trip.model_validate(record_and_replay(tmp_path, structured(None), PROMPT))


def test_with_structured_output_function_calling(tmp_path: Path) -> None:
    Trip.model_validate(record_and_replay(tmp_path, structured("function_calling"), PROMPT))


def test_with_structured_output_json_mode_include_raw(tmp_path: Path) -> None:
    # json_mode sends response_format json_object; the schema is not in the prompt, so the
    # model is told it in the prompt here, as a user of json_mode would
    prompt = f"{PROMPT}. Answer with JSON matching {json.dumps(Trip.model_json_schema())}"
    out = record_and_replay(tmp_path, structured("json_mode", include_raw=True), prompt)
    Trip.model_validate(out["parsed"])


# langchain model_dump()s the SDK's ParsedChatCompletion stream events, whose `parsed` field
# pydantic warns about; live as much as on replay
@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")
def test_with_structured_output_streamed(tmp_path: Path) -> None:
    assert Trip.model_validate(record_and_replay(tmp_path, structured_stream, PROMPT)[-1])


def test_use_responses_api(tmp_path: Path) -> None:
    out = record_and_replay(tmp_path, responses_invoke, PROMPT)
    assert out["text"]["content"] and out["tools"][-1]["content"]


def test_use_responses_api_stream(tmp_path: Path) -> None:
    assert record_and_replay(tmp_path, responses_stream, PROMPT)["total"]["content"]


def test_use_responses_api_ainvoke(tmp_path: Path) -> None:
    assert record_and_replay(tmp_path, responses_ainvoke, PROMPT)["content"]


def test_eight_concurrent_episodes(tmp_path: Path) -> None:
    for history in concurrent_episodes(tmp_path, episode, PROMPT):
        assert history[1]["tool_calls"] and history[-1]["content"]
