"""The modes of a cassette, and how adapters store their exceptions."""

from __future__ import annotations

import os
from enum import Enum
from typing import Any, Protocol

from .errors import CassetteModeError

__all__ = ["FIX", "ErrorCodec", "Mode", "default_error"]

Json = dict[str, Any]
FIX = "re-record with --cassette-mode=record (or CASSETTE_MODE=record)"


class Mode(str, Enum):
    """What a cassette does with a call; see the table in the README."""

    REPLAY = "replay"
    RECORD = "record"
    AUTO = "auto"
    APPEND = "append"
    PASSTHROUGH = "passthrough"

    @classmethod
    def parse(cls, value: Mode | str | None) -> Mode:
        if value is None:
            value = os.environ.get("CASSETTE_MODE") or cls.AUTO
        try:
            return cls(value.lower() if isinstance(value, str) else value)
        except ValueError:
            names = ", ".join(m.value for m in cls)
            raise CassetteModeError(
                f"unknown cassette mode {value!r}; use one of {names}"
            ) from None


class ErrorCodec(Protocol):
    """How an adapter stores its exceptions and rebuilds them on replay."""

    def dump(self, exc: BaseException) -> Json | None: ...  # {"type", "message", "data"}

    def load(self, info: Json) -> BaseException | None: ...


def default_error(exc: BaseException) -> Json:
    cls = type(exc)
    return {"type": f"{cls.__module__}.{cls.__qualname__}", "message": str(exc), "data": {}}
