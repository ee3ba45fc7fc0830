"""API errors of the openai SDK in a cassette: :class:`OpenAIErrors`, the adapter's
:class:`cassette.ErrorCodec`."""

from __future__ import annotations

import sys
from typing import Any

import openai
from openai import AsyncOpenAI, OpenAI

from .. import codec
from ..errors import CassetteError

__all__ = ["OpenAIErrors", "http_module"]

Json = dict[str, Any]
_BUILTINS: dict[str, type[Exception]] = {
    f"builtins.{cls.__name__}": cls for cls in (TypeError, ValueError, RuntimeError)
}
_SAFE_HEADERS = frozenset({"content-type", "retry-after", "retry-after-ms", "x-request-id"})


def http_module(client: OpenAI | AsyncOpenAI) -> Any:
    """The HTTP library the client runs on (``httpx2`` or ``httpx``), found from its client."""
    for cls in type(client._client).__mro__:
        module = sys.modules.get(cls.__module__.partition(".")[0])
        if cls.__module__.startswith(("openai", "builtins")) or module is None:
            continue
        if hasattr(module, "Response") and hasattr(module, "Request"):
            return module
    raise CassetteError(  # pragma: no cover - every SDK release runs on httpx or httpx2
        f"cannot tell the HTTP library of {type(client._client).__name__}; "
        "pass an openai client built on httpx or httpx2"
    )


class OpenAIErrors:
    """The :class:`cassette.ErrorCodec` of the openai SDK's API errors.

    Status errors keep their status code, the HTTP body as the server sent it and the
    headers in ``_SAFE_HEADERS`` (plus ``x-ratelimit-*``); replay rebuilds them with the
    client's own ``_make_status_error_from_response``, so class, message, ``body``,
    ``code`` and ``request_id`` are what the SDK makes of that response.
    """

    def __init__(self, client: OpenAI | AsyncOpenAI, path: str, method: str = "POST") -> None:
        self.client, self.path, self.method = client, path, method.upper()
        self.http = http_module(client)

    def request(self) -> Any:
        url = self.path if "://" in self.path else str(self.client.base_url).rstrip("/") + self.path
        return self.http.Request(self.method, url)

    def response(self, status: int, content: bytes = b"", headers: Json | None = None) -> Any:
        return self.http.Response(status, headers=headers, content=content, request=self.request())

    def dump(self, exc: BaseException) -> Json | None:
        data: Json
        if isinstance(exc, openai.APIStatusError):
            data = {"kind": "status", "status_code": exc.status_code}
            headers = exc.response.headers
            data["headers"] = {
                k: v
                for k, v in headers.items()
                if k in _SAFE_HEADERS or k.startswith("x-ratelimit")
            }
            try:
                data["body"] = exc.response.json()
            except Exception:  # noqa: BLE001 - not JSON, or never read: keep what the SDK kept
                if exc.body is None or isinstance(exc.body, str):
                    data["text"] = exc.body or ""
                else:  # the SDK kept the "error" member of a JSON body
                    data["body"] = {"error": exc.body}
        elif isinstance(exc, openai.APITimeoutError):
            data = {"kind": "timeout"}
        elif isinstance(exc, openai.APIConnectionError):
            data = {"kind": "connection"}
        elif type(exc) is openai.APIError:  # an error event inside a stream
            data = {"kind": "api", "body": exc.body}
        else:
            return None
        return {"type": f"openai.{type(exc).__name__}", "message": str(exc), "data": data}

    def load(self, info: Json) -> BaseException | None:
        """The SDK's exception for a recorded error; None (replayed as a RecordedError)
        when the line does not hold one this codec wrote (an edited or damaged line)."""
        data = info.get("data") or {}
        if not isinstance(data, dict):
            return None
        message = str(info.get("message") or "")
        builtin = _BUILTINS.get(str(info.get("type", "")))
        if builtin is not None:  # raised by the SDK before sending: a wrong argument
            return builtin(message)
        if not str(info.get("type", "")).startswith("openai."):
            return None
        kind = data.get("kind")
        if kind == "status":
            status, headers = data.get("status_code"), data.get("headers")
            if type(status) is not int or not 100 <= status <= 599:
                return None
            if headers is not None and not (
                isinstance(headers, dict) and all(isinstance(v, str) for v in headers.values())
            ):
                return None
            try:
                content = codec.dumps(data["body"]) if "body" in data else str(data.get("text", ""))
            except CassetteError:
                return None
            raw = content if isinstance(content, bytes) else content.encode()
            response = self.response(status, raw, headers)
            return self.client._make_status_error_from_response(response)
        if kind == "timeout":
            return openai.APITimeoutError(request=self.request())
        if kind == "connection":
            return openai.APIConnectionError(message=message, request=self.request())
        if kind == "api":
            body = data.get("body")
            return openai.APIError(message, self.request(), body=body)
        return None
