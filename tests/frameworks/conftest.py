"""side/ holds the framework scenarios: they import packages that only the side venv has, and
tests/frameworks/test_frameworks.py runs them there; the main run never collects them."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.framework_runs import RECIPE
from tests.helpers.sidevenv import side_venv

collect_ignore = ["side"]


@pytest.fixture(scope="module")
def python() -> Path | str:
    """The side venv's interpreter (one cached venv), or why it could not be built (the
    tests then fail)."""
    return side_venv("frameworks", RECIPE)
