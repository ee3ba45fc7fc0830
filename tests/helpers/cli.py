"""Running the ``cassette`` command as a user does, in a child process, and reading its one
error line (a traceback is what a process prints, not what click's test runner keeps)."""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TAU2_MOCK = REPO / "cassette" / "testing" / "data" / "tau2_mock.jsonl"
# the modules of the tau2 extra, made unimportable for one child
BLOCK = """
import sys
class _NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {"tau2", "loguru", "litellm"}:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, _NotInstalled())
"""
MAIN = "from cassette.cli import main; main(prog_name='cassette')"


def cassette_cli(
    *args: str, cwd: Path, env: dict[str, str] | None = None, prelude: str = ""
) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("CASSETTE_", "OPENAI_"))}
    base["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), base.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-c", prelude + MAIN, *args],
        capture_output=True,
        text=True,
        env={**base, **(env or {})},
        cwd=cwd,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    """The one error line of a failed command (asserting there is exactly one)."""
    assert proc.returncode not in (0, None), proc
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, proc.stderr
    return errors[0]


def dead_url() -> str:
    """An endpoint on 127.0.0.1 that refuses connections (a port just freed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


needs_tau2 = pytest.mark.skipif(
    importlib.util.find_spec("tau2") is None, reason="needs the tau2 extra"
)
