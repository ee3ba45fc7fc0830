"""The ASGI app of ``cassette serve``: one starlette app whose every request goes through
one :class:`~cassette.Cassette`, as the Python wrappers' calls do.

Each request becomes a request dict (:mod:`.requests`), keyed by the episode its
``X-Cassette-Episode`` header names (and the step ``X-Cassette-Step`` pins), else by the
conversation-prefix rule of ``cassette run``; the cassette serves it or calls the upstream
(:mod:`.upstream`). A replay miss or mismatch is an HTTP error in the provider's shape,
``{"error": {"type": "cassette_miss", "message": ...}}``, with a status the SDKs do not
retry and ``x-should-retry: false``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hmac
from collections.abc import AsyncIterator, Callable
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from ..adapters._common.assemble import assemble_chat, assemble_message, assemble_response
from ..adapters._common.http import EVENTS_TYPE, HTTP, JSON_TYPE, encode_event
from ..errors import CassetteError, CassetteMismatch, CassetteMiss
from ..replay.cassette import Cassette
from ..replay.episodes import Conversations
from ..types import Json
from .requests import ANTHROPIC, BadRequest, Call, parse_call
from .upstream import Upstream, UpstreamError, UpstreamErrors

__all__ = ["MAX_BODY", "create_app"]

MAX_BODY = 32 * 1024 * 1024  # a request body past this is refused (413)
_DONE = frozenset({"chat.completions", "completions"})  # streams that end with [DONE]
_NO_RETRY = {"x-should-retry": "false"}
_ASSEMBLE = {
    "chat.completions": assemble_chat,
    "responses": assemble_response,
    "messages": assemble_message,
}


def assembler(endpoint: str) -> Callable[[list[Json]], Json] | None:
    """What assembles a stream of ``endpoint`` into its message, as the wrappers do."""
    return _ASSEMBLE.get(endpoint)


def error_response(call_provider: str, status: int, kind: str, message: str) -> Response:
    """An error in the provider's shape (anthropic's carries ``"type": "error"``)."""
    body: Json = {"error": {"type": kind, "message": message}}
    if call_provider == ANTHROPIC:
        body = {"type": "error", **body}
    return Response(orjson.dumps(body), status, headers=_NO_RETRY, media_type=JSON_TYPE)


def _provider_of(path: str) -> str:
    return ANTHROPIC if "/messages" in path else "openai"


def _keys(request: Request) -> tuple[str | None, int | None]:
    """(episode, step) the headers name."""
    episode = request.headers.get("x-cassette-episode") or None
    step = request.headers.get("x-cassette-step")
    if step is None:
        return episode, None
    if not step.isdigit():
        raise BadRequest(f"X-Cassette-Step is {step!r}; send a step number (0, 1, ...)")
    return episode, int(step)


def _json_response(data: Json) -> Response:
    meta = data.get(HTTP)
    if meta is None:
        return Response(orjson.dumps(data), media_type=JSON_TYPE)
    headers = dict(meta.get("headers") or {})
    status = int(meta.get("status", 200))
    if "base64" in meta:
        return Response(base64.b64decode(meta["base64"]), status, headers=headers)
    body = orjson.dumps({k: v for k, v in data.items() if k != HTTP})
    headers.setdefault("content-type", JSON_TYPE)
    return Response(body, status, headers=headers)


def _upstream_response(exc: UpstreamError, provider: str) -> Response:
    if exc.kind != "status":
        what = "timed out" if exc.kind == "timeout" else "could not be reached"
        return error_response(provider, exc.status, "upstream_error", f"the upstream {what}")
    headers = {k: v for k, v in exc.headers.items() if k.lower() != "content-length"}
    return Response(exc.body, exc.status, headers=headers)


class App:
    """The server's state: the cassette, the upstream, the episode rule, the token."""

    def __init__(self, cas: Cassette, upstream: Upstream, token: str | None = None) -> None:
        self.cas, self.upstream, self.token = cas, upstream, token
        self.streams: set[asyncio.Task[None]] = set()  # read on after their client left

    def _authorised(self, request: Request) -> bool:
        if self.token is None:
            return True
        given = request.headers.get("x-cassette-token") or ""
        bearer = request.headers.get("authorization", "")
        candidates = [
            given,
            bearer.removeprefix("Bearer ").strip(),
            request.headers.get("x-api-key", ""),
        ]
        return any(hmac.compare_digest(c, self.token) for c in candidates if c)

    async def rewind(self, request: Request) -> Response:
        """``POST /cassette/rewind``: replay every episode from its first step again (the
        next client run gets the same answers as the first, episodes named by header too)."""
        if not self._authorised(request):
            return error_response("openai", 401, "cassette_token", "send X-Cassette-Token")
        try:
            self.cas.rewind()
        except CassetteError as exc:
            return error_response("openai", 409, "cassette_error", str(exc))
        policy = self.cas.episodes
        if isinstance(policy, Conversations):
            self.cas.episodes = policy.fresh()
        return Response(b'{"rewound": true}', media_type=JSON_TYPE)

    async def handle(self, request: Request) -> Response:
        path = request.scope["path"]  # (the scope's own strings: no URL object is built)
        query = request.scope["query_string"].decode("latin-1")
        provider = _provider_of(path)
        if not self._authorised(request):
            return error_response(
                provider, 401, "cassette_token", "a token is required; send X-Cassette-Token"
            )
        try:
            content = await _read(request)
            call = parse_call(request.method, path, query, content, request.headers)
            episode, step = _keys(request)
        except BadRequest as exc:
            return error_response(provider, exc.status, "invalid_request_error", str(exc))
        except ClientDisconnect:
            return Response(status_code=499)
        args = (call, content, request.headers, query)
        keys: Json = {"step": step, "errors": UpstreamErrors(call.provider)}
        if episode is not None:  # else the cassette's episode-naming policy names it
            keys["env_index"] = int(episode) if episode.isdigit() else episode
        try:
            if call.stream:
                return await self._stream(call, args, keys)
            live = lambda: self.upstream.json(*args)  # noqa: E731
            data = await self.cas.acall(call.request, live=live, **keys)
        except UpstreamError as exc:
            return _upstream_response(exc, call.provider)
        except (CassetteMiss, CassetteMismatch) as exc:
            return error_response(
                call.provider,
                404 if isinstance(exc, CassetteMiss) else 400,
                "cassette_miss",
                str(exc),
            )
        except CassetteError as exc:
            return error_response(call.provider, 400, "cassette_error", str(exc))
        return _json_response(data)

    async def _stream(self, call: Call, args: tuple[Any, ...], keys: Json) -> Response:
        live = lambda: self.upstream.events(*args)  # noqa: E731
        chunks = self.cas.astream(
            call.request, live=live, assemble=assembler(call.endpoint), **keys
        )
        first = await anext(chunks, None)  # an error before the first event is an HTTP error
        meta: Json = {}
        if first is not None and HTTP in first:
            meta, first = first[HTTP], None
        headers = dict(meta.get("headers") or {})
        headers.pop("content-type", None)
        tee = _Tee(first, chunks, call.endpoint in _DONE)
        self.streams.add(tee.task)
        tee.task.add_done_callback(self.streams.discard)
        return StreamingResponse(
            tee.events(), int(meta.get("status", 200)), headers=headers, media_type=EVENTS_TYPE
        )


