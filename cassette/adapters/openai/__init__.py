"""Record and replay the openai SDK: ``wrap_openai(client, cas)`` (docs/adapters/openai.md).

The wrapped client is a copy, still an ``OpenAI``; every request goes through the cassette
on channel ``"llm"`` as the JSON body the SDK sends plus ``"endpoint"``. Non-streamed
``chat.completions.create`` and ``responses.create`` take a fast path at the resource; every
other entry point is caught in the client's ``request`` (:mod:`._http`).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import inspect
import sys
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar, cast

import pydantic
from openai import AsyncOpenAI, OpenAI
from openai._constants import OVERRIDE_CAST_TO_HEADER, RAW_RESPONSE_HEADER
from openai._models import FinalRequestOptions
from openai.types.chat import ChatCompletion, ChatCompletionChunk, completion_create_params

from ...errors import CassetteError
from ...replay.cassette import Cassette
from ...types import Json
from .._common.assemble import assemble_chat
from .._common.http_recorder import RECORDER
from ._errors import OpenAIErrors
from ._http import LIVE, Processor, Recorder, without_http
from ._request import build_request, materialise
from ._stream import open_stream, stream_class

__all__ = ["OpenAIErrors", "build_request", "wrap_openai"]

ClientT = TypeVar("ClientT", bound="OpenAI | AsyncOpenAI")
_CONTROL = frozenset({RAW_RESPONSE_HEADER, OVERRIDE_CAST_TO_HEADER})
_WEBSOCKET_CODE = ("openai.resources.", "openai._websocket")


@dataclass(frozen=True)
class _Endpoint:
    name: str  # the request's "endpoint"
    path: str
    result: Any  # the SDK type of a reply
    params: Any  # the SDK's TypedDict of the body
    chunk: Any = None  # the SDK type of a streamed chunk: streams take the fast path too


CHAT = _Endpoint(
    "chat.completions",
    "/chat/completions",
    ChatCompletion,
    completion_create_params.CompletionCreateParamsNonStreaming,
    ChatCompletionChunk,
)


@functools.lru_cache(maxsize=1)
def _responses_endpoint() -> _Endpoint | None:
    try:  # the Responses API arrived in openai 1.66; imported on first use (~0.1 s)
        from openai.types.responses import Response, response_create_params
    except ImportError:  # pragma: no cover - older SDKs
        return None
    params = response_create_params.ResponseCreateParamsNonStreaming
    return _Endpoint("responses", "/responses", Response, params)


# --- create: the fast path ----------------------------------------------------------------


class _Create:
    """What a replaced ``create`` needs: requests built and replies validated here."""

    def __init__(self, recorder: Recorder, endpoint: _Endpoint, create: Any) -> None:
        self.recorder, self.endpoint, self.create = recorder, endpoint, create
        self.cas, self.channel = recorder.cas, recorder.channel
        self.errors = recorder.errors("POST", endpoint.path)
        signature = inspect.signature(create)
        self.accepts = frozenset(signature.parameters)
        self.required = frozenset(
            name
            for name, p in signature.parameters.items()
            if p.default is p.empty and p.kind is p.KEYWORD_ONLY
        )
        aio = isinstance(recorder.client, AsyncOpenAI)
        self.streams: Any = stream_class(endpoint.chunk, aio) if endpoint.chunk else None
        self._ok: Any = None
        self._options: dict[Any, FinalRequestOptions] = {}

    def options(self, headers: Mapping[str, Any] | None) -> FinalRequestOptions:
        """Request options as the SDK would have made them, to change (a copy)."""
        return copy.copy(self.template(headers))

    def template(self, headers: Mapping[str, Any] | None) -> FinalRequestOptions:
        """Request options as the SDK would have made them, one per headers: not to be
        changed (``_maybe_override_cast_to`` changes its own, so ``respond`` copies)."""
        headers = headers or {}
        try:
            key: Any = frozenset(headers.items())
        except TypeError:
            key = None
        template = self._options.get(key)
        if template is None:
            template = FinalRequestOptions.construct(
                method="post", url=self.endpoint.path, headers=dict(headers)
            )
            if key is not None:
                self._options[key] = template
        return template

    def respond(self, headers: Mapping[str, Any] | None, http: Any, stream: bool = False) -> Any:
        """What the SDK returns for the HTTP response ``http(options)`` rebuilds (an object,
        a stream or a raw response; an awaitable for an async client)."""
        options = self.options(headers)
        cast_to = self.recorder.client._maybe_override_cast_to(self.endpoint.result, options)
        streams = self.streams if stream else None
        return self.recorder.process(cast_to, options, http(options), stream, streams)

    def stream(
        self, headers: Any, request: Json, first: Json | None, chunks: Any, raw: bool = False
    ) -> Any:
        """The SDK's stream over ``first`` and the rest of ``chunks``: made as the SDK's
        ``_process_response`` makes it, its HTTP response rebuilt when first read; ``raw``
        (a header asks for the raw response): that response, rebuilt now (awaitable for
        an async client)."""
        if raw:
            events = partial(self.recorder.events, request=request, first=first, chunks=chunks)
            return self.respond(headers, events, True)
        options = self.template(headers)  # (the SDK's stream only reads its options)
        make = partial(self.recorder.events, options, request, first, chunks)
        client, chunk = self.recorder.client, self.endpoint.chunk
        return open_stream(self.streams, chunk, client, options, make, first, chunks)

    def request(self, kwargs: Mapping[str, Any]) -> Json:
        if not (kwargs.keys() <= self.accepts and self.required <= kwargs.keys()):
            inspect.signature(self.create).bind(**kwargs)  # the SDK's own TypeError
        return build_request(self.endpoint.name, self.endpoint.params, kwargs)

    def raw_kwargs(self, kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """The arguments that make the SDK hand back the live HTTP response, read."""
        headers = {
            k: v for k, v in (kwargs.get("extra_headers") or {}).items() if k not in _CONTROL
        }
        headers[RAW_RESPONSE_HEADER] = "raw"
        return {**kwargs, "extra_headers": headers}

    def build(self, data: Json) -> Any:
        """The SDK object of a reply: validated by pydantic (as the SDK's lenient
        construction, at a twentieth of the cost), else built the SDK's own way."""
        data, result = without_http(data), self.endpoint.result
        validate: Any = Processor.validator(result)  # (not None: a type of _http._VALIDATED)
        try:
            return validate(data)
        except pydantic.ValidationError:
            if self._ok is None:
                self._ok = self.errors.response(200, headers={"content-type": "application/json"})
            cls = self.recorder.cls
            return cls._process_response_data(
                self.recorder.client, data=data, cast_to=result, response=self._ok
            )


