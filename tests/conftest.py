"""Fixtures the whole suite shares; plain helpers live in tests/helpers."""

from __future__ import annotations

import os
from collections.abc import Iterator
from importlib.util import find_spec
from typing import Any

import pytest

from cassette.testing.server import ScriptedServer
from tests.helpers.chat import MakeServer

# the tests choose their cassettes' modes and paths: a user's exported variables would
# steer every cassette they open (and the xdist workers inherit this environment)
for _name in ("CASSETTE_MODE", "CASSETTE_FORCE_MODE", "CASSETTE_PATH"):
    os.environ.pop(_name, None)

# no per-example time limit: on a shared 2-core machine a slow example is load, not a bug
# (the side venvs of tests/frameworks load this file without hypothesis)
if find_spec("hypothesis") is not None:
    from hypothesis import settings

    settings.register_profile("suite", deadline=None)
    settings.load_profile("suite")


@pytest.fixture
def make_server() -> Iterator[MakeServer]:
    """Start scripted model servers on 127.0.0.1 (``make_server("random", ...)``); every one
    started is stopped at teardown."""
    started: list[ScriptedServer] = []

    def make(mode: str = "script", **kwargs: Any) -> ScriptedServer:
        server = ScriptedServer(mode, **kwargs)  # type: ignore[arg-type]
        started.append(server)
        return server.start()

    try:
        yield make
    finally:
        for server in started:
            server.stop()


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytest's own, its inner runs not taken for xdist workers (pytest-benchmark, where
    installed, would warn in them, and the inner ``filterwarnings = error`` fails the run)."""
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
        monkeypatch.delenv(name, raising=False)
    return pytester
