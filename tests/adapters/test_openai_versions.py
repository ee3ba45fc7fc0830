"""wrap_openai under the other majors of the openai SDK, each in a side venv: openai 1.x
(the newest, on httpx, with the websockets package so that realtime connections are tried)
and openai 2.x (on httpx). The same tests as here: test_openai, test_openai_entry and the
walk over every SDK method. The main environment has openai 3.x (on httpx2)."""

from __future__ import annotations

import subprocess

import pytest

from tests.helpers.sidetests import pytest_in_side_venv
from tests.helpers.sidevenv import clean_env

FILES = (
    "tests/adapters/test_openai.py",
    "tests/adapters/test_openai_entry.py",
    "tests/adapters/test_openai_walk.py",
)
RECIPES = {
    "openai1": (("openai==1.109.1", "websockets>=13,<16", "pytest>=8", "-e", "{repo}"),),
    "openai2": (("openai==2.54.0", "pytest>=8", "-e", "{repo}"),),
}


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_wrap_openai_under_another_major(name: str) -> None:
    python = pytest_in_side_venv(name, RECIPES[name], FILES, timeout=600)
    probe = "import openai, sys; print(openai.__version__, 'websockets' in sys.modules)"
    version = subprocess.run(
        [str(python), "-c", probe], capture_output=True, text=True, check=True, env=clean_env()
    ).stdout.split()[0]
    assert version.split(".")[0] == name[-1], version
