"""The live side of the server: a call forwarded to the provider, its answer as the
response dict (or stream chunks) the Python wrappers record, and its HTTP errors kept as
the SDKs' adapters keep them, so a cassette recorded here replays through ``wrap_openai``
and ``wrap_anthropic`` and the other way round.

The client's API key and auth headers go to the upstream and nowhere else: the request
dict never holds a header, and a response keeps only request ids, rate limits and
``retry-after`` (:data:`KEPT`, the wrappers' own rules).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx
import orjson
from openai._streaming import SSEDecoder

from ..adapters._common.http import (
    EVENTS_TYPE,
    HTTP,
    anthropic_kept,
    chunk_of,
    http_meta,
    openai_kept,
)
from ..adapters._common.http import response_dict as http_response_dict
from ..types import Json
from .requests import ANTHROPIC, Call

__all__ = ["KEPT", "PUBLIC", "RawHeaders", "Upstream", "UpstreamError", "UpstreamErrors"]

RawHeaders = list[tuple[bytes, bytes]]  # headers as ASGI has them (names in lowercase)
PUBLIC = {"openai": "https://api.openai.com", ANTHROPIC: "https://api.anthropic.com"}
# request headers never forwarded: the connection's own, and the server's own headers
_HOP = frozenset(
    b"host content-length connection keep-alive transfer-encoding upgrade te trailer "
    b"proxy-authorization accept-encoding".split()
)
# the headers a cassette keeps, by provider: the wrappers' own rules
KEPT = {"openai": openai_kept, ANTHROPIC: anthropic_kept}


class UpstreamError(Exception):
    """The upstream answered with an error status (or could not be reached)."""

    def __init__(
        self, status: int, body: bytes, headers: Mapping[str, str], kind: str = "status"
    ) -> None:
        super().__init__(f"Error code: {status} - {body[:2000].decode(errors='replace')}")
        self.status, self.body, self.headers, self.kind = status, body, dict(headers), kind


class UpstreamErrors:
    """The :class:`cassette.ErrorCodec` of the server: an upstream error is stored as the
    SDK's adapter stores its status error (``{"kind": "status", "status_code", "headers",
    "body"}`` under the SDK's name), and rebuilt as the same HTTP response."""

    def __init__(self, provider: str) -> None:
        self.sdk = "anthropic" if provider == ANTHROPIC else "openai"

    def dump(self, exc: BaseException) -> Json | None:
        if not isinstance(exc, UpstreamError):
            return None
        if exc.kind != "status":
            return {
                "type": f"{self.sdk}.API{exc.kind.title()}Error",
                "message": str(exc),
                "data": {"kind": exc.kind},
            }
        data: Json = {"kind": "status", "status_code": exc.status}
        kept = KEPT[self.sdk]
        data["headers"] = {k: v for k, v in exc.headers.items() if kept(k)}
        try:
            data["body"] = orjson.loads(exc.body)
        except orjson.JSONDecodeError:
            data["text"] = exc.body.decode(errors="replace")
        return {"type": f"{self.sdk}.APIStatusError", "message": str(exc), "data": data}

    def load(self, info: Json) -> BaseException | None:
        data = info.get("data")
        if not isinstance(data, dict) or not str(info.get("type", "")).startswith(self.sdk + "."):
            return None
        kind = data.get("kind")
        if kind in ("timeout", "connection"):
            return UpstreamError(504 if kind == "timeout" else 502, b"", {}, kind)
        status = data.get("status_code")
        if kind != "status" or type(status) is not int or not 100 <= status <= 599:
            return None
        return UpstreamError(status, _body(data), _headers(data))


def _body(data: Json) -> bytes:
    """A recorded status error's body: its JSON, else its text."""
    return orjson.dumps(data["body"]) if "body" in data else str(data.get("text", "")).encode()


def _headers(data: Json) -> dict[str, str]:
    headers = data.get("headers")
    return headers if isinstance(headers, dict) else {}


class Upstream:
    """The providers' HTTP APIs, reached with one shared ``httpx.AsyncClient``."""

    def __init__(self, openai: str | None, anthropic: str | None, timeout: float = 600.0) -> None:
        self.roots = {
            "openai": _root(openai or PUBLIC["openai"]),
            ANTHROPIC: _root(anthropic or PUBLIC[ANTHROPIC]),
        }
        self.client = httpx.AsyncClient(timeout=timeout)

    async def aclose(self) -> None:
        await self.client.aclose()

    def _send(self, call: Call, content: bytes, headers: RawHeaders, query: str) -> Any:
        url = self.roots[call.provider] + call.path + (f"?{query}" if query else "")
        forward = {
            k.decode("latin-1"): v.decode("latin-1")
            for k, v in headers
            if k not in _HOP and not k.startswith(b"x-cassette-")  # (ASGI names: lowercase)
        }
        method = "POST" if not call.endpoint.startswith("GET ") else "GET"
        return self.client.build_request(method, url, content=content or None, headers=forward)

    async def json(self, call: Call, content: bytes, headers: RawHeaders, query: str) -> Json:
        """The response dict of a plain call; an error status raises UpstreamError."""
        try:
            response = await self.client.send(self._send(call, content, headers, query))
        except httpx.TimeoutException:
            raise UpstreamError(504, b"", {}, "timeout") from None
        except httpx.HTTPError:
            raise UpstreamError(502, b"", {}, "connection") from None
        if response.status_code >= 400:
            raise UpstreamError(response.status_code, response.content, response.headers)
        return http_response_dict(response, KEPT[call.provider])

    async def events(
        self, call: Call, content: bytes, headers: RawHeaders, query: str
    ) -> AsyncIterator[Json]:
        """The chunks of a streamed call as they arrive (``{"$http": ...}`` first when there
        are headers to keep); an error status raises UpstreamError before any chunk."""
        try:
            response = await self.client.send(
                self._send(call, content, headers, query), stream=True
            )
        except httpx.TimeoutException:
            raise UpstreamError(504, b"", {}, "timeout") from None
        except httpx.HTTPError:
            raise UpstreamError(502, b"", {}, "connection") from None
        try:
            if response.status_code >= 400:
                body = await response.aread()
                raise UpstreamError(response.status_code, body, response.headers)
            meta = http_meta(response, EVENTS_TYPE, KEPT[call.provider])
            if meta:
                yield {HTTP: meta}
            async for sse in SSEDecoder().aiter_bytes(response.aiter_bytes()):
                if sse.data.startswith("[DONE]"):
                    break
                yield chunk_of(sse)
        except httpx.HTTPError:
            raise UpstreamError(502, b"", {}, "connection") from None
        finally:
            await response.aclose()


def _root(url: str) -> str:
    """An upstream's root: a base URL's trailing ``/v1`` and slash dropped."""
    url = url.rstrip("/")
    return url[:-3] if url.endswith("/v1") else url
