"""Zero-code recording's episode naming (Conversations), handed to the one Cassette as its
``episodes=`` policy; and a call made inside a live call of the same cassette."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

import cassette
from cassette.replay.episodes import Conversations
from cassette.storage.index import load_index
from tests.helpers.chat import chat_response


def ask(*said: str) -> dict[str, Any]:
    """A request whose conversation alternates user and assistant turns."""
    roles = ("user", "assistant")
    return {"messages": [{"role": roles[i % 2], "content": s} for i, s in enumerate(said)]}


def test_conversations_name_episodes_and_replay_finds_them(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    # two conversations with the same start, then each goes on after its own first answer
    turns = [ask("hi"), ask("hi"), ask("hi", "answer 1", "more"), ask("hi", "answer 2", "more")]
    answers = iter(["answer 1", "answer 2", "answer 3", "answer 4"])
    with cassette.open(path, "record", episodes=Conversations()) as cas:
        got = [cas.call(t, live=lambda: chat_response(next(answers))) for t in turns]
        with cassette.episode("named"):  # a named episode is not the policy's to name
            cas.call(ask("other"), live=lambda: chat_response("x"))
    assert cas.mode is cassette.Mode.RECORD and type(cas) is cassette.Cassette
    keys = sorted(load_index([path]).entries, key=str)
    first, second = sorted({env for env, _, _ in keys if env != "named"})
    assert first.endswith(".0") and second.endswith(".1") and first[:-2] == second[:-2]
    assert {k for k in keys if k[0] != "named"} == {
        (e, "llm", s) for e in (first, second) for s in (0, 1)
    }
    # the second conversation's follow-up, asked first on replay, still finds its episode
    with cassette.open(path, "replay", episodes=Conversations()) as cas:
        replayed = [cas.call(t, live=lambda: {}) for t in (turns[0], turns[1], turns[3], turns[2])]
    assert replayed == [got[0], got[1], got[3], got[2]]


def test_a_fixed_episode_names_every_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CASSETTE_EPISODE", "7")
    path = tmp_path / "b.jsonl"
    with cassette.open(path, "record", episodes=Conversations()) as cas:
        for text in ("a", "b"):
            cas.call(ask(text), live=lambda: chat_response("ok"))
    assert sorted(load_index([path]).entries) == [(7, "llm", 0), (7, "llm", 1)]


def test_a_call_inside_a_live_call_of_the_same_cassette_is_part_of_it(tmp_path: Path) -> None:
    """litellm over the openai SDK, both recorded: the inner call goes straight live and the
    outer call is recorded once; a call on another cassette is its own."""
    path, other_path = tmp_path / "c.jsonl", tmp_path / "d.jsonl"
    with cassette.open(path, "record") as cas, cassette.open(other_path, "record") as other:

        def inner() -> dict[str, Any]:
            other.call({"q": "other"}, live=lambda: {"a": 0})
            return cas.call({"q": "inner"}, live=lambda: {"a": 1})

        def chunks() -> Iterator[dict[str, Any]]:
            yield cas.call({"q": "in a stream"}, live=lambda: {"a": 2})

        async def achunks() -> AsyncIterator[dict[str, Any]]:
            yield await cas.acall({"q": "in an async stream"}, live=_answer)

        async def outer_async() -> list[Any]:
            one = await cas.acall({"q": "outer async"}, live=lambda: cas.acall({"q": "x"}, _answer))
            return [one, [c async for c in cas.astream({"q": "astream"}, live=achunks)]]

        assert cas.call({"q": "outer"}, live=inner) == {"a": 1}
        assert list(cas.stream({"q": "stream"}, live=chunks)) == [{"a": 2}]
        assert asyncio.run(outer_async()) == [{"a": 3}, [{"a": 3}]]
    entries = load_index([path]).entries
    assert [e.request["q"] for e in entries.values()] == [
        "outer",
        "stream",
        "outer async",
        "astream",
    ]
    assert [e.request["q"] for e in load_index([other_path]).entries.values()] == ["other"]


async def _answer() -> dict[str, Any]:
    return {"a": 3}
