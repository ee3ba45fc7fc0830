"""Running some of this repository's tests in a side venv (another major of a package)."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.helpers.sidevenv import REPO, clean_env, side_venv


def pytest_in_side_venv(
    name: str, recipe: Sequence[Sequence[str]], files: Sequence[str], timeout: float
) -> Path:
    """Run pytest on ``files`` in the side venv ``name`` (built from ``recipe``), failing
    the calling test if the venv cannot be built, or unless every test passed and none
    was skipped; the venv's python."""
    python = side_venv(name, recipe)
    if isinstance(python, str):
        pytest.fail(python, pytrace=False)
    proc = subprocess.run(
        [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", *files],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=clean_env(),
        cwd=REPO,
        check=False,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-4000:]
    summary = output.strip().splitlines()[-1]
    assert " passed" in summary and "skipped" not in summary, summary
    return python
