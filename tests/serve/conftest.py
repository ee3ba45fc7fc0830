"""Fixtures of the server's tests: a ``cassette serve`` process, started and stopped."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
Serve = Callable[..., str]


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err


@pytest.fixture
def serve() -> Iterator[Serve]:
    """``serve(cassette, mode, *args)`` starts ``cassette serve`` and returns its base URL,
    after stopping the servers started before it (a record server writes its cassette when
    it stops); every server is stopped with SIGTERM and must exit 0."""
    procs: list[subprocess.Popen[str]] = []

    def start(path: Path, mode: str, *args: str, env: dict[str, str] | None = None) -> str:
        for proc in procs:
            _stop(proc)
        base = {k: v for k, v in os.environ.items() if not k.startswith(("CASSETTE_", "OPENAI_"))}
        base["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), base.get("PYTHONPATH")]))
        argv = [sys.executable, "-m", "cassette", "serve", "--cassette", str(path)]
        proc = subprocess.Popen(
            [*argv, "--mode", mode, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**base, **(env or {})},
        )
        procs.append(proc)
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("READY "), line + proc.communicate(timeout=10)[1]
        return line.split()[1]

    try:
        yield start
    finally:
        for proc in procs:
            _stop(proc)
