"""``python -m cassette`` is the ``cassette`` command (for a venv whose bin is not on PATH)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _module(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CASSETTE_", "OPENAI_"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-m", "cassette", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def test_python_dash_m_cassette_runs_the_command_line(tmp_path: Path) -> None:
    version = _module("--version", cwd=tmp_path)
    assert version.returncode == 0 and version.stdout.startswith("cassette, version "), version
    missing = _module("show", "missing.jsonl", cwd=tmp_path)
    assert missing.returncode == 2
    assert missing.stderr == "error: no such file or directory: missing.jsonl; check the path\n"
