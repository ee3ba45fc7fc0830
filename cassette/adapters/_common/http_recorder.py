"""The request layer the Stainless SDKs (openai, anthropic) share: the client's ``request``
goes through the cassette, whose answer is rebuilt as an HTTP response the SDK processes
itself, so raw and streaming responses, helpers and pages work as live."""

from __future__ import annotations

import base64
import contextvars
import datetime
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, ClassVar

import orjson

from ...replay.cassette import Cassette
from ...types import Json
from .http import EVENTS_TYPE, HTTP, JSON_TYPE, byte_streams, chunk_of, http_meta, response_dict
from .sdk_errors import SdkErrors, http_module

__all__ = ["RECORDER", "HttpRecorder"]

Assemble = Callable[[list[Json]], Json]
RECORDER = "_cassette_recorder"  # where a wrapped client keeps its recorder
_ZERO = datetime.timedelta(0)


class HttpRecorder:
    """The cassette side of one wrapped client (shared by its resources)."""

    codec: ClassVar[type[SdkErrors]]  # the SDK's error codec (and through it, the SDK)
    raw_header: ClassVar[str]  # the request header that asks the SDK for a raw response
    stop_at_done: ClassVar[bool] = False  # a live stream ends at a ``data: [DONE]`` event
    done_endpoints: ClassVar[frozenset[str]] = frozenset()  # replayed streams end with it
    passthrough: ClassVar[contextvars.ContextVar[bool] | None] = None  # set: SDK's request

    def __init__(self, client: Any, cas: Cassette, channel: str) -> None:
        self.client, self.cas, self.channel = client, cas, channel
        self.cls, self.sdk = type(client), self.codec.sdk
        self.http = http_module(client, self.sdk.__name__)
        self.base_path = client.base_url.raw_path.decode().rstrip("/")
        self._errors: dict[str, SdkErrors] = {}
        self._requests: dict[tuple[Any, ...], Any] = {}  # (method, url, raw header): request

    def attach(self, aio: bool, wrap: Callable[..., Any]) -> None:
        """Put this recorder on its client; its copies (``with_options``) are ``wrap``-ped."""
        client, copy_of = self.client, self.cls.copy  # the class's: copies unwrapped
        request = self.async_request() if aio else self.sync_request()

        def copy(*args: Any, **options: Any) -> Any:
            return wrap(copy_of(client, *args, **options), self.cas, channel=self.channel)

        vars(client).update({RECORDER: self}, request=request, copy=copy, with_options=copy)

    @staticmethod
    def kept(name: str) -> bool:
        """Whether a cassette keeps a response header."""
        raise NotImplementedError

    def request_dict(self, options: Any) -> Json:
        """The request dict of the SDK's ``FinalRequestOptions``."""
        raise NotImplementedError

    def assembler(self, endpoint: str) -> Assemble | None:
        """What assembles a stream of ``endpoint`` into one response dict, if anything."""
        return None

    def errors(self, method: str, url: str) -> SdkErrors:
        key = method + " " + url
        codec = self._errors.get(key)
        if codec is None:
            codec = self._errors[key] = self.codec(self.client, url, method)
        return codec

    def response_dict(self, response: Any) -> Json:
        return response_dict(response, self.kept)

    def http_request(self, options: Any) -> Any:
        """The request a rebuilt response answers (its URL, the raw-response header): a copy
        of the one built first for these."""
        headers = options.headers if isinstance(options.headers, dict) else {}
        raw = headers.get(self.raw_header)
        key = (options.method, options.url, raw)
        made = self._requests.get(key)
        if made is None:
            url = self.client._prepare_url(options.url)
            extra = {self.raw_header: raw} if raw else None
            made = self._requests[key] = self.http.Request(options.method, url, headers=extra)
        request = object.__new__(type(made))  # (a tenth of building one anew)
        vars(request).update(vars(made), headers=made.headers.copy(), extensions={})
        return request

    def _rebuilt(self, options: Any, meta: Json, headers: Json, **body: Any) -> Any:
        status = int(meta.get("status", 200))
        request = self.http_request(options)
        response = self.http.Response(status, headers=headers, request=request, **body)
        response.elapsed = _ZERO
        return response

    def response(self, options: Any, data: Json) -> Any:
        """The HTTP response of a response dict."""
        meta = data.get(HTTP)
        if meta is None:
            return self._rebuilt(
                options, {}, {"content-type": JSON_TYPE}, content=orjson.dumps(data)
            )
        headers = dict(meta.get("headers") or {})
        if "base64" in meta:
            return self._rebuilt(options, meta, headers, content=base64.b64decode(meta["base64"]))
        headers.setdefault("content-type", JSON_TYPE)
        content = orjson.dumps({k: v for k, v in data.items() if k != HTTP})
        return self._rebuilt(options, meta, headers, content=content)

    def events(self, options: Any, request: Json, first: Json | None, chunks: Any) -> Any:
        """The HTTP response of a stream: ``first`` (``"$http"`` or an event), ``chunks``."""
        meta: Json = {}
        if first is not None and HTTP in first:
            meta, first = first[HTTP], None
        done = request["endpoint"] in self.done_endpoints
        stream = byte_streams(self.http)[not isinstance(chunks, Iterator)](first, chunks, done)
        headers = {"content-type": EVENTS_TYPE, **(meta.get("headers") or {})}
        return self._rebuilt(options, meta, headers, stream=stream)

    def live_options(self, options: Any) -> Any:
        """The options without the raw-response header (live, the SDK returns it bare)."""
        headers = options.headers
        if isinstance(headers, dict) and self.raw_header in headers:
            headers = {k: v for k, v in headers.items() if k != self.raw_header}
            return options.model_copy(update={"headers": headers})
        return options

    def failed(self, response: Any, exc: Exception) -> Exception:
        """The SDK's error for a stream that broke while read."""
        if isinstance(exc, self.http.TimeoutException):
            return self.sdk.APITimeoutError(request=response.request)  # type: ignore[no-any-return]
        if isinstance(exc, self.http.RequestError):
            return self.sdk.APIConnectionError(request=response.request)  # type: ignore[no-any-return]
        return exc

    def head(self, response: Any) -> list[Json]:
        """The first chunk of a live stream, if its status or headers are worth keeping."""
        meta = http_meta(response, EVENTS_TYPE, self.kept)
        return [{HTTP: meta}] if meta else []

    def done(self, sse: Any) -> bool:
        return self.stop_at_done and bool(sse.data.startswith("[DONE]"))

    def sse_chunks(self, response: Any) -> Iterator[Json]:
        """The chunk dicts of a live stream's HTTP response (its head first, if kept)."""
        try:
            yield from self.head(response)
            for sse in self.client._make_sse_decoder().iter_bytes(response.iter_bytes()):
                if self.done(sse):
                    break
                yield chunk_of(sse)
        except Exception as exc:
            raise self.failed(response, exc) from exc
        finally:
            response.close()

    async def asse_chunks(self, response: Any) -> AsyncIterator[Json]:
        """Async twin of :meth:`sse_chunks`."""
        try:
            for head in self.head(response):
                yield head
            async for sse in self.client._make_sse_decoder().aiter_bytes(response.aiter_bytes()):
                if self.done(sse):
                    break
                yield chunk_of(sse)
        except Exception as exc:
            raise self.failed(response, exc) from exc
        finally:
            await response.aclose()

    def begin(self, cast_to: Any, options: Any, stream: bool) -> tuple[Any, Json, Json]:
        """(cast_to, the request dict, the keyword arguments of the cassette call)."""
        cast_to = self.client._maybe_override_cast_to(cast_to, options)
        request = self.request_dict(options)
        keys: Json = {"channel": self.channel, "errors": self.errors(options.method, options.url)}
        if stream:
            keys["assemble"] = self.assembler(request["endpoint"])
        return cast_to, request, keys

    def process(self, cast_to: Any, options: Any, response: Any, stream: bool, cls: Any) -> Any:
        """The SDK's own processing of a (rebuilt) response; awaitable on an async client."""
        return self.cls._process_response(
            self.client,
            cast_to=cast_to,
            options=options,
            response=response,
            stream=stream,
            stream_cls=cls,
        )

    def _passing(self) -> bool:
        return self.passthrough is not None and self.passthrough.get()

    def sync_request(self) -> Callable[..., Any]:
        client, original = self.client, self.cls.request

        def live_events(options: Any) -> Iterator[Json]:
            live = self.live_options(options)
            yield from self.sse_chunks(original(client, self.http.Response, live, stream=True))

        def request(
            cast_to: Any, options: Any, *, stream: bool = False, stream_cls: Any = None
        ) -> Any:
            if self._passing():
                return original(client, cast_to, options, stream=stream, stream_cls=stream_cls)
            cast_to, req, keys = self.begin(cast_to, options, stream)
            if stream:
                chunks = self.cas.stream(req, live=lambda: live_events(options), **keys)
                first = next(chunks, None)  # raises here, like the SDK, if the call fails
                response = self.events(options, req, first, chunks)
            else:

                def live() -> Json:
                    raw = original(client, self.http.Response, self.live_options(options))
                    return self.response_dict(raw)

                response = self.response(options, self.cas.call(req, live=live, **keys))
            return self.process(cast_to, options, response, stream, stream_cls)

        return request

    def async_request(self) -> Callable[..., Any]:
        client, original = self.client, self.cls.request

        async def live_events(options: Any) -> AsyncIterator[Json]:
            live = self.live_options(options)
            response = await original(client, self.http.Response, live, stream=True)
            async for chunk in self.asse_chunks(response):
                yield chunk

        async def request(
            cast_to: Any, options: Any, *, stream: bool = False, stream_cls: Any = None
        ) -> Any:
            if self._passing():
                return await original(
                    client, cast_to, options, stream=stream, stream_cls=stream_cls
                )
            cast_to, req, keys = self.begin(cast_to, options, stream)
            if stream:
                chunks = self.cas.astream(req, live=lambda: live_events(options), **keys)
                first = await anext(chunks, None)
                response = self.events(options, req, first, chunks)
            else:

                async def live() -> Json:
                    raw = await original(client, self.http.Response, self.live_options(options))
                    return self.response_dict(raw)

                response = self.response(options, await self.cas.acall(req, live=live, **keys))
            return await self.process(cast_to, options, response, stream, stream_cls)

        return request
