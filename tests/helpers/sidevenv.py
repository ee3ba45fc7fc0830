"""Side virtual environments for tests of packages that cannot share the main one
(eval-protocol pins mcp<2 and openai 2.x; the mcp 1.x checks need mcp<2).

A venv lives at ``<repo>/.venv-<name>``, is built on first use from the package registry,
and is reused while its marker file (the recipe, the Python, this project's dependencies)
matches. A build that fails returns the reason, so the test fails saying why.
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
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
QUIET = ("-q", "--disable-pip-version-check")
# the mcp 1.x tests (the main environment has mcp 2.x)
MCP1_RECIPE = (("mcp>=1.26,<2", "pytest>=8", "hypothesis>=6.100", "-e", "{repo}"),)


def venv_path(name: str) -> Path:
    return REPO / f".venv-{name}"


def python_of(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _marker(recipe: Sequence[Sequence[str]]) -> dict[str, Any]:
    pyproject = (REPO / "pyproject.toml").read_text()
    try:  # this project's runtime dependencies, not the rest of pyproject.toml
        import tomllib

        deps: Any = tomllib.loads(pyproject)["project"]["dependencies"]
    except (ImportError, KeyError):
        deps = hashlib.sha256(pyproject.encode()).hexdigest()
    return {
        "recipe": [list(step) for step in recipe],
        "python": sys.version,
        "repo": str(REPO),
        "dependencies": deps,
    }


@contextlib.contextmanager
def _lock(venv: Path) -> Iterator[None]:
    """One builder at a time (parallel pytest workers share the venv)."""
    name = hashlib.sha256(str(venv).encode()).hexdigest()[:16]
    path = Path(tempfile.gettempdir()) / f"rollout-cassette-venv-{name}.lock"
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def run(argv: Sequence[str], timeout: float) -> None:
    try:
        proc = subprocess.run(
            list(argv), capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"`{' '.join(argv)}` took longer than {timeout:.0f} s") from None
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise RuntimeError(f"`{' '.join(argv)}` exited with {proc.returncode}:\n{tail}")


def side_venv(name: str, recipe: Sequence[Sequence[str]]) -> Path | str:
    """The interpreter of ``.venv-<name>``, built by ``pip install`` of each step of
    ``recipe`` in turn (``"{repo}"`` stands for this checkout); or why it could not be."""
    venv = venv_path(name)
    marker = venv / "rollout-cassette-venv.json"
    python = python_of(venv)
    with _lock(venv):
        try:
            if python.exists() and json.loads(marker.read_text()) == _marker(recipe):
                return python
        except (FileNotFoundError, ValueError):
            pass
        try:
            shutil.rmtree(venv, ignore_errors=True)
            run([sys.executable, "-m", "venv", "--without-pip", str(venv)], 120)
            # a current pip resolves ~3x faster than an old bundled one
            run([sys.executable, "-m", "pip", "--python", str(python), "install", *QUIET,
                 "pip>=25"], 180)  # fmt: skip
            for step in recipe:
                args = [a.replace("{repo}", str(REPO)) for a in step]
                run([str(python), "-m", "pip", "install", *QUIET, "--no-compile", *args], 600)
            marker.write_text(json.dumps(_marker(recipe), indent=2) + "\n")
        except (RuntimeError, OSError) as exc:
            return f"could not build {venv.name} (this needs the package registry): {exc}"
    return python


def clean_env(*drop: str) -> dict[str, str]:
    """This process's environment without variables that would steer the child."""
    gone = {"PYTHONDONTWRITEBYTECODE", "PYTHONPATH", "CASSETTE_MODE", "CASSETTE_PATH", *drop}
    return {k: v for k, v in os.environ.items() if k not in gone}
