"""What a litellm call is in a cassette: the entry points ``patch_litellm`` records
(:data:`KINDS`) and the request dict of one call (:func:`build_request`)."""

from __future__ import annotations

import functools
import importlib
import inspect
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, cast

from pydantic import BaseModel

from ...errors import CassetteError
from ...types import Json
from .._common.objects import plain

__all__ = ["KINDS", "PROMPT", "TRANSPORT", "Kind", "bind", "build_request", "unnamed"]

# Arguments that choose where and how to send, or what to call back: not the request.
TRANSPORT = frozenset(
    ("api_key", "api_base", "base_url", "api_version", "api_type", "organization", "project",
     "timeout", "request_timeout", "stream_timeout", "num_retries", "max_retries", "headers",
     "extra_headers", "client", "custom_llm_provider", "model_list", "shared_session",
     "litellm_logging_obj", "logger_fn", "litellm_call_id", "acompletion", "aembedding",
     "caching", "cache", "metadata", "litellm_metadata", "callbacks", "success_callback",
     "failure_callback", "deployment_id", "proxy_server_request", "azure_ad_token_provider")
)  # fmt: skip
# litellm's own arguments that change the prompt or the answer: part of the request.
PROMPT = frozenset(
    ("mock_response", "mock_tool_calls", "ensure_alternating_roles", "user_continue_message",
     "assistant_continue_message", "supports_system_message", "initial_prompt_value",
     "final_prompt_value", "bos_token", "eos_token", "roles", "litellm_system_prompt",
     "merge_reasoning_content_in_choices", "prompt_id", "prompt_variables", "prompt_version",
     "prompt_label", "allowed_openai_params")
)  # fmt: skip
_SECRET_SUFFIXES = ("api_key", "_key_id", "access_key", "_secret", "_token", "credentials")


@dataclass(frozen=True)
class Kind:
    """One recorded entry point: name, input argument and ``"endpoint"`` (completion: none)."""

    name: str
    body: str
    endpoint: str | None = None

    @property
    def is_async(self) -> bool:
        return self.name.startswith("a")

    @property
    def text(self) -> bool:  # a text completion: streams of TextCompletionResponse
        return self.body == "prompt"

    @property
    def events(self) -> bool:  # a Responses API call: streams of its events
        return self.endpoint == "responses"


KINDS = (
    Kind("completion", "messages"), Kind("acompletion", "messages"),
    Kind("embedding", "input", "embedding"), Kind("aembedding", "input", "embedding"),
    Kind("text_completion", "prompt", "text_completion"),
    Kind("atext_completion", "prompt", "text_completion"),
    Kind("responses", "input", "responses"), Kind("aresponses", "input", "responses"),
)  # fmt: skip
_SENT_BY_RESPONSES = frozenset(("metadata",))  # completion keeps it, the Responses API sends it


@functools.lru_cache(maxsize=1)
def _litellm_own() -> frozenset[str]:
    """litellm's own arguments, less those that change what the model is sent."""
    from litellm.types.utils import all_litellm_params

    return frozenset(all_litellm_params) - PROMPT


def _sent(name: str, value: Any, kind: Kind) -> bool:
    if value is None or name.endswith(_SECRET_SUFFIXES):
        return False
    if kind.events and name in _SENT_BY_RESPONSES:
        return True
    if name in TRANSPORT or name.startswith("_") or name in _litellm_own():
        return False
    return not (callable(value) and not isinstance(value, type))


def build_request(arguments: Mapping[str, Any], kind: Kind = KINDS[0]) -> Json:
    """The request dict of a ``completion(**arguments)`` call (or ``kind``'s): model, input
    and what the model is sent; never transport, secrets, callbacks or litellm's own."""
    arguments = dict(arguments)
    engine = arguments.pop("engine", None)  # text_completion's other name for the model
    request: Json = {"endpoint": kind.endpoint} if kind.endpoint else {}
    given = arguments.get(kind.body, [] if kind.body == "messages" else None)
    request |= {"model": arguments.get("model") or engine, kind.body: given}
    request |= dict(_parameters(arguments, kind, request.keys()))
    try:
        return cast(Json, plain(request, "request"))
    except CassetteError:
        bad = [k for k, v in request.items() if not _json_able(v)]
        raise CassetteError(
            f"litellm argument(s) {bad} cannot be stored in a cassette; pass JSON-able "
            "values (dicts, lists, str, numbers, pydantic models)"
        ) from None


def _parameters(arguments: Json, kind: Kind, taken: Any) -> Iterator[tuple[str, Any]]:
    for name, value in arguments.items():
        if name in taken or not _sent(name, value, kind):
            continue
        if isinstance(value, type) and issubclass(value, BaseModel):  # response_format=Model
            value = _response_format(value)
        yield name, value


def _response_format(model: type[BaseModel]) -> Any:
    """The JSON schema response_format that litellm sends for a pydantic model."""
    return importlib.import_module("litellm.utils").type_to_response_format_param(model)


def _json_able(value: Any) -> bool:
    try:
        plain(value)
    except CassetteError:
        return False
    return True


@functools.lru_cache(maxsize=16)
def _signature(function: Any) -> inspect.Signature:
    return inspect.signature(function)  # follows __wrapped__ to litellm's own parameters


def bind(function: Any, args: tuple[Any, ...], kwargs: Json) -> Json:
    """The arguments of ``function(*args, **kwargs)`` by name (``**kwargs`` merged in)."""
    signature = _signature(function)
    try:
        bound = signature.bind_partial(*args, **kwargs)
    except TypeError:
        return dict(kwargs)  # litellm raises its own error when called
    arguments = dict(bound.arguments)
    for name, param in signature.parameters.items():
        if param.kind is param.VAR_KEYWORD and name in arguments:
            arguments.update(arguments.pop(name))
    return arguments


def unnamed(function: Any) -> bool:
    """Whether ``function`` names none of its parameters (``(*args, **kwargs)``)."""
    kinds = {p.kind for p in _signature(function).parameters.values()}
    return kinds <= {inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD}
