"""litellm replies in a cassette: responses and chunks as response dicts (secrets and the
api_base left out), and the wrappers that replay a stream as litellm's."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from typing import Any, ClassVar, cast

from pydantic import BaseModel

from ...types import Json
from .._common.assemble import first_choices
from .._common.http import secret_header
from .._common.objects import (
    PRIVATE_KEY,
    STREAM_KEY,
    Tee,
    TeeStream,
    dump_object,
    dump_state,
    load_state,
    rebuild,
)

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # else fetched at import

try:
    from litellm.litellm_core_utils.streaming_handler import CustomStreamWrapper
except ImportError:  # pragma: no cover - exercised in an environment without litellm
    raise ImportError(
        "cassette.adapters.litellm needs litellm: pip install 'rollout-cassette[litellm]'"
    ) from None
try:
    from litellm.text_completions.streaming_iterator import TextCompletionStreamWrapper
except ImportError:  # pragma: no cover - litellm before its text_completions package
    from litellm.utils import TextCompletionStreamWrapper  # type: ignore[attr-defined, no-redef, unused-ignore]

__all__ = [
    "END",
    "TEXT_CHUNK",
    "LiteLLMStream",
    "LiteLLMTee",
    "LiteLLMTextStream",
    "assemble_text",
    "dump_response",
    "load_response",
]

RESPONSE = "litellm.types.utils:ModelResponse"
CHUNK = "litellm.types.utils:ModelResponseStream"
TEXT_CHUNK = "litellm.types.utils:TextCompletionResponse"
_API_BASE = "$api_base"
END: Any = object()  # "no first chunk": an empty stream


def _headers(headers: Any) -> Any:
    if not isinstance(headers, dict):
        return headers
    return {
        k: v
        for k, v in headers.items()
        if not secret_header(str(k).lower().removeprefix("llm_provider-"))
    }


def _hide_base(hidden: Any, api_base: str | None) -> None:
    """Headers without secrets; the api_base the call passed becomes ``$api_base``."""
    if not isinstance(hidden, dict):
        return
    for key in hidden.get(PRIVATE_KEY) or ():  # HiddenParams dumps _response_ms twice
        hidden.pop(key, None)
    for key in ("additional_headers", "headers"):  # (a Responses API reply has both)
        if key in hidden:
            hidden[key] = _headers(hidden[key])
    base = hidden.get("api_base")
    if isinstance(base, str) and api_base and base.rstrip("/") == api_base.rstrip("/"):
        hidden["api_base"] = _API_BASE + base[len(base.rstrip("/")) :]


def _show_base(hidden: Any, api_base: str | None) -> None:
    if isinstance(hidden, dict) and str(hidden.get("api_base")).startswith(_API_BASE):
        tail = hidden["api_base"][len(_API_BASE) :]
        hidden["api_base"] = api_base.rstrip("/") + tail if api_base else None


def dump_response(obj: Any, api_base: str | None) -> Json:
    """A ``ModelResponse`` (or chunk) as a response dict, with its private state."""
    data = dump_object(obj)
    private = data.get(PRIVATE_KEY)
    if isinstance(private, dict):
        _hide_base(private.get("_hidden_params"), api_base)
        if "_response_headers" in private:
            private["_response_headers"] = _headers(private["_response_headers"])
    return data


def load_response(data: Json, api_base: str | None, default: str = RESPONSE) -> Any:
    """The object of :func:`dump_response`, rebuilt through its own constructor."""
    data = dict(data)
    data.pop(STREAM_KEY, None)
    private = data.get(PRIVATE_KEY)
    if isinstance(private, dict) and isinstance(private.get("_hidden_params"), dict):
        hidden = dict(private["_hidden_params"])
        _show_base(hidden, api_base)
        data[PRIVATE_KEY] = {**private, "_hidden_params": hidden}
    path = data.get("$type")
    obj = rebuild(path if isinstance(path, str) else default, data)
    if isinstance(obj, BaseModel):  # a None the constructor replaced (a text chunk's usage)
        fields = vars(obj)
        for key in [k for k, v in data.items() if v is None and fields.get(k) is not None]:
            fields[key] = None
    return obj


def assemble_text(chunks: list[Json]) -> Json:
    """The text of a text-completion stream, as an assistant message."""
    text = "".join(choice.get("text") or "" for choice in first_choices(chunks))
    return {"role": "assistant", "content": text or None}


class LiteLLMTee(Tee):
    """Chunks of a litellm stream; the first also carries the stream's state (``$stream``)."""

    def __init__(self, api_base: str | None, chunk: str = CHUNK) -> None:
        super().__init__(self._dump, self._load)
        self.api_base, self.chunk = api_base, chunk

    def _dump(self, chunk: Any) -> Json:
        return dump_response(chunk, self.api_base)

    def _load(self, data: Json) -> Any:
        return load_response(data, self.api_base, self.chunk)

    def stream_head(self, wrapper: Any) -> Json:
        """The state of a stream wrapper that a replayed one gets back."""
        if isinstance(wrapper, TextCompletionStreamWrapper):  # plain attributes
            state = {k: v for k, v in vars(wrapper).items() if k != "completion_stream"}
            return cast(Json, dump_state(state))
        hidden = dump_state(getattr(wrapper, "_hidden_params", None) or {})
        _hide_base(hidden, self.api_base)
        return {
            "model": getattr(wrapper, "model", None),
            "custom_llm_provider": getattr(wrapper, "custom_llm_provider", None),
            "_hidden_params": hidden,
        }


