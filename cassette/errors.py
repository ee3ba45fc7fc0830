"""The error hierarchy: one root, a few subclasses, each message ending with the fix."""

from __future__ import annotations

from typing import Any

__all__ = [
    "CassetteError",
    "CassetteFormatError",
    "CassetteMismatch",
    "CassetteMiss",
    "CassetteModeError",
    "CassetteWarning",
    "RecordedError",
]


class CassetteError(Exception):
    """Root of every error this package raises on purpose."""


class CassetteMiss(CassetteError):
    """Replay asked for a key (env_index, channel, step) that the cassette does not hold."""


class CassetteMismatch(CassetteError):
    """Replay found the key, but the request differs from the recorded one."""

    def __init__(self, message: str, *, path: str = "", field: str = "") -> None:
        super().__init__(message)
        self.path = path
        self.field = field


class CassetteFormatError(CassetteError):
    """A cassette file is not valid: names the path and line, and what is wrong."""

    def __init__(self, message: str, *, path: str = "", line: int | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.line = line


class CassetteModeError(CassetteError):
    """An unknown mode, or an operation that the current mode does not allow."""


class RecordedError(CassetteError):
    """A recorded exception that no adapter can rebuild as its own type."""

    def __init__(
        self,
        type_name: str,
        message: str,
        data: dict[str, Any] | None = None,
        *,
        fix: str = "re-record",
    ) -> None:
        super().__init__(
            f"recorded {type_name}: {message} (this error was recorded live and is replayed "
            f"as recorded; if the live call now succeeds, {fix})"
        )
        self.type_name = type_name
        self.recorded_message = message
        self.data = data or {}


class CassetteWarning(UserWarning):
    """Something tolerated: a truncated last line, an unused recording."""
