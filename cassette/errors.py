"""The error hierarchy: one root, a few subclasses, each message ending with the fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = [
    "CassetteError",
    "CassetteFormatError",
    "CassetteMismatch",
    "CassetteMiss",
    "CassetteModeError",
    "CassetteStorageError",
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


class CassetteStorageError(CassetteError):
    """An object store (an fsspec URL) failed: it could not be listed, read or written.

    ``url`` is what failed; ``unreachable`` is True when the store could not be reached
    (a refused connection, a timeout); ``kept`` is the local file that holds what a
    recording could not upload (nothing recorded is lost), or None.
    """

    def __init__(
        self, message: str, *, url: str = "", unreachable: bool = False, kept: Path | None = None
    ) -> None:
        super().__init__(message)
        self.url = url
        self.unreachable = unreachable
        self.kept = kept


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
