"""The litellm entry points that :func:`~cassette.adapters.litellm.patch_litellm` does not
record (their answers are types it does not rebuild: images, audio, files, rankings, ...;
or, for ``get_responses``/``delete_responses``, stored responses it does not keep): inside
the block each raises a :class:`~cassette.errors.CassetteError` naming it, in every mode,
instead of reaching the network unrecorded."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from contextvars import ContextVar
from types import ModuleType
from typing import Any

from ...errors import CassetteError

__all__ = ["UNRECORDED", "blocked_wrapper", "unrecorded"]

# litellm's other model calls (those a litellm version lacks are skipped)
UNRECORDED = (
    "get_responses", "aget_responses", "delete_responses", "adelete_responses",
    "image_generation", "aimage_generation", "image_edit", "aimage_edit", "image_variation",
    "aimage_variation", "transcription", "atranscription", "speech", "aspeech", "moderation",
    "amoderation", "rerank", "arerank", "ocr", "aocr", "search", "asearch",
    "video_generation", "avideo_generation", "anthropic_messages", "aanthropic_messages",
    "generate_content", "agenerate_content", "generate_content_stream",
    "agenerate_content_stream",
)  # fmt: skip


def unrecorded(*modules: ModuleType) -> dict[int, tuple[str, Any]]:
    """``{id(function): (name, function)}`` of the :data:`UNRECORDED` functions the modules
    (``litellm``, ``litellm.main``) define."""
    found: dict[int, tuple[str, Any]] = {}
    for name in UNRECORDED:
        for module in modules:
            value = vars(module).get(name)
            if inspect.isfunction(value):
                found[id(value)] = (name, value)
    return found


def _error(name: str) -> CassetteError:
    return CassetteError(
        f"litellm.{name} cannot be recorded by patch_litellm (it records completion, "
        "embedding, text_completion and responses and their async twins) and would reach "
        f"the network unrecorded; call litellm.{name} outside the patch_litellm block"
    )


def blocked_wrapper(name: str, original: Any, live: ContextVar[bool]) -> Callable[..., Any]:
    """``original`` raising :func:`_error` when called, unless litellm calls it itself
    while a recorded call runs live (``live`` is set)."""
    if inspect.iscoroutinefunction(original):

        @functools.wraps(original)
        async def ablocked(*args: Any, **kwargs: Any) -> Any:
            if live.get():
                return await original(*args, **kwargs)
            raise _error(name)

        return ablocked

    @functools.wraps(original)
    def blocked(*args: Any, **kwargs: Any) -> Any:
        if live.get():
            return original(*args, **kwargs)
        raise _error(name)

    return blocked
