"""The README's runnable examples run as written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", (REPO / "README.md").read_text(), re.S)


def test_the_mcp_agent_example_records_and_replays_with_nothing_running(tmp_path: Path) -> None:
    (block,) = [b for b in _python_blocks() if "mcp_session(cas, mcp_server)" in b]
    script = tmp_path / "example.py"
    script.write_text(block)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("CASSETTE_MODE", None)
    proc = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip(), "the example prints the first episode's answer"
    assert (tmp_path / "runs" / "mcp.jsonl").exists()
