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
from typing import Any

from ..types import Json
from .conversation import Conversation, Reply, split_n, sse

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


def _block_text(block: Any) -> tuple[str, bool]:
    """The text of one content block, and whether it is a tool result."""
    kind = block.get("type") if isinstance(block, dict) else None
    if kind == "text":
        return str(block.get("text", "")), False
    if kind == "tool_result":
        return _text(block.get("content", ""))[0], True
    if kind == "tool_use":
        return json.dumps({"name": block.get("name"), "input": block.get("input")}), False
    return "", False


def _text(content: Any) -> tuple[str, bool]:
    """The text of a message's content, and whether it is a tool result."""
    if isinstance(content, str):
        return content, False
    parts = [_block_text(block) for block in content] if isinstance(content, list) else []
    return "".join(text for text, _ in parts), any(result for _, result in parts)


def parse_messages(body: Json) -> Conversation:
    """The conversation of a Messages request."""
    msgs: list[tuple[str, str]] = []
    system = body.get("system")
    if system:
        msgs.append(("system", _text(system)[0]))
    for m in body.get("messages") or []:
        if isinstance(m, dict):
            text, result = _text(m.get("content"))
            msgs.append(("tool" if result else str(m.get("role", "user")), text))
    return Conversation(msgs, _tools(body), _choice(body), body.get("metadata"), (False, None))


def _tools(body: Json) -> list[tuple[str, Any]]:
    tools = [t for t in body.get("tools") or [] if isinstance(t, dict)]
    return [
        (str(t["name"]), t.get("input_schema"))
        for t in tools
        if {"name", "input_schema"} <= t.keys()
    ]


def _choice(body: Json) -> Any:
    choice = body.get("tool_choice")
    return "none" if isinstance(choice, dict) and choice.get("type") == "none" else choice


def messages_answer(body: Json, reply: Reply) -> Json | list[bytes]:
    """The Messages API answer: a message dict, or its SSE events when streamed."""
    blocks: list[Json] = [{"type": "text", "text": reply.content}] if reply.content else []
    for c in reply.calls:
        tool_id = c["id"] if c["id"].startswith("toolu_") else "toolu_" + c["id"][-24:]
        use = {"type": "tool_use", "id": tool_id, "name": c["name"]}
        blocks.append({**use, "input": json.loads(c["arguments"])})
    usage = {
        "input_tokens": reply.used, "output_tokens": reply.made,
        "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
    }  # fmt: skip
    message: Json = {
        "id": reply.ident("msg_"), "type": "message", "role": "assistant",
        "model": reply.model, "content": blocks or [{"type": "text", "text": ""}],
        "stop_reason": "tool_use" if reply.calls else "end_turn", "stop_sequence": None,
        "usage": usage,
    }  # fmt: skip
    if not body.get("stream"):
        return message
    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    events: list[Json] = [{"type": "message_start", "message": start}]
    for index, block in enumerate(message["content"]):
        events += _block_events(index, block, reply)
    stop = {"stop_reason": message["stop_reason"], "stop_sequence": None}
    events.append({"type": "message_delta", "delta": stop, "usage": {"output_tokens": reply.made}})
    events.append({"type": "message_stop"})
    return sse(events, named=True)


def _block_events(index: int, block: Json, reply: Reply) -> list[Json]:
    """A content block streamed: its start (a ping after the first), deltas and stop."""
    text = block["type"] == "text"
    empty = {**block, "text": ""} if text else {**block, "input": {}}
    events: list[Json] = [{"type": "content_block_start", "index": index, "content_block": empty}]
    if index == 0:
        events.append({"type": "ping"})
    if text:
        deltas = [{"type": "text_delta", "text": p} for p in reply.pieces(block["text"])]
    else:
        parts = split_n(json.dumps(block["input"]), 3)
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in parts]
    events += [{"type": "content_block_delta", "index": index, "delta": d} for d in deltas]
    return [*events, {"type": "content_block_stop", "index": index}]
