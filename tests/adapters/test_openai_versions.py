"""wrap_openai under the other majors of the openai SDK, each in a side venv: openai 1.x
(the newest, on httpx, with the websockets package so that realtime connections are tried)
and openai 2.x (on httpx). The same tests as here: test_openai, test_openai_entry and the
walk over every SDK method. The main environment has openai 3.x (on httpx2)."""

from __future__ import annotations

import subprocess

import pytest

from tests.helpers.sidevenv import REPO, clean_env, side_venv

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
    python = side_venv(name, RECIPES[name])
    if isinstance(python, str):
        pytest.fail(python, pytrace=False)
    proc = subprocess.run(
        [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", *FILES],
        capture_output=True,
        text=True,
        timeout=600,
        env=clean_env(),
        cwd=REPO,
        check=False,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-4000:]
    summary = output.strip().splitlines()[-1]
    assert " passed" in summary and "skipped" not in summary, summary
    probe = "import openai, sys; print(openai.__version__, 'websockets' in sys.modules)"
    version = subprocess.run(
        [str(python), "-c", probe], capture_output=True, text=True, check=True, env=clean_env()
    ).stdout.split()[0]
    assert version.split(".")[0] == name[-1], version
