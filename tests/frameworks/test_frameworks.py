"""The real agent frameworks over cassette: langchain-openai, openai-agents, pydantic-ai,
instructor and litellm each record from the scripted server in random mode, replay three
times offline under a socket guard equal to the recording, and replay 8 concurrent episodes
each with its own answers (the scenarios are in ``side/``).

The frameworks pin openai versions other than the main environment's, so they run in a side
venv (this project with its ``frameworks`` extra, at the versions below), built on first use
from the package registry and reused while its recipe matches. One test per framework runs
that framework's scenario file there with pytest; a failure shows the scenario's own report.
Without a registry the tests fail, saying so.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.helpers.sidevenv import REPO, clean_env, side_venv

pytestmark = pytest.mark.slow

SIDE = Path(__file__).with_name("side")
FRAMEWORKS = {  # name: (scenario file, scenarios it must run)
    "langchain-openai": ("scenario_langchain.py", 13),
    "openai-agents": ("scenario_openai_agents.py", 9),
    "pydantic-ai": ("scenario_pydantic_ai.py", 8),
    "instructor": ("scenario_instructor.py", 9),
    "litellm": ("scenario_litellm.py", 18),
    "README snippets": ("scenario_readme.py", 5),  # "With your framework", run as written
}
PINS = (  # the versions these tests were written against (litellm 1.107.0 was compromised)
    "langchain-openai==1.7.4",
    "openai-agents==0.24.0",
    "pydantic-ai-slim[openai]==2.38.0",
    "instructor==1.17.0",
    "litellm==1.110.2",
)
RECIPE = (("-e", "{repo}[frameworks]", *PINS, "pytest>=8"),)


@pytest.fixture(scope="module")
def python() -> Path | str:
    """The side venv's interpreter, or why it could not be built (the tests then fail)."""
    return side_venv("frameworks", RECIPE)


def _report(output: str) -> str:
    """The scenario run's failures first (one line each), then the end of its output."""
    failed = [x for x in output.splitlines() if x.startswith(("FAILED ", "ERROR "))]
    return "\n".join([*failed, "", output[-6000:]])


# The two longest runs have a module of their own (test_frameworks_more.py), so that
# pytest-xdist, which keeps a module on one worker, runs them beside these.
MORE = ("litellm", "README snippets")


@pytest.mark.parametrize("framework", [name for name in FRAMEWORKS if name not in MORE])
def test_framework_records_and_replays_offline(
    python: Path | str, framework: str, tmp_path: Path
) -> None:
    run_scenario(python, framework, tmp_path)


def run_scenario(python: Path | str, framework: str, tmp_path: Path) -> None:
    """Run ``framework``'s scenario file with pytest in the side venv; assert all passed."""
    if isinstance(python, str):
        pytest.fail(python, pytrace=False)
    scenario, count = FRAMEWORKS[framework]
    env = clean_env()
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # litellm reads its cost map from the web
    argv = [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    argv += ["-o", "python_files=scenario_*.py", "--basetemp", str(tmp_path / "side")]
    # addopts of its own: the main run's may name plugins (xdist) that the side venv lacks
    argv += ["-o", "addopts=-ra", "--tb=short", str(SIDE / scenario)]
    proc = subprocess.run(
        argv, capture_output=True, text=True, timeout=600, env=env, cwd=REPO, check=False
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, _report(output)
    summary = output.strip().splitlines()[-1]
    ran = re.search(r"(\d+) passed", summary)
    assert ran and int(ran.group(1)) == count and "skipped" not in summary, summary
