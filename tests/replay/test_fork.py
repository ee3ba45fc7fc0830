"""cassette.replay.fork: replay each episode from a base while it matches, then live from the
first differing request or a named step, into a self-contained new cassette. A fork is
the one Cassette with a ForkBase handed to it: cassette.fork() and cassette.open() under
$CASSETTE_FORK_FROM return a Cassette."""

from __future__ import annotations

import asyncio
import os
import socket
from pathlib import Path
from typing import Any

import orjson
import pytest
from openai import AsyncOpenAI, OpenAI

import cassette
from cassette import fork
from cassette.adapters.openai import wrap_openai
from cassette.format.runid import set_run_id
from cassette.replay.fork import FORK_CHANNEL, fork_points
from cassette.storage.index import load_index
from tests.conftest import Loop, MakeServer

NOWHERE = "http://127.0.0.1:9/v1"


def run_loops(
    cas: Any, url: str, steps: int = 4, changed: dict[int, int] | None = None
) -> list[Any]:
    """3 episodes of a growing conversation; ``changed={env: step}`` alters that step's
    follow-up message (the request after it differs from the base)."""
    client = OpenAI(base_url=url, api_key="sk-test", max_retries=0)
    try:
        wrapped = wrap_openai(client, cas)
        out = []
        for env in range(3):
            loop = Loop(env)
            with cassette.episode(env):
                for step in range(steps):
                    reply = wrapped.chat.completions.create(**loop.request()).model_dump()
                    out.append(reply["choices"][0]["message"]["content"])
                    follow = "other" if (changed or {}).get(env) == step else "go on"
                    loop.answer(reply, follow)
        return out
    finally:
        client.close()


def dumped(path: Path) -> dict[Any, bytes]:
    return {
        key: orjson.dumps(
            [e.request.get("messages"), e.response, e.error], option=orjson.OPT_SORT_KEYS
        )
        for key, e in load_index([path]).entries.items()
        if key[1] != FORK_CHANNEL
    }


def test_fork_replays_the_matching_prefix_and_goes_live_after(
    make_server: MakeServer, tmp_path: Path
) -> None:
    base, new = tmp_path / "base.jsonl", tmp_path / "new.jsonl"
    with cassette.open(base, mode="record") as cas:
        recorded = run_loops(cas, make_server("random").base_url)
    other = make_server("random")  # another model: its answers differ from the base's
    with fork(new, from_cassette=base, fork_at={2: 3}) as cas:
        forked = run_loops(cas, other.base_url, changed={1: 1})
    # episode 0 matches throughout: replayed; episode 1 differs at step 2 (after the
    # changed follow-up); episode 2 is forked by name at step 3
    assert forked[:4] == recorded[:4]
    assert forked[4:6] == recorded[4:6] and forked[6:8] != recorded[6:8]
    assert forked[8:11] == recorded[8:11] and forked[11] != recorded[11]
    assert other.request_count == 2 + 1
    points = fork_points(new)
    run = set_run_id(load_index([base]).headers)  # the base's run id (its header's)
    assert run == orjson.loads(base.read_bytes().split(b"\n")[0])["meta"]["run_id"]
    assert points == {
        1: {"base": str(base), "base_run": run, "channel": "llm", "step": 2, "why": "mismatch"},
        2: {"base": str(base), "base_run": run, "channel": "llm", "step": 3, "why": "fork_at"},
    }
    a, b = dumped(base), dumped(new)
    prefix = [(0, "llm", s) for s in range(4)] + [(1, "llm", 0), (1, "llm", 1)]
    prefix += [(2, "llm", s) for s in range(3)]
    assert all(a[k] == b[k] for k in prefix)  # byte-identical prefix
    assert a[(1, "llm", 2)] != b[(1, "llm", 2)] and a[(2, "llm", 3)] != b[(2, "llm", 3)]
    # the new cassette replays alone, offline
    other.stop()
    with cassette.open(new, mode="replay") as cas:
        assert run_loops(cas, NOWHERE, changed={1: 1}) == forked


def test_fork_of_streams_and_async_and_a_base_error(
    make_server: MakeServer, tmp_path: Path
) -> None:
    base, new = tmp_path / "base.jsonl", tmp_path / "new.jsonl"
    server = make_server("random")
    server.enqueue({"content": "first"}, {"error": 429})

    async def run(cas: Any, url: str, last: str) -> list[Any]:
        client = AsyncOpenAI(base_url=url, api_key="sk-test", max_retries=0)
        wrapped = wrap_openai(client, cas)
        out: list[Any] = []
        try:
            for text in ("one", "two", last):
                try:
                    stream = await wrapped.chat.completions.create(
                        model="m", messages=[{"role": "user", "content": text}], stream=True
                    )
                    out.append("".join([c.choices[0].delta.content or "" async for c in stream]))
                except Exception as exc:  # noqa: BLE001 - the recorded 429
                    out.append(type(exc).__name__)
        finally:
            await client.close()
        return out

    with cassette.open(base, mode="record") as cas:
        recorded = asyncio.run(run(cas, server.base_url, "three"))
    assert recorded[:2] == ["first", "RateLimitError"]
    other = make_server("random")
    with fork(new, from_cassette=base) as cas:
        forked = asyncio.run(run(cas, other.base_url, "changed"))
    assert forked[:2] == recorded[:2] and other.request_count == 1
    assert fork_points(new)[0]["step"] == 2
    with cassette.open(new, mode="replay") as cas:
        assert asyncio.run(run(cas, NOWHERE, "changed")) == forked


def test_fork_refuses_its_base_and_a_missing_base(tmp_path: Path) -> None:
    base = tmp_path / "base.jsonl"
    with pytest.raises(cassette.CassetteError, match="cannot record into its base"):
        fork(base, from_cassette=base)
    with pytest.raises(cassette.CassetteError, match="needs a base cassette"):
        fork(tmp_path / "x.jsonl")


def test_cassette_open_forks_under_cassette_fork_from(
    make_server: MakeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base, new = tmp_path / "base.jsonl", tmp_path / "new.jsonl"
    with cassette.open(base, mode="record") as cas:
        recorded = run_loops(cas, make_server("random").base_url, steps=2)
    monkeypatch.setenv("CASSETTE_FORK_FROM", str(base))
    monkeypatch.setenv("CASSETTE_FORK_AT", '{"1": 1}')
    monkeypatch.setenv("CASSETTE_FORCE_MODE", "record")  # never turns the base into a recording
    other = make_server("random")
    with cassette.open(new, mode="replay") as cas:
        assert type(cas) is cassette.Cassette and cas.mode is cassette.Mode.APPEND
        forked = run_loops(cas, other.base_url, steps=2)
    assert forked[:3] == recorded[:3] and forked[3] != recorded[3]
    assert os.environ["CASSETTE_FORCE_MODE"] == "record"  # left as it was
    assert other.request_count == 1 and set(fork_points(new)) == {1}
    assert len(load_index([base]).entries) == 6


def test_socket_guard_for_the_replayed_prefix(
    make_server: MakeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base, new = tmp_path / "base.jsonl", tmp_path / "new.jsonl"
    with cassette.open(base, mode="record") as cas:
        recorded = run_loops(cas, make_server("random").base_url, steps=2)

    def refuse(self: socket.socket, address: Any, *args: Any) -> Any:
        raise OSError(f"socket guard: {address!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    with fork(new, from_cassette=base) as cas:  # nothing differs: nothing goes live
        assert run_loops(cas, NOWHERE, steps=2) == recorded
    assert fork_points(new) == {}
