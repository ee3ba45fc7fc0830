"""The real agent frameworks over cassette: langchain-openai, openai-agents, pydantic-ai,
instructor and litellm each record from the scripted server in random mode, replay three
times offline under a socket guard equal to the recording, and replay 8 concurrent episodes
each with its own answers (the scenarios are in ``side/``).

The frameworks pin openai versions other than the main environment's, so they run in a side
venv (this project with its ``frameworks`` extra, at the versions pinned in
tests/helpers/framework_runs.py), built on first use from the package registry and reused
while its recipe matches. One test per framework runs that framework's scenario file there
with pytest; a failure shows the scenario's own report.
Without a registry the tests fail, saying so.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.framework_runs import FRAMEWORKS, MORE, run_scenario

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("framework", [name for name in FRAMEWORKS if name not in MORE])
def test_framework_records_and_replays_offline(
    python: Path | str, framework: str, tmp_path: Path
) -> None:
    run_scenario(python, framework, tmp_path)
