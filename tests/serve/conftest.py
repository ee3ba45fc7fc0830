"""Fixtures of the server's tests: a ``cassette serve`` process, started and stopped."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import cassette

REPO = Path(__file__).resolve().parents[2]
Serve = Callable[..., str]
PACKAGES = ("openai@7.60.0", "@anthropic-ai/sdk@1.17.0", "ai@7.0.173", "@ai-sdk/openai@4.0.118")
INSTALL = "apt-get install -y nodejs npm (Debian's packages)"


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err


@pytest.fixture
def empty(tmp_path: Path) -> Path:
    """A cassette with its header and no call: a replay server over it answers a miss."""
    with cassette.open(tmp_path / "empty.jsonl", mode="record"):
        pass
    return tmp_path / "empty.jsonl"


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


def _node_modules() -> Path:
    if shutil.which("node") is None or shutil.which("npm") is None:
        if os.environ.get("CI"):
            pytest.fail(f"node and npm are needed here; {INSTALL}")
        pytest.skip(f"node is not installed; {INSTALL}")
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    home = (
        cache
        / "rollout-cassette-tests"
        / ("node-" + hashlib.sha256(repr(PACKAGES).encode()).hexdigest()[:12])
    )
    home.mkdir(parents=True, exist_ok=True)
    with open(home / ".lock", "w") as lock:  # xdist workers install once between them
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (home / "installed").exists():
            (home / "package.json").write_text('{"private": true}\n')
            subprocess.run(
                ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error", *PACKAGES],
                cwd=home,
                check=True,
                capture_output=True,
                timeout=600,
            )
            (home / "installed").write_text("\n".join(PACKAGES))
    return home / "node_modules"


@pytest.fixture(scope="module")
def node_modules() -> Path:
    """The npm packages of the Node clients, installed once (see :func:`_node_modules`)."""
    return _node_modules()
