"""The Anthropic Messages side of the scripted server (:mod:`cassette.testing.server`):
``POST /v1/messages``, answered as JSON or, with ``"stream": true``, as the SSE events the
API sends (``message_start``, ``content_block_start``, ``ping``, ``content_block_delta``
with ``text_delta`` / ``input_json_delta``, ``content_block_stop``, ``message_delta``,
``message_stop``). Tools get ``tool_use`` blocks whose input fits their ``input_schema``;
errors have Anthropic's shape (``{"type": "error", "error": {"type", "message"}}``).

An Anthropic client takes the server's root as its base URL: ``server.root_url``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ..types import Json

__all__ = ["error_body", "messages_answer", "parse_messages"]

_ERROR_TYPES = {
    400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
    404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error",
    500: "api_error", 529: "overloaded_error",
}  # fmt: skip


def error_body(status: int, message: str | None = None) -> Json:
    """An Anthropic error body for ``status``."""
    kind = _ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    return {"type": "error", "error": {"type": kind, "message": message or f"Scripted {status}"}}


def _text(content: Any) -> tuple[str, bool]:
    """The text of a message's content, and whether it is a tool result."""
    if isinstance(content, str):
        return content, False
    parts, result = [], False
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append(str(block.get("text", "")))
        elif kind == "tool_result":
            inner, _ = _text(block.get("content", ""))
            parts.append(inner)
            result = True
        elif kind == "tool_use":
            parts.append(json.dumps({"name": block.get("name"), "input": block.get("input")}))
    return "".join(parts), result


def parse_messages(body: Json, conversation: Callable[..., Any]) -> Any:
    """The server's conversation of a Messages request (``conversation`` is its dataclass)."""
    msgs: list[tuple[str, str]] = []
    system = body.get("system")
    if system:
        msgs.append(("system", _text(system)[0]))
    for m in body.get("messages") or []:
        if isinstance(m, dict):
            text, result = _text(m.get("content"))
            msgs.append(("tool" if result else str(m.get("role", "user")), text))
    tools = [
        (str(t["name"]), t.get("input_schema"))
        for t in body.get("tools") or []
        if isinstance(t, dict) and "name" in t and "input_schema" in t
    ]
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and choice.get("type") == "none":
        choice = "none"
    meta = body.get("metadata")
    return conversation(msgs, tools, choice, meta, (False, None))


def messages_answer(
    body: Json, ident: Callable[..., str], model: str, content: str | None,
    calls: list[Json], used: int, made: int, pieces: Callable[[str], list[str]],
) -> Json | list[bytes]:  # fmt: skip
    """The Messages API answer: a message dict, or its SSE events when streamed."""
    blocks: list[Json] = []
    if content:
        blocks.append({"type": "text", "text": content})
    for c in calls:
        tool_id = c["id"] if c["id"].startswith("toolu_") else "toolu_" + c["id"][-24:]
        blocks.append(
            {
                "type": "tool_use",
                "id": tool_id,
                "name": c["name"],
                "input": json.loads(c["arguments"]),
            }
        )
    if not blocks:
        blocks.append({"type": "text", "text": ""})
    usage = {
        "input_tokens": used, "output_tokens": made, "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }  # fmt: skip
    message: Json = {
        "id": ident("msg_"), "type": "message", "role": "assistant", "model": model,
        "content": blocks, "stop_reason": "tool_use" if calls else "end_turn",
        "stop_sequence": None, "usage": usage,
    }  # fmt: skip
    if not body.get("stream"):
        return message
    events: list[Json] = []
    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    events.append({"type": "message_start", "message": start})
    for index, block in enumerate(blocks):
        empty = {**block, "text": ""} if block["type"] == "text" else {**block, "input": {}}
        events.append({"type": "content_block_start", "index": index, "content_block": empty})
        if index == 0:
            events.append({"type": "ping"})
        if block["type"] == "text":
            deltas = [{"type": "text_delta", "text": p} for p in pieces(block["text"])]
        else:
            raw = json.dumps(block["input"])
            size = max(1, -(-len(raw) // 3))
            parts = [raw[i : i + size] for i in range(0, len(raw), size)]
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in parts]
        for delta in deltas:
            events.append({"type": "content_block_delta", "index": index, "delta": delta})
        events.append({"type": "content_block_stop", "index": index})
    stop = {"stop_reason": message["stop_reason"], "stop_sequence": None}
    events.append({"type": "message_delta", "delta": stop, "usage": {"output_tokens": made}})
    events.append({"type": "message_stop"})
    return [
        b"event: %s\ndata: %s\n\n"
        % (e["type"].encode(), json.dumps(e, separators=(",", ":")).encode())
        for e in events
    ]
