"""Record and replay litellm: ``patch_litellm(cas)``.

.. code-block:: python

    import cassette, litellm
    from cassette.adapters.litellm import patch_litellm

    with cassette.open("runs/a.jsonl") as cas, patch_litellm(cas):
        with cassette.episode(0):
            reply = litellm.completion(model="openai/gpt-4o-mini", messages=[...])

Inside the block ``litellm.completion``, ``litellm.embedding``, ``litellm.text_completion``
and ``litellm.responses`` and their async twins (and every module-level reference to them,
``from litellm import completion`` included) go through the cassette; litellm's other model
calls (``get_responses``, ``image_generation``, ``transcription``, ... see
``_litellm_blocked.UNRECORDED``) raise a ``CassetteError`` naming them, in every mode,
rather than reach the network unrecorded; leaving the block restores them all. Each call
is keyed by the current :func:`cassette.episode` on channel ``"llm"``; the request is the
model, the messages (``input``, ``prompt``) and the JSON parameters (never ``api_key``,
``api_base``, headers, timeouts, retries or callbacks; :mod:`._litellm_request`). Replay
returns what litellm returned: a ``ModelResponse``, ``EmbeddingResponse``,
``TextCompletionResponse`` or ``ResponsesAPIResponse`` equal to the recorded one
(``choices``, ``logprobs``, ``usage``, ``_hidden_params``), or for ``stream=True`` a
``CustomStreamWrapper`` (a ``TextCompletionStreamWrapper`` for ``text_completion``, a
``SyncResponsesAPIStreamingIterator`` / ``ResponsesAPIStreamingIterator`` of Responses API
events for ``responses`` / ``aresponses``; :mod:`._litellm_responses`) that yields the
recorded chunks one by one (``for`` and ``async for``). litellm's exceptions replay as the
same type.
Nothing reaches the network in replay. The response headers kept are the provider's, minus
cookies and credentials; the ``api_base`` in ``_hidden_params`` is the one the replaying
call passes.

Importing this module sets ``LITELLM_LOCAL_MODEL_COST_MAP=True`` unless it is set, so that
a litellm imported afterwards does not fetch its cost map from the network.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import AsyncIterator, Iterator
from contextvars import ContextVar
from typing import Any

from ...errors import CassetteError, RecordedError
from ...replay.cassette import Cassette
from ...types import Json
from .._common.patches import ModulePatches, loaded_modules, snapshot
from ._blocked import blocked_wrapper, unrecorded
from ._errors import LiteLLMErrors
from ._request import KINDS, PROMPT, TRANSPORT, Kind, bind, build_request, unnamed
from ._stream import (  # before litellm: says how to install it when it is missing
    END,
    TEXT_CHUNK,
    LiteLLMStream,
    LiteLLMTee,
    LiteLLMTextStream,
    assemble,
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


# --- the patch ----------------------------------------------------------------------------


class LiteLLMPatch:
    """What :func:`patch_litellm` replaced; yielded by it. ``calls``/``live_calls`` count."""

    def __init__(self, cas: Cassette, channel: str = "llm") -> None:
        self.cas, self.channel = cas, channel
        self.patches = ModulePatches()
        self.calls = self.live_calls = 0
        self._lock = threading.Lock()
        import litellm.main  # after ._litellm_stream, which says how to install it

        # the public functions (litellm.completion) and the ones they fall back to
        # (litellm.main.completion), which other modules hold too; the arguments of an async
        # twin that takes (*args, **kwargs) (aembedding) are named by its sync twin's
        main = litellm.main
        self.recorded: dict[int, tuple[Kind, Any, Any]] = {}  # id -> (kind, function, signed)
        for kind in KINDS:
            for module in (litellm, main):
                function = vars(module).get(kind.name)
                if callable(function):
                    twin = vars(main).get(kind.name[1:]) if kind.is_async else None
                    signed = twin if twin is not None and unnamed(function) else function
                    self.recorded[id(function)] = (kind, function, signed)
        self.blocked = unrecorded(litellm, main)  # image_generation, speech, ...: raise

    # one call ----------------------------------------------------------------------------
    def _prepare(
        self, kind: Kind, signed: Any, args: tuple[Any, ...], kwargs: Json
    ) -> tuple[Json, str | None]:
        arguments = bind(signed, args, kwargs)
        base = arguments.get("api_base") or arguments.get("base_url")
        with self._lock:
            self.calls += 1
        return build_request(arguments, kind), (base if isinstance(base, str) else None)

    def _streams(self, kind: Kind, base: str | None) -> tuple[LiteLLMTee, Any, Any]:
        """(tee, stream wrapper type, assemble) of ``kind``'s streams."""
        if kind.events:  # litellm 1.63 on: imported when first used
            from . import _responses as responses

            stream = responses.stream_type(kind.is_async)
            return responses.ResponsesTee(base), stream, responses.assemble_response
        if kind.text:
            return LiteLLMTee(base, TEXT_CHUNK), LiteLLMTextStream, assemble_text
        return LiteLLMTee(base), LiteLLMStream, assemble

    def call(self, kind: Kind, original: Any, signed: Any, *args: Any, **kwargs: Any) -> Any:
        """One call of a sync entry point through the cassette (``original`` sends it
        live; ``signed`` names its arguments)."""
        if _LIVE.get():  # litellm calling itself (text_completion runs completion)
            return original(*args, **kwargs)
        request, base = self._prepare(kind, signed, args, kwargs)

        def call_live() -> Any:
            with self._lock:
                self.live_calls += 1
            token = _LIVE.set(True)
            try:
                return original(*args, **kwargs)
            finally:
                _LIVE.reset(token)

        if request.get("stream"):
            tee, stream_type, joined = self._streams(kind, base)
            wrappers: list[Any] = []

            def live_stream() -> Iterator[Json]:
                wrapper = call_live()
                wrappers.append(wrapper)
                tee.head = lambda: tee.stream_head(wrapper)
                return tee.live(wrapper)

            it = self.cas.stream(
                request, live_stream, channel=self.channel, assemble=joined, errors=ERRORS
            )
            try:
                first = next(it, END)  # sends the request now, as litellm's completion does
            except Exception as exc:  # a text stream raises it when iterated
                if not _deferred(kind, exc):
                    raise
                first = exc
            sent = wrappers[0] if wrappers else None
            return stream_type(it, tee, first=first, live=sent, api_base=base)
        got: list[Any] = []

        def live() -> Json:
            result = call_live()
            got.append(result)
            return dump_response(result, base)

        response = self.cas.call(request, live, channel=self.channel, errors=ERRORS)
        return got[0] if got else load_response(response, base)

    async def acall(self, kind: Kind, original: Any, signed: Any, *args: Any, **kwargs: Any) -> Any:
        """Async twin of :meth:`call`."""
        if _LIVE.get():
            return await original(*args, **kwargs)
        request, base = self._prepare(kind, signed, args, kwargs)

        async def call_live() -> Any:
            with self._lock:
                self.live_calls += 1
            token = _LIVE.set(True)
            try:
                return await original(*args, **kwargs)
            finally:
                _LIVE.reset(token)

        if request.get("stream"):
            tee, stream_type, joined = self._streams(kind, base)
            wrappers: list[Any] = []

            async def live_stream() -> AsyncIterator[Json]:
                wrapper = await call_live()
                wrappers.append(wrapper)
                tee.head = lambda: tee.stream_head(wrapper)
                async for data in tee.alive(wrapper):
                    yield data

            it = self.cas.astream(
                request, live_stream, channel=self.channel, assemble=joined, errors=ERRORS
            )
            first: Any
            try:
                first = await it.__anext__()  # sends the request now, as litellm does
            except StopAsyncIteration:
                first = END
            except Exception as exc:  # as in call()
                if not _deferred(kind, exc):
                    raise
                first = exc
            sent = wrappers[0] if wrappers else None
            return stream_type(it, tee, first=first, live=sent, api_base=base)
        got: list[Any] = []

        async def alive() -> Json:
            result = await call_live()
            got.append(result)
            return dump_response(result, base)

        response = await self.cas.acall(request, alive, channel=self.channel, errors=ERRORS)
        return got[0] if got else load_response(response, base)

    def _wrapper(self, kind: Kind, original: Any, signed: Any) -> Any:
        if kind.is_async:

            @functools.wraps(original)
            async def arecorded(*args: Any, **kwargs: Any) -> Any:
                return await self.acall(kind, original, signed, *args, **kwargs)

            return arecorded

        @functools.wraps(original)
        def recorded(*args: Any, **kwargs: Any) -> Any:
            return self.call(kind, original, signed, *args, **kwargs)

        return recorded

    # install / restore -------------------------------------------------------------------
    def install(self) -> None:
        if any(p.patches.holds(key) for p in _PATCHES for key in self.recorded):
            raise CassetteError("patch_litellm is already active; leave the outer one first")
        wrappers = {k: self._wrapper(*entry) for k, entry in self.recorded.items()}
        wrappers |= {k: blocked_wrapper(n, f, _LIVE) for k, (n, f) in self.blocked.items()}
        for _, module in loaded_modules():
            for attr, value in snapshot(vars(module)).items():
                wrapper = wrappers.get(id(value))  # the originals are alive: the ids are theirs
                if wrapper is not None:
                    self.patches.set(module, attr, wrapper)
        _PATCHES.append(self)

    def restore(self) -> None:
        self.patches.restore()
        with contextlib.suppress(ValueError):
            _PATCHES.remove(self)


_PATCHES: list[LiteLLMPatch] = []


def _deferred(kind: Kind, exc: Exception) -> bool:
    """Whether the error of a stream's first chunk waits for the iteration: yes for a text
    stream (its live wrapper sends the request then), unless the cassette itself failed (a
    miss, a mismatch); a chat stream raises it from the call."""
    return kind.text and (isinstance(exc, RecordedError) or not isinstance(exc, CassetteError))


@contextlib.contextmanager
def patch_litellm(cas: Cassette, *, channel: str = "llm") -> Iterator[LiteLLMPatch]:
    """Route ``litellm.completion``, ``embedding``, ``text_completion``, ``responses`` and
    their async twins through ``cas`` inside the block, make litellm's other model calls raise a
    ``CassetteError``, and restore them all (and every module-level reference to them) on
    exit."""
    patch = LiteLLMPatch(cas, channel)
    try:
        patch.install()
        yield patch
    finally:
        patch.restore()
