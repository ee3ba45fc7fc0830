"""The OpenAI answers of the scripted server (:mod:`cassette.testing.server`): a
:class:`~cassette.testing.conversation.Reply` as a Chat Completions or Responses API answer
(with ``"stream": true`` their SSE events), and the other endpoints' answers, derived from
the request alone (:func:`other_answer`).
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
from collections.abc import Callable
from typing import Any

from ..types import Json
from .conversation import Reply, dumps, split_n, sse

__all__ = ["chat_answer", "other_answer", "responses_answer"]


def _tool_call(call: Json, arguments: str) -> Json:
    function = {"name": call["name"], "arguments": arguments}
    return {"id": call["id"], "type": "function", "function": function}


def chat_answer(body: Json, reply: Reply) -> Json | list[bytes]:
    """The Chat Completions answer: a ``chat.completion`` dict, or its SSE chunks when
    streamed (``stream_options.include_usage`` adds the usage chunk)."""
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
        out.append(chunk({"tool_calls": [{"index": i, **_tool_call(c, "")}]}))
        pieces = split_n(c["arguments"], 3)
        out += [chunk({"tool_calls": [{"index": i, "function": {"arguments": p}}]}) for p in pieces]
    out.append(chunk({}, finish))
    if with_usage:
        out.append({**head, "object": "chat.completion.chunk", "choices": [], "usage": usage})
    return out


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
    """(content type, body) of embeddings, legacy completions (SSE when streamed, the text
    cut by ``pieces``), moderations, images and speech; ``salt``: the random mode's."""
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
    vector = [round(b / 255, 4) for b in seed[:8]]
    item = {"object": "embedding", "index": 0, "embedding": vector}
    return {"object": "list", "data": [item], "model": name, "usage": usage}


def _moderations(seed: bytes, name: str, _text: str, _usage: Json) -> Json:
    result = {"flagged": False, "categories": {}, "category_scores": {}}
    return {"id": "modr-" + seed[:12].hex(), "model": name, "results": [result]}


def _images(seed: bytes, _name: str, text: str, _usage: Json) -> Json:
    image = {"b64_json": base64.b64encode(seed).decode(), "revised_prompt": text}
    return {"created": 0, "data": [image]}


# route -> its JSON answer (images for the rest)
_PAYLOADS: dict[str, Callable[[bytes, str, str, Json], Json]] = {
    "/embeddings": _embeddings,
    "/moderations": _moderations,
}


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
