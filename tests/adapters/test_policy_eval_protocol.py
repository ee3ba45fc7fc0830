"""wrap_policy with the real eval-protocol: record a rollout, replay it with the model gone.

eval-protocol pins litellm, mcp<2 and openai 2.x, so it lives in its own virtual
environment, ``<repo>/.venv-ep``, built here on first use (about 30-60 s from the package
registry) and reused while its marker file matches. ``ep_rollout.py`` runs inside it and
prints a JSON summary that this test checks. Without a registry the test fails, saying so.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
VENV = REPO / ".venv-ep"
SCRIPT = Path(__file__).with_name("ep_rollout.py")
PINS = ("eval-protocol==0.3.33", "litellm==1.105.0", "mcp==1.30.0")
MARKER = VENV / "rollout-cassette-ep.json"
EPISODES = 4  # as in ep_rollout.py
DROP_ENV = ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH", "CASSETTE_MODE", "EP_PLAYBACK_FILE")


def _marker() -> dict[str, Any]:
    """What the venv was built from; any change rebuilds it."""
    pyproject = (REPO / "pyproject.toml").read_text()
    try:  # this project's runtime dependencies, not the rest of pyproject.toml
        import tomllib

        deps: Any = tomllib.loads(pyproject)["project"]["dependencies"]
    except (ImportError, KeyError):
        deps = hashlib.sha256(pyproject.encode()).hexdigest()
    return {
        "pins": list(PINS),
        "recipe": "eval-protocol --no-deps, v1",  # bump when _build() changes
        "python": sys.version,
        "repo": str(REPO),
        "dependencies": deps,
    }


def _python() -> Path:
    return VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


@contextlib.contextmanager
def _lock() -> Iterator[None]:
    """One builder at a time (parallel pytest workers share the venv)."""
    name = hashlib.sha256(str(VENV).encode()).hexdigest()[:16]
    path = Path(tempfile.gettempdir()) / f"rollout-cassette-ep-{name}.lock"
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _run(argv: list[str], timeout: float) -> None:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"`{' '.join(argv)}` took longer than {timeout:.0f} s") from None
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise RuntimeError(f"`{' '.join(argv)}` exited with {proc.returncode}:\n{tail}")


def _build() -> None:
    shutil.rmtree(VENV, ignore_errors=True)
    python, quiet = str(_python()), ["-q", "--disable-pip-version-check"]
    _run([sys.executable, "-m", "venv", "--without-pip", str(VENV)], 120)  # ensurepip: ~8 s
    # a current pip resolves and installs this set ~3x faster than an old bundled one
    _run([sys.executable, "-m", "pip", "--python", python, "install", *quiet, "pip>=25"], 180)
    pip = [python, "-m", "pip", "install", *quiet, "--no-compile"]  # bytecode: see below
    # eval-protocol itself without its ~40 dependencies that a rollout never imports
    # (anthropic, fireworks-ai, hydra, ...); litellm and mcp bring what it does import
    _run([*pip, "--no-deps", PINS[0]], 180)
    _run([*pip, *PINS[1:], "-e", str(REPO)], 600)
    MARKER.write_text(json.dumps(_marker(), indent=2) + "\n")


@pytest.fixture(scope="session")
def ep_python() -> Path | str:
    """The venv's interpreter, or why it could not be built (the test then fails)."""
    with _lock():
        try:
            if not (_python().exists() and json.loads(MARKER.read_text()) == _marker()):
                raise FileNotFoundError
        except (FileNotFoundError, ValueError):
            try:
                _build()
            except (RuntimeError, OSError) as exc:
                return (
                    f"could not build the eval-protocol venv at {VENV} with {', '.join(PINS)} "
                    f"(this needs the package registry): {exc}"
                )
    return _python()


def test_real_eval_protocol_rollout_replays_offline(ep_python: Path | str, tmp_path: Path) -> None:
    if isinstance(ep_python, str):
        pytest.fail(ep_python, pytrace=False)
    # PYTHONDONTWRITEBYTECODE is dropped so that the first run caches the bytecode of what
    # it imports (pip compiling all of litellm and botocore would take longer)
    env = {k: v for k, v in os.environ.items() if k not in DROP_ENV}
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    proc = subprocess.run(
        [str(ep_python), str(SCRIPT), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
        cwd=REPO,
        check=False,
    )
    lines = [x for x in proc.stdout.splitlines() if x.startswith("EP_SUMMARY ")]
    assert proc.returncode == 0 and lines, proc.stdout[-3000:] + proc.stderr[-5000:]
    summary = json.loads(lines[-1].split(" ", 1)[1])
    record, again, replay = summary["record"], summary["live_again"], summary["replay"]

    assert summary["versions"]["eval-protocol"] == "0.3.33"
    assert summary["versions"]["litellm"] == "1.105.0"
    # recording: each episode asked the model twice (tool call, then the final answer)
    assert record["wrapper_is_policy"]
    assert record["model_requests"] == record["policy_calls"] == 2 * EPISODES
    assert record["board_tool_calls"] == EPISODES
    assert len(record["rows"]) == EPISODES
    for row in record["rows"]:
        assert [c["name"] for c in row["tool_calls"]] == ["move"]
        assert row["usage"]["total_tokens"] > 0
        assert row["status"]["details"][0]["metadata"]["termination_reason"] == "stop"
    # the model answers at random: a second live run differs
    assert again["model_requests"] == 2 * EPISODES
    assert [r["tool_calls"] for r in again["rows"]] != [r["tool_calls"] for r in record["rows"]]
    # replay with the server stopped: no model call, identical rollouts, tools ran again
    assert summary["server_stopped"]
    assert replay["policy_calls"] == 0
    assert replay["board_tool_calls"] == EPISODES
    assert replay["rows"] == record["rows"]
    assert {r["usage_type"] for r in replay["rows"]} == {"CompletionUsage"}
    assert summary["changed_prompt"].startswith("CassetteMismatch: request differs")
    assert summary["cassette"]["lines"] == 1 + 2 * EPISODES
