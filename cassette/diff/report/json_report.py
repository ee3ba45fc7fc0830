"""The diff as JSON: ``RunDiff.to_dict()``, indented, UTF-8."""

from __future__ import annotations

import orjson

from ..types import RunDiff

__all__ = ["render_json"]


def render_json(diff: RunDiff) -> str:
    """Keys: format, version, a, b (run summaries), episodes (each with its cause and
    aligned tool calls), ignored, volatile_seen, stats, causes, noise, equivalent, counts;
    ``cassette.diff.schema.SCHEMA`` is its JSON Schema."""
    return orjson.dumps(diff.to_dict(), option=orjson.OPT_INDENT_2).decode() + "\n"
