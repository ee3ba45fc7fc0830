"""Record and replay litellm: ``patch_litellm(cas)`` (docs/adapters/litellm.md); litellm's
other model calls (:data:`UNRECORDED`) raise a ``CassetteError`` inside the block."""

from __future__ import annotations

import contextlib
import functools
import inspect
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextvars import ContextVar
from typing import Any

from ...errors import CassetteError, RecordedError
from ...replay.cassette import Cassette
from ...types import Json
from .._common.assemble import assemble_chat, assemble_response
from .._common.patches import ModulePatches, module_values
from ._errors import LiteLLMErrors
from ._request import KINDS, PROMPT, TRANSPORT, Kind, bind, build_request, unnamed
from ._stream import (  # before litellm: says how to install it when it is missing
    END,
    TEXT_CHUNK,
    LiteLLMStream,
    LiteLLMTee,
    LiteLLMTextStream,
    assemble_text,
    dump_response,
    load_response,
)

__all__ = [
    "PROMPT",
    "TRANSPORT",
    "LiteLLMErrors",
    "LiteLLMPatch",
    "LiteLLMStream",
    "LiteLLMTee",
    "LiteLLMTextStream",
    "build_request",
    "patch_litellm",
]

_LIVE: ContextVar[bool] = ContextVar("cassette_litellm_live", default=False)
ERRORS = LiteLLMErrors()


# litellm's model calls the patch does not record: inside the block each raises
UNRECORDED = (
    "get_responses", "aget_responses", "delete_responses", "adelete_responses",
    "image_generation", "aimage_generation", "image_edit", "aimage_edit", "image_variation",
    "aimage_variation", "transcription", "atranscription", "speech", "aspeech", "moderation",
    "amoderation", "rerank", "arerank", "ocr", "aocr", "search", "asearch",
    "video_generation", "avideo_generation", "anthropic_messages", "aanthropic_messages",
    "generate_content", "agenerate_content", "generate_content_stream",
    "agenerate_content_stream",
)  # fmt: skip


def _error(name: str) -> CassetteError:
    return CassetteError(
        f"litellm.{name} cannot be recorded by patch_litellm (it records completion, "
        "embedding, text_completion and responses and their async twins) and would reach "
        f"the network unrecorded; call litellm.{name} outside the patch_litellm block"
    )


def _like(original: Any, call: Callable[..., Any], aio: bool) -> Callable[..., Any]:
    """A function that looks like ``original`` (async if ``aio``) and returns ``call(...)``."""

    async def awrapper(*args: Any, **kwargs: Any) -> Any:
        return await call(*args, **kwargs)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return call(*args, **kwargs)

    return functools.wraps(original)(awrapper if aio else wrapper)


def _blocked(name: str, original: Any) -> Callable[..., Any]:
    """``original`` raising :func:`_error`, unless litellm calls it while a call runs live."""

    def blocked(*args: Any, **kwargs: Any) -> Any:
        if _LIVE.get():
            return original(*args, **kwargs)
        raise _error(name)

    return _like(original, blocked, inspect.iscoroutinefunction(original))


class _Streaming:
    """One streamed call: the tee, wrapper type and assembler of its kind, and the live one."""

    def __init__(self, kind: Kind, base: str | None) -> None:
        self.kind, self.base, self.sent = kind, base, None
        self.tee: LiteLLMTee = LiteLLMTee(base)
        self.type: Any = LiteLLMStream
        self.assemble: Callable[[list[Json]], Json] = assemble_chat
        if kind.events:  # litellm 1.63 on: imported when first used
            from . import _responses

            self.tee, self.assemble = _responses.ResponsesTee(base), assemble_response
            self.type = _responses.STREAMS[kind.is_async]
        elif kind.text:
            self.tee, self.type = LiteLLMTee(base, TEXT_CHUNK), LiteLLMTextStream
            self.assemble = assemble_text

    def adopt(self, wrapper: Any) -> Any:
        self.sent = wrapper
        self.tee.head = lambda: self.tee.stream_head(wrapper)
        return wrapper

    def deferred(self, exc: Exception) -> Exception:
        """A text stream's first-chunk error, kept for its iteration (as live); else raised."""
        cassette_failed = isinstance(exc, CassetteError) and not isinstance(exc, RecordedError)
        if self.kind.text and not cassette_failed:
            return exc
        raise exc

    def wrapper(self, chunks: Any, first: Any) -> Any:
        return self.type(chunks, self.tee, first=first, live=self.sent, api_base=self.base)


