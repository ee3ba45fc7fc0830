"""The HTTP side of :class:`cassette.testing.server.ScriptedServer`: the threaded server,
the request handler (routes, JSON and SSE answers, chunked streaming) and the endpoints
answered from the request alone (embeddings, completions, moderations, images, speech).
What a model endpoint answers, and which requests fail, is the ScriptedServer's
(``owner._handle``, ``owner._handle_other``)."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import sys
import time
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from ..types import Json

if TYPE_CHECKING:
    from .server import ScriptedServer

__all__ = ["OTHER_ROUTES", "Handler", "ModelHTTPServer", "dumps", "error_body", "other_answer"]

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


def dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


OTHER_ROUTES = ("/embeddings", "/completions", "/moderations", "/images/generations",
                 "/audio/speech")  # fmt: skip


def other_answer(
    route: str,
    body: Json,
    model: str,
    pieces: Callable[[str], list[str]] = lambda text: [text],
    salt: bytes = b"",
) -> tuple[str, bytes | list[bytes]]:
    """(content type, body) of the endpoints beyond chat and responses, derived from the
    request (and ``salt``: the random mode's): embeddings, legacy completions (with
    ``"stream": true`` their SSE chunks, the text cut by ``pieces``), moderations, images,
    speech (binary)."""
    text = json.dumps(body.get("input", body.get("prompt", "")))
    seed = hashlib.sha256(text.encode() + salt).digest()
    name = str(body.get("model") or model)
    usage = {"prompt_tokens": len(text) // 4 + 1, "total_tokens": len(text) // 4 + 1}
    if route == "/audio/speech":
        return "audio/mpeg", b"ID3" + seed
    if route == "/embeddings":
        vector = [round(b / 255, 4) for b in seed[:8]]
        item = {"object": "embedding", "index": 0, "embedding": vector}
        payload: Json = {"object": "list", "data": [item], "model": name, "usage": usage}
    elif route == "/completions":
        answer = " " + " ".join(seed[i : i + 2].hex() for i in range(0, 8, 2))
        head = {"id": "cmpl-" + seed[:12].hex(), "object": "text_completion", "created": 0,
                "model": name}  # fmt: skip
        usage = {**usage, "completion_tokens": 4, "total_tokens": usage["prompt_tokens"] + 4}
        if body.get("stream"):
            return "text/event-stream", _completion_events(body, head, pieces(answer), usage)
        choice = {"index": 0, "text": answer, "logprobs": None, "finish_reason": "stop"}
        payload = {**head, "choices": [choice], "usage": usage}
    elif route == "/moderations":
        result = {"flagged": False, "categories": {}, "category_scores": {}}
        payload = {"id": "modr-" + seed[:12].hex(), "model": name, "results": [result]}
    else:
        image = {"b64_json": base64.b64encode(seed).decode(), "revised_prompt": text}
        payload = {"created": 0, "data": [image]}
    return "application/json", dumps(payload)


def _completion_events(body: Json, head: Json, pieces: list[str], usage: Json) -> list[bytes]:
    """A streamed legacy completion: text chunks, the finish chunk, the usage chunk when
    ``stream_options.include_usage`` asks for it, then ``[DONE]``."""

    def chunk(piece: str, reason: str | None = None) -> Json:
        choice = {"index": 0, "text": piece, "logprobs": None, "finish_reason": reason}
        return {**head, "choices": [choice]}

    out = [chunk(p) for p in pieces] + [chunk("", "stop")]
    if (body.get("stream_options") or {}).get("include_usage"):
        out.append({**head, "choices": [], "usage": usage})
    return [b"data: %s\n\n" % dumps(c) for c in out] + [b"data: [DONE]\n\n"]


class ModelHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # many clients connect at once (the standard library's is 5)

    def __init__(self, address: tuple[str, int], owner: ScriptedServer) -> None:
        self.owner = owner
        super().__init__(address, Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], OSError):  # dropped connections are normal
            super().handle_error(request, client_address)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: ModelHTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        return

    def setup(self) -> None:
        super().setup()
        self.server.owner._track(self.connection, add=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.owner._track(self.connection, add=False)

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
        if route in OTHER_ROUTES and isinstance(body, dict):
            status, kind, data, headers = self.server.owner._handle_other(route, body)
            if isinstance(data, list):
                self._sse(data)
            else:
                self._body(status, kind, data, headers)
        elif route not in ("/chat/completions", "/responses", "/messages"):
            self._json(404, error_body(404, f"Unknown path {self.path}"))
        elif not isinstance(body, dict):
            self._json(400, error_body(400, "Request body must be a JSON object"))
        else:
            try:
                status, payload, headers = self.server.owner._handle(route, body)
            except Exception as exc:  # noqa: BLE001 - a fixture bug must still get an HTTP answer
                status, payload, headers = 500, error_body(500, repr(exc)), {}
            if isinstance(payload, list):
                self._sse(payload)
            else:
                self._json(status, payload, headers)

    def _json(self, status: int, payload: Json, headers: Mapping[str, str] | None = None) -> None:
        self._body(status, "application/json", dumps(payload), headers)

    def _body(
        self, status: int, kind: str, data: bytes, headers: Mapping[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        for name, value in {**self.server.owner.response_headers, **(headers or {})}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _sse(self, events: list[bytes]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        for name, value in self.server.owner.response_headers.items():
            self.send_header(name, value)
        self.end_headers()
        chunks = [b"%x\r\n%s\r\n" % (len(e), e) for e in events] + [b"0\r\n\r\n"]
        delay = self.server.owner.chunk_delay_ms / 1000
        if not delay:
            self.wfile.write(b"".join(chunks))
            return
        for chunk in chunks:
            self.wfile.write(chunk)
            time.sleep(delay)
