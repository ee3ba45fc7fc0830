"""API errors of a Stainless SDK (openai, anthropic) in a cassette: a status error keeps its
status, body and kept headers, rebuilt by the client's ``_make_status_error_from_response``."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, ClassVar, cast

from ...errors import CassetteError
from ...format import codec
from ...types import Json

__all__ = ["SdkErrors", "http_module"]

_BUILTINS: dict[str, type[Exception]] = {
    f"builtins.{cls.__name__}": cls for cls in (TypeError, ValueError, RuntimeError)
}


def http_module(client: Any, sdk: str) -> Any:
    """The HTTP library (``httpx2`` or ``httpx``) ``client`` runs on, from its client's class."""
    for cls in type(client._client).__mro__:
        module = sys.modules.get(cls.__module__.partition(".")[0])
        if cls.__module__.startswith((sdk, "builtins")) or module is None:
            continue
        if hasattr(module, "Response") and hasattr(module, "Request"):
            return module
    raise CassetteError(  # pragma: no cover - every SDK release runs on httpx or httpx2
        f"cannot tell the HTTP library of {type(client._client).__name__}; "
        f"pass an {sdk} client built on httpx or httpx2"
    )


class SdkErrors:
    """The error codec of one client; a subclass names its SDK and the headers it keeps."""

    sdk: ClassVar[Any]  # the SDK's module: its APIStatusError, APITimeoutError, ...
    wrap_body: ClassVar[bool] = False  # the SDK keeps only the "error" member of a body
    safe_headers: ClassVar[frozenset[str]]  # the headers of a status error kept...
    header_prefix: ClassVar[str]  # ...and those that start so (rate limits)

    def __init__(self, client: Any, path: str, method: str = "POST") -> None:
        self.client, self.path, self.method = client, path, method.upper()
        self.http = http_module(client, self.sdk.__name__)

    def kept_header(self, name: str) -> bool:
        return name in self.safe_headers or name.startswith(self.header_prefix)

    def request(self) -> Any:
        url = self.path if "://" in self.path else str(self.client.base_url).rstrip("/") + self.path
        return self.http.Request(self.method, url)

    def response(self, status: int, content: bytes = b"", headers: Json | None = None) -> Any:
        return self.http.Response(status, headers=headers, content=content, request=self.request())

    def _status(self, exc: Any) -> Json:
        headers = {k: v for k, v in exc.response.headers.items() if self.kept_header(k)}
        data: Json = {"kind": "status", "status_code": exc.status_code, "headers": headers}
        try:
            data["body"] = exc.response.json()
        except Exception:  # noqa: BLE001 - not JSON, or never read: keep what the SDK kept
            if exc.body is None or isinstance(exc.body, str):
                data["text"] = exc.body or ""
            else:
                data["body"] = {"error": exc.body} if self.wrap_body else exc.body
        return data

    def dump(self, exc: BaseException) -> Json | None:
        sdk = self.sdk
        data: Json
        if isinstance(exc, sdk.APIStatusError):
            data = self._status(exc)
        elif isinstance(exc, sdk.APITimeoutError):
            data = {"kind": "timeout"}
        elif isinstance(exc, sdk.APIConnectionError):
            data = {"kind": "connection"}
        elif type(exc) is sdk.APIError:  # an error event inside a stream
            data = {"kind": "api", "body": getattr(exc, "body", None)}
        else:
            return None
        name = f"{sdk.__name__}.{type(exc).__name__}"
        return {"type": name, "message": str(exc), "data": data}

    def load(self, info: Json) -> BaseException | None:
        """The SDK's exception for a recorded error; None for one this codec did not write."""
        data = info.get("data") or {}
        if not isinstance(data, dict):
            return None
        message = str(info.get("message") or "")
        builtin = _BUILTINS.get(str(info.get("type", "")))
        if builtin is not None:  # raised by the SDK before sending: a wrong argument
            return builtin(message)
        if not str(info.get("type", "")).startswith(self.sdk.__name__ + "."):
            return None
        load = self._loaders.get(str(data.get("kind")))
        return None if load is None else load(self, data, message)

    def _timeout(self, data: Json, message: str) -> BaseException:
        return self.sdk.APITimeoutError(request=self.request())  # type: ignore[no-any-return]

    def _connection(self, data: Json, message: str) -> BaseException:
        return self.sdk.APIConnectionError(message=message, request=self.request())  # type: ignore[no-any-return]

    def _api(self, data: Json, message: str) -> BaseException:
        return self.sdk.APIError(message, self.request(), body=data.get("body"))  # type: ignore[no-any-return]

    def _status_error(self, data: Json, message: str) -> BaseException | None:
        status, headers = data.get("status_code"), data.get("headers")
        if not (_valid_status(status) and _valid_headers(headers)):
            return None
        try:
            content = codec.dumps(data["body"]) if "body" in data else str(data.get("text", ""))
        except CassetteError:
            return None
        raw = content if isinstance(content, bytes) else content.encode()
        error: BaseException = self.client._make_status_error_from_response(
            self.response(cast(int, status), raw, headers)
        )
        return error

    _loaders: ClassVar[dict[str, Callable[[SdkErrors, Json, str], BaseException | None]]] = {
        "status": _status_error,
        "timeout": _timeout,
        "connection": _connection,
        "api": _api,
    }


def _valid_status(status: Any) -> bool:
    return type(status) is int and 100 <= status <= 599


def _valid_headers(headers: Any) -> bool:
    return headers is None or (
        isinstance(headers, dict) and all(isinstance(v, str) for v in headers.values())
    )
