"""``cassette serve``: the OpenAI- and Anthropic-compatible record/replay server."""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import socket
from collections.abc import Iterator
from typing import Any

import click

from .console import PORT, Console

__all__ = ["LOCAL_HOSTS", "serve"]

LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
MODES = ("record", "replay", "auto", "append", "passthrough")


def _bind(console: Console, host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # accepted sockets inherit it
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        console.fail(f"cannot listen on {host}:{port} ({exc.strerror}); pick another --port")
    sock.listen(1024)
    return sock


def _open(sock: socket.socket, path: str, mode: str | None, match: str) -> Any:
    """The cassette to serve; one that cannot be opened closes ``sock`` and fails."""
    from ..errors import CassetteError
    from ..replay.cassette import open as open_cassette
    from ..replay.episodes import Conversations
    from ..replay.modes import SERVE_BY_KEY, SERVE_FIX

    try:
        cas = open_cassette(path, mode=mode, match=match, episodes=Conversations())
    except CassetteError:  # (the group's one error line)
        sock.close()
        raise
    if not cas.forced:  # (a forced mode names its variable)
        cas.fix = SERVE_FIX
    cas.by_key = SERVE_BY_KEY
    if cas.mode.value == "replay":  # a client run again gets the same answers again
        cas.episodes = Conversations(recorded=cas.index.episodes(), rewind=cas.rewind)
    return cas


def _server(app: Any) -> Any:
    """A uvicorn server that returns on SIGINT/SIGTERM (uvicorn's own re-raises the signal)."""
    import uvicorn

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            kept = {s: signal.signal(s, self.handle_exit) for s in (signal.SIGINT, signal.SIGTERM)}
            try:
                yield
            finally:
                for number, handler in kept.items():
                    signal.signal(number, handler)

    config = uvicorn.Config(
        app,
        log_level="warning",
        lifespan="on",
        timeout_graceful_shutdown=5,
        access_log=False,  # (its line is formatted per request even when not shown)
        proxy_headers=False,  # the server never reads the client's address
        server_header=False,  # (each response header costs the server a few microseconds)
    )  # (http="auto": httptools, a dependency, parses HTTP; uvloop runs the loop if installed)
    server = Server(config)
    for number in (signal.SIGINT, signal.SIGTERM):  # a stop sent right after READY counts too
        signal.signal(number, server.handle_exit)
    return server


@click.command()
@click.option("--cassette", "path", required=True, metavar="PATH", help="The cassette.")
@click.option(
    "--mode",
    type=click.Choice(MODES, case_sensitive=False),
    default=None,
    help="What to do with a call (default: $CASSETTE_MODE, else auto).",
)
@click.option(
    "--match",
    type=click.Choice(["strict", "key"]),
    default="strict",
    show_default=True,
    help="strict: a request must be the recorded one; key: serve the recording of the "
    "episode and step whatever the request.",
)
@click.option(
    "--upstream",
    metavar="URL",
    default=None,
    help="The OpenAI-compatible API calls are recorded from (default: $OPENAI_BASE_URL, "
    "else the public OpenAI API).",
)
@click.option(
    "--anthropic-upstream",
    metavar="URL",
    default=None,
    help="The Anthropic API (default: $ANTHROPIC_BASE_URL, else the public one).",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="The address to listen on.")
@click.option("--port", type=PORT, default=0, show_default=True, help="0 picks a free port.")
@click.option(
    "--token",
    default=None,
    metavar="T",
    help="A token clients must send (X-Cassette-Token, or as their API key); "
    "required with any --host but 127.0.0.1.",
)
def serve(
    path: str,
    mode: str | None,
    match: str,
    upstream: str | None,
    anthropic_upstream: str | None,
    host: str,
    port: int,
    token: str | None,
) -> None:
    """Serve the OpenAI and Anthropic HTTP APIs, recording or replaying through a cassette.

    Prints `READY <base-url>` (the OpenAI base URL, ending in /v1; the Anthropic base URL is
    the same without /v1) once listening, then serves until Ctrl-C or SIGTERM, and closes
    the cassette cleanly. Point a client at it with OPENAI_BASE_URL / ANTHROPIC_BASE_URL.
    Name an episode with the X-Cassette-Episode header (X-Cassette-Step pins a step);
    without it, a call takes the episode of the conversation it continues.

    \b
    Examples:
      cassette serve --cassette runs/node.jsonl --mode record
      cassette serve --cassette runs/node.jsonl --mode replay --port 8765
    """
    import gc

    from ..replay.modes import chosen_mode
    from ..serve import create_app
    from .run import cassette_path

    console = Console()
    if host not in LOCAL_HOSTS and not token:
        console.fail(f"--host {host} lets other machines in; pass --token T, or drop --host")
    upstream = upstream or os.environ.get("OPENAI_BASE_URL") or os.environ.get("OPENAI_API_BASE")
    anthropic_upstream = anthropic_upstream or os.environ.get("ANTHROPIC_BASE_URL")
    redo = f"cassette serve --cassette {shlex.quote(path)} --mode record"
    cassette_path(path, chosen_mode(mode)[0].value, redo, console)  # one line, before the bind
    sock = _bind(console, host, port)
    cas = _open(sock, path, mode, match)
    gc.freeze()  # a full collection over a large cassette's index stalls every client
    app = create_app(cas, upstream=upstream, anthropic_upstream=anthropic_upstream, token=token)
    server = _server(app)
    shown = f"[{host}]" if ":" in host else host
    print(f"READY http://{shown}:{sock.getsockname()[1]}/v1", flush=True)
    with cas:  # (an exception: the cassette aborted)
        server.run(sockets=[sock])
