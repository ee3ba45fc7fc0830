"""Record and replay litellm: ``patch_litellm(cas)``.

.. code-block:: python

    import cassette, litellm
    from cassette.adapters.litellm import patch_litellm

    with cassette.open("runs/a.jsonl") as cas, patch_litellm(cas):
        with cassette.episode(0):
            reply = litellm.completion(model="openai/gpt-4o-mini", messages=[...])

Inside the block ``litellm.completion`` and ``litellm.acompletion`` (and every module-level
reference to them, ``from litellm import completion`` included) go through the cassette;
litellm's other model calls (``embedding``, ``text_completion``, ``responses``, ... see
``_litellm_blocked.UNRECORDED``) raise a ``CassetteError`` naming them, in every mode,
rather than reach the network unrecorded; leaving the block restores them all. Each call
is keyed by the current :func:`cassette.episode` on channel ``"llm"``; the request is the
model, the messages and the JSON parameters (never ``api_key``, ``api_base``, headers,
timeouts, retries or callbacks). Replay returns
what litellm returned: a ``ModelResponse`` equal to the recorded one (``choices``,
``logprobs``, ``usage``, ``_hidden_params``), or for ``stream=True`` a ``CustomStreamWrapper``
that yields the recorded ``ModelResponseStream`` chunks one by one (``for`` and
``async for``). litellm's exceptions replay as the same type. Nothing reaches the network
in replay. The response headers kept are the provider's, minus cookies and credentials;
the ``api_base`` in ``_hidden_params`` is the one the replaying call passes.

Importing this module sets ``LITELLM_LOCAL_MODEL_COST_MAP=True`` unless it is set, so that
a litellm imported afterwards does not fetch its cost map from the network.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import inspect
import sys
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextvars import ContextVar
from types import ModuleType
from typing import Any, cast

from pydantic import BaseModel

from ..cassette import Cassette
from ..errors import CassetteError
from ._litellm_blocked import blocked_wrapper, unrecorded
from ._litellm_errors import LiteLLMErrors
from ._litellm_stream import (  # first: says how to install litellm when it is missing
    END,
    LiteLLMStream,
    LiteLLMTee,
    assemble,
    dump_response,
    load_response,
)
from ._objects import plain

__all__ = [
    "PROMPT",
    "TRANSPORT",
    "LiteLLMErrors",
    "LiteLLMPatch",
    "LiteLLMStream",
    "LiteLLMTee",
    "build_request",
    "patch_litellm",
]

Json = dict[str, Any]
# Arguments that choose where and how to send, or what to call back: not the request.
TRANSPORT = frozenset(
    ("api_key", "api_base", "base_url", "api_version", "organization", "project", "timeout",
     "request_timeout", "stream_timeout", "num_retries", "max_retries", "headers",
     "extra_headers", "client", "custom_llm_provider", "model_list", "shared_session",
     "litellm_logging_obj", "logger_fn", "litellm_call_id", "acompletion", "caching", "cache",
     "metadata", "litellm_metadata", "callbacks", "success_callback", "failure_callback",
     "deployment_id", "proxy_server_request", "azure_ad_token_provider")
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
_LIVE: ContextVar[bool] = ContextVar("cassette_litellm_live", default=False)
ERRORS = LiteLLMErrors()


# --- requests -----------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _litellm_own() -> frozenset[str]:
    """litellm's own arguments (routing, pricing, logging, the ids it draws), less those
    that change what the model is sent."""
    from litellm.types.utils import all_litellm_params

    return frozenset(all_litellm_params) - PROMPT


def _sent(name: str, value: Any) -> bool:
    if value is None or name in TRANSPORT or name.endswith(_SECRET_SUFFIXES):
        return False
    if name.startswith("_") or name in _litellm_own():
        return False
    return not (callable(value) and not isinstance(value, type))


def build_request(arguments: Mapping[str, Any]) -> Json:
    """The request dict of a ``completion(**arguments)`` call: model, messages and the JSON
    parameters (``None`` means not given, as in litellm); not the transport, secrets,
    callbacks or litellm's own routing and logging arguments (a Router adds a trace id)."""
    request: Json = {"model": arguments.get("model"), "messages": arguments.get("messages", [])}
    for name, value in arguments.items():
        if name in request or not _sent(name, value):
            continue
        if isinstance(value, type) and issubclass(value, BaseModel):  # response_format=Model
            value = _response_format(value)
        request[name] = value
    try:
        return cast(Json, plain(request, "request"))
    except CassetteError:
        bad = [k for k, v in request.items() if not _json_able(v)]
        raise CassetteError(
            f"litellm argument(s) {bad} cannot be stored in a cassette; pass JSON-able "
            "values (dicts, lists, str, numbers, pydantic models)"
        ) from None


