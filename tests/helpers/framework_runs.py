"""Running a framework's scenario file (tests/frameworks/side) with pytest in the frameworks'
side venv, built from the recipe below."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.helpers.sidevenv import REPO, clean_env

__all__ = ["FRAMEWORKS", "MORE", "RECIPE", "run_scenario"]

SIDE = REPO / "tests" / "frameworks" / "side"
FRAMEWORKS = {  # name: (scenario file, scenarios it must run)
    "langchain-openai": ("scenario_langchain.py", 13),
    "openai-agents": ("scenario_openai_agents.py", 9),
    "pydantic-ai": ("scenario_pydantic_ai.py", 8),
    "instructor": ("scenario_instructor.py", 9),
    "litellm": ("scenario_litellm.py", 18),
    "docs snippets": ("scenario_docs.py", 9),  # docs/adapters/frameworks.md, run as written
}
PINS = (  # the versions these tests were written against (litellm 1.107.0 was compromised)
    "langchain-openai==1.7.4",
    "openai-agents==0.24.0",
    "pydantic-ai-slim[openai]==2.38.0",
    "instructor==1.17.0",
    "litellm==1.110.2",
    "dspy==3.4.1",
    "smolagents==1.26.0",
    "inspect-ai==0.3.276",
    "llm==0.36",
)
RECIPE = (("-e", "{repo}[frameworks]", *PINS, "pytest>=8"),)
# The two longest runs have a module of their own (test_frameworks_more.py), so that
# pytest-xdist, which keeps a module on one worker, runs them beside the others.
MORE = ("litellm", "docs snippets")


def _report(output: str) -> str:
    """The scenario run's failures first (one line each), then the end of its output."""
    failed = [x for x in output.splitlines() if x.startswith(("FAILED ", "ERROR "))]
    return "\n".join([*failed, "", output[-6000:]])


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
        argv, capture_output=True, text=True, timeout=900, env=env, cwd=REPO, check=False
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, _report(output)
    summary = output.strip().splitlines()[-1]
    ran = re.search(r"(\d+) passed", summary)
    assert ran and int(ran.group(1)) == count and "skipped" not in summary, summary
