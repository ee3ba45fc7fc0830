"""``cassette run`` for any command: a command that is not Python (a Node agent) gets a
``cassette serve`` of its own and its clients pointed at it; a record run says what it
wrote, or that it wrote nothing and which connections the command opened; a replay miss is
one line and a non-zero exit."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cli import REPO

pytestmark = pytest.mark.slow
AGENTS = Path(__file__).resolve().parents[1] / "fixtures" / "node"


def cassette_run(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("CASSETTE_", "OPENAI_"))}
    base["PYTHONPATH"] = str(REPO)
    return subprocess.run(
        [sys.executable, "-m", "cassette", "run", *args], cwd=cwd, env={**base, **env},
        capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def test_a_node_agent_records_and_replays_under_cassette_run(
    make_server: Any, node_modules: Path, tmp_path: Path
) -> None:
    (tmp_path / "agent.mjs").write_text((AGENTS / "openai_agent.mjs").read_text())
    (tmp_path / "node_modules").symlink_to(node_modules)
    upstream = make_server("random")
    env = {"OPENAI_BASE_URL": upstream.base_url, "OPENAI_API_KEY": "sk-run-node-000000000000"}
    cmd = ("--cassette", "runs/node.jsonl", "--", "node", "agent.mjs")
    recorded = cassette_run("--mode", "record", *cmd, cwd=tmp_path, env=env)
    assert recorded.returncode == 0, recorded.stderr
    assert "recorded 16 calls in 8 episodes to" in recorded.stderr
    upstream.stop()
    replayed = cassette_run("--mode", "replay", *cmd, cwd=tmp_path, env=env)
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout == recorded.stdout
    assert "sk-run-node" not in (tmp_path / "runs" / "node.jsonl").read_text()


def test_a_client_the_hook_does_not_know_is_named_when_nothing_is_recorded(
    make_server: Any, tmp_path: Path
) -> None:
    upstream = make_server("random")
    (tmp_path / "raw.py").write_text(
        "import json, sys, urllib.request\n"
        "body = json.dumps({'model': 'm', 'messages': [{'role': 'user', 'content': 'hi'}]})\n"
        "req = urllib.request.Request(sys.argv[1] + '/chat/completions', data=body.encode(),\n"
        "                             headers={'Content-Type': 'application/json'})\n"
        "print(json.load(urllib.request.urlopen(req))['choices'][0]['message']['content'])\n"
    )
    proc = cassette_run(
        "--mode",
        "record",
        "--cassette",
        "raw.jsonl",
        "--",
        sys.executable,
        "raw.py",
        upstream.base_url,
        cwd=tmp_path,
        env={},
    )
    assert proc.returncode == 0, proc.stderr
    host_port = upstream.base_url.split("//")[1].split("/")[0]
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith("cassette run: recorded nothing to")
    assert f"{host_port} (1)" in line and "--via server" in line


def test_a_replay_miss_is_one_line_naming_the_nearest_episode(
    make_server: Any, tmp_path: Path
) -> None:
    upstream = make_server("random")
    script = tmp_path / "ask.py"
    script.write_text(
        "import sys, openai\n"
        "client = openai.OpenAI(api_key='sk-x', max_retries=0)\n"
        "ask = [{'role': 'user', 'content': sys.argv[1]}]\n"
        "reply = client.chat.completions.create(model='m', messages=ask)\n"
        "print(reply.choices[0].message.content)\n"
    )
    env = {"OPENAI_BASE_URL": upstream.base_url}
    cmd = ("--cassette", "ask.jsonl", "--", sys.executable, "ask.py")
    assert (
        cassette_run("--mode", "record", *cmd, "Add 17 and 25", cwd=tmp_path, env=env).returncode
        == 0
    )
    upstream.stop()
    proc = cassette_run("--mode", "replay", *cmd, "Add 17 and 26", cwd=tmp_path, env=env)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    (line,) = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert line.startswith("error: no recording for env_index='add-17-and-26.")
    assert "the nearest recorded episode is 'add-17-and-25." in line