class _Tee:
    """A stream read to its end whatever the client does: a producer task takes every
    chunk from the cassette (so a recording is whole even when the client goes away) and
    hands the encoded events to the response; an error mid-stream breaks the response,
    as the upstream's broke."""

    _END = object()

    def __init__(self, first: Json | None, chunks: AsyncIterator[Json], done: bool) -> None:
        self.queue: asyncio.Queue[Any] = asyncio.Queue()
        self.task = asyncio.create_task(self._produce(first, chunks, done))

    async def _produce(self, first: Json | None, chunks: AsyncIterator[Json], done: bool) -> None:
        put = self.queue.put_nowait
        try:
            if first is not None:
                put(encode_event(first))
            async for chunk in chunks:
                put(encode_event(chunk))
            if done:
                put(b"data: [DONE]\n\n")
            put(self._END)
        except Exception as exc:  # noqa: BLE001 - recorded by the cassette; the client sees a cut
            put(exc)

    async def events(self) -> AsyncIterator[bytes]:
        while True:
            item = await self.queue.get()
            if item is self._END:
                return
            if isinstance(item, Exception):
                raise _StreamBroken from item
            yield item


class _StreamBroken(Exception):
    """The upstream's stream broke: the response is cut as it was."""


_TOO_LARGE = f"the request body is larger than {MAX_BODY} bytes; send a smaller one"


async def _read(request: Request) -> bytes:
    """The request's body; BadRequest (413) past :data:`MAX_BODY`, told by its length when
    the client gives one, else counted as it arrives."""
    size = request.headers.get("content-length")
    if size is not None and size.isdigit():
        if int(size) > MAX_BODY:
            raise BadRequest(_TOO_LARGE, 413)
        return await request.body()
    body = bytearray()
    async for part in request.stream():
        body += part
        if len(body) > MAX_BODY:
            raise BadRequest(_TOO_LARGE, 413)
    return bytes(body)


def create_app(
    cas: Cassette,
    *,
    upstream: str | None = None,
    anthropic_upstream: str | None = None,
    token: str | None = None,
) -> Starlette:
    """The server's ASGI app over an open cassette (closing the cassette is the caller's);
    calls without an ``X-Cassette-Episode`` header take the episode the cassette's
    episode-naming policy gives them (``cassette serve`` opens it with
    :class:`cassette.replay.episodes.Conversations`)."""
    ups = Upstream(upstream, anthropic_upstream)
    state = App(cas, ups, token)
    routes = [
        Route("/cassette/rewind", state.rewind, methods=["POST"]),
        Route("/{path:path}", state.handle, methods=["GET", "POST", "PUT", "DELETE", "PATCH"]),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        if state.streams:  # streams whose client left are recorded whole before closing
            await asyncio.wait(state.streams, timeout=60)
        await ups.aclose()

    return Starlette(routes=routes, lifespan=lifespan)
