"""What every framework scenario shares: record from the scripted server in random mode,
stop it, replay three times with a socket guard, and 8 concurrent episodes.

A scenario is ``fn(clients, prompt) -> JSON-able summary`` (sync or async). ``clients``
holds the wrapped ``OpenAI``/``AsyncOpenAI`` and the open cassette. The summary is what the
framework handed back (texts, tool calls, parsed objects, usage, ids); replay must give it
back equal, with no connection attempted.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import socket
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openai import AsyncOpenAI, OpenAI

import cassette
from cassette.adapters.openai import wrap_openai
from cassette.testing.server import ScriptedServer

__all__ = [
    "REPLAYS",
    "Clients",
    "SocketGuard",
    "concurrent_episodes",
    "interactions",
    "record_and_replay",
    "run_with_cassette",
    "socket_guard",
]

REPLAYS = 3
EPISODES = 8
KEY = "sk-fake-frameworks-0123456789"  # a placeholder, never a real key
Scenario = Callable[["Clients", str], Any]
Around = Callable[["Clients"], contextlib.AbstractContextManager[Any]]


@dataclass
class Clients:
    """The wrapped clients of one run, and what a scenario needs to build its own."""

    cas: cassette.Cassette
    base_url: str
    sync: OpenAI
    aio: AsyncOpenAI
    api_key: str = KEY
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class SocketGuard:
    """Every connection attempt (and name lookup of a host other than 127.0.0.1) made while
    active; each one is refused as well, so nothing leaves the process."""

    attempts: list[str] = field(default_factory=list)

    def refuse(self, what: str) -> OSError:
        self.attempts.append(what)
        return ConnectionRefusedError(f"socket guard: replay tried to connect ({what})")


@contextlib.contextmanager
def socket_guard() -> Iterator[SocketGuard]:
    guard = SocketGuard()
    real = socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo
    local = {"127.0.0.1", "localhost", "::1", None}

    def connect(self: socket.socket, address: Any) -> None:
        raise guard.refuse(f"connect {address!r}")

    def connect_ex(self: socket.socket, address: Any) -> int:
        raise guard.refuse(f"connect_ex {address!r}")

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host not in local:
            raise guard.refuse(f"getaddrinfo {host!r}")
        return real[2](host, *args, **kwargs)

    socket.socket.connect, socket.socket.connect_ex = connect, connect_ex  # type: ignore[method-assign]
    socket.getaddrinfo = getaddrinfo
    try:
        yield guard
    finally:
        socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo = real  # type: ignore[method-assign]


def difference(was: Any, now: Any, at: str = "") -> str:
    """Where two summaries first differ, e.g. ``[1].usage.total: 5 != 7``."""
    if isinstance(was, dict) and isinstance(now, dict):
        for key in sorted(set(was) | set(now)):
            if key not in was or key not in now:
                return f"{at}.{key}: only in the {'recording' if key in was else 'replay'}"
            if was[key] != now[key]:
                return difference(was[key], now[key], f"{at}.{key}")
    if isinstance(was, list) and isinstance(now, list) and len(was) == len(now):
        for i, (a, b) in enumerate(zip(was, now, strict=True)):
            if a != b:
                return difference(a, b, f"{at}[{i}]")
    return f"{at or 'the summary'}: recorded {was!r:.300}, replayed {now!r:.300}"


def interactions(path: Path) -> list[dict[str, Any]]:
    """The interaction lines of a cassette file."""
    lines = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    return [x for x in lines if x.get("type") == "interaction"]


def run_with_cassette(
    path: Path, mode: str, base_url: str, body: Callable[[Clients], Any], around: Around | None
) -> Any:
    """``body(clients)`` (awaited if a coroutine) with the cassette at ``path`` open in
    ``mode`` and clients aimed at ``base_url``; its result as plain JSON data."""
    sync = OpenAI(base_url=base_url, api_key=KEY, max_retries=0)
    aio = AsyncOpenAI(base_url=base_url, api_key=KEY, max_retries=0)
    try:
        with cassette.open(path, mode=mode) as cas:
            clients = Clients(cas, base_url, wrap_openai(sync, cas), wrap_openai(aio, cas))
            with around(clients) if around else contextlib.nullcontext():
                result = body(clients)
                if inspect.isawaitable(result):
                    result = asyncio.run(_closing(result, aio))
            return json.loads(json.dumps(result, default=str))  # plain data, compared as such
    finally:
        sync.close()


async def _closing(result: Awaitable[Any], aio: AsyncOpenAI) -> Any:
    try:
        return await result
    finally:
        await aio.close()


def record_and_replay(
    tmp_path: Path, scenario: Scenario, prompt: str, around: Around | None = None
) -> Any:
    """Record ``scenario`` against the scripted server in random mode, stop the server, then
    replay it :data:`REPLAYS` times under :func:`socket_guard`; each replay must return the
    recorded summary. Returns it. ``around(clients)`` is a context manager entered around
    each whole run (a patch such as ``patch_litellm``)."""
    path = tmp_path / "run.jsonl"

    def once(clients: Clients) -> Any:
        return scenario(clients, prompt)

    with ScriptedServer("random") as server:
        base_url = server.base_url  # replay points at it, stopped: nothing listens there
        recorded = run_with_cassette(path, "record", base_url, once, around)
        sent = server.request_count
    assert sent >= 1, "the scenario sent no request to the model"
    assert len(interactions(path)) == sent, (
        f"{sent} requests reached the model but the cassette holds "
        f"{len(interactions(path))}: some calls bypassed the cassette"
    )
    for attempt in range(REPLAYS):
        with socket_guard() as guard:
            again = run_with_cassette(path, "replay", base_url, once, around)
        assert guard.attempts == [], f"replay {attempt + 1} reached for the network"
        assert again == recorded, f"replay {attempt + 1}: {difference(recorded, again)}"
    return recorded


def concurrent_episodes(
    tmp_path: Path, scenario: Scenario, prompt: str, around: Around | None = None
) -> list[Any]:
    """Record :data:`EPISODES` episodes of an async ``scenario`` at once (``asyncio.gather``,
    each inside ``cassette.episode(i)``, each with its own prompt), then replay them at once
    offline: every episode gets its own answers back."""
    path = tmp_path / "episodes.jsonl"

    async def gather(clients: Clients) -> list[Any]:
        async def one(i: int) -> Any:
            with cassette.episode(i):
                return await scenario(clients, f"{prompt} (episode {i})")

        return list(await asyncio.gather(*(one(i) for i in range(EPISODES))))

    with ScriptedServer("random") as server:
        base_url = server.base_url
        recorded = run_with_cassette(path, "record", base_url, gather, around)
        sent = server.request_count
    lines = interactions(path)
    assert len(lines) == sent, f"{sent} requests, {len(lines)} recorded"
    assert {x["env_index"] for x in lines} == set(range(EPISODES))
    assert len({json.dumps(r, sort_keys=True) for r in recorded}) == EPISODES, recorded
    with socket_guard() as guard:
        again = run_with_cassette(path, "replay", base_url, gather, around)
    assert guard.attempts == [], "the concurrent replay reached for the network"
    for i, (was, now) in enumerate(zip(recorded, again, strict=True)):
        assert now == was, f"episode {i} got other answers on replay: {difference(was, now)}"
    return list(recorded)
