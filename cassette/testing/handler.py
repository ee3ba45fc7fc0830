"""The HTTP side of :class:`~cassette.testing.server.ScriptedServer`: routes, JSON and SSE."""

from __future__ import annotations

import contextlib
import json
import re
import socket
import sys
import threading
import time
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

from ..types import Json
from .conversation import dumps

__all__ = ["MODEL_ROUTES", "OTHER_ROUTES", "Answer", "Handler", "ModelHTTPServer", "Owner",
           "error_body"]  # fmt: skip

MODEL_ROUTES = ("/chat/completions", "/responses", "/messages")
OTHER_ROUTES = ("/embeddings", "/completions", "/moderations", "/images/generations",
                "/audio/speech")  # fmt: skip
# (status, content type, the body or the SSE events of a stream, extra headers)
Answer = tuple[int, str, bytes | list[bytes], dict[str, str]]
_AZURE_DEPLOYMENT = re.compile(r"^(/openai)?/deployments/[^/]+(?=/)")
_ERROR_KINDS: dict[int, tuple[str, str | None]] = {
    400: ("invalid_request_error", None), 401: ("invalid_request_error", "invalid_api_key"),
    404: ("invalid_request_error", "not_found"), 429: ("requests", "rate_limit_exceeded"),
    500: ("server_error", None), 503: ("server_error", "service_unavailable"),
}  # fmt: skip


def error_body(status: int, message: str | None = None) -> Json:
    """An OpenAI-style error body for ``status``."""
    kind, code = _ERROR_KINDS.get(
        status, ("server_error" if status >= 500 else "invalid_request_error", None)
    )
    text = message or f"Scripted error {status}"
    return {"error": {"message": text, "type": kind, "param": None, "code": code}}


class Owner(Protocol):
    """What the handler asks of the server it serves for."""

    model: str
    response_headers: dict[str, str]
    chunk_delay_ms: float

    def answer(self, route: str, body: Json) -> Answer: ...


class ModelHTTPServer(ThreadingHTTPServer):
    """A thread a connection; :meth:`close` also wakes the handlers idling on keep-alive."""

    daemon_threads = True
    request_queue_size = 256  # many clients connect at once (the standard library's is 5)

    def __init__(self, address: tuple[str, int], owner: Owner) -> None:
        self.owner = owner
        self._open: set[socket.socket] = set()
        self._lock, self._closing = threading.Lock(), False
        super().__init__(address, Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._lock:
            if self._closing:
                with contextlib.suppress(OSError):
                    request.shutdown(socket.SHUT_RDWR)
            else:
                self._open.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def close(self) -> None:
        """Stop serving, end every open connection and join the handler threads."""
        self.shutdown()
        with self._lock:
            self._closing = True
            for conn in self._open:
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)
        self.server_close()

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], OSError):  # dropped connections are normal
            super().handle_error(request, client_address)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: ModelHTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _route(self) -> str:
        path = self.path.split("?", 1)[0].rstrip("/")
        path = path[3:] if path.startswith("/v1/") else path
        return _AZURE_DEPLOYMENT.sub("", path)  # Azure: /openai/deployments/NAME/chat/...

    def do_GET(self) -> None:
        route, owner = self._route(), self.server.owner
        if route == "/models" or route.startswith("/models/"):
            model = route[len("/models/") :] or owner.model
            card = {"id": model, "object": "model", "created": 0, "owned_by": "scripted"}
            self._json(200, {"object": "list", "data": [card]} if route == "/models" else card)
        else:
            self._json(404, error_body(404, f"Unknown path {self.path}"))

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        route = self._route()
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        if isinstance(body, dict) and route in (*MODEL_ROUTES, *OTHER_ROUTES):
            try:
                answer = self.server.owner.answer(route, body)
            except Exception as exc:  # noqa: BLE001 - a fixture bug must still get an HTTP answer
                answer = 500, "application/json", dumps(error_body(500, repr(exc))), {}
            self._send(*answer)
        elif route not in MODEL_ROUTES:
            self._json(404, error_body(404, f"Unknown path {self.path}"))
        else:
            self._json(400, error_body(400, "Request body must be a JSON object"))

    def _json(self, status: int, payload: Json) -> None:
        self._send(status, "application/json", dumps(payload), {})

    def _send(
        self, status: int, kind: str, data: bytes | list[bytes], headers: Mapping[str, str]
    ) -> None:
        delay = 0.0
        if isinstance(data, list):  # SSE events, sent chunked
            kind = "text/event-stream; charset=utf-8"
            headers = {"Cache-Control": "no-cache", "Transfer-Encoding": "chunked"}
            chunks = [b"%x\r\n%s\r\n" % (len(e), e) for e in data] + [b"0\r\n\r\n"]
            delay = self.server.owner.chunk_delay_ms / 1000
        else:
            headers, chunks = {"Content-Length": str(len(data)), **headers}, [data]
        self.send_response(status)
        head = {"Content-Type": kind, **headers, **self.server.owner.response_headers, **headers}
        for name, value in head.items():
            self.send_header(name, value)
        self.end_headers()
        if not delay:
            self.wfile.write(b"".join(chunks))
            return
        for chunk in chunks:
            self.wfile.write(chunk)
            time.sleep(delay)
