"""The layer of :mod:`cassette.adapters.anthropic` every SDK entry point goes through: the
client's ``request(cast_to, options, stream=..., stream_cls=...)`` (the twin of
:mod:`cassette.adapters.openai._http`, on the same Stainless client architecture).

``Recorder.sync_request`` / ``async_request`` (from :class:`._http_recorder.HttpRecorder`)
replace it on the wrapped client. A call becomes a request dict (:func:`options_request`);
the answer comes from the cassette, or from the SDK's own ``request`` asked for the bare
HTTP response (retries and status errors included), turned into a response dict. Either
way the SDK gets an HTTP response rebuilt from that dict and runs its own
``_process_response`` on it, so ``messages.stream()``, ``with_raw_response``,
``with_streaming_response``, pages and ``client.post`` return what they return live.
Response dicts: the JSON body plus ``"$http"`` (status, headers kept) when there is more to
say; a body that is not a JSON object is kept whole in ``"$http"``; a stream is its events
(``{"$http": ...}`` first when there are headers to keep).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlencode, urlsplit

import anthropic
import pydantic
from anthropic._constants import RAW_RESPONSE_HEADER
from anthropic._types import NotGiven, Omit

from ...errors import CassetteError
from ...types import Json
from .._common.http import HTTP, SECRET_WORDS
from .._common.http import response_dict as common_response_dict
from .._common.http_recorder import HttpRecorder
from ._errors import AnthropicErrors, http_module
from ._stream import assemble_message

__all__ = ["HTTP", "Recorder", "assemble_message", "options_request", "response_dict"]

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


class Recorder(HttpRecorder[AnthropicErrors]):
    """The cassette side of one wrapped client."""

    raw_header = RAW_RESPONSE_HEADER
    timeout_error = anthropic.APITimeoutError
    connection_error = anthropic.APIConnectionError
    http_module = staticmethod(http_module)
    kept = staticmethod(_kept)

    def new_errors(self, url: str, method: str) -> AnthropicErrors:
        return AnthropicErrors(self.client, url, method)

    def request_dict(self, options: Any) -> Json:
        return options_request(options, self.base_path)

    def assembler(self, endpoint: str) -> Callable[[list[Json]], Json] | None:
        return assemble_message if endpoint.endswith("messages") else None
