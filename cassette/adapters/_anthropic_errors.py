"""API errors of the anthropic SDK in a cassette: :class:`AnthropicErrors`, the adapter's
:class:`cassette.ErrorCodec` (the twin of :mod:`cassette.adapters._openai_errors`)."""

from __future__ import annotations

import sys
from typing import Any

import anthropic

from .. import codec
from ..errors import CassetteError

__all__ = ["AnthropicErrors", "http_module"]

Json = dict[str, Any]
_BUILTINS: dict[str, type[Exception]] = {
    f"builtins.{cls.__name__}": cls for cls in (TypeError, ValueError, RuntimeError)
}
_SAFE_HEADERS = frozenset({"content-type", "retry-after", "retry-after-ms", "request-id"})


def http_module(client: Any) -> Any:
    """The HTTP library the client runs on (``httpx2`` or ``httpx``), found from its client."""
    for cls in type(client._client).__mro__:
        module = sys.modules.get(cls.__module__.partition(".")[0])
        if cls.__module__.startswith(("anthropic", "builtins")) or module is None:
            continue
        if hasattr(module, "Response") and hasattr(module, "Request"):
            return module
    raise CassetteError(  # pragma: no cover - every SDK release runs on httpx or httpx2
        f"cannot tell the HTTP library of {type(client._client).__name__}; "
        "pass an anthropic client built on httpx or httpx2"
    )


def _kept_header(name: str) -> bool:
    return name in _SAFE_HEADERS or name.startswith("anthropic-ratelimit-")


class AnthropicErrors:
    """The :class:`cassette.ErrorCodec` of the anthropic SDK's API errors.

    Status errors keep their status code, the HTTP body as the server sent it and the safe
    headers (request id, retry-after, rate limits); replay rebuilds them with the client's
    own ``_make_status_error_from_response``, so class, message, ``body`` and
    ``request_id`` are what the SDK makes of that response.
    """

    def __init__(self, client: Any, path: str, method: str = "POST") -> None:
        self.client, self.path, self.method = client, path, method.upper()
        self.http = http_module(client)

    def request(self) -> Any:
        url = self.path if "://" in self.path else str(self.client.base_url).rstrip("/") + self.path
        return self.http.Request(self.method, url)

    def response(self, status: int, content: bytes = b"", headers: Json | None = None) -> Any:
        return self.http.Response(status, headers=headers, content=content, request=self.request())

    def dump(self, exc: BaseException) -> Json | None:
        data: Json
        if isinstance(exc, anthropic.APIStatusError):
            data = {"kind": "status", "status_code": exc.status_code}
            data["headers"] = {k: v for k, v in exc.response.headers.items() if _kept_header(k)}
            try:
                data["body"] = exc.response.json()
            except Exception:  # noqa: BLE001 - not JSON, or never read: keep what the SDK kept
                if exc.body is None or isinstance(exc.body, str):
                    data["text"] = exc.body or ""
                else:
                    data["body"] = exc.body
        elif isinstance(exc, anthropic.APITimeoutError):
            data = {"kind": "timeout"}
        elif isinstance(exc, anthropic.APIConnectionError):
            data = {"kind": "connection"}
        elif type(exc) is anthropic.APIError:
            data = {"kind": "api", "body": exc.body}
        else:
            return None
        return {"type": f"anthropic.{type(exc).__name__}", "message": str(exc), "data": data}

    def load(self, info: Json) -> BaseException | None:
        data = info.get("data") or {}
        kind, message = data.get("kind"), str(info.get("message") or "")
        builtin = _BUILTINS.get(str(info.get("type", "")))
        if builtin is not None:  # raised by the SDK before sending: a wrong argument
            return builtin(message)
        if not str(info.get("type", "")).startswith("anthropic."):
            return None
        if kind == "status":
            content = codec.dumps(data["body"]) if "body" in data else str(data.get("text", ""))
            raw = content if isinstance(content, bytes) else content.encode()
            response = self.response(int(data["status_code"]), raw, data.get("headers"))
            error: BaseException = self.client._make_status_error_from_response(response)
            return error
        if kind == "timeout":
            return anthropic.APITimeoutError(request=self.request())
        if kind == "connection":
            return anthropic.APIConnectionError(message=message, request=self.request())
        if kind == "api":
            return anthropic.APIError(message, self.request(), body=data.get("body"))
        return None
