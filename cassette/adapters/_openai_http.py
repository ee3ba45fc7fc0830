"""The layer of :mod:`cassette.adapters.openai` that every SDK entry point goes through:
the client's ``request(cast_to, options, stream=..., stream_cls=...)``.

``Recorder.sync_request`` / ``async_request`` replace it on the wrapped client. Each call
becomes a request dict (:func:`options_request`); the answer comes from the cassette, or
from the SDK's own ``request`` asked for the bare HTTP response (its retries and status
errors included), turned into a response dict. Either way the SDK gets an HTTP response
rebuilt from that dict and runs its own ``_process_response`` on it, so ``with_raw_response``,
``with_streaming_response``, ``parse``, the stream helpers, pages and ``client.post`` return
what they return live. Response dicts: the JSON body, plus ``"$http"`` (status, the headers
kept) when there is more to say; a body that is not a JSON object is kept whole in
``"$http"``; a stream is its events (``{"$http": ...}`` first when there are headers to keep).
"""

from __future__ import annotations

import base64
import contextvars
import datetime
import functools
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import openai
import orjson
import pydantic
from openai._constants import RAW_RESPONSE_HEADER

from ..cassette import Cassette
from ._http_common import (
    EVENTS_TYPE,
    HTTP,
    JSON_TYPE,
    SECRET_WORDS,
    byte_streams,
    chunk_of,
    http_meta,
)
from ._http_common import response_dict as common_response_dict
from ._openai_errors import OpenAIErrors, http_module
from ._openai_request import options_request
from ._openai_stream import assemble_chat, assemble_response

__all__ = ["HTTP", "LIVE", "Recorder", "adapter", "response_dict", "without_http"]

Json = dict[str, Any]
LIVE: contextvars.ContextVar[bool] = contextvars.ContextVar("cassette_openai_live", default=False)
_ZERO = datetime.timedelta(0)
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


