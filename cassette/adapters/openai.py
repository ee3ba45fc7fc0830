"""Record and replay the openai SDK: ``wrap_openai(client, cas)``.

.. code-block:: python

    import cassette
    from cassette.adapters.openai import wrap_openai
    from openai import OpenAI

    with cassette.open("runs/a.jsonl", mode="auto") as cas:
        client = wrap_openai(OpenAI(), cas)            # still an openai.OpenAI
        with cassette.episode(0):
            reply = client.chat.completions.create(model="gpt-4o-mini", messages=[...])

The wrapped client is a copy (``client.with_options()``) whose ``chat.completions.create``
and ``responses.create`` are replaced on the resource instances; the client passed in is
left as it was. Each call becomes a request dict (the JSON body the SDK would send, plus
``"endpoint"``; never host, port, API key, headers or timeout) on channel ``"llm"`` of the
current :func:`cassette.episode`. Replies are rebuilt with the SDK's own helpers into its
own types (``ChatCompletion``, ``Response``, a ``Stream`` of ``ChatCompletionChunk`` or
response events); API errors replay as the same ``openai`` exception.

``with_raw_response``, ``with_streaming_response`` and ``parse`` (on the client and on the
two resources) raise :class:`cassette.CassetteError`: they read raw HTTP responses or post
around ``create``, so they could neither be recorded nor replayed faithfully. Other
resources (files, models, ...) pass through to the live API unrecorded.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import pydantic
from openai import AsyncOpenAI, OpenAI
from openai._types import NotGiven, Omit
from openai._utils import maybe_transform
from openai.types.chat import ChatCompletion, ChatCompletionChunk, completion_create_params

from ..cassette import Cassette
from ..errors import CassetteError
from ._openai_errors import OpenAIErrors
from ._openai_stream import (
    CassetteAsyncStream,
    CassetteStream,
    assemble_chat,
    assemble_response,
    dump,
)

__all__ = ["OpenAIErrors", "wrap_openai"]

ClientT = TypeVar("ClientT", bound="OpenAI | AsyncOpenAI")
Json = dict[str, Any]
_TRANSPORT = frozenset({"extra_headers", "extra_query", "extra_body", "timeout"})
_UNSUPPORTED = ("with_raw_response", "with_streaming_response")


@dataclass(frozen=True)
class _Endpoint:
    name: str  # the request's "endpoint"
    path: str
    result: Any  # the SDK type of a reply
    event: Any  # the SDK type of a stream chunk
    params: tuple[Any, Any]  # the SDK's TypedDicts of the body (not streamed, streamed)
    assemble: Callable[[list[Json]], Json]


CHAT = _Endpoint(
    "chat.completions",
    "/chat/completions",
    ChatCompletion,
    ChatCompletionChunk,
    (
        completion_create_params.CompletionCreateParamsNonStreaming,
        completion_create_params.CompletionCreateParamsStreaming,
    ),
    assemble_chat,
)


def _responses_endpoint() -> _Endpoint | None:
    try:  # the Responses API arrived in openai 1.66
        from openai.types.responses import Response, ResponseStreamEvent, response_create_params
    except ImportError:  # pragma: no cover - older SDKs
        return None
    return _Endpoint(
        "responses",
        "/responses",
        Response,
        ResponseStreamEvent,
        (
            response_create_params.ResponseCreateParamsNonStreaming,
            response_create_params.ResponseCreateParamsStreaming,
        ),
        assemble_response,
    )


RESPONSES = _responses_endpoint()


# --- requests -----------------------------------------------------------------------------


class _NeedsTransform(Exception):
    """A value that only the SDK's own transform knows how to send (files, dates, ...)."""


_SCALARS = (str, int, float, bool, type(None))


def _plain(value: Any) -> Any:
    """JSON-able data: SDK sentinels dropped, pydantic objects dumped as the SDK sends them.

    Copy-on-write: JSON-native data comes back as the same object, so building the request
    of a long conversation costs a walk, not a copy. Anything else raises _NeedsTransform.
    """
    kind = type(value)
    if kind is str or kind is int or kind is float or kind is bool or value is None:
        return value
    if isinstance(value, _SCALARS):
        return value
    if kind is dict or isinstance(value, Mapping):
        out = {k: _plain(v) for k, v in value.items() if not isinstance(v, (NotGiven, Omit))}
        same = isinstance(value, dict) and len(out) == len(value)
        return value if same and all(out[k] is value[k] for k in out) else out
    if kind is list or isinstance(value, (list, tuple)):
        items = [_plain(v) for v in value]
        same = isinstance(value, list) and all(a is b for a, b in zip(items, value, strict=True))
        return value if same else items
    if isinstance(value, pydantic.BaseModel):
        exclude = getattr(value, "__api_exclude__", None)
        return value.model_dump(mode="json", exclude_unset=True, by_alias=True, exclude=exclude)
    raise _NeedsTransform(type(value).__name__)


