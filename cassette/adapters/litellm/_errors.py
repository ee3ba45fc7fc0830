"""litellm exceptions in a cassette (for the litellm and tau2 patches), rebuilt as their own
type only if ``litellm.exceptions`` is already loaded."""

from __future__ import annotations

import contextlib
import inspect
import sys

from ...types import Json

__all__ = ["LiteLLMErrors"]

_DEFAULTS = {"status_code": 500, "llm_provider": "", "model": ""}  # what the constructors need


class LiteLLMErrors:
    """Stores litellm exceptions and rebuilds them as their own type on replay."""

    def dump(self, exc: BaseException) -> Json | None:
        cls = type(exc)
        if not cls.__module__.startswith("litellm"):
            return None
        data = {
            k: v
            for k in ("llm_provider", "model", "status_code")
            if isinstance(v := getattr(exc, k, None), (str, int))
        }
        kind = f"litellm.{cls.__name__}"
        message = str(getattr(exc, "message", None) or exc).removeprefix(f"{kind}: ")
        return {"type": kind, "message": message, "data": data}

    def load(self, info: Json) -> BaseException | None:
        cls = _exception_class(str(info.get("type") or ""))
        if cls is None:
            return None
        arguments = (
            _DEFAULTS | {"message": str(info.get("message") or "")} | (info.get("data") or {})
        )
        with contextlib.suppress(Exception):  # one we cannot rebuild is replayed as RecordedError
            params = inspect.signature(cls).parameters
            return cls(**{k: v for k, v in arguments.items() if k in params})
        return None


def _exception_class(kind: str) -> type[BaseException] | None:
    exceptions = sys.modules.get("litellm.exceptions")
    if not kind.startswith("litellm.") or exceptions is None:
        return None
    cls = getattr(exceptions, kind.partition(".")[2], None)
    return cls if isinstance(cls, type) and issubclass(cls, BaseException) else None