class Recorder:
    """The cassette side of one wrapped client (shared by its resources)."""

    def __init__(self, client: Any, cas: Cassette, channel: str) -> None:
        self.client, self.cas, self.channel = client, cas, channel
        self.cls = type(client)
        self.http = http_module(client)
        self.base_path = client.base_url.raw_path.decode().rstrip("/")
        self._errors: dict[str, OpenAIErrors] = {}
        self._urls: dict[str, Any] = {}

    # -- helpers ---------------------------------------------------------------------------
    def errors(self, method: str, url: str) -> OpenAIErrors:
        key = method + " " + url
        codec = self._errors.get(key)
        if codec is None:
            codec = self._errors[key] = OpenAIErrors(self.client, url, method)
        return codec

    def http_request(self, options: Any) -> Any:
        """The request a rebuilt response answers (what the SDK reads of it: the URL, and
        the header that asks for a raw response)."""
        url = self._urls.get(options.url)
        if url is None:  # parsed once: building a request from a string parses it again
            url = self._urls[options.url] = self.client._prepare_url(options.url)
        headers = options.headers if isinstance(options.headers, dict) else {}
        raw = headers.get(RAW_RESPONSE_HEADER)
        return self.http.Request(
            options.method, url, headers={RAW_RESPONSE_HEADER: raw} if raw else None
        )

    def response(self, options: Any, data: Json) -> Any:
        """The HTTP response of a response dict."""
        meta = data.get(HTTP)
        if meta is None:
            headers: Json = {"content-type": JSON_TYPE}
            content = orjson.dumps(data)
            status = 200
        else:
            headers = dict(meta.get("headers") or {})
            status = int(meta.get("status", 200))
            if "base64" in meta:
                content = base64.b64decode(meta["base64"])
            else:
                headers.setdefault("content-type", JSON_TYPE)
                content = orjson.dumps(without_http(data))
        response = self.http.Response(
            status, headers=headers, content=content, request=self.http_request(options)
        )
        response.elapsed = _ZERO
        return response

    def _events(self, options: Any, first: Json | None, chunks: Any, done: bool, aio: bool) -> Any:
        meta: Json = {}
        if first is not None and HTTP in first:
            meta, first = first[HTTP], None
        headers = {"content-type": EVENTS_TYPE, **(meta.get("headers") or {})}
        stream = byte_streams(self.http)[aio](first, chunks, done)
        response = self.http.Response(
            int(meta.get("status", 200)),
            headers=headers,
            stream=stream,
            request=self.http_request(options),
        )
        response.elapsed = _ZERO
        return response

    def _live_options(self, options: Any) -> Any:
        """The options without the header that asks for a raw response: live, the SDK
        hands back the bare HTTP response."""
        headers = options.headers
        if isinstance(headers, dict) and RAW_RESPONSE_HEADER in headers:
            headers = {k: v for k, v in headers.items() if k != RAW_RESPONSE_HEADER}
            return options.model_copy(update={"headers": headers})
        return options

    def _failed(self, response: Any, exc: Exception) -> Exception:
        if isinstance(exc, self.http.TimeoutException):
            return openai.APITimeoutError(request=response.request)
        if isinstance(exc, self.http.RequestError):
            return openai.APIConnectionError(request=response.request)
        return exc

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

    # -- sync ------------------------------------------------------------------------------
    def sync_request(self) -> Callable[..., Any]:
        cls, client, cas, channel = self.cls, self.client, self.cas, self.channel
        original = cls.request

        def live_json(options: Any) -> Json:
            response = original(client, self.http.Response, self._live_options(options))
            return response_dict(response)

        def live_events(options: Any) -> Iterator[Json]:
            live = self._live_options(options)
            response = original(client, self.http.Response, live, stream=True)
            try:
                meta = http_meta(response, EVENTS_TYPE, _kept)
                if meta:
                    yield {HTTP: meta}
                decoder = client._make_sse_decoder()
                for sse in decoder.iter_bytes(response.iter_bytes()):
                    if sse.data.startswith("[DONE]"):
                        break
                    yield chunk_of(sse)
            except Exception as exc:
                raise self._failed(response, exc) from exc
            finally:
                response.close()

        def request(
            cast_to: Any, options: Any, *, stream: bool = False, stream_cls: Any = None
        ) -> Any:
            if LIVE.get():
                return original(client, cast_to, options, stream=stream, stream_cls=stream_cls)
            cast_to = client._maybe_override_cast_to(cast_to, options)
            req = options_request(options, self.base_path)
            errors = self.errors(options.method, options.url)
            if stream:
                chunks = cas.stream(
                    req,
                    live=lambda: live_events(options),
                    channel=channel,
                    assemble=_ASSEMBLE.get(req["endpoint"]),
                    errors=errors,
                )
                first = next(chunks, None)  # raises here, like the SDK, if the call fails
                response = self._events(options, first, chunks, req["endpoint"] in _DONE, aio=False)
            else:
                data = cas.call(
                    req, live=lambda: live_json(options), channel=channel, errors=errors
                )
                response = self.response(options, data)
            return cls._process_response(
                client,
                cast_to=cast_to,
                options=options,
                response=response,
                stream=stream,
                stream_cls=stream_cls,
            )

        return request

    # -- async -----------------------------------------------------------------------------
    def async_request(self) -> Callable[..., Any]:
        cls, client, cas, channel = self.cls, self.client, self.cas, self.channel
        original = cls.request

        async def live_json(options: Any) -> Json:
            response = await original(client, self.http.Response, self._live_options(options))
            return response_dict(response)

        async def live_events(options: Any) -> AsyncIterator[Json]:
            live = self._live_options(options)
            response = await original(client, self.http.Response, live, stream=True)
            try:
                meta = http_meta(response, EVENTS_TYPE, _kept)
                if meta:
                    yield {HTTP: meta}
                decoder = client._make_sse_decoder()
                async for sse in decoder.aiter_bytes(response.aiter_bytes()):
                    if sse.data.startswith("[DONE]"):
                        break
                    yield chunk_of(sse)
            except Exception as exc:
                raise self._failed(response, exc) from exc
            finally:
                await response.aclose()

        async def request(
            cast_to: Any, options: Any, *, stream: bool = False, stream_cls: Any = None
        ) -> Any:
            if LIVE.get():
                return await original(
                    client, cast_to, options, stream=stream, stream_cls=stream_cls
                )
            cast_to = client._maybe_override_cast_to(cast_to, options)
            req = options_request(options, self.base_path)
            errors = self.errors(options.method, options.url)
            if stream:
                chunks = cas.astream(
                    req,
                    live=lambda: live_events(options),
                    channel=channel,
                    assemble=_ASSEMBLE.get(req["endpoint"]),
                    errors=errors,
                )
                first = await anext(chunks, None)
                response = self._events(options, first, chunks, req["endpoint"] in _DONE, aio=True)
            else:

                async def live() -> Json:
                    return await live_json(options)

                data = await cas.acall(req, live=live, channel=channel, errors=errors)
                response = self.response(options, data)
            return await cls._process_response(
                client,
                cast_to=cast_to,
                options=options,
                response=response,
                stream=stream,
                stream_cls=stream_cls,
            )

        return request
