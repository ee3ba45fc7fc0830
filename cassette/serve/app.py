"""The ASGI app of ``cassette serve``: every request goes through one
:class:`~cassette.Cassette`, as the Python wrappers' calls do.

Each request becomes a request dict (:mod:`.requests`), keyed by the episode its
``X-Cassette-Episode`` header names (and the step ``X-Cassette-Step`` pins), else by the
conversation-prefix rule of ``cassette run``; the cassette serves it or calls the upstream
(:mod:`.upstream`). A replay miss or mismatch is an HTTP error in the provider's shape,
``{"error": {"type": "cassette_miss", "message": ...}}``, with a status the SDKs do not
retry and ``x-should-retry: false``.

The app is a plain ASGI callable that uvicorn calls directly: a replayed answer costs the
cassette's work and two ASGI messages, no framework objects (no router, request or
response object; the headers are read in one pass). Starlette sends the streams.
"""

from __future__ import annotations

import asyncio
import base64
import hmac
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import orjson
from starlette.datastructures import Headers
from starlette.responses import StreamingResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from ..adapters._common.assemble import assemble_chat, assemble_message, assemble_response
from ..adapters._common.http import EVENTS_TYPE, HTTP, JSON_TYPE, encode_event
from ..errors import CassetteError, CassetteMismatch, CassetteMiss
from ..replay.cassette import Cassette
from ..replay.episodes import Conversations
from ..replay.modes import Mode
from ..types import Json
from .requests import ANTHROPIC, OPENAI, BadRequest, Call, parse_call
from .upstream import RawHeaders, Upstream, UpstreamError, UpstreamErrors

__all__ = ["MAX_BODY", "App", "Reply", "create_app"]

MAX_BODY = 32 * 1024 * 1024  # a request body past this is refused (413)
_DONE = frozenset({"chat.completions", "completions"})  # streams that end with [DONE]
_ASSEMBLE = {
    "chat.completions": assemble_chat,
    "responses": assemble_response,
    "messages": assemble_message,
}
_JSON: RawHeaders = [(b"content-type", JSON_TYPE.encode())]
_NO_RETRY: RawHeaders = [(b"x-should-retry", b"false"), *_JSON]
_HTTP_KEY = b'"' + HTTP.encode() + b'"'  # a recorded response with HTTP meta is decoded


def assembler(endpoint: str) -> Callable[[list[Json]], Json] | None:
    """What assembles a stream of ``endpoint`` into its message, as the wrappers do."""
    return _ASSEMBLE.get(endpoint)


class Reply:
    """A whole HTTP response (not a stream) as the two ASGI messages that send it."""

    __slots__ = ("body", "start")

    def __init__(self, body: bytes, status: int = 200, headers: RawHeaders = _JSON) -> None:
        length = (b"content-length", b"%d" % len(body))
        self.start = {
            "type": "http.response.start",
            "status": status,
            "headers": [*headers, length],
        }
        self.body = {"type": "http.response.body", "body": body}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send(self.start)
        await send(self.body)


def _raw(headers: Mapping[str, str]) -> RawHeaders:
    """Headers as ASGI sends them; a recorded content-length is left to :class:`Reply`."""
    pairs = ((k.lower(), v) for k, v in headers.items())
    return [(k.encode("latin-1"), v.encode("latin-1")) for k, v in pairs if k != "content-length"]


def error_response(call_provider: str, status: int, kind: str, message: str) -> Reply:
    """An error in the provider's shape (anthropic's carries ``"type": "error"``)."""
    body: Json = {"error": {"type": kind, "message": message}}
    if call_provider == ANTHROPIC:
        body = {"type": "error", **body}
    return Reply(orjson.dumps(body), status, _NO_RETRY)


def _provider_of(path: str) -> str:
    return ANTHROPIC if "/messages" in path else OPENAI


def _keys(headers: Mapping[bytes, bytes]) -> Json:
    """The keys the headers name: the episode (else the cassette's episode-naming policy
    names it) and the step."""
    keys: Json = {}
    episode = headers.get(b"x-cassette-episode")
    if episode:
        keys["env_index"] = int(episode) if episode.isdigit() else episode.decode("latin-1")
    step = headers.get(b"x-cassette-step")
    if step is not None:
        if not step.isdigit():
            shown = step.decode("latin-1")
            raise BadRequest(f"X-Cassette-Step is {shown!r}; send a step number (0, 1, ...)")
        keys["step"] = int(step)
    return keys


def _recorded(body: bytes) -> Reply:
    """A response as the JSON bytes of its line, sent as they are unless they hold HTTP meta."""
    return Reply(body) if _HTTP_KEY not in body else _json_response(orjson.loads(body))


def _json_response(data: Json) -> Reply:
    meta = data.get(HTTP)
    if meta is None:
        return Reply(orjson.dumps(data))
    headers = {k.lower(): v for k, v in (meta.get("headers") or {}).items()}
    status = int(meta.get("status", 200))
    if "base64" in meta:
        return Reply(base64.b64decode(meta["base64"]), status, _raw(headers))
    body = orjson.dumps({k: v for k, v in data.items() if k != HTTP})
    headers.setdefault("content-type", JSON_TYPE)
    return Reply(body, status, _raw(headers))


_FLAGS = {  # where each upstream is set
    OPENAI: "--upstream (or $OPENAI_BASE_URL)",
    ANTHROPIC: "--anthropic-upstream (or $ANTHROPIC_BASE_URL)",
}


