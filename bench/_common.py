"""What the benchmark scripts share: the agent's tools and the command line they print."""

from __future__ import annotations

import os
import shlex
import sys

# the tools of the benchmarks' support agent (the same list in every request)
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string", "description": "what to look up"}},
                "required": ["query"],
            },
        },
    }
    for name, description in (
        ("search", "Search the knowledge base and return the best matching passages."),
        ("lookup_order", "Return the status, items and history of one customer order."),
    )
]


def command_line() -> str:
    """The command as typed, without absolute paths of this machine."""
    argv = list(getattr(sys, "orig_argv", [sys.executable, *sys.argv]))
    if argv and os.path.isabs(argv[0]):
        argv[0] = os.path.basename(argv[0])
    for i, arg in enumerate(argv):
        if arg.endswith(".py") and os.path.isabs(arg):
            argv[i] = os.path.relpath(arg)
    return shlex.join(argv)
