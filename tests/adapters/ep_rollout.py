"""Record and replay a real eval-protocol rollout through ``wrap_policy``.

Runs with the interpreter of the eval-protocol venv that
``test_policy_eval_protocol.py`` builds (eval-protocol cannot share the main environment):

    .venv-ep/bin/python tests/adapters/ep_rollout.py WORKDIR

What is real: eval-protocol's ``rollout()`` -> ``ExecutionManager`` -> ``LocalPolicy``
(LiteLLM, over HTTP) -> the scripted OpenAI-compatible server of ``fixtures/`` in random
mode (random tool arguments and call ids), and ``GeneralMCPVectorEnv``. What is scripted:
the MCP connection manager (a small in-process board game instead of an MCP server), and
the model. Prints one line ``EP_SUMMARY {json}`` for the test to check.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPENAI_API_KEY", "sk-fake-local-test-key-000000")  # litellm wants one
os.environ.pop("EP_PLAYBACK_FILE", None)  # eval-protocol's own record/playback stays off

import importlib.metadata as metadata  # noqa: E402

import orjson  # noqa: E402
from eval_protocol.mcp.execution.policy import LocalPolicy  # noqa: E402
from eval_protocol.mcp.session.manager import GeneralMCPVectorEnv  # noqa: E402
from eval_protocol.mcp_env import rollout  # noqa: E402
from eval_protocol.types import DatasetRow, MCPSession  # noqa: E402

import cassette  # noqa: E402
from cassette.adapters.policy import RecordedPolicy, wrap_policy  # noqa: E402
from cassette.testing.server import ScriptedServer  # noqa: E402

EPISODES = 4
MODEL = "openai/scripted-model"
PROMPT = "You move a piece along a line. Call `move` once, then say where it is."
TOOLS = [
    {
        "name": "move",
        "description": "Move the piece by some steps and leave a note.",
        "input_schema": {
            "type": "object",
            "properties": {
                "steps": {"type": "integer", "minimum": 1, "maximum": 1000000},
                "note": {"type": "string"},
            },
            "required": ["steps", "note"],
        },
    }
]


class Board:
    """Stands in for eval-protocol's MCPConnectionManager (and the MCP server behind it)."""

    def __init__(self) -> None:
        self.position: dict[str, int] = {}
        self.tool_calls = 0

    async def initialize_session(self, session: MCPSession) -> None:
        self.position[session.session_id] = 10 * (session.seed or 0)

    async def discover_tools(self, session: MCPSession) -> list[dict[str, Any]]:
        return orjson.loads(orjson.dumps(TOOLS))

    async def get_initial_state(self, session: MCPSession) -> dict[str, Any]:
        return {"observation": f"the piece is at {self.position[session.session_id]}"}

    async def call_tool(
        self, session: MCPSession, name: str, arguments: dict[str, Any]
    ) -> tuple[Any, float, bool, dict[str, Any]]:
        self.tool_calls += 1
        sid = session.session_id
        self.position[sid] += int(arguments["steps"])
        observation = {"position": self.position[sid], "note": arguments.get("note")}
        return observation, 1.0, False, {"control_plane": {"position": self.position[sid]}}

    async def reset_session(self, session: MCPSession) -> None:
        return None

    async def close_session(self, session: MCPSession) -> None:
        return None


def make_envs(board: Board, prompt: str = PROMPT) -> GeneralMCPVectorEnv:
    rows = [
        DatasetRow(
            id=f"task-{i}",
            seed=i,
            system_prompt=prompt,
            user_prompt_template="Now {observation}. Move it.",
            environment_context={},
        )
        for i in range(EPISODES)
    ]
    sessions = [
        MCPSession(session_id=f"s{i}", base_url="board://local", seed=i, model_id=MODEL)
        for i in range(EPISODES)
    ]
    envs = GeneralMCPVectorEnv(sessions, rows)
    envs.connection_manager = board  # the only stand-in: no MCP server
    return envs


def make_policy(base_url: str) -> LocalPolicy:
    return LocalPolicy(MODEL, base_url, temperature=0.0, max_tokens=64, num_retries=0)


def summarize(rows: list[Any]) -> list[dict[str, Any]]:
    out = []
    for row in rows:
        messages = [m.model_dump(mode="json", exclude_none=True) for m in row.messages]
        calls = [
            {"id": c["id"], "name": c["function"]["name"], "arguments": c["function"]["arguments"]}
            for m in messages
            for c in m.get("tool_calls") or []
        ]
        usage = row.execution_metadata.usage
        out.append(
            {
                "messages": messages,
                "tool_calls": calls,
                "usage": usage.model_dump(mode="json") if usage is not None else None,
                "usage_type": type(usage).__name__,
                "status": row.rollout_status.model_dump(mode="json"),
            }
        )
    return out


async def run(
    path: Path, mode: str, base_url: str, prompt: str = PROMPT
) -> tuple[list[Any], Board, dict[str, Any]]:
    board = Board()
    info: dict[str, Any] = {}
    with cassette.open(path, mode) as cas:
        inner = make_policy(base_url)
        policy = wrap_policy(inner, cas)
        info["wrapper_is_policy"] = isinstance(policy, RecordedPolicy) and isinstance(
            policy, LocalPolicy
        )
        seen: list[int] = []
        make_llm_call = inner._make_llm_call

        async def spy(messages: Any, tools: Any) -> Any:  # counts the calls reaching the model
            seen.append(len(messages))
            return await make_llm_call(messages, tools)

        inner._make_llm_call = spy
        started = time.perf_counter()
        rows = await rollout(make_envs(board, prompt), policy, steps=6)
        info["seconds"] = round(time.perf_counter() - started, 3)
        info["policy_calls"] = len(seen)
    return rows, board, info


def port_is_closed(base_url: str) -> bool:
    host, port = base_url.split("//", 1)[1].split("/", 1)[0].split(":")
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex((host, int(port))) != 0


async def main(workdir: Path) -> dict[str, Any]:
    path = workdir / "ep-rollout.jsonl"
    path.unlink(missing_ok=True)
    summary: dict[str, Any] = {
        "versions": {p: metadata.version(p) for p in ("eval-protocol", "litellm", "mcp", "openai")}
    }
    server = ScriptedServer(mode="random").start()
    base_url = server.base_url
    try:
        rows, board, info = await run(path, "record", base_url)
        summary["record"] = {"rows": summarize(rows), "model_requests": server.request_count}
        summary["record"].update(info, board_tool_calls=board.tool_calls)
        before = server.request_count
        rows, board, info = await run(workdir / "live-again.jsonl", "passthrough", base_url)
        summary["live_again"] = {"rows": summarize(rows), **info}
        summary["live_again"]["model_requests"] = server.request_count - before
    finally:
        server.stop()
    summary["server_stopped"] = port_is_closed(base_url)

    rows, board, info = await run(path, "replay", base_url)
    summary["replay"] = {"rows": summarize(rows), **info, "board_tool_calls": board.tool_calls}
    try:
        await run(path, "replay", base_url, prompt=PROMPT + " Be quick.")
        summary["changed_prompt"] = "no error"
    except cassette.CassetteMismatch as exc:
        summary["changed_prompt"] = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
    lines = path.read_bytes().splitlines()
    summary["cassette"] = {"lines": len(lines), "bytes": sum(len(x) + 1 for x in lines)}
    return summary


if __name__ == "__main__":
    result = asyncio.run(main(Path(sys.argv[1])))
    print("EP_SUMMARY " + orjson.dumps(result).decode(), flush=True)
    sys.stderr.flush()
    os._exit(0)  # skip litellm's slow interpreter teardown (seconds); everything is written