def _response_format(model: type[BaseModel]) -> Any:
    """The JSON schema response_format that litellm sends for a pydantic model."""
    for where in ("litellm.llms.base_llm.base_utils", "litellm.utils"):  # newer, older
        with contextlib.suppress(ImportError):
            convert = getattr(importlib.import_module(where), "type_to_response_format_param", None)
            if callable(convert):
                return convert(model)
    schema = model.model_json_schema()  # pragma: no cover - a litellm without either
    return {"type": "json_schema", "json_schema": {"name": model.__name__, "schema": schema}}


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


# --- the patch ----------------------------------------------------------------------------


class LiteLLMPatch:
    """What :func:`patch_litellm` replaced; yielded by it. ``calls``/``live_calls`` count."""

    def __init__(self, cas: Cassette, channel: str = "llm") -> None:
        self.cas, self.channel = cas, channel
        self.patched: list[tuple[ModuleType, str, Any]] = []  # (module, attribute, old)
        self.calls = self.live_calls = 0
        self._lock = threading.Lock()
        import litellm.main  # after ._litellm_stream, which says how to install it

        self._wrappers: dict[int, tuple[Any, Any]] = {}  # id(wrapper) -> (wrapper, original)
        # the public functions (litellm.completion) and the ones they fall back to
        # (litellm.main.completion), which other modules hold too
        main = litellm.main
        self.sync = {id(f): f for f in (litellm.completion, main.completion)}
        self.aio = {id(f): f for f in (litellm.acompletion, main.acompletion)}
        self.blocked = unrecorded(litellm, main)  # embedding, text_completion, ...: raise

    # one call ----------------------------------------------------------------------------
    def _prepare(self, original: Any, args: tuple[Any, ...], kwargs: Json) -> Any:
        arguments = _bind(_signature(original), args, kwargs)
        base = arguments.get("api_base") or arguments.get("base_url")
        with self._lock:
            self.calls += 1
        return build_request(arguments), (base if isinstance(base, str) else None)

    def completion(self, original: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """One ``completion`` call through the cassette (``original`` sends it live)."""
        if _LIVE.get():  # litellm calling itself (the public function runs main's)
            return original(*args, **kwargs)
        request, base = self._prepare(original, args, kwargs)

        def call_live() -> Any:
            with self._lock:
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
            first = next(it, END)  # sends the request now, as litellm does
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
            with self._lock:
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
                first = END
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
        wrappers |= {k: blocked_wrapper(n, f, _LIVE) for k, (n, f) in self.blocked.items()}
        for module in _modules():
            for attr, value in _copy(vars(module)).items():
                wrapper = wrappers.get(id(value))  # the originals are alive: the ids are theirs
                if wrapper is not None:
                    self._set(module, attr, wrapper)
        _PATCHES.append(self)

    def restore(self) -> None:
        for module, attr, old in reversed(self.patched):
            setattr(module, attr, old)
        self.patched.clear()
        for module in _modules():  # modules that copied a wrapper while it was on
            for attr, value in _copy(vars(module)).items():
                hit = self._wrappers.get(id(value))
                if hit is not None and hit[0] is value:
                    setattr(module, attr, hit[1])
        with contextlib.suppress(ValueError):
            _PATCHES.remove(self)


_PATCHES: list[LiteLLMPatch] = []


@functools.lru_cache(maxsize=8)
def _signature(function: Any) -> inspect.Signature:
    return inspect.signature(function)  # follows __wrapped__ to litellm's own parameters


def _copy(mapping: dict[str, Any]) -> dict[str, Any]:
    """A snapshot of a dict that may change while it is copied (a finalizer run by the
    garbage collector, or another thread, importing a module)."""
    for _ in range(100):
        try:
            return mapping.copy()
        except RuntimeError:  # pragma: no cover - changed while being copied
            continue
    return mapping.copy()  # pragma: no cover


def _modules() -> Iterator[ModuleType]:
    seen: set[int] = set()
    for name, module in _copy(sys.modules).items():
        if isinstance(module, ModuleType) and id(module) not in seen:
            seen.add(id(module))
            if not name.startswith("cassette."):
                yield module


@contextlib.contextmanager
def patch_litellm(cas: Cassette, *, channel: str = "llm") -> Iterator[LiteLLMPatch]:
    """Route ``litellm.completion``/``acompletion`` through ``cas`` inside the block, make
    litellm's other model calls raise a ``CassetteError``, and restore them all (and every
    module-level reference to them) on exit."""
    patch = LiteLLMPatch(cas, channel)
    try:
        patch.install()
        yield patch
    finally:
        patch.restore()
