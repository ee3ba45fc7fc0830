"""The floor of ``bench_serve.py``: a bare starlette endpoint that reads the body and
returns the same bytes, on uvicorn with the settings ``cassette serve`` gives it (no access
log, no proxy-header middleware, no ``Server`` header): what differs is the app.

    python -m bench._floor '<answer JSON>'    # prints READY <base-url>, serves until killed
"""

from __future__ import annotations

import socket
import sys

import orjson
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route


def floor_app(answer: bytes) -> Starlette:
    """The endpoint: ``POST /v1/chat/completions`` answers ``answer`` after reading the body."""

    async def endpoint(request: Request) -> Response:
        await request.body()
        return Response(answer, media_type="application/json")

    return Starlette(routes=[Route("/v1/chat/completions", endpoint, methods=["POST"])])


def main() -> None:
    app = floor_app(orjson.dumps(orjson.loads(sys.argv[1])))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1024)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    print(f"READY http://127.0.0.1:{sock.getsockname()[1]}/v1", flush=True)
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, proxy_headers=False, server_header=False
    )
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
