"""The MCP adapter under mcp 1.x, in a side venv: the same scenarios, both golden
cassettes (recorded under 1.x and 2.x) and the end-to-end agent.

The main environment has mcp 2.x; the side venv ``mcp1`` (``mcp>=1.26,<2``) is built on
first use in the side-venv cache (``tests/helpers/sidevenv.py``) and reused. Without a
package registry the test fails, saying so.
"""

from __future__ import annotations

import subprocess

import pytest

from tests.helpers.sidetests import pytest_in_side_venv
from tests.helpers.sidevenv import MCP1_RECIPE

FILES = ("tests/adapters/test_mcp_any_major.py", "tests/adapters/test_mcp_e2e.py")


@pytest.mark.slow
def test_mcp_adapter_under_mcp_1x() -> None:
    python = pytest_in_side_venv("mcp1", MCP1_RECIPE, FILES, timeout=300)
    probe = "import importlib.metadata as m; print(m.version('mcp'))"
    version = subprocess.run(
        [str(python), "-c", probe], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert version.startswith("1."), version
