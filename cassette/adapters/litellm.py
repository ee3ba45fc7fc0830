"""Record and replay litellm: ``patch_litellm(cas)``.

.. code-block:: python

    import cassette, litellm
    from cassette.adapters.litellm import patch_litellm

    with cassette.open("runs/a.jsonl") as cas, patch_litellm(cas):
        with cassette.episode(0):
            reply = litellm.completion(model="openai/gpt-4o-mini", messages=[...])

Inside the block ``litellm.completion`` and ``litellm.acompletion`` (and every module-level
reference to them, ``from litellm import completion`` included) go through the cassette;
leaving the block restores them. Each call is keyed by the current :func:`cassette.episode`
on channel ``"llm"``; the request is the model, the messages and the JSON parameters
(never ``api_key``, ``api_base``, headers, timeouts, retries or callbacks). Replay returns
what litellm returned: a ``ModelResponse`` equal to the recorded one (``choices``,
``logprobs``, ``usage``, ``_hidden_params``), or for ``stream=True`` a ``CustomStreamWrapper``
that yields the recorded ``ModelResponseStream`` chunks one by one (``for`` and
``async for``). litellm's exceptions replay as the same type. Nothing reaches the network
in replay. The response headers kept are the provider's, minus cookies and credentials;
the ``api_base`` in ``_hidden_params`` is the one the replaying call passes.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import sys
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextvars import ContextVar
from types import ModuleType
from typing import Any, cast

from pydantic import BaseModel

from ..cassette import Cassette
from ..errors import CassetteError
from ._objects import (
    PRIVATE_KEY,
    STREAM_KEY,
    Tee,
    dump_object,
    dump_state,
    load_state,
    plain,
    rebuild,
)
from .tau2 import LiteLLMErrors

# litellm fetches its model cost map from the network at import unless told otherwise.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

try:
    import litellm
    import litellm.main
    from litellm.litellm_core_utils.streaming_handler import CustomStreamWrapper
except ImportError:  # pragma: no cover - exercised in an environment without litellm
    raise ImportError(
        "cassette.adapters.litellm needs litellm: pip install 'rollout-cassette[litellm]'"
    ) from None

__all__ = [
    "TRANSPORT",
    "LiteLLMErrors",
    "LiteLLMPatch",
    "LiteLLMStream",
    "LiteLLMTee",
    "build_request",
    "patch_litellm",
]

Json = dict[str, Any]
RESPONSE = "litellm.types.utils:ModelResponse"
CHUNK = "litellm.types.utils:ModelResponseStream"
# Arguments that choose where and how to send, or what to call back: not the request.
TRANSPORT = frozenset(
    ("api_key", "api_base", "base_url", "api_version", "organization", "project", "timeout",
     "request_timeout", "stream_timeout", "num_retries", "max_retries", "headers",
     "extra_headers", "client", "custom_llm_provider", "model_list", "shared_session",
     "litellm_logging_obj", "logger_fn", "litellm_call_id", "acompletion", "caching", "cache",
     "metadata", "litellm_metadata", "callbacks", "success_callback", "failure_callback",
     "deployment_id", "proxy_server_request", "azure_ad_token_provider")
)  # fmt: skip
_SECRET_SUFFIXES = ("api_key", "_key_id", "access_key", "_secret", "_token", "credentials")
_SECRET_HEADERS = frozenset(
    ("authorization", "proxy-authorization", "cookie", "set-cookie", "api-key", "x-api-key",
     "openai-organization", "openai-project")
)  # fmt: skip
_API_BASE = "$api_base"
_LIVE: ContextVar[bool] = ContextVar("cassette_litellm_live", default=False)
_END: Any = object()
ERRORS = LiteLLMErrors()


# --- requests -----------------------------------------------------------------------------


def _sent(name: str, value: Any) -> bool:
    if value is None or name in TRANSPORT or name.endswith(_SECRET_SUFFIXES):
        return False
    return not (callable(value) and not isinstance(value, type))


def build_request(arguments: Mapping[str, Any]) -> Json:
    """The request dict of a ``completion(**arguments)`` call: model, messages and the JSON
    parameters (``None`` means not given, as in litellm)."""
    request: Json = {"model": arguments.get("model"), "messages": arguments.get("messages", [])}
    for name, value in arguments.items():
        if name in request or not _sent(name, value):
            continue
        if isinstance(value, type) and issubclass(value, BaseModel):  # response_format=Model
            from litellm.llms.base_llm.base_utils import type_to_response_format_param

            value = type_to_response_format_param(value)
        request[name] = value
    try:
        return cast(Json, plain(request, "request"))
    except CassetteError:
        bad = [k for k, v in request.items() if not _json_able(v)]
        raise CassetteError(
            f"litellm argument(s) {bad} cannot be stored in a cassette; pass JSON-able "
            "values (dicts, lists, str, numbers, pydantic models)"
        ) from None


def _json_able(value: Any) -> bool:
    try:
        plain(value)
    except CassetteError:
        return False
    return True


def _bind(signature: inspect.Signature, args: tuple[Any, ...], kwargs: Json) -> Json:
    try:
        bound = signature.bind_partial(*args, **kwargs)
    except TypeError:
        return dict(kwargs)  # litellm raises its own error when called
    arguments = dict(bound.arguments)
    for name, param in signature.parameters.items():
        if param.kind is param.VAR_KEYWORD and name in arguments:
            arguments.update(arguments.pop(name))
    return arguments


# --- responses ----------------------------------------------------------------------------


def _headers(headers: Any) -> Any:
    if not isinstance(headers, dict):
        return headers
    return {
        k: v
        for k, v in headers.items()
        if str(k).lower().removeprefix("llm_provider-") not in _SECRET_HEADERS
    }


def _hide_base(hidden: Any, api_base: str | None) -> None:
    """Headers without secrets; the api_base the call passed becomes ``$api_base``."""
    if not isinstance(hidden, dict):
        return
    if "additional_headers" in hidden:
        hidden["additional_headers"] = _headers(hidden["additional_headers"])
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
    return rebuild(path if isinstance(path, str) else default, data)


def assemble(chunks: list[Json]) -> Json:
    """The assistant message of a chat stream (content and tool calls joined)."""
    text: list[str] = []
    calls: dict[int, Json] = {}
    for chunk in chunks:
        for choice in chunk.get("choices") or []:
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            text.append(delta.get("content") or "")
            for call in delta.get("tool_calls") or []:
                slot = calls.setdefault(call.get("index", 0), {"type": "function"})
                fn = slot.setdefault("function", {"name": None, "arguments": ""})
                slot["id"] = call.get("id") or slot.get("id")
                got = call.get("function") or {}
                fn["name"] = got.get("name") or fn["name"]
                fn["arguments"] += got.get("arguments") or ""
    message: Json = {"role": "assistant", "content": "".join(text) or None}
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return message


# --- streams ------------------------------------------------------------------------------


class LiteLLMTee(Tee):
    """Chunks of a litellm stream; the first one also carries the stream's own state
    (model, provider, ``_hidden_params``) under ``$stream``."""

    def __init__(self, api_base: str | None) -> None:
        super().__init__(self._dump, self._load)
        self.api_base = api_base

    def _dump(self, chunk: Any) -> Json:
        return dump_response(chunk, self.api_base)

    def _load(self, data: Json) -> Any:
        return load_response(data, self.api_base, CHUNK)

    def stream_head(self, wrapper: Any) -> Json:
        """The state of a ``CustomStreamWrapper`` that a replayed one gets back."""
        hidden = dump_state(getattr(wrapper, "_hidden_params", None) or {})
        _hide_base(hidden, self.api_base)
        return {
            "model": getattr(wrapper, "model", None),
            "custom_llm_provider": getattr(wrapper, "custom_llm_provider", None),
            "_hidden_params": hidden,
        }


class LiteLLMStream(CustomStreamWrapper):
    """A ``CustomStreamWrapper`` over a cassette stream: while recording it hands over the
    live chunks (and has the live wrapper's attributes); on replay it yields the recorded
    chunks, rebuilt as ``ModelResponseStream``. ``for`` and ``async for`` both work on a
    sync source; an async source (``acompletion``) is iterated with ``async for``."""

    def __init__(
        self,
        source: Iterator[Json] | AsyncIterator[Json],
        tee: Tee,
        *,
        first: Any = _END,
        live: Any = None,
        api_base: str | None = None,
    ) -> None:
        if live is not None:
            vars(self).update(vars(live))
        head = first.get(STREAM_KEY) if isinstance(first, dict) else None
        if live is None:
            head = head if isinstance(head, dict) else {}
            hidden = load_state(dict(head.get("_hidden_params") or {}))
            _show_base(hidden, api_base)
            self.model = head.get("model")
            self.custom_llm_provider = head.get("custom_llm_provider")
            self._hidden_params = hidden
            self.logging_obj = cast(Any, None)
            self._response_headers = None
            self.response_uptil_now = ""
            self.sent_last_chunk = False
            self.stream_options = None
        self.completion_stream = source
        self.chunks = []
        self._closed = False
        self._source, self._tee, self._first, self._live = source, tee, first, live

    def _next_data(self) -> Json:
        if self._first is not _END:
            data, self._first = self._first, _END
            return cast(Json, data)
        if not isinstance(self._source, Iterator):
            raise TypeError("this litellm stream came from acompletion(); use `async for`")
        return next(self._source)

    def _take(self, data: Json) -> Any:
        chunk = self._tee.take(data)
        self.chunks.append(chunk)
        return chunk

    def __next__(self) -> Any:
        if self._closed:
            raise StopIteration
        return self._take(self._next_data())

    async def __anext__(self) -> Any:
        if self._closed:
            raise StopAsyncIteration
        if self._first is not _END or isinstance(self._source, Iterator):
            try:
                return self._take(self._next_data())
            except StopIteration:
                raise StopAsyncIteration from None
        return self._take(await self._source.__anext__())

    def close(self) -> None:
        self._closed = True
        close = getattr(self._source, "close", None)
        if callable(close):
            close()
        if self._live is not None:
            self._live.close()

    async def aclose(self) -> None:
        self._closed = True
        close = getattr(self._source, "aclose", None)
        if callable(close):
            await close()
        else:
            self.close()
        if self._live is not None:
            await self._live.aclose()

    def __del__(self) -> None:  # the live wrapper cleans up after itself
        pass


# --- the patch ----------------------------------------------------------------------------


class LiteLLMPatch:
    """What :func:`patch_litellm` replaced; yielded by it. ``calls``/``live_calls`` count."""

    def __init__(self, cas: Cassette, channel: str = "llm") -> None:
        self.cas, self.channel = cas, channel
        self.patched: list[tuple[ModuleType, str, Any]] = []  # (module, attribute, old)
        self.calls = self.live_calls = 0
        self._wrappers: dict[int, tuple[Any, Any]] = {}  # id(wrapper) -> (wrapper, original)
        # the public functions (litellm.completion) and the ones they fall back to
        # (litellm.main.completion), which other modules hold too
        self.sync = {id(f): f for f in (litellm.completion, litellm.main.completion)}
        self.aio = {id(f): f for f in (litellm.acompletion, litellm.main.acompletion)}

    # one call ----------------------------------------------------------------------------
    def _prepare(self, original: Any, args: tuple[Any, ...], kwargs: Json) -> Any:
        arguments = _bind(_signature(original), args, kwargs)
        base = arguments.get("api_base") or arguments.get("base_url")
        self.calls += 1
        return build_request(arguments), (base if isinstance(base, str) else None)

    def completion(self, original: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """One ``completion`` call through the cassette (``original`` sends it live)."""
        if _LIVE.get():  # litellm calling itself (the public function runs main's)
            return original(*args, **kwargs)
        request, base = self._prepare(original, args, kwargs)

        def call_live() -> Any:
            self.live_calls += 1
            token = _LIVE.set(True)
            try:
                return original(*args, **kwargs)
            finally:
                _LIVE.reset(token)

        if request.get("stream"):
            tee = LiteLLMTee(base)
            wrappers: list[Any] = []

            def live_stream() -> Iterator[Json]:
                wrapper = call_live()
                wrappers.append(wrapper)
                tee.head = lambda: tee.stream_head(wrapper)
                return tee.live(wrapper)

            it = self.cas.stream(
                request, live_stream, channel=self.channel, assemble=assemble, errors=ERRORS
            )
            first = next(it, _END)  # sends the request now, as litellm does
            sent = wrappers[0] if wrappers else None
            return LiteLLMStream(it, tee, first=first, live=sent, api_base=base)
        got: list[Any] = []

        def live() -> Json:
            result = call_live()
            got.append(result)
            return dump_response(result, base)

        response = self.cas.call(request, live, channel=self.channel, errors=ERRORS)
        return got[0] if got else load_response(response, base)

    async def acompletion(self, original: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Async twin of :meth:`completion`."""
        if _LIVE.get():
            return await original(*args, **kwargs)
        request, base = self._prepare(original, args, kwargs)

        async def call_live() -> Any:
            self.live_calls += 1
            token = _LIVE.set(True)
            try:
                return await original(*args, **kwargs)
            finally:
                _LIVE.reset(token)

        if request.get("stream"):
            tee = LiteLLMTee(base)
            wrappers: list[Any] = []

            async def live_stream() -> AsyncIterator[Json]:
                wrapper = await call_live()
                wrappers.append(wrapper)
                tee.head = lambda: tee.stream_head(wrapper)
                async for data in tee.alive(wrapper):
                    yield data

            it = self.cas.astream(
                request, live_stream, channel=self.channel, assemble=assemble, errors=ERRORS
            )
            try:
                first = await it.__anext__()  # sends the request now, as litellm does
            except StopAsyncIteration:
                first = _END
            sent = wrappers[0] if wrappers else None
            return LiteLLMStream(it, tee, first=first, live=sent, api_base=base)
        got: list[Any] = []

        async def alive() -> Json:
            result = await call_live()
            got.append(result)
            return dump_response(result, base)

        response = await self.cas.acall(request, alive, channel=self.channel, errors=ERRORS)
        return got[0] if got else load_response(response, base)

    def _wrapper(self, original: Any, is_async: bool) -> Any:
        if is_async:

            @functools.wraps(original)
            async def acompletion(*args: Any, **kwargs: Any) -> Any:
                return await self.acompletion(original, *args, **kwargs)

            return acompletion

        @functools.wraps(original)
        def completion(*args: Any, **kwargs: Any) -> Any:
            return self.completion(original, *args, **kwargs)

        return completion

    # install / restore -------------------------------------------------------------------
    def _set(self, module: ModuleType, attr: str, wrapper: Any) -> None:
        old = vars(module)[attr]
        self.patched.append((module, attr, old))
        self._wrappers[id(wrapper)] = (wrapper, old)
        setattr(module, attr, wrapper)

    def install(self) -> None:
        if any(key in p._wrappers for p in _PATCHES for key in (*self.sync, *self.aio)):
            raise CassetteError("patch_litellm is already active; leave the outer one first")
        wrappers = {k: self._wrapper(f, False) for k, f in self.sync.items()}
        wrappers |= {k: self._wrapper(f, True) for k, f in self.aio.items()}
        for module in _modules():
            for attr, value in list(vars(module).items()):
                wrapper = wrappers.get(id(value))
                if wrapper is not None and (
                    value in self.sync.values() or value in self.aio.values()
                ):
                    self._set(module, attr, wrapper)
        _PATCHES.append(self)

    def restore(self) -> None:
        for module, attr, old in reversed(self.patched):
            setattr(module, attr, old)
        self.patched.clear()
        for module in _modules():  # modules that copied a wrapper while it was on
            for attr, value in list(vars(module).items()):
                hit = self._wrappers.get(id(value))
                if hit is not None and hit[0] is value:
                    setattr(module, attr, hit[1])
        with contextlib.suppress(ValueError):
            _PATCHES.remove(self)


_PATCHES: list[LiteLLMPatch] = []


@functools.lru_cache(maxsize=8)
def _signature(function: Any) -> inspect.Signature:
    return inspect.signature(function)  # follows __wrapped__ to litellm's own parameters


def _modules() -> Iterator[ModuleType]:
    seen: set[int] = set()
    for name, module in list(sys.modules.items()):
        if isinstance(module, ModuleType) and id(module) not in seen:
            seen.add(id(module))
            if not name.startswith("cassette."):
                yield module


@contextlib.contextmanager
def patch_litellm(cas: Cassette, *, channel: str = "llm") -> Iterator[LiteLLMPatch]:
    """Route ``litellm.completion``/``acompletion`` through ``cas`` inside the block and
    restore them (and every module-level reference to them) on exit."""
    patch = LiteLLMPatch(cas, channel)
    try:
        patch.install()
        yield patch
    finally:
        patch.restore()