@contextlib.contextmanager
def _live() -> Iterator[None]:
    """Around the SDK's own ``create`` (live): its ``request`` goes straight through."""
    token = LIVE.set(True)
    try:
        yield
    finally:
        LIVE.reset(token)


def _sync_create(call: _Create) -> Callable[..., Any]:
    def live(kwargs: dict[str, Any]) -> Json:
        with _live():
            raw = call.create(**call.raw_kwargs(kwargs))
        return call.recorder.response_dict(raw.http_response)

    def live_events(kwargs: dict[str, Any]) -> Iterator[Json]:
        with _live():
            raw = call.create(**call.raw_kwargs(kwargs))
        yield from call.recorder.sse_chunks(raw.http_response)

    def create(**kwargs: Any) -> Any:
        stream = kwargs.get("stream")
        if stream and call.streams is None:  # streams of this endpoint go the SDK's way
            return call.create(**kwargs)
        kwargs = materialise(kwargs)
        request, headers = call.request(kwargs), kwargs.get("extra_headers")
        raw = headers and _CONTROL & headers.keys()  # with_raw/streaming_response
        if stream:
            chunks = call.cas.stream(
                request, lambda: live_events(kwargs), channel=call.channel,
                assemble=assemble_chat, errors=call.errors,
            )  # fmt: skip
            first = next(chunks, None)  # raises here, like the SDK, if the call fails
            return call.stream(headers, request, first, chunks, bool(raw))
        data = call.cas.call(
            request, lambda: live(kwargs), channel=call.channel, errors=call.errors
        )
        if raw:
            return call.respond(headers, partial(call.recorder.response, data=data))
        return call.build(data)

    return create


