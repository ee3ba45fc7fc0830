"""Starting helper script processes from tests (``worker.py``, ``caller.py``), reading
their progress, cleaning up."""

from __future__ import annotations

import os
import select
import subprocess
import sys
from pathlib import Path

WORKER = Path(__file__).resolve().parent / "worker.py"
CALLER = WORKER.with_name("caller.py")
ROOT = WORKER.parents[2]  # the checkout under test, imported ahead of any installed copy


class Workers:
    """The processes of one helper script (``worker.py`` unless told) that one test
    started; :meth:`cleanup` kills those still running."""

    def __init__(self, script: Path = WORKER, line_timeout: float = 30) -> None:
        self.script = script
        self.line_timeout = line_timeout
        self.procs: list[subprocess.Popen[str]] = []

    def start(self, *args: str) -> subprocess.Popen[str]:
        path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
        proc = subprocess.Popen(
            [sys.executable, str(self.script), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": path},
        )
        self.procs.append(proc)
        return proc

    def read_line(self, proc: subprocess.Popen[str], timeout: float | None = None) -> str:
        """The next line the process prints (failing after ``timeout`` seconds)."""
        assert proc.stdout is not None
        timeout = self.line_timeout if timeout is None else timeout
        name = self.script.stem
        ready, _, _ = select.select([proc.stdout], [], [], timeout)
        if not ready:
            raise AssertionError(f"{name} {proc.pid} printed nothing within {timeout}s")
        line = proc.stdout.readline().strip()
        if not line:
            _, err = proc.communicate(timeout=timeout)
            raise AssertionError(f"{name} {proc.pid} exited ({proc.returncode}): {err}")
        return line

    @staticmethod
    def finish(proc: subprocess.Popen[str], timeout: float = 120) -> tuple[str, str]:
        """(rest of stdout, stderr) once ``proc`` exits. Read through ``proc.stdout``, not
        ``communicate``, which would skip what :meth:`read_line` has buffered already."""
        assert proc.stdout is not None and proc.stderr is not None
        proc.wait(timeout=timeout)
        return proc.stdout.read(), proc.stderr.read()

    def cleanup(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
            proc.communicate(timeout=30)
