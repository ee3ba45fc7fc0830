"""Fixtures of the tests of cassette.testing (the pytest plugin's tests run pytester projects)."""

from __future__ import annotations

import pytest

from tests.helpers.plugin_project import Project


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Project:
    """A fresh pytester project (tests/helpers/plugin_project.py)."""
    return Project(pytester, monkeypatch)