def _async_create(call: _Create) -> Callable[..., Any]:
    async def live(kwargs: dict[str, Any]) -> Json:
        with _live():
            raw = await call.create(**call.raw_kwargs(kwargs))
        return call.recorder.response_dict(raw.http_response)

    async def live_events(kwargs: dict[str, Any]) -> AsyncIterator[Json]:
        with _live():
            raw = await call.create(**call.raw_kwargs(kwargs))
        async for chunk in call.recorder.asse_chunks(raw.http_response):
            yield chunk

    async def create(**kwargs: Any) -> Any:
        stream = kwargs.get("stream")
        if stream and call.streams is None:  # streams of this endpoint go the SDK's way
            return await call.create(**kwargs)
        kwargs = materialise(kwargs)
        request, headers = call.request(kwargs), kwargs.get("extra_headers")
        raw = headers and _CONTROL & headers.keys()  # with_raw/streaming_response
        if stream:
            chunks = call.cas.astream(
                request, lambda: live_events(kwargs), channel=call.channel,
                assemble=assemble_chat, errors=call.errors,
            )  # fmt: skip
            first = await anext(chunks, None)
            made = call.stream(headers, request, first, chunks, bool(raw))
            return await made if raw else made  # (a raw response is made asynchronously)
        data = await call.cas.acall(
            request, lambda: live(kwargs), channel=call.channel, errors=call.errors
        )
        if raw:
            return await call.respond(headers, partial(call.recorder.response, data=data))
        return call.build(data)

    return create


def _install(client: Any, name: str, found: Any) -> Any:
    """Put the fast ``create`` on ``chat.completions`` or ``responses`` (``name``, as
    ``found``) of a wrapped client, when first reached."""
    resource, endpoint = (
        (found.completions, CHAT) if name == "chat" else (found, _responses_endpoint())
    )
    recorder = vars(client).get(RECORDER)
    if recorder is None or endpoint is None or "create" in vars(resource):
        return found
    factory = _async_create if isinstance(client, AsyncOpenAI) else _sync_create
    vars(resource)["create"] = factory(_Create(recorder, endpoint, resource.create))
    return found


# --- the wrapped client's class -----------------------------------------------------------


def _refuse_websocket() -> CassetteError:
    frame: Any = sys._getframe(2)
    while frame is not None and not type(frame.f_locals.get("self")).__module__.startswith(
        _WEBSOCKET_CODE
    ):
        frame = frame.f_back
    who = type(frame.f_locals["self"]).__name__ if frame is not None else "the SDK"
    return CassetteError(
        f"{who} of connect() opens a websocket connection, which a cassette cannot record "
        "or replay; open it with a client that wrap_openai did not wrap"
    )


_CLASSES: dict[type[Any], type[Any]] = {}
_LAZY = ("chat", "responses")  # the resources with a fast ``create``


def _wrapped_class(cls: type[Any]) -> type[Any]:
    """A subclass of the client's class, same name, that installs the fast ``create`` on
    ``chat.completions`` and ``responses`` when first used, and refuses websockets."""
    made = _CLASSES.get(cls)
    if made is not None:
        return made
    parent_auth = cls.auth_headers

    def lazy(name: str, parent: Any) -> functools.cached_property[Any]:
        return functools.cached_property(
            lambda self: _install(self, name, parent.__get__(self, cls))
        )

    def auth_headers(self: Any) -> Any:
        caller = sys._getframe(1).f_globals.get("__name__", "")
        if RECORDER in vars(self) and caller.startswith(_WEBSOCKET_CODE):
            raise _refuse_websocket()
        return parent_auth.__get__(self, cls)

    namespace: dict[str, Any] = {
        "__module__": cls.__module__,
        "__qualname__": cls.__qualname__,
        "__doc__": cls.__doc__,
        "_cassette_base": cls,
        "auth_headers": property(auth_headers),
    }
    for name in _LAZY:
        parent = getattr(cls, name, None)
        if parent is not None:  # else the SDK builds it in __init__: wrap_openai installs it
            namespace[name] = lazy(name, parent)
    made = _CLASSES[cls] = type(cls.__name__, (cls,), namespace)  # (type() sets their names)
    return made


def wrap_openai(client: ClientT, cas: Cassette, *, channel: str = "llm") -> ClientT:
    """A copy of ``client`` (an ``OpenAI`` or ``AsyncOpenAI``, and still one) whose every
    request goes through ``cas``; ``client`` itself is left unchanged."""
    if not isinstance(client, (OpenAI, AsyncOpenAI)):
        raise TypeError(f"wrap_openai takes an openai.OpenAI or AsyncOpenAI, not {client!r}")
    base: type[Any] = getattr(type(client), "_cassette_base", type(client))
    wrapped = base.copy(client)  # the class's copy: a wrapped client copies unwrapped
    wrapped.__class__ = _wrapped_class(base)
    recorder = Recorder(wrapped, cas, channel)
    recorder.attach(isinstance(wrapped, AsyncOpenAI), wrap_openai)
    vars(wrapped)["_process_response_data"] = recorder.process_response_data()
    for name in _LAZY:  # SDKs that build them eagerly
        if name in vars(wrapped):
            _install(wrapped, name, vars(wrapped)[name])
    return cast(ClientT, wrapped)