class LiteLLMPatch:
    """What :func:`patch_litellm` replaced; yielded by it. ``calls``/``live_calls`` count."""

    def __init__(self, cas: Cassette, channel: str = "llm") -> None:
        self.cas, self.channel = cas, channel
        self.patches = ModulePatches()
        self.calls = self.live_calls = 0
        self._lock = threading.Lock()
        import litellm.main  # after ._stream, which says how to install it

        self.recorded = _recorded((litellm, litellm.main), litellm.main)  # modules hold either
        self.blocked = {  # id -> (name, function) of those that raise: image_generation, ...
            id(function): (name, function)
            for name in UNRECORDED
            for module in (litellm, litellm.main)
            if inspect.isfunction(function := vars(module).get(name))
        }

    def _prepare(
        self, kind: Kind, signed: Any, args: tuple[Any, ...], kwargs: Json
    ) -> tuple[Json, str | None, Json]:
        """(request dict, the api_base the call passes, keywords of the cassette call)."""
        arguments = bind(signed, args, kwargs)
        base = arguments.get("api_base") or arguments.get("base_url")
        with self._lock:
            self.calls += 1
        keys: Json = {"channel": self.channel, "errors": ERRORS}
        return build_request(arguments, kind), (base if isinstance(base, str) else None), keys

    @contextlib.contextmanager
    def _live(self) -> Iterator[None]:
        """Around a live call: counted, and litellm calling itself goes straight through."""
        with self._lock:
            self.live_calls += 1
        token = _LIVE.set(True)
        try:
            yield
        finally:
            _LIVE.reset(token)

    def call(self, kind: Kind, original: Any, signed: Any, *args: Any, **kwargs: Any) -> Any:
        """One call through the cassette (``original`` sends it, ``signed`` names its args)."""
        if _LIVE.get():  # litellm calling itself (text_completion runs completion)
            return original(*args, **kwargs)
        request, base, keys = self._prepare(kind, signed, args, kwargs)

        def call_live() -> Any:
            with self._live():
                return original(*args, **kwargs)

        if request.get("stream"):
            stream = _Streaming(kind, base)
            live = lambda: stream.tee.live(stream.adopt(call_live()))  # noqa: E731
            chunks = self.cas.stream(request, live, assemble=stream.assemble, **keys)
            try:
                first = next(chunks, END)  # sends the request now, as litellm's completion does
            except Exception as exc:  # noqa: BLE001 - raised unless the stream defers it
                first = stream.deferred(exc)
            return stream.wrapper(chunks, first)
        got: list[Any] = []
        response = self.cas.call(
            request, lambda: dump_response(_kept(got, call_live()), base), **keys
        )
        return got[0] if got else load_response(response, base)

    async def acall(self, kind: Kind, original: Any, signed: Any, *args: Any, **kwargs: Any) -> Any:
        if _LIVE.get():
            return await original(*args, **kwargs)
        request, base, keys = self._prepare(kind, signed, args, kwargs)

        async def call_live() -> Any:
            with self._live():
                return await original(*args, **kwargs)

        if request.get("stream"):
            stream = _Streaming(kind, base)

            async def live() -> AsyncIterator[Json]:
                async for data in stream.tee.alive(stream.adopt(await call_live())):
                    yield data

            chunks = self.cas.astream(request, live, assemble=stream.assemble, **keys)
            try:
                first = await anext(chunks, END)  # sends the request now, as litellm does
            except Exception as exc:  # noqa: BLE001 - raised unless the stream defers it
                first = stream.deferred(exc)
            return stream.wrapper(chunks, first)
        got: list[Any] = []

        async def alive() -> Json:
            return dump_response(_kept(got, await call_live()), base)

        response = await self.cas.acall(request, alive, **keys)
        return got[0] if got else load_response(response, base)

    def _wrapper(self, kind: Kind, original: Any, signed: Any) -> Any:
        call = self.acall if kind.is_async else self.call
        return _like(original, functools.partial(call, kind, original, signed), kind.is_async)

    def install(self) -> None:
        if any(ModulePatches.wrapper(entry[1]) for entry in self.recorded.values()):
            raise CassetteError("patch_litellm is already active; leave the outer one first")
        wrappers = {k: self._wrapper(*entry) for k, entry in self.recorded.items()}
        wrappers |= {k: _blocked(n, f) for k, (n, f) in self.blocked.items()}
        for _, module, attr, value in module_values():
            wrapper = wrappers.get(id(value))  # the originals are alive: the ids are theirs
            if wrapper is not None:
                self.patches.set(module, attr, wrapper)


def _recorded(modules: tuple[Any, ...], main: Any) -> dict[int, tuple[Kind, Any, Any]]:
    """id -> (kind, function, signed): an unnamed async twin is signed by its sync twin."""
    recorded = {}
    for kind in KINDS:
        for module in modules:
            function = vars(module).get(kind.name)
            if callable(function):
                twin = vars(main).get(kind.name[1:]) if kind.is_async else None
                signed = twin if twin is not None and unnamed(function) else function
                recorded[id(function)] = (kind, function, signed)
    return recorded


def _kept(got: list[Any], result: Any) -> Any:
    got.append(result)
    return result


@contextlib.contextmanager
def patch_litellm(cas: Cassette, *, channel: str = "llm") -> Iterator[LiteLLMPatch]:
    """Route litellm's recorded calls through ``cas`` inside the block, refuse its other
    model calls, and restore them all (and every module-level reference to them) on exit."""
    patch = LiteLLMPatch(cas, channel)
    try:
        patch.install()
        yield patch
    finally:
        patch.patches.restore()
