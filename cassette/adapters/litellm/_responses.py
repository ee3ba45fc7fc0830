"""litellm's Responses API streams in a cassette: events as response dicts, replayed as
litellm's (``Sync``)``ResponsesAPIStreamingIterator``."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, ClassVar

from litellm.responses.streaming_iterator import (  # litellm 1.63 on: imported on first use
    ResponsesAPIStreamingIterator,
    SyncResponsesAPIStreamingIterator,
)
from pydantic import BaseModel

from ...types import Json
from .._common.objects import PRIVATE_KEY, dump_state, load_private
from ._stream import LiteLLMTee, _hide_base, _Replayed, _show_base, dump_response, load_response

__all__ = ["STREAMS", "ResponsesTee"]

EVENT = "litellm.types.llms.openai:ResponseCompletedEvent"  # an event that lost its $type
NESTED = "$response"  # in an event's private state: that of the event's ``response``
_FINAL = ("response.completed", "response.incomplete", "response.failed")


def _dump_event(event: Any, api_base: str | None) -> Json:
    """A stream event as a response dict (its ``response``'s private state included)."""
    data = dump_response(event, api_base)
    inner = getattr(event, "response", None)
    if isinstance(inner, BaseModel) and any((inner.__pydantic_private__ or {}).values()):
        state = dump_state(inner.__pydantic_private__)
        _hide_base(state.get("_hidden_params"), api_base)
        data.setdefault(PRIVATE_KEY, {})[NESTED] = state
    return data


def _load_event(data: Json, api_base: str | None) -> Any:
    private = data.get(PRIVATE_KEY)
    nested = private.get(NESTED) if isinstance(private, dict) else None
    event = load_response(data, api_base, EVENT)
    inner = getattr(event, "response", None)
    if isinstance(nested, dict) and isinstance(inner, BaseModel):
        load_private(inner, nested)
        _show_base((inner.__pydantic_private__ or {}).get("_hidden_params"), api_base)
    return event


class ResponsesTee(LiteLLMTee):
    def _dump(self, chunk: Any) -> Json:
        return _dump_event(chunk, self.api_base)

    def _load(self, data: Json) -> Any:
        return _load_event(data, self.api_base)


class _Events(_Replayed):
    """A Responses API stream over a cassette stream (``completed_response``, ``finished``)."""

    completed_response: Any
    finished: bool

    _replayed_state: ClassVar[Json] = {
        "response": None, "logging_obj": None, "responses_api_provider_config": None,
        "litellm_metadata": None, "request_data": {}, "call_type": None,
        "_raw_response_headers": MappingProxyType({}),
    }  # fmt: skip

    def _adopt(self, head: Json, live: Any, api_base: str | None) -> None:
        super()._adopt(head, live, api_base)
        self.completed_response, self.finished = None, False

    def _take(self, data: Json) -> Any:
        event = super()._take(data)
        if data.get("type") in _FINAL:
            self.completed_response = event
        return event

    def __next__(self) -> Any:
        try:
            return super().__next__()
        except StopIteration:
            self.finished = True
            raise

    async def __anext__(self) -> Any:
        try:
            return await super().__anext__()
        except StopAsyncIteration:
            self.finished = True
            raise


class LiteLLMResponsesStream(_Events, SyncResponsesAPIStreamingIterator):
    """What ``litellm.responses(..., stream=True)`` returns in the patch."""

    def __aiter__(self) -> LiteLLMResponsesStream:
        return self


class LiteLLMAsyncResponsesStream(_Events, ResponsesAPIStreamingIterator):
    """What ``litellm.aresponses(..., stream=True)`` returns in the patch."""


STREAMS = (LiteLLMResponsesStream, LiteLLMAsyncResponsesStream)  # by is_async
