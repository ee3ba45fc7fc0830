"""Request dicts of :mod:`cassette.adapters.openai` (the JSON body sent plus ``"endpoint"``),
the same from a ``create`` call's arguments (fast path) as from the SDK's request options."""

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
from .._common.http import dump_model, endpoint_name, request_path, sent_json

__all__ = ["build_request", "entry_point", "materialise", "options_request", "refuse"]

_TRANSPORT = frozenset({"extra_headers", "extra_query", "extra_body", "timeout"})
_SENTINELS = (NotGiven, Omit)
_DATA = frozenset({str, int, float, bool, list, dict, type(None)})  # never an iterator


class _NeedsTransform(Exception):
    """A value that only the SDK's own transform knows how to send (files, dates, ...)."""


def _default(value: Any) -> Any:
    """orjson's fallback: SDK models as the SDK sends them; anything else is not ours."""
    if isinstance(value, pydantic.BaseModel):
        return dump_model(value)
    raise TypeError(type(value).__name__)


def _needs_transform(value: Any) -> Exception:
    return _NeedsTransform(type(value).__name__)


def _plain(value: Any) -> Any:
    """The slow walk, for data one orjson pass cannot take; raises _NeedsTransform."""
    return sent_json(value, _SENTINELS, _needs_transform)


def to_json(value: Any) -> Any:
    """``value`` as JSON data: itself if orjson takes it, else a copy with SDK models dumped
    in one orjson pass, else the slow walk (SDK sentinels nested in dicts)."""
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
    """The request dict of a ``create(**kwargs)`` call: the JSON body the SDK sends (with
    ``extra_body``) plus ``"endpoint"``; one orjson pass does what ``maybe_transform``
    (about 2 ms) does for JSON-native arguments, anything else goes through it."""
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
    """The SDK method that sends ``method path`` (``Files.create``), found on the stack."""
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
    ``extra_body``) plus ``"endpoint"`` (``"chat.completions"``, ``"GET models?limit=2"``)."""
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
