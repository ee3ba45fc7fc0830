"""The function that assembles a recorded Anthropic Messages stream into the final message
(stored next to the events, for diffs and for the next request's references)."""

from __future__ import annotations

import orjson

from ...types import Json

__all__ = ["assemble_message"]


def assemble_message(events: list[Json]) -> Json:
    """The final message of a Messages stream, merged from its events (for diffs)."""
    message: Json = {}
    blocks: dict[int, Json] = {}
    partial: dict[int, list[str]] = {}
    for event in events:
        kind = event.get("type")
        if kind == "message_start" and isinstance(event.get("message"), dict):
            message = dict(event["message"])
        elif kind == "content_block_start":
            blocks[int(event.get("index", 0))] = dict(event.get("content_block") or {})
        elif kind == "content_block_delta":
            index, delta = int(event.get("index", 0)), event.get("delta") or {}
            block = blocks.setdefault(index, {"type": "text", "text": ""})
            if delta.get("type") == "text_delta":
                block["text"] = str(block.get("text", "")) + str(delta.get("text", ""))
            elif delta.get("type") == "input_json_delta":
                partial.setdefault(index, []).append(str(delta.get("partial_json", "")))
            elif delta.get("type") == "thinking_delta":
                block["thinking"] = str(block.get("thinking", "")) + str(delta.get("thinking"))
        elif kind == "message_delta":
            message.update(event.get("delta") or {})
            usage = event.get("usage")
            if isinstance(usage, dict):
                message["usage"] = {**(message.get("usage") or {}), **usage}
    for index, parts in partial.items():
        try:
            blocks[index]["input"] = orjson.loads("".join(parts) or "{}")
        except orjson.JSONDecodeError:
            blocks[index]["input"] = "".join(parts)
    message["content"] = [blocks[i] for i in sorted(blocks)]
    return message
