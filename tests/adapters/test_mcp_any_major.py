"""The MCP adapter's record/replay scenarios that run under either mcp major version.

The main run covers them under mcp 2.x; tests/adapters/test_mcp1.py runs this file again
under mcp 1.x in a side venv. Both replay the golden cassettes under
``tests/fixtures/mcp/``, one recorded under each major (a cassette recorded under one major
replays under the other); tests/helpers/mcp_scenario.py records them again.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import cassette
from cassette.adapters.mcp import (
    MAJOR,
    RecordingClientSession,
    idle_transport,
    mcp_session,
    recording_client,
)
from tests.helpers.mcp_scenario import GOLDEN, dump, fixture_server, in_memory, lines, run, scenario


@pytest.fixture(scope="module")
def stdio_recording(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Any]]:
    """The scenario recorded from the fixture server started over stdio."""
    path = tmp_path_factory.mktemp("mcp") / "stdio.jsonl"
    return path, run(path, "record", fixture_server().stdio_params())


def test_replay_needs_no_server(stdio_recording: tuple[Path, list[Any]]) -> None:
    path, recorded = stdio_recording
    from mcp import ClientSession, StdioServerParameters

    nowhere = StdioServerParameters(command=str(path.parent / "no-such-server"))
    for server in (None, nowhere, "http://127.0.0.1:9/mcp"):  # none of them is started
        assert run(path, "replay", server) == recorded

    async def check(session: Any) -> list[Any]:
        assert isinstance(session, ClientSession)
        return await scenario(session)

    assert run(path, "replay", play=check) == recorded
    assert recorded[0][1]["structuredContent"] == recorded[-1][1]["structuredContent"]
    assert recorded[3][1]["isError"] is True
    assert recorded[4][2] == [[float(i), 3.0, f"step {i} of 3"] for i in (1, 2, 3)]
    assert [t["structuredContent"]["result"] for t in recorded[5][1]] == [1, 2, 3]
    assert [e[0] for e in recorded if e[0] == "error"] == ["error", "error"]


def test_recorded_requests_are_wire_form_without_run_specific_fields(
    stdio_recording: tuple[Path, list[Any]],
) -> None:
    path, _ = stdio_recording
    records = lines(path)
    ep0 = [r for r in records if r["env_index"] == 0]
    assert [r["step"] for r in ep0] == list(range(len(ep0)))
    assert {r["channel"] for r in records} == {"mcp"}
    methods = [r["request"]["method"] for r in ep0]
    assert methods[:4] == ["initialize", "tools/call", "tools/list", "tools/list"]
    assert ep0[0]["request"] == {"method": "initialize"}  # SDK versions are not keyed
    assert ep0[1]["request"] == {
        "method": "tools/call",
        "params": {"name": "weather", "arguments": {"city": "Oslo"}},
    }
    text = path.read_text()
    assert "_meta" not in json.dumps([r["request"] for r in records])
    assert "progressToken" not in text and '"id"' not in json.dumps([r["request"] for r in records])
    count = next(r for r in ep0 if (r["request"].get("params") or {}).get("name") == "count")
    assert [e["progress"] for e in count["response"]["progress"]] == [1.0, 2.0, 3.0]
    errors = [r for r in records if r.get("error") is not None]
    assert [e["error"]["type"] for e in errors] == ["mcp.MCPError", "mcp.MCPError"]
    ep1 = [r for r in records if r["env_index"] == 1]
    assert [r["step"] for r in ep1] == [0]  # steps count per (episode, channel)


def test_replay_fires_progress_again_and_serves_repeated_calls_in_order(
    stdio_recording: tuple[Path, list[Any]],
) -> None:
    path, recorded = stdio_recording

    async def without_progress(session: Any) -> list[Any]:  # no callback: nothing to fire
        with cassette.episode(0):
            await session.call_tool("weather", {"city": "Oslo"})
            await session.list_tools()
            await session.call_tool("add", {"a": 2, "b": 3})
            await session.call_tool("lookup", {"key": "nope"})
            counted = await session.call_tool("count", {"n": 3})
            ticks = [await session.call_tool("tick", {}) for _ in range(3)]
        return [dump(counted), [dump(t) for t in ticks]]

    assert run(path, "replay", play=without_progress) == [recorded[4][1], recorded[5][1]]


def test_replay_fails_loudly_on_a_different_or_an_extra_request(
    stdio_recording: tuple[Path, list[Any]],
) -> None:
    path, _ = stdio_recording

    async def other_city(session: Any) -> list[Any]:
        with cassette.episode(0):
            await session.call_tool("weather", {"city": "Bergen"})
        return []

    with pytest.raises(cassette.CassetteMismatch, match=r"(?s)channel='mcp' step=1.*Bergen"):
        run(path, "replay", play=other_city)

    async def one_more(session: Any) -> list[Any]:
        await scenario(session)
        with cassette.episode(1):
            await session.call_tool("add", {"a": 1, "b": 1})
        return []

    with pytest.raises(cassette.CassetteMiss, match=r"env_index=1 channel='mcp' step=1"):
        run(path, "replay", play=one_more)


def test_a_handshake_from_another_sdk_is_made_plausible(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    run(path, "record", in_memory())
    records = path.read_text().splitlines()
    first = json.loads(records[1])
    first["response"]["result"]["protocolVersion"] = "2099-01-01"  # unknown to this SDK
    del first["meta"]["checksum"]  # edited on purpose: as a line without a checksum
    path.write_text("\n".join([records[0], json.dumps(first), *records[2:]]) + "\n")

    async def handshake() -> Any:
        with cassette.open(path, "replay") as cas:
            async with mcp_session(cas, initialize=False) as session:
                result = await session.initialize()
                await scenario(session)
                return result

    result = dump(asyncio.run(handshake()))
    assert result["serverInfo"]["name"] == "cassette-fixture"  # from the recording
    assert result["instructions"].startswith("A fixture server")
    assert result["protocolVersion"] != "2099-01-01"


def test_replay_validates_structured_content_against_the_output_schema(
    stdio_recording: tuple[Path, list[Any]], tmp_path: Path
) -> None:
    # structuredContent is kept, and the SDK checks it on replay as it did live: a
    # recording whose structured content breaks the tool's schema fails the same way
    path, _ = stdio_recording
    broken = tmp_path / "broken.jsonl"
    text = re.sub(r',?"checksum":"[0-9a-f]{8}"', "", path.read_text())  # edited on purpose
    broken.write_text(text.replace('"temperature_c":', '"temperature_f":', 1))
    with pytest.raises(RuntimeError, match="Invalid structured content returned by tool weather"):
        run(broken, "replay")


def test_both_majors_record_the_same_requests() -> None:
    one, two = (lines(GOLDEN / f"golden-mcp{major}.jsonl") for major in (1, 2))
    keys = ("env_index", "channel", "step", "request", "request_sha256")
    assert [[r[k] for k in keys] for r in one] == [[r[k] for k in keys] for r in two]


def test_streamable_http_records_and_replays(tmp_path: Path) -> None:
    path = tmp_path / "http.jsonl"
    with fixture_server().HTTPServer() as url:
        recorded = run(path, "record", url)
    assert recorded[5][1][0]["structuredContent"] == {"result": 1}  # a fresh server process
    assert run(path, "replay") == recorded


def test_append_sends_the_handshake_live_and_records_only_what_is_new(tmp_path: Path) -> None:
    path = tmp_path / "append.jsonl"

    async def first(session: Any) -> list[Any]:
        with cassette.episode(0):
            return [dump(await session.call_tool("add", {"a": 1, "b": 2}))]

    async def more(session: Any) -> list[Any]:
        got = await first(session)
        with cassette.episode(0):  # new: the live server answers (it was initialized)
            got.append(dump(await session.call_tool("weather", {"city": "Rome"})))
        return got

    assert run(path, "record", in_memory(), first)[0]["structuredContent"] == {"result": 3}
    appended = run(path, "append", in_memory(), more)
    assert appended[1]["structuredContent"]["city"] == "Rome"
    # add has an output schema too: its first call listed the tools, weather's needs not
    assert [r["request"]["method"] for r in lines(path)] == [
        "initialize", "tools/call", "tools/list", "tools/call",
    ]  # fmt: skip
    assert run(path, "replay", play=more) == appended


def test_passthrough_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "none.jsonl"
    tools = ["add", "count", "lookup", "tick", "weather"]
    assert run(path, "passthrough", in_memory())[1] == ["tools", tools]
    assert not path.exists()


def test_a_session_built_by_hand_records_and_replays(tmp_path: Path) -> None:
    from mcp import ClientSession

    class MySession(ClientSession):
        calls = 0

        async def send_request(self, *args: Any, **kwargs: Any) -> Any:
            MySession.calls += 1
            return await super().send_request(*args, **kwargs)

    path = tmp_path / "hand.jsonl"

    async def main(mode: str, transport: Callable[[], Any]) -> list[Any]:
        with cassette.open(path, mode) as cas:
            hand_made = RecordingClientSession  # over a transport of one's own
            async with transport() as (read, write), hand_made(read, write, cassette=cas) as s:
                await s.initialize()
                got = await scenario(s)
            async with transport() as (read, write), MySession(read, write) as mine:
                hand = RecordingClientSession.from_session(mine, cas, channel="mcp-2")
                assert isinstance(hand, MySession) and hand is mine
                await hand.initialize()
                with cassette.episode(0):
                    got.append(dump(await hand.call_tool("add", {"a": 4, "b": 4})))
            return got

    recorded = asyncio.run(main("record", in_memory))
    assert MySession.calls == 3  # initialize, tools/call, tools/list (its own override ran)
    assert asyncio.run(main("replay", idle_transport)) == recorded
    assert {r["channel"] for r in lines(path)} == {"mcp", "mcp-2"}


@pytest.mark.skipif(MAJOR != 1, reason="mcp 1.x has no mcp.Client")
def test_recording_client_needs_mcp_2(tmp_path: Path) -> None:
    async def main() -> None:
        with cassette.open(tmp_path / "c.jsonl", "record") as cas:
            async with recording_client(cas, "http://127.0.0.1:9/mcp"):
                pass

    with pytest.raises(cassette.CassetteError, match="mcp_session"):
        asyncio.run(main())


@pytest.mark.parametrize("major", [1, 2])
def test_golden_cassettes_replay_under_this_major(major: int) -> None:
    golden = GOLDEN / f"golden-mcp{major}.jsonl"
    expected = json.loads(golden.with_suffix(".expected.json").read_text())
    assert run(golden, "replay") == expected
