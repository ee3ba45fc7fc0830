"""Small runs recorded through cassette.open for the diff tests: each episode is a list
of tool calls the model makes (one a step, then a final answer) and a reward."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cassette
from cassette.types import Json

__all__ = ["TOOLS", "Call", "record"]

Call = tuple[str, Json]
TOOLS: list[Json] = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "Look a city up.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]


def _result(env: object, call: Call) -> str:
    return f"{call[0]} {call[1]}: ok"


def record(
    path: Path,
    episodes: dict[Any, tuple[list[Call], float | None]],
    *,
    system: str | Callable[[Any], str] = "Be brief.",
    tools: list[Json] | Callable[[Any], list[Json]] = TOOLS,
    temperature: float | None = None,
    result: Callable[[Any, Call], str] = _result,
) -> Path:
    """Record one run to ``path``: per episode, its tool calls and its reward."""
    with cassette.open(path, "record") as cas:
        for env, (calls, reward) in episodes.items():
            sys_text = system(env) if callable(system) else system
            messages: list[Json] = [
                {"role": "system", "content": sys_text},
                {"role": "user", "content": f"task {env}"},
            ]
            for i, call in enumerate([*calls, None]):
                request: Json = {
                    "model": "m",
                    "messages": list(messages),
                    "tools": tools(env) if callable(tools) else tools,
                }
                if temperature is not None:
                    request["temperature"] = temperature
                if call is None:
                    msg: Json = {"role": "assistant", "content": "done"}
                else:
                    fn = {"name": call[0], "arguments": json.dumps(call[1])}
                    msg = {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [{"id": f"c{i}", "type": "function", "function": fn}],
                    }
                response = {
                    "id": f"r{i}",
                    "object": "chat.completion",
                    "model": "m",
                    "choices": [{"index": 0, "message": msg, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                }
                cas.call(request, live=lambda r=response: r, env_index=env)
                messages.append(msg)
                if call is not None:
                    messages.append(
                        {"role": "tool", "tool_call_id": f"c{i}", "content": result(env, call)}
                    )
            if reward is not None:
                cas.outcome(env, reward=reward, terminated=True)
    return path
