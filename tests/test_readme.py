"""The README's runnable examples run as written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", (REPO / "README.md").read_text(), re.S)


def _run_block(block: str, where: Path, timeout: float = 60) -> str:
    script = where / "example.py"
    script.write_text(block)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("CASSETTE_MODE", None)
    env.pop("CASSETTE_FORCE_MODE", None)
    proc = subprocess.run(
        [sys.executable, str(script)],
        cwd=where,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_the_record_replay_example_runs_and_shows_a_mismatch(tmp_path: Path) -> None:
    (block,) = [b for b in _python_blocks() if "def run(mode)" in b]
    out = _run_block(block, tmp_path)
    assert "request differs from the recording" in out
    assert "env_index=0 channel='llm' step=0" in out
    assert "first difference at messages[0].content" in out
    assert (tmp_path / "runs" / "a.jsonl").exists()


def test_the_thread_example_runs(tmp_path: Path) -> None:
    (block,) = [b for b in _python_blocks() if "cassette.ContextExecutor(4)" in b]
    _run_block(block, tmp_path)


@pytest.mark.slow
def test_the_mcp_agent_example_records_and_replays_with_nothing_running(tmp_path: Path) -> None:
    (block,) = [b for b in _python_blocks() if "mcp_session(cas, mcp_server)" in b]
    out = _run_block(block, tmp_path, timeout=120)
    assert out.strip(), "the example prints the first episode's answer"
    assert (tmp_path / "runs" / "mcp.jsonl").exists()
