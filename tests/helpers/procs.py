"""Starting ``worker.py`` processes from tests, reading their progress, cleaning up."""

from __future__ import annotations

import os
import select
import subprocess
import sys
from pathlib import Path

WORKER = Path(__file__).resolve().parent / "worker.py"
ROOT = WORKER.parents[2]  # the checkout under test, imported ahead of any installed copy


class Workers:
    """The worker processes one test started; :meth:`cleanup` kills those still running."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen[str]] = []

    def start(self, *args: str) -> subprocess.Popen[str]:
        path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
        proc = subprocess.Popen(
            [sys.executable, str(WORKER), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": path},
        )
        self.procs.append(proc)
        return proc

    @staticmethod
    def read_line(proc: subprocess.Popen[str], timeout: float = 30) -> str:
        """The next line the worker prints (failing after ``timeout`` seconds)."""
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], timeout)
        if not ready:
            raise AssertionError(f"worker {proc.pid} printed nothing within {timeout}s")
        line = proc.stdout.readline().strip()
        if not line:
            _, err = proc.communicate(timeout=timeout)
            raise AssertionError(f"worker {proc.pid} exited ({proc.returncode}): {err}")
        return line

    def cleanup(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
            proc.communicate(timeout=30)
