"""A fork across channels: the LLM (wrap_openai) replayed up to the fork, MCP tool calls
(mcp_session over stdio) replayed with the prefix or kept live (issue 14)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from openai import AsyncOpenAI

import cassette
from cassette import fork
from cassette.adapters.mcp import mcp_session
from cassette.adapters.openai import wrap_openai
from cassette.replay.fork import fork_points
from cassette.testing import mcp_server
from tests.conftest import MakeServer


async def play(cas: Any, url: str) -> list[tuple[str, str]]:
    """One episode: three model turns, each followed by the MCP ``tick`` tool (a counter
    that starts at 1 in each server process)."""
    client = AsyncOpenAI(base_url=url, api_key="sk-test", max_retries=0)
    model = wrap_openai(client, cas)
    out = []
    try:
        async with mcp_session(cas, mcp_server.stdio_params()) as session:
            with cassette.episode(0):
                messages: list[Any] = [{"role": "user", "content": "count with me"}]
                for _ in range(3):
                    reply = await model.chat.completions.create(model="m", messages=messages)
                    text = reply.choices[0].message.content or ""
                    ticked = await session.call_tool("tick", {})
                    tick = ticked.content[0].text  # type: ignore[union-attr]
                    out.append((text, tick))
                    messages += [
                        {"role": "assistant", "content": text},
                        {"role": "user", "content": f"tick {tick}"},
                    ]
    finally:
        await client.close()
    return out


@pytest.mark.parametrize("live_mcp", [False, True])
def test_fork_replays_llm_and_mcp_or_keeps_mcp_live(
    make_server: MakeServer, tmp_path: Path, live_mcp: bool
) -> None:
    base, new = tmp_path / "base.jsonl", tmp_path / "new.jsonl"
    with cassette.open(base, "record") as cas:
        recorded = asyncio.run(play(cas, make_server("random").base_url))
    assert [t for _, t in recorded] == ["1", "2", "3"]
    other = make_server("random")
    channels = {"mcp"} if live_mcp else set()
    with fork(new, from_cassette=base, fork_at={0: 2}, live_channels=channels) as cas:
        forked = asyncio.run(play(cas, other.base_url))
    assert [t for t, _ in forked[:2]] == [t for t, _ in recorded[:2]]  # the LLM prefix
    assert forked[2][0] != recorded[2][0] and other.request_count == 1  # live from step 2
    # MCP replayed with the prefix: the fresh server never ticked, so its first live tick
    # is 1; kept live, the server's state is rebuilt and the counts go on as recorded
    assert [t for _, t in forked] == (["1", "2", "3"] if live_mcp else ["1", "2", "1"])
    assert fork_points(new)[0]["step"] == 2
    with cassette.open(new, "replay") as cas:  # the fork replays alone, no server
        assert asyncio.run(play(cas, "http://127.0.0.1:9/v1")) == forked


def test_fork_a_wrapped_policy(make_server: MakeServer, tmp_path: Path) -> None:
    from openai import OpenAI

    from cassette.adapters.policy import wrap_policy

    def run(cas: Any, url: str, follow: str) -> list[str]:
        client = OpenAI(base_url=url, api_key="sk-test", max_retries=0)

        def my_policy(messages: list[Any], tools: Any = None, **kwargs: Any) -> Any:
            return client.chat.completions.create(model="m", messages=messages)

        policy = wrap_policy(my_policy, cas)
        said = []
        with cassette.episode("e"):
            messages: list[Any] = [{"role": "user", "content": "hello"}]
            for _ in range(3):
                text = policy(messages).choices[0].message.content
                said.append(text)
                messages += [
                    {"role": "assistant", "content": text},
                    {"role": "user", "content": follow},
                ]
        client.close()
        return said

    base, new = tmp_path / "base.jsonl", tmp_path / "new.jsonl"
    with cassette.open(base, "record") as cas:
        recorded = run(cas, make_server("random").base_url, "go on")
    other = make_server("random")
    with fork(new, from_cassette=base) as cas:
        forked = run(cas, other.base_url, "differently")
    assert forked[0] == recorded[0] and forked[1:] != recorded[1:]
    assert other.request_count == 2 and fork_points(new)["e"]["why"] == "mismatch"
