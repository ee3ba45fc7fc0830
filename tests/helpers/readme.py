"""The README's code blocks, and running one as a user would (a script in a fresh directory)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

__all__ = ["REPO", "python_blocks", "run_block"]

REPO = Path(__file__).resolve().parents[2]


def python_blocks() -> list[str]:
    """Every ```python block of README.md, in order."""
    return re.findall(r"```python\n(.*?)```", (REPO / "README.md").read_text(), re.S)


def run_block(block: str, where: Path, timeout: float = 60) -> str:
    """Run ``block`` as ``where/example.py`` with this checkout importable; its stdout."""
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
