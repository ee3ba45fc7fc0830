"""The network of a program under ``cassette run``: ``$CASSETTE_OFFLINE=1`` refuses every TCP
connection; ``$CASSETTE_NET_LOG`` names a file the connections are counted in at exit."""

from __future__ import annotations

import socket
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

__all__ = ["NET_LOG_VARIABLE", "OFFLINE_VARIABLE", "count_connections", "refuse_connections"]

OFFLINE_VARIABLE = "CASSETTE_OFFLINE"  # "1": the program may open no TCP connection
NET_LOG_VARIABLE = "CASSETTE_NET_LOG"  # a file: the TCP connections, counted, at exit
Undo = Callable[[], None]
_TCP = (socket.AF_INET, socket.AF_INET6)


def _wrap(hook: Callable[[socket.socket, Any], None]) -> Undo:
    """``socket.connect`` and ``connect_ex`` calling ``hook(sock, address)`` first; the undo."""
    original = socket.socket.connect, socket.socket.connect_ex

    def hooked(method: Callable[..., Any]) -> Callable[..., Any]:
        def call(self: socket.socket, address: Any, *args: Any) -> Any:
            hook(self, address)
            return method(self, address, *args)

        return call

    socket.socket.connect, socket.socket.connect_ex = map(hooked, original)  # type: ignore[method-assign]

    def undo() -> None:
        socket.socket.connect, socket.socket.connect_ex = original  # type: ignore[method-assign]

    return undo


def refuse_connections() -> Undo:
    """Refuse every TCP connection (with the fix in the error); the undo."""

    def refuse(sock: socket.socket, address: Any) -> None:
        if sock.family in _TCP:
            raise ConnectionRefusedError(
                f"cassette run --mode replay: the network is cut off (connect to {address!r}); "
                "record the call first, or run with --allow-network"
            )

    return _wrap(refuse)


def count_connections(log: Path) -> Undo:
    """Count TCP connections by ``host:port``; the undo writes the counts to ``log``."""
    seen: Counter[str] = Counter()
    lock = threading.Lock()

    def note(sock: socket.socket, address: Any) -> None:
        if sock.family in _TCP and isinstance(address, tuple) and len(address) >= 2:
            with lock:
                seen[f"{address[0]}:{address[1]}"] += 1

    undo = _wrap(note)

    def write() -> None:
        undo()
        log.write_bytes(orjson.dumps(dict(seen)))

    return write
