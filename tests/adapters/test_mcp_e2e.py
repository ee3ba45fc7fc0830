"""End to end: a tool-using agent (the openai SDK through
``wrap_openai`` against the scripted model server; tools from the fixture MCP server over
stdio through ``mcp_session``) records its episodes; with both servers gone the replay gives
the same transcripts and outcomes. Steps count per channel, so the model's side can replay
while the MCP server runs live, and the MCP side while the model runs live."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from mcp import StdioServerParameters

import cassette
from cassette.testing.mcp_server import stdio_params
from cassette.testing.server import ScriptedServer
from fixtures.mcp_agent import TASKS, Episode, run_agent

NO_MODEL = "http://127.0.0.1:9/v1"  # a closed port: a live model call would fail


def no_mcp_server(where: Path) -> StdioServerParameters:
    """A server that cannot start: a replay that tried to start it would fail."""
    return StdioServerParameters(command=str(where / "no-such-mcp-server"))


def agent(path: Path, llm_mode: str, mcp_mode: str, base_url: str, server: Any) -> list[Episode]:
    """The agent with its model calls through ``path`` in ``llm_mode`` and its tool calls
    through ``path`` in ``mcp_mode`` (one cassette object when the modes agree)."""

    async def main() -> list[Episode]:
        with cassette.open(path, llm_mode) as llm:
            if mcp_mode == llm_mode:
                return await run_agent(llm, llm, base_url, server)
            with cassette.open(path, mcp_mode) as mcp:
                return await run_agent(llm, mcp, base_url, server)

    return asyncio.run(main())


def record(path: Path, model_mode: Any) -> list[Episode]:
    with ScriptedServer(mode=model_mode) as model:
        return agent(path, "record", "record", model.base_url, stdio_params())


@pytest.fixture(scope="module")
def random_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Episode]]:
    """Episodes recorded against the model server in random mode (no two runs agree)."""
    path = tmp_path_factory.mktemp("e2e") / "random.jsonl"
    return path, record(path, "random")


@pytest.fixture(scope="module")
def script_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Episode]]:
    """Episodes recorded against the model server in script mode (every run agrees)."""
    path = tmp_path_factory.mktemp("e2e") / "script.jsonl"
    return path, record(path, "script")


def test_replay_with_model_and_mcp_server_gone(
    random_run: tuple[Path, list[Episode]], tmp_path: Path
) -> None:
    path, recorded = random_run
    assert len(recorded) == len(TASKS)
    weather, add, count, lookup = recorded
    assert '"temperature_c"' in weather.messages[3]["content"]  # structured output
    assert [p[2] for p in count.progress][-1].startswith("step ")  # progress was reported
    assert lookup.reward == 0.0 and "unknown key" in lookup.messages[3]["content"]  # isError
    assert [e.reward for e in (weather, add, count)] == [1.0, 1.0, 1.0]

    with cassette.open(path, "replay") as cas:
        outcomes = {k: o["reward"] for k, o in cas.index.outcomes.items()}
        channels = {key[1] for key in cas.index.entries}
        replayed = asyncio.run(run_agent(cas, cas, NO_MODEL, no_mcp_server(tmp_path)))
        assert cas.unused() == []  # every recorded call was asked for again
    assert replayed == recorded
    assert outcomes == {e.env_index: e.reward for e in recorded}
    assert channels == {"llm", "mcp"}


def test_model_replays_while_the_mcp_server_runs_live(
    random_run: tuple[Path, list[Episode]],
) -> None:
    # the model's side from the cassette (its random tool arguments included), the tools
    # live: the live server answers those arguments as it did, so the model's requests
    # match the recording, step by step on channel "llm"
    path, recorded = random_run
    assert agent(path, "replay", "passthrough", NO_MODEL, stdio_params()) == recorded


def test_mcp_replays_while_the_model_runs_live(
    script_run: tuple[Path, list[Episode]], tmp_path: Path
) -> None:
    path, recorded = script_run
    with ScriptedServer(mode="script") as model:  # answers as it did when recording
        live_model = agent(path, "passthrough", "replay", model.base_url, no_mcp_server(tmp_path))
    assert live_model == recorded
    with ScriptedServer(mode="random") as model, pytest.raises(cassette.CassetteMismatch) as err:
        agent(path, "passthrough", "replay", model.base_url, None)  # asks other tool calls
    assert "channel='mcp'" in str(err.value) and "params.arguments" in str(err.value)
