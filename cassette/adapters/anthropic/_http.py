"""The layer of :mod:`cassette.adapters.anthropic` every SDK entry point goes through: the
client's ``request``, replaced by the shared
:class:`~cassette.adapters._common.http_recorder.HttpRecorder` (see there; the twin of the
openai adapter's, on the same Stainless client architecture), with anthropic's request
dicts (:func:`options_request`), headers kept, error codec (:class:`AnthropicErrors`) and
stream assembler (:func:`assemble_message`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import anthropic
import pydantic
from anthropic._constants import RAW_RESPONSE_HEADER
from anthropic._types import NotGiven, Omit

from ...errors import CassetteError
from ...types import Json
from .._common.assemble import assemble_message
from .._common.http import anthropic_kept, endpoint_name, request_path
from .._common.http_recorder import HttpRecorder
from .._common.sdk_errors import SdkErrors

__all__ = ["AnthropicErrors", "Recorder", "assemble_message", "options_request"]

_SENTINELS = (NotGiven, Omit)
_BETA = "anthropic-beta"  # a header that changes what the model does: part of the request


class AnthropicErrors(SdkErrors):
    """anthropic's status, timeout, connection and stream errors (the adapter's
    :class:`cassette.ErrorCodec`); kept headers: the request id, retry-after and
    ``anthropic-ratelimit-*``."""

    sdk: ClassVar[Any] = anthropic
    safe_headers = frozenset({"content-type", "retry-after", "retry-after-ms", "request-id"})
    header_prefix = "anthropic-ratelimit-"


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
    path = request_path(str(options.url), base_path)
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
    params = options.params
    query = _plain(params) if isinstance(params, Mapping) else None
    body["endpoint"] = endpoint_name(method, path, query)
    return body


class Recorder(HttpRecorder):
    """The cassette side of one wrapped client."""

    codec = AnthropicErrors
    raw_header = RAW_RESPONSE_HEADER
    kept = staticmethod(anthropic_kept)

    def request_dict(self, options: Any) -> Json:
        return options_request(options, self.base_path)

    def assembler(self, endpoint: str) -> Callable[[list[Json]], Json] | None:
        return assemble_message if endpoint.endswith("messages") else None
