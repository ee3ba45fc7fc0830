"""Request dicts of :mod:`cassette.adapters.openai`: the JSON body the SDK sends plus
``"endpoint"`` (never host, key, headers or timeouts), built either from the keyword
arguments of a ``create`` call (the fast path) or from the SDK's request options (every
other entry point). Both give the same dict for the same call."""

from __future__ import annotations

import base64
import sys
from collections.abc import Iterator, Mapping
from typing import Any

import orjson
import pydantic
from openai._types import NotGiven, Omit
from openai._utils import maybe_transform

from ...errors import CassetteError
from ...types import Json
from .._common.http import endpoint_name, request_path

__all__ = ["build_request", "entry_point", "materialise", "options_request", "refuse"]

_TRANSPORT = frozenset({"extra_headers", "extra_query", "extra_body", "timeout"})
_SENTINELS = (NotGiven, Omit)
_DATA = frozenset({str, int, float, bool, list, dict, type(None)})  # never an iterator


class _NeedsTransform(Exception):
    """A value that only the SDK's own transform knows how to send (files, dates, ...)."""


def _default(value: Any) -> Any:
    """orjson's fallback: SDK models as the SDK sends them; anything else is not ours."""
    if isinstance(value, pydantic.BaseModel):
        exclude = getattr(value, "__api_exclude__", None)
        return value.model_dump(mode="json", exclude_unset=True, by_alias=True, exclude=exclude)
    raise TypeError(type(value).__name__)


def _plain(value: Any) -> Any:
    """JSON-able data, SDK sentinels dropped, models dumped: the slow walk for data that
    one orjson pass cannot take (sentinels nested in dicts). Raises _NeedsTransform."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items() if not isinstance(v, _SENTINELS)}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, pydantic.BaseModel):
        return _default(value)
    raise _NeedsTransform(type(value).__name__)


def to_json(value: Any) -> Any:
    """``value`` as JSON data: itself when orjson takes it as it is (nothing copied: the
    cassette reads a request at once), else a copy with SDK models dumped in one orjson
    pass, else the slow walk (SDK sentinels nested in dicts)."""
    try:
        orjson.dumps(value)
        return value
    except TypeError:
        pass
    try:
        return orjson.loads(orjson.dumps(value, default=_default))
    except TypeError:
        return _plain(value)


def build_request(endpoint: str, params: Any, kwargs: Mapping[str, Any]) -> Json:
    """The request dict of a ``create(**kwargs)`` call: the JSON body that the SDK sends
    (``extra_body`` merged in as the SDK does) plus ``"endpoint"``.

    Chat and Responses parameters have no aliases or formats, so for JSON-native arguments
    the SDK's ``maybe_transform`` (about 2 ms a call) is the identity plus model dumps: one
    orjson pass does the same work; anything else goes through ``maybe_transform``.
    """
    given = {
        k: v for k, v in kwargs.items() if k not in _TRANSPORT and not isinstance(v, _SENTINELS)
    }
    try:
        body: Json = to_json(given)  # a dict of its own, made above
    except _NeedsTransform:
        body = _plain(maybe_transform(given, params))
    extra = kwargs.get("extra_body")
    if isinstance(extra, Mapping):
        body.update(to_json(extra))
    body["endpoint"] = endpoint
    return body


def materialise(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Iterators (``messages=(m for m in ...)``) become lists: read for the key and live."""
    for value in kwargs.values():
        if type(value) not in _DATA and isinstance(value, Iterator):  # (an ABC check: slow)
            return {k: list(v) if isinstance(v, Iterator) else v for k, v in kwargs.items()}
    return kwargs


# --- from the SDK's request options -----------------------------------------------------


def entry_point(method: str, path: str) -> str:
    """The SDK method that sends ``method path``, found on the stack (``Files.create``),
    else the HTTP request itself: what a refusal names."""
    frame = sys._getframe(1)
    while frame is not None:
        owner = frame.f_locals.get("self")
        module = type(owner).__module__
        if module.startswith("openai.resources.") and not frame.f_code.co_name.startswith("_"):
            return f"{type(owner).__name__}.{frame.f_code.co_name} ({method} {path})"
        frame = frame.f_back  # type: ignore[assignment]
    return f"{method} {path}"


def refuse(method: str, path: str, what: str) -> CassetteError:
    return CassetteError(
        f"{entry_point(method, path)} sends {what}, which a cassette cannot record or replay; "
        "make this call with a client that wrap_openai did not wrap"
    )


def _raw_body(options: Any, method: str, path: str) -> Json:
    """The part of a request dict that holds a body of its own type (SDP, ...)."""
    headers = options.headers if isinstance(options.headers, Mapping) else {}
    content_type = str(next((v for k, v in headers.items() if k.lower() == "content-type"), ""))
    if options.files is not None or content_type.startswith("multipart/"):
        raise refuse(method, path, "a multipart file upload")
    content = getattr(options, "content", None)  # openai >= 2
    if content is None:
        return {}
    if not isinstance(content, (bytes, bytearray)):
        raise refuse(method, path, "a request body read from a file or a stream")
    try:
        return {"$content": bytes(content).decode()}
    except UnicodeDecodeError:
        return {"$content_base64": base64.b64encode(content).decode()}


def options_request(options: Any, base_path: str) -> Json:
    """The request dict of the SDK's ``FinalRequestOptions``: its JSON body (with
    ``extra_body``) plus ``"endpoint"``, the path in dots (``"chat.completions"``); other
    methods than POST lead it and add their query string (``"GET models?limit=2"``)."""
    method = str(options.method).upper()
    path = request_path(str(options.url), base_path)
    body = _raw_body(options, method, path)
    data = options.json_data
    if isinstance(data, Mapping):
        body = dict(to_json(data))  # a dict of its own: the SDK's body is sent as it is
    elif data is not None:
        raise refuse(method, path, f"a JSON body that is a {type(data).__name__}, not an object")
    extra = options.extra_json
    if isinstance(extra, Mapping):
        body.update(to_json(extra))
    params = options.params  # a POST's query is extra_query, left out as create does
    query = to_json(params) if method != "POST" and isinstance(params, Mapping) else None
    body["endpoint"] = endpoint_name(method, path, query)
    return body
