"""Chat completions as a model answers them, a growing conversation, and the type of the
``make_server`` fixture (tests/conftest.py) for annotations."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cassette.testing.server import ScriptedServer

__all__ = ["Loop", "MakeServer", "chat_response"]

MakeServer = Callable[..., ScriptedServer]


def chat_response(content: str | None, **message: Any) -> dict[str, Any]:
    """A chat completion dict as an OpenAI-compatible server returns it."""
    msg = {"role": "assistant", "content": content, "refusal": None, **message}
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "m",
        "choices": [{"index": 0, "message": msg, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
    }


class Loop:
    """A growing conversation: request k holds every earlier message and answer."""

    def __init__(self, env: int | str = 0, user: str = "hello") -> None:
        self.env = env
        self.messages: list[dict[str, Any]] = [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": f"{user} {env}"},
        ]

    def request(self) -> dict[str, Any]:
        return {"model": "m", "messages": list(self.messages), "temperature": 0.0}

    def answer(self, response: dict[str, Any], follow_up: str = "go on") -> None:
        msg = dict(response["choices"][0]["message"])
        msg.pop("refusal", None)
        self.messages.append(msg)
        self.messages.append({"role": "user", "content": follow_up})
