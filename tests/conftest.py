"""Shared helpers for the test suite."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from cassette.testing.server import ScriptedServer

MakeServer = Callable[..., ScriptedServer]

# the tests choose their cassettes' modes and paths: a user's exported variables would
# steer every cassette they open (and the xdist workers inherit this environment)
for _name in ("CASSETTE_MODE", "CASSETTE_FORCE_MODE", "CASSETTE_PATH"):
    os.environ.pop(_name, None)


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


@pytest.fixture
def loop() -> type[Loop]:
    return Loop


@pytest.fixture
def make_server() -> Iterator[MakeServer]:
    """Start scripted model servers on 127.0.0.1 (``make_server("random", ...)``); every one
    started is stopped at teardown."""
    started: list[ScriptedServer] = []

    def make(mode: str = "script", **kwargs: Any) -> ScriptedServer:
        server = ScriptedServer(mode, **kwargs)  # type: ignore[arg-type]
        started.append(server)
        return server.start()

    try:
        yield make
    finally:
        for server in started:
            server.stop()


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytest's own, its inner runs not taken for xdist workers (pytest-benchmark, where
    installed, would warn in them, and the inner ``filterwarnings = error`` fails the run)."""
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
        monkeypatch.delenv(name, raising=False)
    return pytester
