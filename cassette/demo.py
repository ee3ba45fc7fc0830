"""A small tool-using agent loop, used by ``cassette demo`` and the README.

The agent answers arithmetic questions with a ``calculator`` tool. Its model is any
function from an OpenAI-style request to a chat completion dict: offline, a scripted
one; under a cassette, whatever the cassette serves.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from .cassette import Cassette

__all__ = ["TASKS", "TOOLS", "run_agent", "scripted_model"]

Json = dict[str, Any]

TASKS: list[tuple[str, int]] = [
    ("What is 17 * 23?", 391),
    ("What is (120 - 45) / 3?", 25),
    ("What is 2 ** 10 + 7?", 1031),
]

TOOLS: list[Json] = [
    {
        "type": "function",
        "function": {
            "name": "calculator",
            "description": "Evaluate an arithmetic expression.",
            "parameters": {
                "type": "object",
                "properties": {"expression": {"type": "string"}},
                "required": ["expression"],
            },
        },
    }
]

_OPS: dict[type, Callable[..., Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
    ast.USub: operator.neg,
}


def calculator(expression: str) -> str:
    """Evaluate + - * / ** on numbers (no names, no calls)."""

    def ev(node: ast.AST) -> Any:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.operand))
        raise ValueError(f"unsupported expression: {expression!r}")

    value = ev(ast.parse(expression, mode="eval").body)
    return str(int(value) if float(value).is_integer() else value)


def scripted_model(request: Json) -> Json:
    """A deterministic stand-in for a model: call the calculator once, then answer."""
    messages = request["messages"]
    last = messages[-1]
    if last["role"] == "tool":
        message: Json = {"role": "assistant", "content": f"The answer is {last['content']}."}
        finish = "stop"
    else:
        question = last["content"]
        expression = question.removeprefix("What is ").rstrip("?")
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": f"call_{len(messages)}",
                    "type": "function",
                    "function": {
                        "name": "calculator",
                        "arguments": f'{{"expression": "{expression}"}}',
                    },
                }
            ],
        }
        finish = "tool_calls"
    return {
        "id": "chatcmpl-demo",
        "object": "chat.completion",
        "model": request["model"],
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10 * len(messages), "completion_tokens": 12, "total_tokens": 0},
    }


def run_agent(
    cas: Cassette, model: Callable[[Json], Json], *, max_steps: int = 6
) -> list[tuple[list[Json], float]]:
    """Run every task as one episode through ``cas``; return (transcript, reward) each."""
    import json

    results = []
    for env_index, (question, expected) in enumerate(TASKS):
        messages: list[Json] = [
            {"role": "system", "content": "You are a careful assistant. Use the calculator."},
            {"role": "user", "content": question},
        ]
        for _ in range(max_steps):
            request = {"model": "demo-model", "messages": list(messages), "tools": TOOLS}
            response = cas.call(request, live=partial(model, request), env_index=env_index)
            message = response["choices"][0]["message"]
            messages.append(message)
            calls = message.get("tool_calls") or []
            if not calls:
                break
            for call in calls:
                args = json.loads(call["function"]["arguments"])
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": call["id"],
                        "content": calculator(args["expression"]),
                    }
                )
        answer = str(messages[-1].get("content") or "")
        reward = 1.0 if str(expected) in answer else 0.0
        cas.outcome(env_index, reward=reward, terminated=True)
        results.append((messages, reward))
    return results


def fixtures_dir() -> Path:
    """The repository's fixtures/ folder (the demo needs a source checkout)."""
    return Path(__file__).resolve().parent.parent / "fixtures"