def _upstream_response(exc: UpstreamError, provider: str, root: str) -> Reply:
    if exc.kind != "status":
        what = "timed out" if exc.kind == "timeout" else "could not be reached"
        fix = f"start it, or set {_FLAGS[provider]} to one that runs"
        return error_response(provider, exc.status, "upstream_error", f"{root} {what}; {fix}")
    return Reply(exc.body, exc.status, _raw(exc.headers))


class App:
    """The server: the cassette, the upstream, the episode rule, the token; an ASGI app."""

    def __init__(self, cas: Cassette, upstream: Upstream, token: str | None = None) -> None:
        self.cas, self.upstream, self.token = cas, upstream, token
        self.streams: set[asyncio.Task[None]] = set()  # read on after their client left
        self.errors = {p: UpstreamErrors(p) for p in (OPENAI, ANTHROPIC)}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            reply = await self.respond(scope, receive)
            await reply(scope, receive, send)
        elif scope["type"] == "lifespan":
            await self._lifespan(receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        if self.streams:  # streams whose client left are recorded whole before closing
            await asyncio.wait(self.streams, timeout=60)
        await self.upstream.aclose()
        await send({"type": "lifespan.shutdown.complete"})

    def _authorised(self, scope: Scope) -> bool:
        if self.token is None:
            return True
        headers = Headers(scope=scope)
        bearer = headers.get("authorization", "")
        candidates = [
            headers.get("x-cassette-token", ""),
            bearer.removeprefix("Bearer ").strip(),
            headers.get("x-api-key", ""),
        ]
        return any(hmac.compare_digest(c, self.token) for c in candidates if c)

    def rewind(self, scope: Scope) -> Reply:
        """``POST /cassette/rewind``: replay every episode from its first step again (the
        next client run gets the same answers as the first, episodes named by header too)."""
        if scope["method"] != "POST":
            return error_response(OPENAI, 405, "invalid_request_error", "use POST to rewind")
        if not self._authorised(scope):
            return error_response(OPENAI, 401, "cassette_token", "send X-Cassette-Token")
        try:
            self.cas.rewind()
        except CassetteError as exc:
            return error_response(OPENAI, 409, "cassette_error", str(exc))
        policy = self.cas.episodes
        if isinstance(policy, Conversations):
            self.cas.episodes = policy.fresh()
        return Reply(b'{"rewound": true}')

    async def respond(self, scope: Scope, receive: Receive) -> ASGIApp:
        """The response to one HTTP request (its body read from ``receive``)."""
        path = scope["path"]
        if path == "/cassette/rewind":
            return self.rewind(scope)
        if not self._authorised(scope):
            message = "a token is required; send X-Cassette-Token"
            return error_response(_provider_of(path), 401, "cassette_token", message)
        headers = dict(scope["headers"])  # (of a repeated header, the last)
        query = scope["query_string"].decode("latin-1")
        beta = headers.get(b"anthropic-beta", b"").decode("latin-1")
        try:
            content = await _read(receive, headers.get(b"content-length"))
            call = parse_call(scope["method"], path, query, content, beta)
            keys = _keys(headers)
        except BadRequest as exc:
            return error_response(_provider_of(path), exc.status, "invalid_request_error", str(exc))
        except _Disconnected:
            return Reply(b"", 499, [])
        keys["errors"] = self.errors[call.provider]
        return await self._answer(call, (call, content, scope["headers"], query), keys)

    async def _answer(self, call: Call, args: tuple[Any, ...], keys: Json) -> ASGIApp:
        """The cassette's answer to ``call`` (``args``: what the upstream would be sent)."""
        try:
            if call.stream:
                return await self._stream(call, args, keys)
            if self.cas.mode is Mode.REPLAY:  # (no live call: the recorded bytes as they are)
                got = self.cas.replayed(call.request, **keys)
                return _recorded(got) if isinstance(got, bytes) else _json_response(got)
            live = lambda: self.upstream.json(*args)  # noqa: E731
            return _json_response(await self.cas.acall(call.request, live=live, **keys))
        except UpstreamError as exc:
            return _upstream_response(exc, call.provider, self.upstream.roots[call.provider])
        except (CassetteMiss, CassetteMismatch) as exc:
            status = 404 if isinstance(exc, CassetteMiss) else 400
            return error_response(call.provider, status, "cassette_miss", str(exc))
        except CassetteError as exc:
            return error_response(call.provider, 400, "cassette_error", str(exc))

    async def _stream(self, call: Call, args: tuple[Any, ...], keys: Json) -> ASGIApp:
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


class _Disconnected(Exception):
    """The client left before its request's body was read."""


async def _read(receive: Receive, size: bytes | None) -> bytes:
    """The request's body; BadRequest (413) past :data:`MAX_BODY`, told by its length when
    the client gives one, else counted as it arrives."""
    if size is not None and size.isdigit() and int(size) > MAX_BODY:
        raise BadRequest(_TOO_LARGE, 413)
    parts: list[bytes] = []
    total = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            raise _Disconnected
        part = message.get("body", b"")
        total += len(part)
        if total > MAX_BODY:
            raise BadRequest(_TOO_LARGE, 413)
        parts.append(part)
        if not message.get("more_body", False):
            return b"".join(parts)  # (one part: that part itself, not a copy)


def create_app(
    cas: Cassette,
    *,
    upstream: str | None = None,
    anthropic_upstream: str | None = None,
    token: str | None = None,
) -> App:
    """The server's ASGI app over an open cassette (closing the cassette is the caller's);
    calls without an ``X-Cassette-Episode`` header take the episode the cassette's
    episode-naming policy gives them (``cassette serve`` opens it with
    :class:`cassette.replay.episodes.Conversations`)."""
    return App(cas, Upstream(upstream, anthropic_upstream), token)
