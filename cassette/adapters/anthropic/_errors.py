"""API errors of the anthropic SDK in a cassette: :class:`AnthropicErrors`, the adapter's
:class:`cassette.ErrorCodec` (the shared codec of :mod:`._sdk_errors`, set up for
anthropic)."""

from __future__ import annotations

from typing import Any, ClassVar

import anthropic

from .._common.sdk_errors import SdkErrors
from .._common.sdk_errors import http_module as _http_module

__all__ = ["AnthropicErrors", "http_module"]

_SAFE_HEADERS = frozenset({"content-type", "retry-after", "retry-after-ms", "request-id"})


def http_module(client: Any) -> Any:
    """The HTTP library an anthropic client runs on (``httpx2`` or ``httpx``)."""
    return _http_module(client, "anthropic")


class AnthropicErrors(SdkErrors):
    """anthropic's status, timeout, connection and stream errors; kept headers: the
    request id, retry-after and ``anthropic-ratelimit-*``."""

    sdk: ClassVar[Any] = anthropic

    @staticmethod
    def kept_header(name: str) -> bool:
        return name in _SAFE_HEADERS or name.startswith("anthropic-ratelimit-")
