"""README's "With your framework" snippets run as written: each records against the
scripted server (random mode) through ``OPENAI_BASE_URL``, then, with the server stopped
and every socket connection refused, replays and prints the same thing."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cassette.testing.server import ScriptedServer

REPO = Path(__file__).resolve().parents[3]
SECTION = "## With your framework"
FRAMEWORKS = ("langchain", "agents", "pydantic-ai", "instructor", "litellm")
# loaded first by the replaying interpreter: any connection attempt is refused and reported
GUARD = """\
import socket, sys
def _refuse(what):
    sys.stderr.write(f"SOCKET GUARD: {what}\\n")
    raise ConnectionRefusedError("socket guard: " + what)
socket.socket.connect = lambda self, address: _refuse(f"connect {address!r}")
socket.socket.connect_ex = lambda self, address: _refuse(f"connect_ex {address!r}")
_getaddrinfo = socket.getaddrinfo
def _lookup(host, *args, **kwargs):
    if host not in ("127.0.0.1", "localhost", "::1", None):
        _refuse(f"getaddrinfo {host!r}")
    return _getaddrinfo(host, *args, **kwargs)
socket.getaddrinfo = _lookup
"""


def snippets() -> dict[str, str]:
    text = (REPO / "README.md").read_text()
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    named = {next(f for f in FRAMEWORKS if f'"runs/{f}.jsonl"' in b): b for b in blocks}
    assert sorted(named) == sorted(FRAMEWORKS), "a framework's snippet is missing"
    return named


def run(script: Path, base_url: str, guard: Path | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "CASSETTE_"))}
    env.pop("LITELLM_LOCAL_MODEL_COST_MAP", None)  # the snippet sets it itself
    env.update(OPENAI_BASE_URL=base_url, OPENAI_API_KEY="sk-readme-test-key")
    if guard is not None:
        env["PYTHONPATH"] = str(guard)
    return subprocess.run(
        [sys.executable, str(script)],
        cwd=script.parent, env=env, capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_snippet_records_then_replays_offline(tmp_path: Path, framework: str) -> None:
    script = tmp_path / "example.py"
    script.write_text(snippets()[framework])
    guard = tmp_path / "guard"
    guard.mkdir()
    (guard / "sitecustomize.py").write_text(GUARD)
    with ScriptedServer("random") as server:
        recorded = run(script, server.base_url, None)
        sent = server.request_count
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr[-4000:]
    assert sent >= 1 and recorded.stdout.strip()
    assert (tmp_path / "runs" / f"{framework}.jsonl").exists()
    replayed = run(script, "http://127.0.0.1:9/v1", guard)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr[-4000:]
    assert "SOCKET GUARD" not in replayed.stderr, replayed.stderr[-4000:]
    assert replayed.stdout == recorded.stdout
