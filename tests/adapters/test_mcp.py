"""The MCP adapter under mcp 2.x: what only 2.x has (``mcp.Client``, dispatchers) and the
adapter's own corners (errors, progress before an error, handshake in append); the
scenarios both majors run are in test_mcp_any_major.py."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from mcp import StdioServerParameters

import cassette
from cassette.adapters.mcp import (
    MAJOR,
    MCPError,
    MCPErrors,
    RecordingClientSession,
    idle_transport,
    mcp_session,
    recording_client,
    request_dict,
)
from tests.helpers.mcp_scenario import dump, fixture_server, in_memory, lines, run, scenario

pytestmark = pytest.mark.skipif(MAJOR != 2, reason="what only mcp 2.x has")


def client_run(path: Path, mode: str, server: Any, client_mode: str) -> tuple[str, list[Any]]:
    async def main() -> tuple[str, list[Any]]:
        with cassette.open(path, mode) as cas:
            async with recording_client(cas, server, mode=client_mode) as client:
                assert isinstance(client.session, RecordingClientSession)
                return client.protocol_version, await scenario(client)

    return asyncio.run(main())


@pytest.mark.parametrize(
    ("client_mode", "handshake"),
    [("auto", "server/discover"), ("legacy", "initialize")],
)
def test_mcp_client_in_process_records_and_replays(
    tmp_path: Path, client_mode: str, handshake: str
) -> None:
    # an in-process MCPServer: "auto" talks to it through a DirectDispatcher (no streams),
    # "legacy" through the in-memory stream transport
    path = tmp_path / "client.jsonl"
    version, recorded = client_run(path, "record", fixture_server().server, client_mode)
    assert lines(path)[0]["request"] == {"method": handshake}
    assert client_run(path, "replay", None, client_mode) == (version, recorded)
    assert recorded[4][2][-1] == [3.0, 3.0, "step 3 of 3"]  # progress, re-fired on replay


def test_mcp_client_over_stdio_records_and_replays(tmp_path: Path) -> None:
    path = tmp_path / "client-stdio.jsonl"
    recorded = client_run(path, "record", fixture_server().stdio_params(), "auto")
    assert recorded[0] == "2026-07-28"  # the 2.x server speaks the modern protocol
    assert client_run(path, "replay", None, "auto") == recorded


@pytest.mark.slow
def test_mcp_client_against_an_mcp1_server_falls_back_to_initialize(tmp_path: Path) -> None:
    # a 1.x server answers server/discover with a JSON-RPC error: recorded, and replayed
    # as MCPError, so the Client falls back to initialize on replay as it did live
    from tests.helpers.sidevenv import MCP1_RECIPE, side_venv

    mcp1_python = side_venv("mcp1", MCP1_RECIPE)  # the venv of the mcp 1.x tests
    if isinstance(mcp1_python, str):
        pytest.fail(mcp1_python, pytrace=False)
    path = tmp_path / "old-server.jsonl"
    old = StdioServerParameters(command=str(mcp1_python), args=[fixture_server().HERE])
    recorded = client_run(path, "record", old, "auto")
    assert recorded[0] == "2025-11-25"
    assert [r["request"]["method"] for r in lines(path)][:2] == ["server/discover", "initialize"]
    assert lines(path)[0]["error"]["type"] == "mcp.MCPError"
    assert client_run(path, "replay", None, "auto") == recorded


def test_recording_needs_a_server(tmp_path: Path) -> None:
    async def main() -> None:
        with cassette.open(tmp_path / "c.jsonl", "record") as cas:
            async with mcp_session(cas):
                pass

    with pytest.raises(cassette.CassetteError, match="needs a server to record"):
        asyncio.run(main())
    with pytest.raises(TypeError, match="StdioServerParameters"):
        run(tmp_path / "d.jsonl", "record", 42)


def test_json_rpc_errors_keep_code_message_and_data_across_majors() -> None:
    codec = MCPErrors()
    codec.progress.append({"progress": 1.0})
    exc = MCPError(-32602, "Unknown resource", {"uri": "config://x"})
    info = codec.dump(exc)
    assert info == {
        "type": "mcp.MCPError",
        "message": "Unknown resource",
        "data": {
            "code": -32602,
            "message": "Unknown resource",
            "data": {"uri": "config://x"},
            "progress": [{"progress": 1.0}],
        },
    }
    for name in ("mcp.MCPError", "mcp.shared.exceptions.McpError", "McpError"):
        back = codec.load({**info, "type": name})
        assert isinstance(back, MCPError)
        assert (back.code, back.message) == (-32602, "Unknown resource")
        assert back.data == {"uri": "config://x"}
    assert codec.load({"type": "builtins.RuntimeError", "message": "x", "data": {}}) is None
    assert codec.dump(RuntimeError("x")) is None


def test_progress_before_an_error_and_other_exceptions_replay(tmp_path: Path) -> None:
    from mcp import ClientSession

    class Flaky(ClientSession):
        async def send_request(self, request: Any, result_type: Any, *args: Any, **kw: Any) -> Any:
            name = (request_dict(request).get("params") or {}).get("name")
            if name == "fails":
                await kw["progress_callback"](0.5, 1.0, "half way")
                raise MCPError(-32000, "went wrong")
            if name == "crashes":
                raise RuntimeError("the transport broke")
            return await super().send_request(request, result_type, *args, **kw)

    path = tmp_path / "flaky.jsonl"

    async def main(mode: str, transport: Any) -> list[Any]:
        seen: list[Any] = []

        async def progress(value: float, total: float | None, message: str | None) -> None:
            seen.append([value, total, message])

        with cassette.open(path, mode) as cas:
            async with transport as (read, write), Flaky(read, write) as flaky:
                session = RecordingClientSession.from_session(flaky, cas)
                await session.initialize()
                with pytest.raises(MCPError, match="went wrong"):
                    await session.call_tool("fails", {}, progress_callback=progress)
                error = RuntimeError if mode == "record" else cassette.RecordedError
                with pytest.raises(error, match="the transport broke"):
                    await session.call_tool("crashes", {})
        return seen

    assert asyncio.run(main("record", in_memory())) == [[0.5, 1.0, "half way"]]
    assert asyncio.run(main("replay", idle_transport())) == [[0.5, 1.0, "half way"]]
    types = [(r.get("error") or {}).get("type") for r in lines(path)]
    assert types == [None, "mcp.MCPError", "builtins.RuntimeError"]


def test_append_with_a_different_handshake_recorded_still_initializes_live(
    tmp_path: Path,
) -> None:
    path = tmp_path / "append.jsonl"
    run(path, "record", in_memory(), lambda s: asyncio.sleep(0, []))
    records = path.read_text().splitlines()
    first = json.loads(records[1])
    old = {"type": "mcp.MCPError", "message": "old", "data": {"code": 1, "message": "old"}}
    first["response"], first["error"] = None, old  # a handshake that failed back then
    del first["meta"]["checksum"]  # edited on purpose: as a line without a checksum
    path.write_text("\n".join([records[0], json.dumps(first)]) + "\n")

    async def one(session: Any) -> list[Any]:
        with cassette.episode(0):
            return [dump(await session.call_tool("add", {"a": 1, "b": 1}))]

    assert run(path, "append", in_memory(), one)[0]["structuredContent"] == {"result": 2}


def test_replay_is_cheap(tmp_path: Path) -> None:
    path = tmp_path / "many.jsonl"

    async def many(session: Any) -> list[Any]:
        with cassette.episode(0):
            for _ in range(300):
                await session.call_tool("tick", {})
        return []

    run(path, "record", in_memory(), many)
    start = time.perf_counter()
    run(path, "replay", play=many)
    assert time.perf_counter() - start < 3.0  # about 0.1 ms a call; a server would be far slower
