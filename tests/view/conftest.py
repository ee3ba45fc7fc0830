"""Fixtures of the viewer's tests: real recordings (the openai SDK through ``wrap_openai``
against the scripted model server, tools from the MCP example server over stdio) and one
headless Chromium for a test module."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from fixtures.cdp import Browser
from fixtures.mcp_agent import record_agent
from tests.helpers.browser import chromium_executable


@pytest.fixture(scope="module")
def agent_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two runs of the agent: against the model in script mode, and in random mode."""
    where = tmp_path_factory.mktemp("runs")
    return record_agent(where / "a.jsonl", "script"), record_agent(where / "b.jsonl", "random")


@pytest.fixture(scope="module")
def new_browser() -> Callable[..., Browser]:
    """Start a headless Chromium (``new_browser(width=...)``); skips without Chromium, and
    fails where CI requires it."""
    executable = chromium_executable()
    return lambda **options: Browser(executable, **options)


@pytest.fixture(scope="module")
def browser(new_browser: Callable[..., Browser]) -> Iterator[Browser]:
    with new_browser() as b:
        yield b
