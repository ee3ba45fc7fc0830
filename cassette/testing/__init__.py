"""For users' own tests: :class:`ScriptedServer`, an MCP server (:mod:`.mcp_server`), the
bundled cassettes (:func:`bundled`) and the pytest plugin (:mod:`.plugin`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .bundled import bundled

if TYPE_CHECKING:
    from .server import ScriptedServer

__all__ = ["ScriptedServer", "bundled"]


def __getattr__(name: str) -> Any:  # imported on first use: the plugin imports this package
    if name == "ScriptedServer":
        from .server import ScriptedServer

        return ScriptedServer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
