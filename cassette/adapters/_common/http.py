"""What the HTTP-level adapters (openai, anthropic) share: request endpoints, responses as
dicts (``"$http"``: status, kept headers), stream events as chunk dicts (``"$sse"``: an event
kept as it came) and back as the byte streams that replay them."""

from __future__ import annotations

import base64
import functools
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import Any
from urllib.parse import urlencode, urlsplit

import orjson
from pydantic import BaseModel

from ...types import Json

__all__ = [
    "EVENTS_TYPE",
    "HTTP",
    "JSON_TYPE",
    "SSE",
    "anthropic_kept",
    "byte_streams",
    "chunk_of",
    "dump_model",
    "encode_event",
    "endpoint_name",
    "http_meta",
    "openai_kept",
    "request_path",
    "response_dict",
    "secret_header",
    "sent_json",
]

HTTP = "$http"  # the key of a response dict that holds status and headers
SSE = "$sse"  # an event kept as it came: {"$sse": {"event": name, "data": text}}
JSON_TYPE = "application/json"
EVENTS_TYPE = "text/event-stream"
SECRET_WORDS = ("auth", "cookie", "key", "secret", "token", "session")
_RATE_LIMITS = ("x-ratelimit-", "anthropic-ratelimit-", "retry-after")
_DROPPED = frozenset({"openai-organization", "openai-project", "anthropic-organization-id"})


def secret_header(name: str) -> bool:
    """Whether a lower-case header may hold a secret or an account id (rate limits never)."""
    if name.startswith(_RATE_LIMITS):
        return False
    return name in _DROPPED or any(word in name for word in SECRET_WORDS)


def openai_kept(name: str) -> bool:
    """Response headers a cassette of the OpenAI API keeps: request ids, rate limits."""
    return not secret_header(name) and (
        name.startswith(("x-", "openai-", "retry-after")) or name == "content-type"
    )


def anthropic_kept(name: str) -> bool:
    """Response headers a cassette of the Anthropic API keeps (as :func:`openai_kept`)."""
    return not secret_header(name) and (
        name.startswith(("x-", "anthropic-", "retry-after"))
        or name in ("content-type", "request-id")
    )


def dump_model(value: BaseModel) -> Any:
    """An SDK model as the SDK sends it."""
    exclude = getattr(value, "__api_exclude__", None)
    return value.model_dump(mode="json", exclude_unset=True, by_alias=True, exclude=exclude)


def sent_json(value: Any, skip: tuple[type, ...], refuse: Callable[[Any], Exception]) -> Any:
    """A request's data as sent (``skip`` sentinels left out); other objects: ``refuse``."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, Mapping):
        return {
            str(k): sent_json(v, skip, refuse) for k, v in value.items() if not isinstance(v, skip)
        }
    if isinstance(value, (list, tuple)):
        return [sent_json(v, skip, refuse) for v in value]
    if isinstance(value, BaseModel):
        return dump_model(value)
    raise refuse(value)


def request_path(url: str, base_path: str) -> str:
    """The path of a request relative to the client's base URL (``/chat/completions``)."""
    if "://" not in url:
        return url if url.startswith("/") else "/" + url
    path = urlsplit(url).path
    return path[len(base_path) :] if base_path and path.startswith(base_path + "/") else path


def endpoint_name(method: str, path: str, query: Mapping[str, Any] | None = None) -> str:
    """The path in dots (``"chat.completions"``), led by the method unless POST, + query."""
    endpoint = path.strip("/").replace("/", ".")
    if method != "POST":
        endpoint = f"{method} {endpoint}"
    pairs = sorted((str(k), v) for k, v in query.items() if v is not None) if query else ()
    return endpoint + "?" + urlencode(pairs, doseq=True) if pairs else endpoint


def http_meta(response: Any, usual: str, kept: Callable[[str], bool]) -> Json:
    """Status (unless 200) and the ``kept`` headers (a content type starting ``usual`` not)."""
    headers = {
        k: v
        for k, v in response.headers.items()
        if kept(k) and not (k == "content-type" and v.startswith(usual))
    }
    meta: Json = {}
    if response.status_code != 200:
        meta["status"] = response.status_code
    if headers:
        meta["headers"] = headers
    return meta


def response_dict(response: Any, kept: Callable[[str], bool]) -> Json:
    """A JSON body, plus ``"$http"`` if worth keeping; any other body base64 in ``"$http"``."""
    content = response.content
    if "json" in response.headers.get("content-type", ""):
        try:
            body = orjson.loads(content)
        except orjson.JSONDecodeError:
            body = None
        if isinstance(body, dict) and HTTP not in body:
            meta = http_meta(response, JSON_TYPE, kept)
            if meta:
                body[HTTP] = meta
            return body
    meta = http_meta(response, "\0", kept)
    meta["base64"] = base64.b64encode(content).decode()
    return {HTTP: meta}


def encode_event(chunk: Json) -> bytes:
    """One event of a stream as the server sends it."""
    kept = chunk.get(SSE)
    if isinstance(kept, dict):
        event, lines = kept.get("event"), str(kept.get("data", "")).split("\n")
        data = b"".join(b"data: " + line.encode() + b"\n" for line in lines)
    else:
        kind = chunk.get("type")
        event, data = (kind if isinstance(kind, str) else None), b"data: " + orjson.dumps(chunk)
        data += b"\n"
    return (b"event: " + event.encode() + b"\n" if event else b"") + data + b"\n"


def chunk_of(sse: Any) -> Json:
    """A received event as its JSON data, or ``"$sse"`` if that would not come back the same."""
    try:
        data = orjson.loads(sse.data)
    except orjson.JSONDecodeError:
        data = None
    if isinstance(data, dict) and HTTP not in data and SSE not in data:
        kind = data.get("type")
        if sse.event == (kind if isinstance(kind, str) else None):
            return data
    return {SSE: {"event": sse.event, "data": sse.data}}


@functools.lru_cache(maxsize=4)
def byte_streams(module: Any) -> tuple[Any, Any]:
    """The HTTP library's (sync, async) byte stream classes fed from a cassette's chunks."""

    def iterate(self: Any) -> Iterator[bytes]:
        try:
            if self.first is not None:
                yield encode_event(self.first)
            for chunk in self.chunks:
                yield encode_event(chunk)
            if self.done:
                yield b"data: [DONE]\n\n"
        finally:
            self.close()

    def close(self: Any) -> None:
        self.chunks.close()

    async def aiterate(self: Any) -> AsyncIterator[bytes]:
        try:
            if self.first is not None:
                yield encode_event(self.first)
            async for chunk in self.chunks:
                yield encode_event(chunk)
            if self.done:
                yield b"data: [DONE]\n\n"
        finally:
            await self.aclose()

    async def aclose(self: Any) -> None:
        await self.chunks.aclose()

    def init(self: Any, first: Json | None, chunks: Any, done: bool) -> None:
        self.first, self.chunks, self.done = first, chunks, done

    sync = type("CassetteEvents", (module.SyncByteStream,), {"__init__": init})
    sync.__iter__, sync.close = iterate, close  # type: ignore[attr-defined]
    aio = type("AsyncCassetteEvents", (module.AsyncByteStream,), {"__init__": init})
    aio.__aiter__, aio.aclose = aiterate, aclose  # type: ignore[attr-defined]
    return sync, aio
