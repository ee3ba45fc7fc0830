"""API errors of the openai SDK in a cassette: :class:`OpenAIErrors`, the adapter's
:class:`cassette.ErrorCodec` (the shared codec of :mod:`._sdk_errors`, set up for openai)."""

from __future__ import annotations

from typing import Any, ClassVar

import openai

from .._common.sdk_errors import SdkErrors
from .._common.sdk_errors import http_module as _http_module

__all__ = ["OpenAIErrors", "http_module"]

_SAFE_HEADERS = frozenset({"content-type", "retry-after", "retry-after-ms", "x-request-id"})


def http_module(client: Any) -> Any:
    """The HTTP library an openai client runs on (``httpx2`` or ``httpx``)."""
    return _http_module(client, "openai")


class OpenAIErrors(SdkErrors):
    """openai's status, timeout, connection and stream errors; kept headers: the request
    id, retry-after and ``x-ratelimit-*``."""

    sdk: ClassVar[Any] = openai
    wrap_body: ClassVar[bool] = True  # the SDK keeps the "error" member of a JSON body

    @staticmethod
    def kept_header(name: str) -> bool:
        return name in _SAFE_HEADERS or name.startswith("x-ratelimit")
