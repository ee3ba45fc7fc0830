"""The client's ``request`` of :mod:`cassette.adapters.openai` (the shared
:class:`~.._common.http_recorder.HttpRecorder`, with openai's request dicts, headers kept
and assemblers), and its ``_process_response_data``, validating hot types with pydantic."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable
from typing import Any

import pydantic
from openai._constants import RAW_RESPONSE_HEADER

from ...types import Json
from .._common.assemble import assemble_chat, assemble_response
from .._common.http import HTTP, openai_kept
from .._common.http_recorder import HttpRecorder
from ._errors import OpenAIErrors
from ._request import options_request

__all__ = ["LIVE", "Processor", "Recorder", "without_http"]

Validate = Callable[[Json], Any]
LIVE: contextvars.ContextVar[bool] = contextvars.ContextVar("cassette_openai_live", default=False)
_ASSEMBLE = {"chat.completions": assemble_chat, "responses": assemble_response}
# SDK types that pydantic validates into what the SDK's lenient construction makes
_VALIDATED = frozenset({
    ("openai.types.chat.chat_completion", "ChatCompletion"),
    ("openai.types.chat.chat_completion_chunk", "ChatCompletionChunk"),
    ("openai.types.responses.response", "Response"),
    ("openai.types.completion", "Completion"),
    ("openai.types.create_embedding_response", "CreateEmbeddingResponse"),
})  # fmt: skip


def without_http(data: Json) -> Json:
    return {k: v for k, v in data.items() if k != HTTP} if HTTP in data else data


class Recorder(HttpRecorder):
    """The cassette side of one wrapped client (shared by its resources)."""

    codec = OpenAIErrors
    raw_header = RAW_RESPONSE_HEADER
    stop_at_done = True
    done_endpoints = frozenset({"chat.completions", "completions"})
    passthrough = LIVE
    kept = staticmethod(openai_kept)

    def request_dict(self, options: Any) -> Json:
        return options_request(options, self.base_path)

    def assembler(self, endpoint: str) -> Callable[[list[Json]], Json] | None:
        return _ASSEMBLE.get(endpoint)

    def process_response_data(self) -> Processor:
        """The client's ``_process_response_data``, validating the hot types with pydantic."""
        return Processor(self.cls._process_response_data, self.client)


class Processor:
    """A wrapped client's ``_process_response_data``: data of the hot types validated by
    pydantic, any other (or what pydantic rejects) processed the SDK's own way."""

    def __init__(self, original: Callable[..., Any], client: Any) -> None:
        self.original, self.client = original, client

    def __call__(self, *, data: Any, cast_to: Any, response: Any) -> Any:
        validate = self.validator(cast_to)
        if validate is not None and type(data) is dict:
            try:
                return validate(data)
            except pydantic.ValidationError:
                pass  # the SDK's own way: constructed leniently, or its strict error
        return self.sdks(data=data, cast_to=cast_to, response=response)

    def sdks(self, *, data: Any, cast_to: Any, response: Any) -> Any:
        """The SDK's own processing of ``data`` (what pydantic rejected: built leniently)."""
        return self.original(self.client, data=data, cast_to=cast_to, response=response)

    @staticmethod
    def validator(cast_to: Any) -> Validate | None:
        """The pydantic validation of a dict as ``cast_to``, or None (the SDK's way)."""
        try:
            return _validators[cast_to]
        except (KeyError, TypeError):
            return _validator(cast_to)


_validators: dict[Any, Validate | None] = {}  # by cast_to: pydantic's, or None (the SDK's)


def _validator(cast_to: Any) -> Validate | None:
    name = (getattr(cast_to, "__module__", None), getattr(cast_to, "__name__", None))
    validate = _built(cast_to) if name in _VALIDATED else None
    with contextlib.suppress(TypeError):  # (a cast_to that cannot be a key: looked at anew)
        _validators[cast_to] = validate
    return validate


def _built(model: type[pydantic.BaseModel]) -> Validate:
    """What ``TypeAdapter(model).validate_python`` calls, built now (the SDK defers it)."""
    model.model_rebuild()
    return model.__pydantic_validator__.validate_python
