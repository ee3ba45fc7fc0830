"""The litellm scenarios and the docs frameworks page's snippets in the frameworks'
side venv: the longest two runs of test_frameworks.py, in a module of their own so that
pytest-xdist runs them on the other worker."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.framework_runs import MORE, run_scenario

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("framework", MORE)
def test_framework_records_and_replays_offline(
    python: Path | str, framework: str, tmp_path: Path
) -> None:
    run_scenario(python, framework, tmp_path)
