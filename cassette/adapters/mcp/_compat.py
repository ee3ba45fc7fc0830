"""The plumbing of :mod:`cassette.adapters.mcp`: what differs between mcp 1.x and 2.x,
transports, and the errors the SDK wraps.

The adapter is typed against mcp 2.x (the default install); names that only 1.x has are
reached with ``getattr`` so the same code imports and runs under both.
"""

from __future__ import annotations

import builtins
import importlib
import math
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import anyio
import mcp.shared.exceptions as _exceptions
import mcp.types as mcp_types
from pydantic import AnyUrl, BaseModel, TypeAdapter, ValidationError

from ...errors import CassetteError
from ...types import Json

__all__ = [
    "ERROR_TYPE",
    "MAJOR",
    "dump_model",
    "error_class",
    "error_fields",
    "handshake_versions",
    "idle_transport",
    "is_error_name",
    "make_error",
    "normalise_uri",
    "single_errors",
    "streamable_http",
    "transport",
    "validate_result",
]


# The recorded type name of a JSON-RPC error: the same under both majors, so a cassette
# recorded under one replays as the other's exception class (McpError in 1.x, MCPError in 2.x).
ERROR_TYPE = "mcp.MCPError"
_ERROR_NAMES = frozenset({ERROR_TYPE, "mcp.McpError", "MCPError", "McpError"})

error_class: type[Exception] = (
    getattr(_exceptions, "MCPError", None) or vars(_exceptions)["McpError"]
)
MAJOR = 2 if hasattr(_exceptions, "MCPError") else 1


def is_error_name(name: object) -> bool:
    """Whether a recorded error type names an MCP JSON-RPC error (of either major)."""
    return isinstance(name, str) and (
        name in _ERROR_NAMES or name.rsplit(".", 1)[-1] in ("McpError", "MCPError")
    )


def make_error(code: int, message: str, data: Any = None) -> Exception:
    """This SDK's JSON-RPC error exception for ``(code, message, data)``."""
    fields: Json = {"code": code, "message": message}
    if data is not None:
        fields["data"] = data
    error = mcp_types.ErrorData(**fields)
    from_error_data = getattr(error_class, "from_error_data", None)
    if from_error_data is not None:  # 2.x
        exc: Exception = from_error_data(error)
        return exc
    return error_class(error)  # 1.x: McpError(ErrorData)


def error_fields(exc: BaseException) -> Json | None:
    """``{"code", "message", "data"?}`` of an MCP JSON-RPC error, else None."""
    if not isinstance(exc, error_class):
        return None
    error = getattr(exc, "error", None)
    if not isinstance(error, BaseModel):
        return None
    fields: Json = error.model_dump(mode="json", exclude_none=True)
    return fields


def handshake_versions() -> tuple[str, ...]:
    """The protocol versions this SDK accepts from an ``initialize`` result."""
    try:  # 2.x
        from mcp.types.version import HANDSHAKE_PROTOCOL_VERSIONS

        return tuple(HANDSHAKE_PROTOCOL_VERSIONS)
    except ImportError:  # 1.x
        version = importlib.import_module("mcp.shared.version")
        return tuple(version.SUPPORTED_PROTOCOL_VERSIONS)


def dump_model(value: Any) -> Any:
    """The wire form (camelCase, JSON types) of an SDK object, as the server sent it:
    fields that were set (so ``structuredContent`` survives, even when null) and no others."""
    if isinstance(value, BaseModel):
        return value.model_dump(by_alias=True, mode="json", exclude_unset=True)
    return value


def validate_result(result_type: Any, raw: Any) -> Any:
    """Rebuild a result from its wire form the way ``send_request`` does in this SDK."""
    if isinstance(result_type, TypeAdapter):
        return result_type.validate_python(raw)
    return result_type.model_validate(raw)


def normalise_uri(uri: Any) -> Any:
    """A resource URI as 1.x sends it (pydantic ``AnyUrl``), so both majors key it alike."""
    if not isinstance(uri, str):
        return uri
    try:
        return str(AnyUrl(uri))
    except ValidationError:
        return uri


def streamable_http(url: str, **kwargs: Any) -> AbstractAsyncContextManager[Any]:
    """The SDK's streamable HTTP client transport (its stream pair comes first in both)."""
    from mcp.client import streamable_http as module

    connect = getattr(module, "streamable_http_client", None)  # 2.x, and 1.24+
    if connect is None:  # pragma: no cover - mcp < 1.24
        connect = module.streamablehttp_client  # type: ignore[attr-defined]
    cm: AbstractAsyncContextManager[Any] = connect(url, **kwargs)
    return cm


@asynccontextmanager
async def idle_transport() -> AsyncIterator[tuple[Any, Any]]:
    """A client transport with no server behind it, for replay: its (read, write) stream
    pair never delivers anything and drops what is written, so a session built on it is a
    real ClientSession that needs no server (``async with idle_transport() as (r, w)``)."""
    to_client, read = anyio.create_memory_object_stream[Any](0)
    write, dropped = anyio.create_memory_object_stream[Any](math.inf)
    try:
        yield read, write
    finally:
        for stream in (to_client, read, write, dropped):
            stream.close()


def _group_types() -> tuple[type[BaseException], ...]:
    group = getattr(builtins, "BaseExceptionGroup", None)
    if group is None:  # pragma: no cover - Python 3.10: anyio's backport
        group = getattr(importlib.import_module("exceptiongroup"), "BaseExceptionGroup", None)
    return (group,) if isinstance(group, type) else ()


_GROUPS = _group_types()
_TASK_GROUP = "unhandled errors in a TaskGroup"  # anyio's message for what escapes a task group


@asynccontextmanager
async def single_errors() -> AsyncIterator[None]:
    """Raise the exception itself where the SDK's task groups (anyio's) wrap a single one
    in an exception group (a CassetteMismatch, an MCPError, ...), so ``except`` sees it."""
    try:
        yield
    except _GROUPS as group:
        leaves, todo = [], [group]
        while todo:
            exc = todo.pop()
            if not isinstance(exc, _GROUPS):
                leaves.append(exc)
            elif getattr(exc, "message", "") == _TASK_GROUP:
                todo.extend(getattr(exc, "exceptions", ()))
            else:  # a group of someone else's making: leave it as it is
                raise
        if len(leaves) != 1:
            raise
        raise leaves[0] from None


def transport(server: Any) -> Any:
    """The client transport (an async context manager yielding a stream pair) of ``server``."""
    from mcp import StdioServerParameters
    from mcp.client.stdio import stdio_client

    if isinstance(server, StdioServerParameters):
        return stdio_client(server)
    if isinstance(server, str):
        return streamable_http(server)
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
