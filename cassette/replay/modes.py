"""The modes of a cassette, and how adapters store their exceptions."""

from __future__ import annotations

import os
from enum import Enum
from typing import Protocol

from ..errors import CassetteError, CassetteModeError, RecordedError
from ..format.entry import Entry
from ..types import Json

__all__ = [
    "BY_KEY",
    "FIX",
    "FORCE_VARIABLE",
    "MODE_VARIABLE",
    "PYTEST_FIX",
    "REPLAY_KEYS",
    "SERVE_BY_KEY",
    "SERVE_FIX",
    "ErrorCodec",
    "Mode",
    "chosen_mode",
    "default_error",
    "dump_error",
    "load_error",
    "served",
]

MODE_VARIABLE = "CASSETTE_MODE"  # the mode where the code gives none
FORCE_VARIABLE = "CASSETTE_FORCE_MODE"  # the mode whatever the code gives
# how to re-record, as a miss or mismatch prints it: each works where it is printed
FIX = (
    f"to re-record, run it again with {FORCE_VARIABLE}=record set (it overrides the code's "
    "mode=), or as `cassette run --mode record -- <your command>`"
)
PYTEST_FIX = "re-record with --cassette-mode=record"  # a cassette the pytest plugin opened
SERVE_FIX = "to re-record, restart `cassette serve` with --mode record"  # as a server prints it
BY_KEY = "open with match='key' to serve by key alone"  # a mismatch's other way out
SERVE_BY_KEY = "restart `cassette serve` with --match key to serve by key alone"
# replay sends nothing, but the openai and anthropic clients refuse to start without a key
REPLAY_KEYS = {
    "OPENAI_API_KEY": "cassette-replay-no-key",
    "ANTHROPIC_API_KEY": "cassette-replay-no-key",
}


class Mode(str, Enum):
    """What a cassette does with a call; the table is in docs/concepts/modes.md."""

    REPLAY = "replay"
    RECORD = "record"
    AUTO = "auto"
    APPEND = "append"
    PASSTHROUGH = "passthrough"

    @classmethod
    def parse(cls, value: Mode | str | None) -> Mode:
        """``value``; None: ``$CASSETTE_MODE``, else ``auto``."""
        source = ""
        if value is None:
            value = os.environ.get(MODE_VARIABLE) or cls.AUTO
            source = f"{MODE_VARIABLE}={value!r}: " if value != cls.AUTO else ""
        try:
            return cls(value.strip().lower() if isinstance(value, str) else value)
        except ValueError:
            names = ", ".join(m.value for m in cls)
            raise CassetteModeError(
                f"{source}unknown cassette mode {value!r}; use one of {names}"
            ) from None


def chosen_mode(value: Mode | str | None) -> tuple[Mode, str | None]:
    """(mode, its fix if ``$CASSETTE_FORCE_MODE`` set it), else :meth:`Mode.parse` of ``value``."""
    forced = os.environ.get(FORCE_VARIABLE, "").strip()
    if not forced:
        return Mode.parse(value), None
    try:
        mode = Mode.parse(forced)
    except CassetteModeError as exc:
        raise CassetteModeError(f"{FORCE_VARIABLE}={forced!r}: {exc}") from None
    return mode, (
        f"re-record with {FORCE_VARIABLE}=record (it is {mode.value} now; "
        "under `cassette run --mode`, with --mode record)"
    )


class ErrorCodec(Protocol):
    """How an adapter stores its exceptions and rebuilds them on replay."""

    def dump(self, exc: BaseException) -> Json | None: ...  # {"type", "message", "data"}

    def load(self, info: Json) -> BaseException | None: ...


def default_error(exc: BaseException) -> Json:
    cls = type(exc)
    return {"type": f"{cls.__module__}.{cls.__qualname__}", "message": str(exc), "data": {}}


def dump_error(exc: BaseException, errors: ErrorCodec | None) -> Json:
    """How ``exc`` is recorded: as the adapter's ``errors`` store it, else its type and message."""
    return (errors.dump(exc) if errors is not None else None) or default_error(exc)


def load_error(info: Json, errors: ErrorCodec | None, fix: str) -> BaseException:
    """The exception a recorded error is replayed as: the adapter's, else :class:`RecordedError`."""
    exc = errors.load(info) if errors is not None else None
    if exc is None:
        return RecordedError(
            str(info.get("type")), str(info.get("message")), info.get("data"), fix=fix
        )
    return exc


def served(entry: Entry, errors: ErrorCodec | None, fix: str) -> Json:
    """What a call that ``entry`` answers returns, or its recorded error, raised."""
    response, error = entry.served()
    if error is not None:
        raise load_error(error, errors, fix)
    if response is None:
        raise CassetteError(f"{entry.source}:{entry.line} holds no response; {fix}")
    return response
