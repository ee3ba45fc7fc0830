"""The layer of :mod:`cassette.adapters.anthropic` every SDK entry point goes through: the
client's ``request(cast_to, options, stream=..., stream_cls=...)`` (the twin of
:mod:`cassette.adapters._openai_http`, on the same Stainless client architecture).

``Recorder.sync_request`` / ``async_request`` replace it on the wrapped client. A call
becomes a request dict (:func:`options_request`); the answer comes from the cassette, or
from the SDK's own ``request`` asked for the bare HTTP response (retries and status errors
included), turned into a response dict. Either way the SDK gets an HTTP response rebuilt
from that dict and runs its own ``_process_response`` on it, so ``messages.stream()``,
``with_raw_response``, ``with_streaming_response``, pages and ``client.post`` return what
they return live. Response dicts: the JSON body plus ``"$http"`` (status, headers kept)
when there is more to say; a body that is not a JSON object is kept whole in ``"$http"``;
a stream is its events (``{"$http": ...}`` first when there are headers to keep).
"""

from __future__ import annotations

import base64
import datetime
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import Any
from urllib.parse import urlencode, urlsplit

import anthropic
import orjson
import pydantic
from anthropic._constants import RAW_RESPONSE_HEADER
from anthropic._types import NotGiven, Omit

from ..cassette import Cassette
from ..errors import CassetteError
from ._anthropic_errors import AnthropicErrors, http_module
from ._anthropic_stream import assemble_message
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

__all__ = ["HTTP", "Recorder", "assemble_message", "options_request", "response_dict"]

Json = dict[str, Any]
_ZERO = datetime.timedelta(0)
_SENTINELS = (NotGiven, Omit)
_BETA = "anthropic-beta"  # a header that changes what the model does: part of the request


def _kept(name: str) -> bool:
    if name.startswith(("anthropic-ratelimit-", "retry-after")) or name == "request-id":
        return True
    if any(word in name for word in SECRET_WORDS) or name == "anthropic-organization-id":
        return False
    return name.startswith(("x-", "anthropic-")) or name == "content-type"


def response_dict(response: Any) -> Json:
    """The response dict of a read HTTP response: its JSON body, ``"$http"`` added when
    status or headers (those :func:`_kept` keeps) are worth keeping; any other body whole
    inside ``"$http"``."""
    return common_response_dict(response, _kept)


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items() if not isinstance(v, _SENTINELS)}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, pydantic.BaseModel):
        return value.model_dump(mode="json", exclude_unset=True, by_alias=True)
    raise CassetteError(
        f"a request holds a {type(value).__name__}, which a cassette cannot record; "
        "send JSON data (dicts, lists, strings, numbers)"
    )


def options_request(options: Any, base_path: str) -> Json:
    """The request dict of the SDK's ``FinalRequestOptions``: the JSON body (with
    ``extra_body``), the ``anthropic-beta`` header when set, and ``"endpoint"``: the path
    after ``/v1`` in dots (``"messages"``, ``"messages.count_tokens"``), led by the method
    unless it is POST, followed by the query string when there is one."""
    method = str(options.method).upper()
    url = str(options.url)
    path = urlsplit(url).path if "://" in url else "/" + url.lstrip("/")
    if base_path and path.startswith(base_path + "/"):
        path = path[len(base_path) :]
    path = path[3:] if path.startswith("/v1/") else path
    if options.files is not None or getattr(options, "content", None) is not None:
        raise CassetteError(
            f"{method} {path} sends a file or a raw body, which a cassette cannot record or "
            "replay; make this call with a client that wrap_anthropic did not wrap"
        )
    data = options.json_data
    body: Json = dict(_plain(data)) if isinstance(data, Mapping) else {}
    if isinstance(options.extra_json, Mapping):
        body.update(_plain(options.extra_json))
    headers = options.headers if isinstance(options.headers, Mapping) else {}
    beta = next((v for k, v in headers.items() if k.lower() == _BETA), None)
    if isinstance(beta, str):
        body["$" + _BETA] = beta
    endpoint = path.strip("/").replace("/", ".")
    if method != "POST":
        endpoint = f"{method} {endpoint}"
    params = options.params
    if isinstance(params, Mapping) and params:
        query = sorted((str(k), v) for k, v in _plain(params).items() if v is not None)
        if query:
            endpoint += "?" + urlencode(query, doseq=True)
    body["endpoint"] = endpoint
    return body


