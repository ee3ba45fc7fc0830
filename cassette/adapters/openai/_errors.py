"""API errors of the openai SDK in a cassette: the shared codec set up for openai."""

from __future__ import annotations

from typing import Any, ClassVar

import openai

from .._common.sdk_errors import SdkErrors

__all__ = ["OpenAIErrors"]


class OpenAIErrors(SdkErrors):
    """openai's API errors; kept headers: request id, retry-after, ``x-ratelimit-*``."""

    sdk: ClassVar[Any] = openai
    wrap_body: ClassVar[bool] = True  # the SDK keeps the "error" member of a JSON body
    safe_headers = frozenset({"content-type", "retry-after", "retry-after-ms", "x-request-id"})
    header_prefix = "x-ratelimit"
