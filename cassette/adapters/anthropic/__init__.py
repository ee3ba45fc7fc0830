"""Record and replay the anthropic SDK: ``wrap_anthropic(client, cas)``
(docs/adapters/anthropic.md), through the shared ``HttpRecorder``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar, TypeVar, cast

try:
    import anthropic
    from anthropic import Anthropic, AsyncAnthropic
except ImportError:  # exercised in an environment without anthropic
    raise ImportError(
        "cassette.adapters.anthropic needs anthropic: pip install 'rollout-cassette[anthropic]'"
    ) from None
from anthropic._constants import RAW_RESPONSE_HEADER
from anthropic._types import NotGiven, Omit

from ...errors import CassetteError
from ...replay.cassette import Cassette
from ...types import Json
from .._common.assemble import assemble_message
from .._common.http import anthropic_kept, endpoint_name, request_path, sent_json
from .._common.http_recorder import RECORDER, HttpRecorder
from .._common.sdk_errors import SdkErrors

__all__ = ["AnthropicErrors", "assemble_message", "is_wrapped", "options_request", "wrap_anthropic"]

ClientT = TypeVar("ClientT", bound="Anthropic | AsyncAnthropic")
_SENTINELS = (NotGiven, Omit)
_BETA = "anthropic-beta"  # a header that changes what the model does: part of the request


class AnthropicErrors(SdkErrors):
    """anthropic's API errors; kept headers: request id, retry-after, rate limits."""

    sdk: ClassVar[Any] = anthropic
    safe_headers = frozenset({"content-type", "retry-after", "retry-after-ms", "request-id"})
    header_prefix = "anthropic-ratelimit-"


def _unrecordable(value: Any) -> Exception:
    return CassetteError(
        f"a request holds a {type(value).__name__}, which a cassette cannot record; "
        "send JSON data (dicts, lists, strings, numbers)"
    )


def _plain(value: Any) -> Any:
    return sent_json(value, _SENTINELS, _unrecordable)


def _beta(headers: Any) -> Json:
    """The ``anthropic-beta`` header, if set, as ``{"$anthropic-beta": value}``."""
    beta = {k.lower(): v for k, v in headers.items()} if isinstance(headers, Mapping) else {}
    return {"$" + _BETA: beta[_BETA]} if isinstance(beta.get(_BETA), str) else {}


def options_request(options: Any, base_path: str) -> Json:
    """The request dict of ``FinalRequestOptions``: JSON body, ``"$anthropic-beta"``, endpoint."""
    method = str(options.method).upper()
    path = request_path(str(options.url), base_path)
    path = path[3:] if path.startswith("/v1/") else path
    if options.files is not None or getattr(options, "content", None) is not None:
        raise CassetteError(
            f"{method} {path} sends a file or a raw body, which a cassette cannot record or "
            "replay; make this call with a client that wrap_anthropic did not wrap"
        )
    data, extra = options.json_data, options.extra_json
    body: Json = dict(_plain(data)) if isinstance(data, Mapping) else {}
    body.update(_plain(extra) if isinstance(extra, Mapping) else {})
    body.update(_beta(options.headers))
    query = _plain(options.params) if isinstance(options.params, Mapping) else None
    body["endpoint"] = endpoint_name(method, path, query)
    return body


class _Recorder(HttpRecorder):
    codec = AnthropicErrors
    raw_header = RAW_RESPONSE_HEADER
    kept = staticmethod(anthropic_kept)

    def request_dict(self, options: Any) -> Json:
        return options_request(options, self.base_path)

    def assembler(self, endpoint: str) -> Callable[[list[Json]], Json] | None:
        return assemble_message if endpoint.endswith("messages") else None


def is_wrapped(client: Any) -> bool:
    """Whether ``client`` is a client that :func:`wrap_anthropic` returned."""
    return RECORDER in vars(client)


def wrap_anthropic(client: ClientT, cas: Cassette, *, channel: str = "llm") -> ClientT:
    """A copy of ``client`` (still an ``Anthropic`` / ``AsyncAnthropic``) whose every
    request, and those of its ``with_options`` / ``copy`` copies, goes through ``cas``."""
    if not isinstance(client, (Anthropic, AsyncAnthropic)):
        raise TypeError(
            f"wrap_anthropic takes an anthropic.Anthropic or AsyncAnthropic, not {client!r}"
        )
    wrapped = cast(Any, type(client)).copy(client)  # the class's: a wrapped one copies unwrapped
    _Recorder(wrapped, cas, channel).attach(isinstance(wrapped, AsyncAnthropic), wrap_anthropic)
    return cast(ClientT, wrapped)
