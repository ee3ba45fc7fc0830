"""The error hierarchy: one root, a few subclasses, each message ending with the fix."""

from __future__ import annotations

import errno
import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

__all__ = [
    "CassetteError",
    "CassetteFormatError",
    "CassetteMismatch",
    "CassetteMiss",
    "CassetteModeError",
    "CassettePathError",
    "CassetteStorageError",
    "CassetteWarning",
    "RecordedError",
    "path_error",
    "reporting_paths",
]

P = ParamSpec("P")
R = TypeVar("R")


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


class CassettePathError(CassetteError, OSError):
    """A path that cannot be read or written (missing, a directory, unreadable): one line
    naming it and the fix; also an :class:`OSError` with the failure's ``errno``,
    ``strerror`` and ``filename``, so ``except OSError`` still catches it."""

    def __init__(self, message: str, *, path: str = "", cause: OSError | None = None) -> None:
        super().__init__(message)
        self.path = path
        if cause is not None:
            self.errno, self.strerror = cause.errno, cause.strerror
        self.filename = path or None

    def __str__(self) -> str:
        return str(self.args[0])


def path_error(exc: OSError) -> CassettePathError:
    """``exc`` (reading or writing the path it names) as one line that ends with the fix."""
    if isinstance(exc, CassettePathError):
        return exc
    name = str(exc.filename if exc.filename is not None else "the path")
    if exc.errno == errno.EISDIR and exc.filename2 is not None:  # os.replace onto a directory
        name = str(exc.filename2)
    why = {
        errno.ENOENT: f"no such file or directory: {name}; check the path",
        errno.EISDIR: f"{name} is a directory; name a file",
        errno.ENOTDIR: f"{name}: a part of the path is a file, not a directory; check the path",
        errno.EEXIST: f"{name} exists and is not a directory; check the path",
        errno.EACCES: f"permission denied: {name}; check its permissions",
        errno.EPERM: f"permission denied: {name}; check its permissions",
        errno.ELOOP: f"{name}: a symbolic link that leads to itself; check the path",
    }.get(exc.errno or 0, f"{name}: {exc.strerror or exc}; check the path and its permissions")
    return CassettePathError(why, path=name, cause=exc)


def reporting_paths(fn: Callable[P, R]) -> Callable[P, R]:
    """``fn``, raising :class:`CassettePathError` for an :class:`OSError` that names a path."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except CassetteError:
            raise
        except OSError as exc:
            if exc.filename is None:  # not about a path (a broken pipe): as it is
                raise
            raise path_error(exc) from exc

    return wrapper


class CassetteStorageError(CassetteError):
    """An object store (an fsspec URL) could not be listed, read or written: ``url`` failed,
    ``unreachable`` if it could not be reached (refused, timed out), ``kept`` the local file
    holding what a recording could not upload (or None)."""

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
