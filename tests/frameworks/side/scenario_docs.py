"""The snippets of the docs' frameworks page (docs/adapters/frameworks.md) run as written:
each records against the scripted server (random mode) through ``OPENAI_BASE_URL``, then,
with the server stopped and every socket connection refused, replays and prints the same
thing. A python snippet runs as a script; a console snippet's ``$`` lines run in turn
(the record line while the server runs, the replay line after), with a titled block of
the same section written to its file first."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from cassette.testing.server import ScriptedServer

REPO = Path(__file__).resolve().parents[3]
PAGE = REPO / "docs" / "adapters" / "frameworks.md"
# a snippet is found by the cassette it writes: runs/<name>.jsonl
FRAMEWORKS = (
    "langchain", "agents", "pydantic-ai", "instructor", "litellm",
    "dspy", "smolagents", "inspect", "llm",
)  # fmt: skip
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
_BLOCK = re.compile(r"```(python|console)([^\n]*)\n(.*?)```", re.S)
_TITLE = re.compile(r'title="([^"]+)"')


def snippets() -> dict[str, list[tuple[str, str, str]]]:
    """Each framework's blocks of its section: (language, title or "", text)."""
    sections = re.split(r"\n## ", PAGE.read_text())
    named: dict[str, list[tuple[str, str, str]]] = {}
    for section in sections:
        found = [(lang, *(_TITLE.findall(info) or [""]), text) for lang, info, text in
                 _BLOCK.findall(section)]  # fmt: skip
        for name in FRAMEWORKS:
            if any(f"runs/{name}.jsonl" in text for _, _, text in found):
                named[name] = found
    assert sorted(named) == sorted(FRAMEWORKS), "a framework's snippet is missing"
    return named


def _argv(command: str) -> list[str]:
    """A console line's command, run by this interpreter (the side venv's): its program,
    and the one after ``--`` (``cassette run ... -- python x.py``)."""
    run_as = {"python": [sys.executable], "cassette": [sys.executable, "-m", "cassette"],
              "llm": [sys.executable, "-m", "llm"]}  # fmt: skip
    argv: list[str] = []
    for word in shlex.split(command):
        program = not argv or argv[-1] == "--"
        argv += run_as.get(word, [word]) if program else [word]
    return argv


def run(argv: list[str], where: Path, base_url: str, guard: Path | None) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "CASSETTE_"))}
    env.pop("LITELLM_LOCAL_MODEL_COST_MAP", None)  # the snippets set it themselves
    env.update(OPENAI_BASE_URL=base_url, OPENAI_API_KEY="sk-docs-test-key", HOME=str(where))
    if guard is not None:
        env["PYTHONPATH"] = str(guard)
    done = subprocess.run(
        argv, cwd=where, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr[-4000:]
    assert "SOCKET GUARD" not in done.stderr, done.stderr[-4000:]
    return done.stdout


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_snippet_records_then_replays_offline(tmp_path: Path, framework: str) -> None:
    steps: list[list[str]] = []  # the record run's argv, then the replay run's
    for lang, title, text in snippets()[framework]:
        if title:
            (tmp_path / title).write_text(text)
        elif lang == "python":
            (tmp_path / "example.py").write_text(text)
            steps = [[sys.executable, "example.py"]] * 2
        else:
            steps = [_argv(line[2:]) for line in text.splitlines() if line.startswith("$ ")]
    assert len(steps) == 2, steps
    guard = tmp_path / "guard"
    guard.mkdir()
    (guard / "sitecustomize.py").write_text(GUARD)
    with ScriptedServer("random") as server:
        recorded = run(steps[0], tmp_path, server.base_url, None)
        sent = server.request_count
    assert sent >= 1 and recorded.strip()
    assert (tmp_path / "runs" / f"{framework}.jsonl").exists()
    replayed = run(steps[1], tmp_path, "http://127.0.0.1:9/v1", guard)
    assert replayed == recorded
