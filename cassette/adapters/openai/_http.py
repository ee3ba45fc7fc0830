"""The layer of :mod:`cassette.adapters.openai` that every SDK entry point goes through:
the client's ``request(cast_to, options, stream=..., stream_cls=...)``.

``Recorder.sync_request`` / ``async_request`` (from :class:`._http_recorder.HttpRecorder`,
shared with the anthropic adapter) replace it on the wrapped client. Each call becomes a
request dict (:func:`options_request`); the answer comes from the cassette, or from the
SDK's own ``request`` asked for the bare HTTP response (its retries and status errors
included), turned into a response dict. Either way the SDK gets an HTTP response rebuilt
from that dict and runs its own ``_process_response`` on it, so ``with_raw_response``,
``with_streaming_response``, ``parse``, the stream helpers, pages and ``client.post`` return
what they return live. Response dicts: the JSON body, plus ``"$http"`` (status, the headers
kept) when there is more to say; a body that is not a JSON object is kept whole in
``"$http"``; a stream is its events (``{"$http": ...}`` first when there are headers to keep).
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable
from typing import Any

import openai
import pydantic
from openai._constants import RAW_RESPONSE_HEADER

from ...replay.cassette import Cassette
from ...types import Json
from .._common.assemble import assemble_chat, assemble_response
from .._common.http import HTTP, SECRET_WORDS
from .._common.http import response_dict as common_response_dict
from .._common.http_recorder import HttpRecorder
from ._errors import OpenAIErrors, http_module
from ._request import options_request

__all__ = ["HTTP", "LIVE", "Recorder", "adapter", "response_dict", "without_http"]

LIVE: contextvars.ContextVar[bool] = contextvars.ContextVar("cassette_openai_live", default=False)
_DONE = frozenset({"chat.completions", "completions"})  # streams that end with [DONE]
_DROPPED = frozenset({"openai-organization", "openai-project", "x-api-key"})
_ASSEMBLE = {"chat.completions": assemble_chat, "responses": assemble_response}


# SDK types whose JSON pydantic validates into the object the SDK's lenient construction
# makes (unknown fields kept), at a twentieth of the cost
_VALIDATED = frozenset({
    ("openai.types.chat.chat_completion", "ChatCompletion"),
    ("openai.types.chat.chat_completion_chunk", "ChatCompletionChunk"),
    ("openai.types.responses.response", "Response"),
    ("openai.types.completion", "Completion"),
    ("openai.types.create_embedding_response", "CreateEmbeddingResponse"),
})  # fmt: skip


@functools.lru_cache(maxsize=64)
def adapter(cast_to: Any) -> pydantic.TypeAdapter[Any]:
    return pydantic.TypeAdapter(cast_to)


def _kept(name: str) -> bool:
    """Response headers a cassette keeps: request ids, rate limits and the like; never
    secrets, connection details or the organisation."""
    if name.startswith(("x-ratelimit-", "retry-after")):
        return True
    if name in _DROPPED or any(word in name for word in SECRET_WORDS):
        return False
    return name.startswith(("x-", "openai-", "retry-after")) or name == "content-type"


def response_dict(response: Any) -> Json:
    """The response dict of a read HTTP response: its JSON body, ``"$http"`` added when
    status or headers (those :func:`_kept` keeps) are worth keeping; any other body whole
    inside ``"$http"``."""
    return common_response_dict(response, _kept)


def without_http(data: Json) -> Json:
    return {k: v for k, v in data.items() if k != HTTP} if HTTP in data else data


class Recorder(HttpRecorder[OpenAIErrors]):
    """The cassette side of one wrapped client (shared by its resources)."""

    raw_header = RAW_RESPONSE_HEADER
    timeout_error = openai.APITimeoutError
    connection_error = openai.APIConnectionError
    stop_at_done = True
    done_endpoints = _DONE
    passthrough = LIVE
    http_module = staticmethod(http_module)
    kept = staticmethod(_kept)

    def __init__(self, client: Any, cas: Cassette, channel: str) -> None:
        super().__init__(client, cas, channel)
        self._urls: dict[str, Any] = {}

    def new_errors(self, url: str, method: str) -> OpenAIErrors:
        return OpenAIErrors(self.client, url, method)

    def request_dict(self, options: Any) -> Json:
        return options_request(options, self.base_path)

    def assembler(self, endpoint: str) -> Callable[[list[Json]], Json] | None:
        return _ASSEMBLE.get(endpoint)

    def prepare_url(self, url: str) -> Any:
        prepared = self._urls.get(url)
        if prepared is None:  # parsed once: building a request from a string parses it again
            prepared = self._urls[url] = self.client._prepare_url(url)
        return prepared

    def process_response_data(self) -> Callable[..., Any]:
        """The client's ``_process_response_data`` (what builds SDK objects from JSON, for
        every reply, chunk and ``.parse()``), validating the hot types with pydantic."""
        cls, client = self.cls, self.client
        original = cls._process_response_data

        def process(*, data: Any, cast_to: Any, response: Any) -> Any:
            name = (getattr(cast_to, "__module__", None), getattr(cast_to, "__name__", None))
            if name in _VALIDATED and isinstance(data, dict):
                try:
                    return adapter(cast_to).validate_python(data)
                except pydantic.ValidationError:
                    pass  # the SDK's own way: constructed leniently, or its strict error
            return original(client, data=data, cast_to=cast_to, response=response)

        return process
