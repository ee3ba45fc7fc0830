"""Fixtures of the openai adapter's tests: a server on 127.0.0.1 that answers each request
with the next server-sent-event body it was given, byte for byte (and a request id)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


class _Handler(BaseHTTPRequestHandler):
    server: EventServer

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        body = self.server.bodies.pop(0)
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("x-request-id", "req_events")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


class EventServer(ThreadingHTTPServer):
    bodies: list[bytes]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def serve(self, events: list[str], times: int = 1) -> None:
        """Answer the next ``times`` requests with ``events``, each followed by a blank line."""
        self.bodies += ["".join(e + "\n\n" for e in events).encode()] * times


@pytest.fixture
def event_server() -> Iterator[EventServer]:
    server = EventServer(("127.0.0.1", 0), _Handler)
    server.bodies = []
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
