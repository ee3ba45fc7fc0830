"""The scripted server's answers: a :class:`~.conversation.Reply` as a Chat Completions,
Responses or Messages answer (SSE events when streamed); the other endpoints' from the request."""

from __future__ import annotations

import base64
import hashlib
import json
import time
from collections.abc import Callable
from typing import Any

from ..types import Json
from .conversation import Reply, dumps, split_n, sse

__all__ = ["anthropic_error", "chat_answer", "messages_answer", "other_answer", "responses_answer"]


def _tool_call(call: Json, arguments: str) -> Json:
    function = {"name": call["name"], "arguments": arguments}
    return {"id": call["id"], "type": "function", "function": function}


def chat_answer(body: Json, reply: Reply) -> Json | list[bytes]:
    """The Chat Completions answer: a ``chat.completion`` dict, or its SSE chunks when streamed."""
    head = {"id": reply.ident("chatcmpl-"), "created": int(time.time()), "model": reply.model,
            "system_fingerprint": "fp_scripted"}  # fmt: skip
    finish = "tool_calls" if reply.calls else "stop"
    usage = {
        "prompt_tokens": reply.used, "completion_tokens": reply.made,
        "total_tokens": reply.used + reply.made,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
    }  # fmt: skip
    if not body.get("stream"):
        message: Json = {"role": "assistant", "content": reply.content, "refusal": None}
        if reply.calls:
            message["tool_calls"] = [_tool_call(c, c["arguments"]) for c in reply.calls]
        choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": finish}
        return {**head, "object": "chat.completion", "choices": [choice], "usage": usage}
    return sse(_chat_chunks(body, reply, head, usage, finish))


def _chat_chunks(body: Json, reply: Reply, head: Json, usage: Json, finish: str) -> list[Json]:
    """The ``chat.completion.chunk`` events (the usage one if ``stream_options`` asks)."""
    with_usage = bool((body.get("stream_options") or {}).get("include_usage"))
    extra = {"usage": None} if with_usage else {}

    def chunk(delta: Json, reason: str | None = None) -> Json:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": reason}
        return {**head, "object": "chat.completion.chunk", "choices": [choice], **extra}

    out = [chunk({"role": "assistant", "content": "" if reply.content is not None else None})]
    out += [chunk({"content": p}) for p in reply.pieces(reply.content or "")]
    for i, c in enumerate(reply.calls):
        out += [chunk({"tool_calls": [d]}) for d in _call_deltas(i, c)]
    out.append(chunk({}, finish))
    if with_usage:
        out.append({**head, "object": "chat.completion.chunk", "choices": [], "usage": usage})
    return out


def _call_deltas(index: int, call: Json) -> list[Json]:
    """A tool call streamed: its name and id, then its arguments in three pieces."""
    pieces = split_n(call["arguments"], 3)
    first = {"index": index, **_tool_call(call, "")}
    return [first, *({"index": index, "function": {"arguments": p}} for p in pieces)]


def _output(reply: Reply) -> list[Json]:
    output: list[Json] = []
    if reply.content is not None:
        part = {"type": "output_text", "text": reply.content, "annotations": [], "logprobs": []}
        output.append({
            "id": reply.ident("msg_"), "type": "message", "status": "completed",
            "role": "assistant", "content": [part],
        })  # fmt: skip
    for i, c in enumerate(reply.calls):
        output.append({
            "id": reply.ident("fc_", i), "type": "function_call", "status": "completed",
            "call_id": c["id"], "name": c["name"], "arguments": c["arguments"],
        })  # fmt: skip
    return output


def _response(body: Json, reply: Reply) -> Json:
    """The ``response`` object as it starts (in progress, no output yet)."""
    tools = [{"description": None, "strict": True, **t} for t in body.get("tools") or []]
    return {
        "id": reply.ident("resp_"), "object": "response", "status": "in_progress",
        "created_at": int(time.time()), "error": None, "incomplete_details": None,
        "instructions": body.get("instructions"), "metadata": body.get("metadata") or {},
        "max_output_tokens": body.get("max_output_tokens"), "model": reply.model, "output": [],
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "previous_response_id": body.get("previous_response_id"),
        "reasoning": {"effort": None, "summary": None}, "store": body.get("store", True),
        "temperature": body.get("temperature", 1.0), "top_p": body.get("top_p", 1.0),
        "text": body.get("text") or {"format": {"type": "text"}}, "tools": tools,
        "tool_choice": body.get("tool_choice", "auto"), "truncation": "disabled",
        "usage": None, "user": body.get("user"),
    }  # fmt: skip


def responses_answer(body: Json, reply: Reply) -> Json | list[bytes]:
    """The Responses API answer: a ``response`` dict, or its SSE events when streamed."""
    output = _output(reply)
    usage = {
        "input_tokens": reply.used, "output_tokens": reply.made,
        "total_tokens": reply.used + reply.made,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0},
    }  # fmt: skip
    base = _response(body, reply)
    final = {**base, "status": "completed", "output": output, "usage": usage}
    if not body.get("stream"):
        return final
    events: list[Json] = []

    def emit(kind: str, **fields: Any) -> None:
        events.append({"type": kind, "sequence_number": len(events), **fields})

    emit("response.created", response=base)
    emit("response.in_progress", response=base)
    for index, item in enumerate(output):
        _item_events(emit, index, item, reply)
    emit("response.completed", response=final)
    return sse(events, named=True)


