"""Agents that are not Python, through ``cassette serve``: the real Node clients from npm
(``openai``, ``@anthropic-ai/sdk``, and the Vercel AI SDK's ``ai`` with ``@ai-sdk/openai``
running a tool loop), 8 concurrent conversations each, plain and streamed, recorded against
the scripted server, then replayed with the upstream stopped: every output identical.

The npm packages are installed once into a cache directory outside the checkout
(``$XDG_CACHE_HOME/rollout-cassette-tests/node``) and reused. Without node these tests
skip, naming the install command; in CI (``CI`` set) its absence fails them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

Serve = Callable[..., str]  # the serve fixture (conftest.py)
AGENTS = Path(__file__).resolve().parents[1] / "fixtures" / "node"
pytestmark = pytest.mark.slow


def run_agent(name: str, workdir: Path, modules: Path, base: str) -> Any:
    """Run ``tests/fixtures/node/<name>`` against the server at ``base``; its JSON output."""
    script = workdir / name
    if not script.exists():
        shutil.copy(AGENTS / name, script)
        (workdir / "node_modules").symlink_to(modules)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    env |= {
        "OPENAI_BASE_URL": base,
        "OPENAI_API_KEY": "sk-node-test-key-000000000000000000",
        "ANTHROPIC_BASE_URL": base.removesuffix("/v1"),
        "ANTHROPIC_API_KEY": "sk-ant-node-test-key-0000000000000",
    }
    proc = subprocess.run(
        ["node", str(script)], cwd=workdir, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


@pytest.mark.parametrize("agent", ["openai_agent.mjs", "anthropic_agent.mjs", "aisdk_agent.mjs"])
def test_node_agent_replays_identically_with_the_upstream_stopped(
    agent: str, serve: Serve, make_server: Any, node_modules: Path, tmp_path: Path
) -> None:
    upstream = make_server("random")
    path = tmp_path / "node.jsonl"
    ups = (
        "--upstream",
        upstream.base_url,
        "--anthropic-upstream",
        upstream.base_url.removesuffix("/v1"),
    )
    recorded = run_agent(agent, tmp_path, node_modules, serve(path, "record", *ups))
    assert len(recorded) == 8
    upstream.stop()
    url = serve(path, "replay")
    for _ in range(3):  # one replay server, the same program three times: the same answers
        assert run_agent(agent, tmp_path, node_modules, url) == recorded
    text = path.read_text()
    assert "node-test-key" not in text