def build_request(endpoint: str, params: Any, kwargs: Mapping[str, Any]) -> Json:
    """The request dict of a ``create(**kwargs)`` call: the JSON body that the SDK sends
    (``extra_body`` merged in as the SDK does) plus ``"endpoint"``.

    Chat and Responses parameters have no aliases or formats, so for JSON-native arguments
    the SDK's ``maybe_transform`` (about 2 ms a call) is the identity plus model dumps:
    a walk does the same work; anything else goes through ``maybe_transform``.
    """
    given = {k: v for k, v in kwargs.items() if k not in _TRANSPORT}
    try:
        body: Json = dict(_plain(given))
    except _NeedsTransform:
        body = _plain(maybe_transform(given, params))
    extra = kwargs.get("extra_body")
    if isinstance(extra, Mapping):
        body.update(_plain(extra))
    body["endpoint"] = endpoint
    return body


def _materialise(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Iterators (``messages=(m for m in ...)``) become lists: read for the key and live."""
    return {k: list(v) if isinstance(v, Iterator) else v for k, v in kwargs.items()}


# --- the wrapped client -------------------------------------------------------------------


class _NotRecorded:
    """Stands for an SDK entry point that a cassette cannot serve; any use says why."""

    def __init__(self, where: str) -> None:
        self._where = where

    def _fail(self, what: str) -> CassetteError:
        return CassetteError(
            f"{what} is not supported on a client wrapped by wrap_openai: it reads raw HTTP "
            "responses or posts around create(), so a cassette could not replay it. Call "
            "create() on the wrapped client, or use the unwrapped client for calls that "
            "should not be recorded"
        )

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise self._fail(f"{self._where}.{name}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise self._fail(f"{self._where}()")

    def __repr__(self) -> str:
        return f"<not recorded: {self._where}>"


@dataclass
class _Call:
    """What a replaced ``create`` needs: the wrapped client, cassette, endpoint, originals."""

    client: Any
    cas: Cassette
    channel: str
    endpoint: _Endpoint
    create: Callable[..., Any]  # the resource's own create
    raw_create: Callable[..., Any]  # its with_raw_response.create

    def __post_init__(self) -> None:
        self.errors = OpenAIErrors(self.client, self.endpoint.path)
        signature = inspect.signature(self.create)
        self.accepts = frozenset(signature.parameters)
        self.required = frozenset(
            name
            for name, p in signature.parameters.items()
            if p.default is p.empty and p.kind is p.KEYWORD_ONLY
        )
        self._ok: Any = None

    def request(self, kwargs: Mapping[str, Any]) -> Json:
        if not (kwargs.keys() <= self.accepts and self.required <= kwargs.keys()):
            self._wrong_arguments(kwargs)
        params = self.endpoint.params[bool(kwargs.get("stream"))]
        return build_request(self.endpoint.name, params, kwargs)

    def _wrong_arguments(self, kwargs: Mapping[str, Any]) -> None:
        """A wrong or missing argument: the same TypeError as the live SDK call."""
        inspect.signature(self.create).bind(**kwargs)

    def ok(self) -> Any:
        """A 200 response of the client's HTTP library, for the SDK's builders."""
        if self._ok is None:
            self._ok = self.errors.response(200, headers={"content-type": "application/json"})
        return self._ok

    def build(self, data: Json, cast_to: Any) -> Any:
        """An SDK object from its JSON, built the way the client builds what it receives.

        Validating the JSON with pydantic gives the same object as the SDK's lenient
        construction (both keep unknown fields) at a twentieth of the cost; data that does
        not validate goes the SDK's own way (constructed leniently, or its strict error).
        """
        try:
            return _adapter(cast_to).validate_python(data)
        except pydantic.ValidationError:
            return self.client._process_response_data(
                data=data, cast_to=cast_to, response=self.ok()
            )

    def chunk(self, data: Json) -> Any:
        return self.build(data, self.endpoint.event)


@functools.lru_cache(maxsize=64)
def _adapter(cast_to: Any) -> pydantic.TypeAdapter[Any]:
    return pydantic.TypeAdapter(cast_to)


def _json_of(raw: Any) -> Json:
    data = raw.http_response.json()
    if not isinstance(data, dict):
        raise CassetteError(f"the API answered {type(data).__name__}, not a JSON object")
    return data


def _stream_of(cls: Any, call: _Call, chunks: Any, first: Any, live_stream: list[Any]) -> Any:
    """The SDK-shaped stream over ``chunks``: the live stream's HTTP response when there
    was one, a 200 stand-in on replay."""
    response = live_stream[0].response if live_stream else call.errors.response(200)
    return cls(
        cast_to=call.endpoint.event,
        response=response,
        client=call.client,
        chunks=chunks,
        first=first,
        build=call.chunk,
    )


def _sync_create(call: _Call) -> Callable[..., Any]:
    def create(**kwargs: Any) -> Any:
        kwargs = _materialise(kwargs)
        request = call.request(kwargs)
        if not kwargs.get("stream"):
            data = call.cas.call(
                request,
                live=lambda: _json_of(call.raw_create(**kwargs)),
                channel=call.channel,
                errors=call.errors,
            )
            return call.build(data, call.endpoint.result)
        live_stream: list[Any] = []

        def live() -> Iterator[Json]:
            stream = call.create(**kwargs)
            live_stream.append(stream)
            with stream:
                for item in stream:
                    yield dump(item)

        chunks = call.cas.stream(
            request,
            live=live,
            channel=call.channel,
            assemble=call.endpoint.assemble,
            errors=call.errors,
        )
        first = next(chunks, None)  # raises here, like the SDK, if the call fails at once
        return _stream_of(CassetteStream[Any], call, chunks, first, live_stream)

    return create


def _async_create(call: _Call) -> Callable[..., Any]:
    async def create(**kwargs: Any) -> Any:
        kwargs = _materialise(kwargs)
        request = call.request(kwargs)
        if not kwargs.get("stream"):

            async def live_once() -> Json:
                return _json_of(await call.raw_create(**kwargs))

            data = await call.cas.acall(
                request, live=live_once, channel=call.channel, errors=call.errors
            )
            return call.build(data, call.endpoint.result)
        live_stream: list[Any] = []

        async def live() -> AsyncIterator[Json]:
            stream = await call.create(**kwargs)
            live_stream.append(stream)
            async with stream:
                async for item in stream:
                    yield dump(item)

        chunks = call.cas.astream(
            request,
            live=live,
            channel=call.channel,
            assemble=call.endpoint.assemble,
            errors=call.errors,
        )
        first = await anext(chunks, None)
        return _stream_of(CassetteAsyncStream[Any], call, chunks, first, live_stream)

    return create


def _resource(client: Any, path: str) -> Any:
    for part in path.split("."):  # resources are attributes or cached properties
        client = getattr(client, part, None)
    return client


def _refuse(resource: Any, where: str, names: tuple[str, ...]) -> None:
    vars(resource).update({name: _NotRecorded(f"{where}.{name}") for name in names})


def wrap_openai(client: ClientT, cas: Cassette, *, channel: str = "llm") -> ClientT:
    """A copy of ``client`` (same type) whose chat.completions.create and responses.create
    go through ``cas``; ``client`` itself is left unchanged."""
    if not isinstance(client, (OpenAI, AsyncOpenAI)):
        raise TypeError(f"wrap_openai takes an openai.OpenAI or AsyncOpenAI, not {client!r}")
    copy_of: Any = type(client).copy  # the class's copy: a wrapped client copies unwrapped
    wrapped = copy_of(client)
    factory = _async_create if isinstance(wrapped, AsyncOpenAI) else _sync_create
    for endpoint, path in ((CHAT, "chat.completions"), (RESPONSES, "responses")):
        resource = _resource(wrapped, path)
        if endpoint is None or resource is None:
            continue
        own, raw = resource.create, resource.with_raw_response.create  # before replacing
        _refuse(resource, f"client.{path}", (*_UNSUPPORTED, "parse"))
        vars(resource)["create"] = factory(_Call(wrapped, cas, channel, endpoint, own, raw))
    beta = _resource(wrapped, "beta.chat.completions")  # openai < 1.9x: the parse helper
    if beta is not None and hasattr(beta, "parse"):
        _refuse(beta, "client.beta.chat.completions", ("parse",))

    def copy(**options: Any) -> Any:
        return wrap_openai(copy_of(wrapped, **options), cas, channel=channel)

    _refuse(wrapped, "client", _UNSUPPORTED)
    vars(wrapped).update(copy=copy, with_options=copy)
    return cast(ClientT, wrapped)
