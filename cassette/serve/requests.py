"""What the server makes of an HTTP request: the request dict the Python wrappers record
(the JSON body plus ``"endpoint"``; never host, key or headers), the provider it speaks
to, and whether it asks for a stream.

``POST /v1/chat/completions`` is ``{..., "endpoint": "chat.completions"}`` as
``wrap_openai`` records it; ``POST /v1/messages`` is ``{..., "endpoint": "messages"}`` as
``wrap_anthropic`` records it, with the ``anthropic-beta`` header as ``"$anthropic-beta"``
(it changes what the model does); ``GET /v1/models`` is ``{"endpoint": "GET models"}``.
"""

from __future__ import annotations

import functools
from typing import NamedTuple
from urllib.parse import parse_qsl, urlencode

import orjson

from ..errors import CassetteError
from ..types import Json

__all__ = ["ANTHROPIC", "OPENAI", "BadRequest", "Call", "parse_call"]

OPENAI = "openai"
ANTHROPIC = "anthropic"
_BETA = "anthropic-beta"
# the endpoints of each provider that a cassette records (the path after /v1)
_ROUTES = {
    ("POST", "chat/completions"): OPENAI,
    ("POST", "completions"): OPENAI,
    ("POST", "responses"): OPENAI,
    ("POST", "embeddings"): OPENAI,
    ("POST", "moderations"): OPENAI,
    ("GET", "models"): OPENAI,
    ("POST", "messages"): ANTHROPIC,
    ("POST", "messages/count_tokens"): ANTHROPIC,
}


class BadRequest(CassetteError):
    """A request the server cannot take: it is answered with ``status`` and this message."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class Call(NamedTuple):
    """One request to the server: its request dict, provider and path for the upstream."""

    request: Json
    provider: str
    path: str  # after the API's root: "/v1/chat/completions"
    stream: bool

    @property
    def endpoint(self) -> str:
        return str(self.request["endpoint"])


@functools.lru_cache(maxsize=256)
def _route(method: str, path: str) -> tuple[str, str, str]:
    """(provider, endpoint, the path from /v1) of a served route; BadRequest otherwise (a
    refused route is not cached)."""
    tail = path.strip("/")
    tail = tail[3:] if tail.startswith("v1/") else tail
    provider = _ROUTES.get((method, tail))
    if provider is not None:
        return provider, tail.replace("/", "."), "/v1/" + tail
    if any(t == tail for _, t in _ROUTES):
        raise BadRequest(f"{method} {path} is not served; use the method the API documents", 405)
    served = ", ".join(sorted({f"{m} /v1/{t}" for m, t in _ROUTES}))
    raise BadRequest(f"{method} {path} is not served; the server answers {served}", 404)


def _body(content: bytes) -> Json:
    if not content:
        return {}
    try:
        body = orjson.loads(content)
    except orjson.JSONDecodeError:
        raise BadRequest("the request body is not valid JSON; send a JSON object") from None
    if not isinstance(body, dict):
        raise BadRequest("the request body is a JSON " + type(body).__name__ + "; send an object")
    return body


def parse_call(method: str, path: str, query: str, content: bytes, beta: str = "") -> Call:
    """The :class:`Call` of one HTTP request (``beta``: its ``anthropic-beta`` header);
    BadRequest for what the server does not take."""
    method = method.upper()
    provider, endpoint, route = _route(method, path)
    if method != "POST":
        pairs = sorted((k, v) for k, v in parse_qsl(query) if v)
        query = "?" + urlencode(pairs) if pairs else ""
        return Call({"endpoint": f"{method} {endpoint}{query}"}, provider, route, False)
    body = _body(content)
    if beta and provider == ANTHROPIC:
        body["$" + _BETA] = beta
    body.pop("endpoint", None)
    body["endpoint"] = endpoint
    # a stream is decided by the body: clients send Accept: json
    return Call(body, provider, route, body.get("stream") is True)
