"""The request layer the HTTP-level adapters (``_openai_http``, ``_anthropic_http``) share:
both SDKs are Stainless clients, and every entry point goes through the client's
``request(cast_to, options, stream=..., stream_cls=...)``.

:meth:`HttpRecorder.sync_request` / :meth:`~HttpRecorder.async_request` replace it on the
wrapped client. A call becomes a request dict (:meth:`~HttpRecorder.request_dict`); the
answer comes from the cassette, or from the SDK's own ``request`` asked for the bare HTTP
response (its retries and status errors included), turned into a response dict. Either way
the SDK gets an HTTP response rebuilt from that dict and runs its own ``_process_response``
on it. A subclass says what differs per SDK: its error classes and codec, the request dict,
the headers kept, the stream assembler of an endpoint and which streams end with ``[DONE]``.
"""

from __future__ import annotations

import base64
import contextvars
import datetime
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, ClassVar, Generic, TypeVar

import orjson

from ...replay.cassette import Cassette
from ...replay.modes import ErrorCodec
from ...types import Json
from .http import (
    EVENTS_TYPE,
    HTTP,
    JSON_TYPE,
    byte_streams,
    chunk_of,
    http_meta,
    response_dict,
)

__all__ = ["HttpRecorder"]

Assemble = Callable[[list[Json]], Json]
E = TypeVar("E", bound=ErrorCodec)
_ZERO = datetime.timedelta(0)


