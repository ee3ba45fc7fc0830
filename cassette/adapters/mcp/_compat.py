"""What :mod:`cassette.adapters.mcp` needs from the SDK, the same under mcp 1.x and 2.x
(typed against 2.x): transports and JSON-RPC errors."""

from __future__ import annotations

import builtins
import importlib
import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp.shared.exceptions as _exceptions
import mcp.types as mcp_types
from pydantic import AnyUrl, BaseModel, ValidationError

from ...errors import CassetteError
from ...types import Json

__all__ = [
    "MAJOR",
    "PROGRESS",
    "MCPError",
    "MCPErrors",
    "handshake_versions",
    "idle_transport",
    "normalise_uri",
    "single_errors",
    "transport",
]

MCPError: type[Exception] = getattr(_exceptions, "MCPError", None) or vars(_exceptions)["McpError"]
MAJOR = 2 if hasattr(_exceptions, "MCPError") else 1
ERROR_TYPE = "mcp.MCPError"  # the recorded type of a JSON-RPC error under either major
PROGRESS = "_cassette_progress"  # recorded progress of a failed request, on its exception
_GROUP: type[BaseException] = getattr(builtins, "BaseExceptionGroup", None) or (
    importlib.import_module("exceptiongroup").BaseExceptionGroup  # Python 3.10: anyio's
)
_TASK_GROUP = "unhandled errors in a TaskGroup"  # anyio's message for what escapes a task group


class MCPErrors:
    """The ErrorCodec of MCP requests: a JSON-RPC error and the progress reported before it."""

    def __init__(self) -> None:
        self.progress: list[Json] = []

    def dump(self, exc: BaseException) -> Json | None:
        error = getattr(exc, "error", None)
        if not isinstance(exc, MCPError) or not isinstance(error, BaseModel):
            return None
        data: Json = error.model_dump(mode="json", exclude_none=True)
        if self.progress:
            data["progress"] = list(self.progress)
        return {"type": ERROR_TYPE, "message": str(exc), "data": data}

    def load(self, info: Json) -> BaseException | None:
        if str(info.get("type")).rsplit(".", 1)[-1] not in ("McpError", "MCPError"):
            return None
        data = info.get("data") or {}
        message = str(data.get("message", info.get("message", "")))
        fields: Json = {"code": int(data.get("code", 0)), "message": message}
        if data.get("data") is not None:
            fields["data"] = data["data"]
        error = mcp_types.ErrorData(**fields)
        from_error_data = getattr(MCPError, "from_error_data", None)  # 2.x
        exc: Exception = from_error_data(error) if from_error_data else MCPError(error)
        if data.get("progress"):
            vars(exc)[PROGRESS] = list(data["progress"])
        return exc


def handshake_versions() -> tuple[str, ...]:
    """The protocol versions this SDK accepts from an ``initialize`` result."""
    try:  # 2.x
        from mcp.types.version import HANDSHAKE_PROTOCOL_VERSIONS

        return tuple(HANDSHAKE_PROTOCOL_VERSIONS)
    except ImportError:  # 1.x
        return tuple(importlib.import_module("mcp.shared.version").SUPPORTED_PROTOCOL_VERSIONS)


def normalise_uri(uri: Any) -> Any:
    """A resource URI as 1.x sends it (pydantic ``AnyUrl``), so both majors key it alike."""
    try:
        return str(AnyUrl(uri)) if isinstance(uri, str) else uri
    except ValidationError:
        return uri


@asynccontextmanager
async def idle_transport() -> AsyncIterator[tuple[Any, Any]]:
    """A (read, write) stream pair with no server behind it: nothing arrives, writes dropped."""
    to_client, read = anyio.create_memory_object_stream[Any](0)
    write, dropped = anyio.create_memory_object_stream[Any](math.inf)
    try:
        yield read, write
    finally:
        for stream in (to_client, read, write, dropped):
            stream.close()


def _leaf(group: BaseException) -> BaseException | None:
    """The one exception inside anyio's task-group wrappers, else None."""
    leaves, todo = [], [group]
    while todo:
        exc = todo.pop()
        if not isinstance(exc, _GROUP):
            leaves.append(exc)
        elif getattr(exc, "message", "") == _TASK_GROUP:
            todo.extend(getattr(exc, "exceptions", ()))
        else:  # a group of someone else's making: leave it as it is
            return None
    return leaves[0] if len(leaves) == 1 else None


@asynccontextmanager
async def single_errors() -> AsyncIterator[None]:
    """Raise the one exception the SDK's task groups wrap in a group, so ``except`` sees it."""
    try:
        yield
    except _GROUP as group:
        leaf = _leaf(group)
        if leaf is None:
            raise
        raise leaf from None


def transport(server: Any) -> Any:
    """The client transport (an async context manager yielding a stream pair) of ``server``."""
    from mcp import StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import streamable_http_client

    if isinstance(server, StdioServerParameters):
        return stdio_client(server)
    if isinstance(server, str):
        return streamable_http_client(server)
    if hasattr(server, "__aenter__"):
        return server
    if server is None:
        raise CassetteError(
            "mcp_session needs a server to record or pass through (StdioServerParameters, "
            "a streamable-HTTP URL, or a transport); only mode='replay' runs without one"
        )
    raise TypeError(
        f"mcp_session takes StdioServerParameters, a streamable-HTTP URL or a transport "
        f"(an async context manager yielding (read, write, ...)), not {server!r}"
    )