class _Replayed(TeeStream):
    """A cassette stream as a litellm wrapper; ``first`` is the first chunk's dict,
    :data:`END`, or the exception getting it raised (raised by the first ``next``)."""

    chunks: list[Any]
    _replayed_state: ClassVar[Json] = {}  # the attributes a replayed wrapper starts with

    def __init__(
        self,
        source: Iterator[Json] | AsyncIterator[Json],
        tee: Tee,
        *,
        first: Any = END,
        live: Any = None,
        api_base: str | None = None,
    ) -> None:
        head = first.get(STREAM_KEY) if isinstance(first, dict) else None
        self._adopt(head if isinstance(head, dict) else {}, live, api_base)
        self.completion_stream, self.chunks, self._closed, self._first = source, [], False, first
        super().__init__(source, tee, live)

    def _adopt(self, head: Json, live: Any, api_base: str | None) -> None:
        if live is not None:
            vars(self).update(vars(live))
            return
        hidden = load_state(dict(head.get("_hidden_params") or {}))
        _show_base(hidden, api_base)
        vars(self).update(
            self._replayed_state,
            model=head.get("model"),
            custom_llm_provider=head.get("custom_llm_provider"),
            _hidden_params=hidden,
        )

    def _next_data(self) -> Json:
        if self._first is END:
            return super()._next_data()
        data, self._first = self._first, END
        if isinstance(data, BaseException):  # what getting the first chunk raised
            raise data
        return cast(Json, data)

    def _ready(self) -> bool:
        return self._first is not END or super()._ready()

    def _take(self, data: Json) -> Any:
        chunk = super()._take(data)
        self.chunks.append(chunk)
        return chunk

    def __next__(self) -> Any:
        if self._closed:
            raise StopIteration
        return super().__next__()

    async def __anext__(self) -> Any:
        if self._closed:
            raise StopAsyncIteration
        return await super().__anext__()

    def _live_part(self, name: str) -> Any:
        """The live wrapper's ``close``/``aclose`` (a text stream's: its chat stream's)."""
        live = self._live
        found = getattr(live, name, None) or getattr(getattr(live, "completion_stream", 0), name, 0)
        return found if callable(found) else None

    def close(self) -> None:
        self._closed = True
        super().close()
        if (close := self._live_part("close")) is not None:
            close()

    async def aclose(self) -> None:
        self._closed = True
        await super().aclose()
        if (aclose := self._live_part("aclose")) is not None:
            await aclose()


class LiteLLMStream(_Replayed, CustomStreamWrapper):
    """A ``CustomStreamWrapper`` over a cassette stream (of ``ModelResponseStream``)."""

    _replayed_state: ClassVar[Json] = {
        "logging_obj": None, "_response_headers": None, "response_uptil_now": "",
        "sent_last_chunk": False, "stream_options": None,
    }  # fmt: skip

    def __del__(self) -> None:  # the live wrapper cleans up after itself
        pass


class LiteLLMTextStream(_Replayed, TextCompletionStreamWrapper):
    """A ``TextCompletionStreamWrapper`` over a cassette stream (``text_completion``)."""

    def _adopt(self, head: Json, live: Any, api_base: str | None) -> None:
        state = vars(live) if live is not None else load_state(head)
        vars(self).update(_TEXT_DEFAULTS | state)


_TEXT_DEFAULTS: Json = {
    "model": None, "stream_options": None, "custom_llm_provider": None,
    "usage_injected_by_proxy": False, "include_usage": False,
}  # fmt: skip
