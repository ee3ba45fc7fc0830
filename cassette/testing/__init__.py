"""What users import in their own tests: the scripted OpenAI-compatible model server, a
small MCP server (:mod:`cassette.testing.mcp_server`) and the cassettes shipped with the
package (:func:`bundled`).

.. code-block:: python

    from cassette.testing import ScriptedServer

    with ScriptedServer(mode="random") as server:   # 127.0.0.1, a free port
        client = OpenAI(base_url=server.base_url, api_key="test")

``python -m cassette.testing.server --port 0 --mode random`` runs it as a process.
The pytest plugin (:mod:`cassette.testing.plugin`) is installed with the package.
"""

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
