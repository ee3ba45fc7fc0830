"""The Anthropic Messages answers of the scripted server (:mod:`cassette.testing.server`):
a message, or with ``"stream": true`` the SSE events the API sends; errors in Anthropic's
shape. An Anthropic client takes ``server.root_url`` as its base URL."""

from __future__ import annotations

import json

from ..types import Json
from .conversation import Reply, split_n, sse

__all__ = ["error_body", "messages_answer"]

_ERROR_TYPES = {
    400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
    404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error",
    500: "api_error", 529: "overloaded_error",
}  # fmt: skip


def error_body(status: int, message: str | None = None) -> Json:
    """An Anthropic error body for ``status``."""
    kind = _ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    return {"type": "error", "error": {"type": kind, "message": message or f"Scripted {status}"}}


def _blocks(reply: Reply) -> list[Json]:
    blocks: list[Json] = [{"type": "text", "text": reply.content}] if reply.content else []
    for c in reply.calls:
        tool_id = c["id"] if c["id"].startswith("toolu_") else "toolu_" + c["id"][-24:]
        use = {"type": "tool_use", "id": tool_id, "name": c["name"]}
        blocks.append({**use, "input": json.loads(c["arguments"])})
    return blocks or [{"type": "text", "text": ""}]


def messages_answer(body: Json, reply: Reply) -> Json | list[bytes]:
    """The Messages API answer: a message dict, or its SSE events when streamed."""
    usage = {
        "input_tokens": reply.used, "output_tokens": reply.made,
        "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
    }  # fmt: skip
    message: Json = {
        "id": reply.ident("msg_"), "type": "message", "role": "assistant",
        "model": reply.model, "content": _blocks(reply),
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