def _item_events(emit: Any, index: int, item: Json, reply: Reply) -> None:
    """The events of one output item: its text deltas, or its arguments' deltas."""
    at: Json = {"item_id": item["id"], "output_index": index}
    if item["type"] == "message":
        part, text = item["content"][0], item["content"][0]["text"]
        started = {**item, "status": "in_progress", "content": []}
        emit("response.output_item.added", output_index=index, item=started)
        at["content_index"] = 0
        emit("response.content_part.added", **at, part={**part, "text": ""})
        for piece in reply.pieces(text):
            emit("response.output_text.delta", **at, delta=piece, logprobs=[])
        emit("response.output_text.done", **at, text=text, logprobs=[])
        emit("response.content_part.done", **at, part=part)
    else:
        started = {**item, "status": "in_progress", "arguments": ""}
        emit("response.output_item.added", output_index=index, item=started)
        for piece in split_n(item["arguments"], 3):
            emit("response.function_call_arguments.delta", **at, delta=piece)
        emit("response.function_call_arguments.done", **at, name=item["name"],
             arguments=item["arguments"])  # fmt: skip
    emit("response.output_item.done", output_index=index, item=item)


def other_answer(
    route: str, body: Json, model: str, pieces: Callable[[str], list[str]], salt: bytes = b""
) -> tuple[str, bytes | list[bytes]]:
    """(content type, body) of embeddings, legacy completions, moderations, images and speech."""
    text = json.dumps(body.get("input", body.get("prompt", "")))
    seed = hashlib.sha256(text.encode() + salt).digest()
    name = str(body.get("model") or model)
    usage = {"prompt_tokens": len(text) // 4 + 1, "total_tokens": len(text) // 4 + 1}
    if route == "/audio/speech":
        return "audio/mpeg", b"ID3" + seed
    if route == "/completions":
        return _completion(body, seed, name, usage, pieces)
    payload = _PAYLOADS.get(route, _images)(seed, name, text, usage)
    return "application/json", dumps(payload)


def _embeddings(seed: bytes, name: str, _text: str, usage: Json) -> Json:
    item = {"object": "embedding", "index": 0, "embedding": [round(b / 255, 4) for b in seed[:8]]}
    return {"object": "list", "data": [item], "model": name, "usage": usage}


def _moderations(seed: bytes, name: str, _text: str, _usage: Json) -> Json:
    result = {"flagged": False, "categories": {}, "category_scores": {}}
    return {"id": "modr-" + seed[:12].hex(), "model": name, "results": [result]}


def _images(seed: bytes, _name: str, text: str, _usage: Json) -> Json:
    image = {"b64_json": base64.b64encode(seed).decode(), "revised_prompt": text}
    return {"created": 0, "data": [image]}


_PAYLOADS = {"/embeddings": _embeddings, "/moderations": _moderations}  # images for the rest


def _completion(
    body: Json, seed: bytes, name: str, usage: Json, pieces: Callable[[str], list[str]]
) -> tuple[str, bytes | list[bytes]]:
    """A legacy completion, or its chunks (the usage one if ``stream_options`` asks)."""
    answer = " " + " ".join(seed[i : i + 2].hex() for i in range(0, 8, 2))
    head = {"id": "cmpl-" + seed[:12].hex(), "object": "text_completion", "created": 0,
            "model": name}  # fmt: skip
    usage = {**usage, "completion_tokens": 4, "total_tokens": usage["prompt_tokens"] + 4}

    def chunk(piece: str, reason: str | None = None) -> Json:
        choice = {"index": 0, "text": piece, "logprobs": None, "finish_reason": reason}
        return {**head, "choices": [choice]}

    if not body.get("stream"):
        return "application/json", dumps({**chunk(answer, "stop"), "usage": usage})
    out = [chunk(p) for p in pieces(answer)] + [chunk("", "stop")]
    if (body.get("stream_options") or {}).get("include_usage"):
        out.append({**head, "choices": [], "usage": usage})
    return "text/event-stream", sse(out)


_ERROR_TYPES = {
    400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
    404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error",
    500: "api_error", 529: "overloaded_error",
}  # fmt: skip


def anthropic_error(status: int, message: str | None = None) -> Json:
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
    empty = {**block, "text": ""} if block["type"] == "text" else {**block, "input": {}}
    events: list[Json] = [{"type": "content_block_start", "index": index, "content_block": empty}]
    if index == 0:
        events.append({"type": "ping"})
    deltas = _block_deltas(block, reply)
    events += [{"type": "content_block_delta", "index": index, "delta": d} for d in deltas]
    return [*events, {"type": "content_block_stop", "index": index}]


def _block_deltas(block: Json, reply: Reply) -> list[Json]:
    """A text block's pieces, or a tool use's input JSON in three."""
    if block["type"] == "text":
        return [{"type": "text_delta", "text": p} for p in reply.pieces(block["text"])]
    parts = split_n(json.dumps(block["input"]), 3)
    return [{"type": "input_json_delta", "partial_json": p} for p in parts]
