"""A replaying ``cassette serve`` sends a recorded answer as the bytes its line holds, with
the status and headers recorded beside it, and still names episodes by the replies it
sent (the conversation rule's tie-break reads them)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import orjson

import cassette
from cassette.replay.episodes import Conversations
from tests.helpers.chat import chat_response

Serve = Callable[..., str]  # the serve fixture (conftest.py)


def ask(*said: str) -> dict[str, Any]:
    roles = ("user", "assistant")
    return {
        "model": "m",
        "messages": [{"role": roles[i % 2], "content": s} for i, s in enumerate(said)],
    }


def post(url: str, body: dict[str, Any], episode: str | None = None) -> httpx.Response:
    headers = {"X-Cassette-Episode": episode} if episode else {}
    return httpx.post(url + "/chat/completions", json=body, headers=headers)


def test_a_replayed_answer_is_its_recorded_bytes_status_and_headers(
    serve: Serve, tmp_path: Path
) -> None:
    path = tmp_path / "bytes.jsonl"
    plain = {**chat_response("café, 0.5 and 1e-7"), "usage": {"cost": 0.25, "tokens": 3}}
    meta = {"status": 201, "headers": {"x-request-id": "req_7", "Content-Length": "999"}}
    with cassette.open(path, mode="record") as cas:
        for step, answer in enumerate([plain, {**chat_response("kept"), "$http": meta}]):
            request = {**ask(f"q{step}"), "endpoint": "chat.completions"}
            cas.call(request, live=lambda answer=answer: answer, env_index="e")
    with cassette.open(path, "replay") as cas:  # the bytes of the line, not a dict
        request = {**ask("q0"), "endpoint": "chat.completions"}
        assert cas.replayed(request, env_index="e") == orjson.dumps(plain)
    url = serve(path, "replay")
    first, second = post(url, ask("q0"), "e"), post(url, ask("q1"), "e")
    assert first.status_code == 200 and first.content == orjson.dumps(plain)
    assert first.headers["content-type"] == "application/json"
    assert second.status_code == 201 and second.headers["x-request-id"] == "req_7"
    assert second.json() == chat_response("kept")  # the HTTP meta is not in the body
    assert second.headers["content-length"] == str(len(second.content))


def test_conversations_are_told_apart_by_the_replies_the_server_sent(
    serve: Serve, tmp_path: Path
) -> None:
    """Two conversations with the same start, whose follow-ups come back in the other
    order: each finds its episode by the answer it was sent."""
    path = tmp_path / "named.jsonl"
    turns = [ask("hi"), ask("hi"), ask("hi", "answer 1", "more"), ask("hi", "answer 2", "more")]
    with cassette.open(path, "record", episodes=Conversations()) as cas:
        for n, turn in enumerate(turns, 1):
            request = {**turn, "endpoint": "chat.completions"}
            cas.call(request, live=lambda n=n: chat_response(f"answer {n}"))
    url = serve(path, "replay")
    got = [post(url, turns[i]).json() for i in (0, 1, 3, 2)]
    assert [g["choices"][0]["message"]["content"] for g in got] == [
        "answer 1",
        "answer 2",
        "answer 4",
        "answer 3",
    ]
