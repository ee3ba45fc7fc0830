"""Fixtures the adapter tests share (litellm is imported only by the tests that use it:
the mcp 1.x side venv runs tests of this folder without it)."""

from __future__ import annotations

import asyncio
import gc
import socket
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "run.jsonl"


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Fails the test on any connection attempt (sync, async, any host)."""
    attempts: list[Any] = []

    def refuse(self: socket.socket, address: Any, *args: Any) -> Any:
        attempts.append(address)
        raise AssertionError(f"replay tried to connect to {address}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    yield attempts
    assert attempts == []


@pytest.fixture
def litellm_leftovers() -> Iterator[None]:
    """What litellm leaves behind, closed after each test rather than reported by whichever
    test the garbage collector runs in: the event loop its sync stream makes for the thread
    (``asyncio.get_event_loop()`` outside a loop) and its cached clients' connections. The
    litellm test modules use it for every test (``pytest.mark.usefixtures``)."""
    import litellm

    yield
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            loop = asyncio.get_event_loop()
        except RuntimeError:
            loop = None
    if loop is not None and not loop.is_running():
        loop.close()
        asyncio.set_event_loop(None)
    with warnings.catch_warnings():  # what litellm left unclosed: sockets, transports
        warnings.simplefilter("ignore", ResourceWarning)
        litellm.in_memory_llm_clients_cache.flush_cache()  # type: ignore[no-untyped-call]
        gc.collect()