class Recorder:
    """The cassette side of one wrapped client."""

    def __init__(self, client: Any, cas: Cassette, channel: str) -> None:
        self.client, self.cas, self.channel = client, cas, channel
        self.cls = type(client)
        self.http = http_module(client)
        self.base_path = client.base_url.raw_path.decode().rstrip("/")
        self._errors: dict[str, AnthropicErrors] = {}

    def errors(self, method: str, url: str) -> AnthropicErrors:
        key = method + " " + url
        found = self._errors.get(key)
        if found is None:
            found = self._errors[key] = AnthropicErrors(self.client, url, method)
        return found

    def http_request(self, options: Any) -> Any:
        headers = options.headers if isinstance(options.headers, dict) else {}
        raw = headers.get(RAW_RESPONSE_HEADER)
        url = self.client._prepare_url(options.url)
        return self.http.Request(
            options.method, url, headers={RAW_RESPONSE_HEADER: raw} if raw else None
        )

    def response(self, options: Any, data: Json) -> Any:
        meta = data.get(HTTP)
        status = 200
        if meta is None:
            headers: Json = {"content-type": JSON_TYPE}
            content = orjson.dumps(data)
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

    def events(self, options: Any, first: Json | None, chunks: Any, aio: bool) -> Any:
        meta: Json = {}
        if first is not None and HTTP in first:
            meta, first = first[HTTP], None
        headers = {"content-type": EVENTS_TYPE, **(meta.get("headers") or {})}
        response = self.http.Response(
            int(meta.get("status", 200)),
            headers=headers,
            stream=byte_streams(self.http)[aio](first, chunks, False),
            request=self.http_request(options),
        )
        response.elapsed = _ZERO
        return response

    def live_options(self, options: Any) -> Any:
        headers = options.headers
        if isinstance(headers, dict) and RAW_RESPONSE_HEADER in headers:
            headers = {k: v for k, v in headers.items() if k != RAW_RESPONSE_HEADER}
            return options.model_copy(update={"headers": headers})
        return options

    def failed(self, response: Any, exc: Exception) -> Exception:
        if isinstance(exc, self.http.TimeoutException):
            return anthropic.APITimeoutError(request=response.request)
        if isinstance(exc, self.http.RequestError):
            return anthropic.APIConnectionError(request=response.request)
        return exc

    def sync_request(self) -> Callable[..., Any]:
        cls, client, cas, channel = self.cls, self.client, self.cas, self.channel
        original = cls.request

        def live_events(options: Any) -> Iterator[Json]:
            response = original(client, self.http.Response, self.live_options(options), stream=True)
            try:
                meta = http_meta(response, EVENTS_TYPE, _kept)
                if meta:
                    yield {HTTP: meta}
                decoder = client._make_sse_decoder()
                for sse in decoder.iter_bytes(response.iter_bytes()):
                    yield chunk_of(sse)
            except Exception as exc:
                raise self.failed(response, exc) from exc
            finally:
                response.close()

        def live_json(options: Any) -> Json:
            return response_dict(original(client, self.http.Response, self.live_options(options)))

        def request(
            cast_to: Any, options: Any, *, stream: bool = False, stream_cls: Any = None
        ) -> Any:
            cast_to = client._maybe_override_cast_to(cast_to, options)
            req = options_request(options, self.base_path)
            errors = self.errors(options.method, options.url)
            if stream:
                chunks = cas.stream(
                    req,
                    live=lambda: live_events(options),
                    channel=channel,
                    assemble=assemble_message if req["endpoint"].endswith("messages") else None,
                    errors=errors,
                )
                first = next(chunks, None)  # raises here, like the SDK, if the call fails
                response = self.events(options, first, chunks, aio=False)
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

    def async_request(self) -> Callable[..., Any]:
        cls, client, cas, channel = self.cls, self.client, self.cas, self.channel
        original = cls.request

        async def live_events(options: Any) -> AsyncIterator[Json]:
            live = self.live_options(options)
            response = await original(client, self.http.Response, live, stream=True)
            try:
                meta = http_meta(response, EVENTS_TYPE, _kept)
                if meta:
                    yield {HTTP: meta}
                decoder = client._make_sse_decoder()
                async for sse in decoder.aiter_bytes(response.aiter_bytes()):
                    yield chunk_of(sse)
            except Exception as exc:
                raise self.failed(response, exc) from exc
            finally:
                await response.aclose()

        async def request(
            cast_to: Any, options: Any, *, stream: bool = False, stream_cls: Any = None
        ) -> Any:
            cast_to = client._maybe_override_cast_to(cast_to, options)
            req = options_request(options, self.base_path)
            errors = self.errors(options.method, options.url)
            if stream:
                chunks = cas.astream(
                    req,
                    live=lambda: live_events(options),
                    channel=channel,
                    assemble=assemble_message if req["endpoint"].endswith("messages") else None,
                    errors=errors,
                )
                first = await anext(chunks, None)
                response = self.events(options, first, chunks, aio=True)
            else:

                async def live() -> Json:
                    raw = await original(client, self.http.Response, self.live_options(options))
                    return response_dict(raw)

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