class HttpRecorder(Generic[E]):
    """The cassette side of one wrapped client (shared by its resources); ``E`` is the
    SDK's :class:`cassette.ErrorCodec`."""

    raw_header: ClassVar[str]  # the request header that asks the SDK for a raw response
    timeout_error: ClassVar[Callable[..., Exception]]  # the SDK's, built with request=
    connection_error: ClassVar[Callable[..., Exception]]
    stop_at_done: ClassVar[bool] = False  # a live stream ends at a ``data: [DONE]`` event
    done_endpoints: ClassVar[frozenset[str]] = frozenset()  # replayed streams end with it
    passthrough: ClassVar[contextvars.ContextVar[bool] | None] = None  # set: SDK's request

    def __init__(self, client: Any, cas: Cassette, channel: str) -> None:
        self.client, self.cas, self.channel = client, cas, channel
        self.cls = type(client)
        self.http = self.http_module(client)
        self.base_path = client.base_url.raw_path.decode().rstrip("/")
        self._errors: dict[str, E] = {}

    # -- per SDK ---------------------------------------------------------------------------
    @staticmethod
    def http_module(client: Any) -> Any:
        """The HTTP library the client runs on."""
        raise NotImplementedError

    @staticmethod
    def kept(name: str) -> bool:
        """Whether a cassette keeps a response header."""
        raise NotImplementedError

    def new_errors(self, url: str, method: str) -> E:
        """The error codec of calls to ``method url``."""
        raise NotImplementedError

    def request_dict(self, options: Any) -> Json:
        """The request dict of the SDK's ``FinalRequestOptions``."""
        raise NotImplementedError

    def assembler(self, endpoint: str) -> Assemble | None:
        """What assembles a stream of ``endpoint`` into one response dict, if anything."""
        return None

    def prepare_url(self, url: str) -> Any:
        return self.client._prepare_url(url)

    # -- helpers ---------------------------------------------------------------------------
    def errors(self, method: str, url: str) -> E:
        key = method + " " + url
        codec = self._errors.get(key)
        if codec is None:
            codec = self._errors[key] = self.new_errors(url, method)
        return codec

    def response_dict(self, response: Any) -> Json:
        return response_dict(response, self.kept)

    def http_request(self, options: Any) -> Any:
        """The request a rebuilt response answers (what the SDK reads of it: the URL, and
        the header that asks for a raw response)."""
        url = self.prepare_url(options.url)
        headers = options.headers if isinstance(options.headers, dict) else {}
        raw = headers.get(self.raw_header)
        return self.http.Request(
            options.method, url, headers={self.raw_header: raw} if raw else None
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
                content = orjson.dumps({k: v for k, v in data.items() if k != HTTP})
        response = self.http.Response(
            status, headers=headers, content=content, request=self.http_request(options)
        )
        response.elapsed = _ZERO
        return response

    def events(self, options: Any, first: Json | None, chunks: Any, done: bool, aio: bool) -> Any:
        """The HTTP response of a stream: ``first`` (its ``"$http"``, or its first event)
        then ``chunks``, closed by ``data: [DONE]`` if ``done``."""
        meta: Json = {}
        if first is not None and HTTP in first:
            meta, first = first[HTTP], None
        headers = {"content-type": EVENTS_TYPE, **(meta.get("headers") or {})}
        response = self.http.Response(
            int(meta.get("status", 200)),
            headers=headers,
            stream=byte_streams(self.http)[aio](first, chunks, done),
            request=self.http_request(options),
        )
        response.elapsed = _ZERO
        return response

    def live_options(self, options: Any) -> Any:
        """The options without the header that asks for a raw response: live, the SDK
        hands back the bare HTTP response."""
        headers = options.headers
        if isinstance(headers, dict) and self.raw_header in headers:
            headers = {k: v for k, v in headers.items() if k != self.raw_header}
            return options.model_copy(update={"headers": headers})
        return options

    def failed(self, response: Any, exc: Exception) -> Exception:
        """The SDK's error for a stream that broke while read."""
        if isinstance(exc, self.http.TimeoutException):
            return self.timeout_error(request=response.request)
        if isinstance(exc, self.http.RequestError):
            return self.connection_error(request=response.request)
        return exc

    def _passing(self) -> bool:
        return self.passthrough is not None and self.passthrough.get()

    # -- sync ------------------------------------------------------------------------------
    def sync_request(self) -> Callable[..., Any]:
        cls, client, cas, channel = self.cls, self.client, self.cas, self.channel
        original = cls.request

        def live_json(options: Any) -> Json:
            response = original(client, self.http.Response, self.live_options(options))
            return self.response_dict(response)

        def live_events(options: Any) -> Iterator[Json]:
            live = self.live_options(options)
            response = original(client, self.http.Response, live, stream=True)
            try:
                meta = http_meta(response, EVENTS_TYPE, self.kept)
                if meta:
                    yield {HTTP: meta}
                decoder = client._make_sse_decoder()
                for sse in decoder.iter_bytes(response.iter_bytes()):
                    if self.stop_at_done and sse.data.startswith("[DONE]"):
                        break
                    yield chunk_of(sse)
            except Exception as exc:
                raise self.failed(response, exc) from exc
            finally:
                response.close()

        def request(
            cast_to: Any, options: Any, *, stream: bool = False, stream_cls: Any = None
        ) -> Any:
            if self._passing():
                return original(client, cast_to, options, stream=stream, stream_cls=stream_cls)
            cast_to = client._maybe_override_cast_to(cast_to, options)
            req = self.request_dict(options)
            errors = self.errors(options.method, options.url)
            if stream:
                endpoint = req["endpoint"]
                chunks = cas.stream(
                    req,
                    live=lambda: live_events(options),
                    channel=channel,
                    assemble=self.assembler(endpoint),
                    errors=errors,
                )
                first = next(chunks, None)  # raises here, like the SDK, if the call fails
                done = endpoint in self.done_endpoints
                response = self.events(options, first, chunks, done, aio=False)
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
            response = await original(client, self.http.Response, self.live_options(options))
            return self.response_dict(response)

        async def live_events(options: Any) -> AsyncIterator[Json]:
            live = self.live_options(options)
            response = await original(client, self.http.Response, live, stream=True)
            try:
                meta = http_meta(response, EVENTS_TYPE, self.kept)
                if meta:
                    yield {HTTP: meta}
                decoder = client._make_sse_decoder()
                async for sse in decoder.aiter_bytes(response.aiter_bytes()):
                    if self.stop_at_done and sse.data.startswith("[DONE]"):
                        break
                    yield chunk_of(sse)
            except Exception as exc:
                raise self.failed(response, exc) from exc
            finally:
                await response.aclose()

        async def request(
            cast_to: Any, options: Any, *, stream: bool = False, stream_cls: Any = None
        ) -> Any:
            if self._passing():
                return await original(
                    client, cast_to, options, stream=stream, stream_cls=stream_cls
                )
            cast_to = client._maybe_override_cast_to(cast_to, options)
            req = self.request_dict(options)
            errors = self.errors(options.method, options.url)
            if stream:
                endpoint = req["endpoint"]
                chunks = cas.astream(
                    req,
                    live=lambda: live_events(options),
                    channel=channel,
                    assemble=self.assembler(endpoint),
                    errors=errors,
                )
                first = await anext(chunks, None)
                done = endpoint in self.done_endpoints
                response = self.events(options, first, chunks, done, aio=True)
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
