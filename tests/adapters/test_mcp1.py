"""The MCP adapter under mcp 1.x, in a side venv: the same scenarios, both golden
cassettes (recorded under 1.x and 2.x) and the end-to-end agent.

The main environment has mcp 2.x; the side venv ``mcp1`` (``mcp>=1.26,<2``) is built on
first use in the side-venv cache (``tests/helpers/sidevenv.py``) and reused. Without a
package registry the test fails, saying so.
"""

from __future__ import annotations

import subprocess

import pytest

from tests.helpers.sidevenv import MCP1_RECIPE, REPO, clean_env, side_venv

FILES = ("tests/adapters/mcp1_check.py", "tests/adapters/test_mcp_e2e.py")


@pytest.mark.slow
def test_mcp_adapter_under_mcp_1x() -> None:
    python = side_venv("mcp1", MCP1_RECIPE)
    if isinstance(python, str):
        pytest.fail(python, pytrace=False)
    proc = subprocess.run(
        [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", *FILES],
        capture_output=True,
        text=True,
        timeout=300,
        env=clean_env(),
        cwd=REPO,
        check=False,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-4000:]
    summary = output.strip().splitlines()[-1]
    assert " passed" in summary and "skipped" not in summary, summary
    probe = "import importlib.metadata as m; print(m.version('mcp'))"
    version = subprocess.run(
        [str(python), "-c", probe], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert version.startswith("1."), version
