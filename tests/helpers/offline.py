"""Replaying offline: a fake key, a URL nothing listens at, and a socket guard."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator
from typing import Any

__all__ = ["KEY", "NOWHERE", "offline"]

NOWHERE = "http://127.0.0.1:9/v1"  # the discard port: nothing listens there
KEY = "sk-fake-0123456789abcdef"


@contextlib.contextmanager
def offline() -> Iterator[list[Any]]:
    """A socket guard: any connection attempt fails here, and fails the test after."""
    attempts: list[Any] = []
    saved = socket.socket.connect, socket.socket.connect_ex

    def refuse(self: socket.socket, address: Any, *args: Any) -> Any:
        attempts.append(address)
        raise OSError(f"socket guard: this test may not connect to {address!r}")

    socket.socket.connect = refuse  # type: ignore[method-assign]
    socket.socket.connect_ex = refuse  # type: ignore[method-assign]
    try:
        yield attempts
    finally:
        socket.socket.connect, socket.socket.connect_ex = saved  # type: ignore[method-assign]
    assert not attempts, f"the replay tried to connect to {attempts}"
