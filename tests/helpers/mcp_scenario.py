"""The MCP scenario both mcp majors record and replay (tests/adapters/test_mcp_any_major.py),
the fixture server it talks to, and the golden cassettes under tests/fixtures/mcp.

To re-record the golden cassette of the installed major::

    python tests/helpers/mcp_scenario.py record-golden    # or .venv-mcp1/bin/python ...
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from pydantic import BaseModel

import cassette
from cassette.adapters.mcp import MAJOR, MCPError, RecordingClientSession, mcp_session
from cassette.types import Json

__all__ = ["GOLDEN", "dump", "fixture_server", "in_memory", "lines", "record_golden", "run",
           "scenario"]  # fmt: skip

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "fixtures" / "mcp"
if str(REPO) not in sys.path:  # run as a script
    sys.path.insert(0, str(REPO))

Scenario = Callable[[Any], Awaitable[list[Any]]]


def fixture_server() -> Any:
    """The fixture server module (imported late: running as a script sets sys.path first)."""
    import cassette.testing.mcp_server

    return cassette.testing.mcp_server


def dump(value: Any) -> Any:
    """An SDK result as the wire form it came from (the same under both majors)."""
    assert isinstance(value, BaseModel)
    return value.model_dump(by_alias=True, mode="json", exclude_unset=True)


async def scenario(session: Any) -> list[Any]:
    """Everything the adapter records: plain, structured, isError and repeated tool calls,
    progress, a resource, a prompt, JSON-RPC errors, and a second episode."""
    out: list[Any] = []
    events: list[Any] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        events.append([value, total, message])

    with cassette.episode(0):
        # weather has an output schema and was never listed: call_tool lists tools itself
        out.append(["weather", dump(await session.call_tool("weather", {"city": "Oslo"}))])
        out.append(["tools", sorted(t.name for t in (await session.list_tools()).tools)])
        out.append(["add", dump(await session.call_tool("add", {"a": 2, "b": 3}))])
        out.append(["lookup", dump(await session.call_tool("lookup", {"key": "nope"}))])
        counted = await session.call_tool("count", {"n": 3}, progress_callback=progress)
        out.append(["count", dump(counted), list(events)])
        out.append(["ticks", [dump(await session.call_tool("tick", {})) for _ in range(3)]])
        out.append(["resource", dump(await session.read_resource("config://app"))])
        out.append(["prompt", dump(await session.get_prompt("review", {"code": "x = 1"}))])
        for missing in (session.get_prompt("missing", {}), session.read_resource("config://x")):
            try:
                await missing
            except MCPError as exc:
                error = exc.error  # type: ignore[attr-defined]
                out.append(["error", error.code, error.message, error.data])
    with cassette.episode(1):
        out.append(["weather", dump(await session.call_tool("weather", {"city": "Oslo"}))])
    return out


@asynccontextmanager
async def in_memory() -> AsyncIterator[tuple[Any, Any]]:
    """A client transport to the fixture server running in this process (no subprocess)."""
    from mcp.shared.memory import create_client_server_memory_streams

    server = fixture_server().server
    low = getattr(server, "_lowlevel_server", None) or server._mcp_server
    streams = create_client_server_memory_streams()
    async with streams as (client, (read, write)), anyio.create_task_group() as tg:
        tg.start_soon(lambda: low.run(read, write, low.create_initialization_options()))
        yield client[0], client[1]
        tg.cancel_scope.cancel()


def run(
    path: Path, mode: str, server: Any = None, play: Scenario = scenario, **options: Any
) -> list[Any]:
    """``play`` on an ``mcp_session`` over ``server`` with the cassette at ``path``."""

    async def main() -> list[Any]:
        with cassette.open(path, mode, **options) as cas:
            async with mcp_session(cas, server) as session:
                assert isinstance(session, RecordingClientSession)
                return await play(session)

    return asyncio.run(main())


def lines(path: Path) -> list[Json]:
    return [json.loads(line) for line in path.read_text().splitlines()[1:]]


def record_golden() -> Path:
    """Record the golden cassette of the installed mcp major (and what replay must give)."""
    GOLDEN.mkdir(parents=True, exist_ok=True)
    golden = GOLDEN / f"golden-mcp{MAJOR}.jsonl"
    outputs = run(golden, "record", fixture_server().stdio_params())
    golden.with_suffix(".expected.json").write_text(json.dumps(outputs, indent=1) + "\n")
    return golden


if __name__ == "__main__":
    if sys.argv[1:] != ["record-golden"]:
        sys.exit(__doc__)
    print(f"recorded {record_golden()}")
