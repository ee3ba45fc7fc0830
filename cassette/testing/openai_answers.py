"""The OpenAI side of the scripted server's answers (:mod:`cassette.testing.server`): a
scripted reply (its content and tool calls) as a Chat Completions answer
(``chat.completion``, or with ``"stream": true`` its ``chat.completion.chunk`` SSE events
ending in ``[DONE]``) or a Responses API answer (``response``, or its ``response.*`` SSE
events). Which reply is given is the server's; this module only shapes it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

from ..types import Json
from .handler import dumps

__all__ = ["chat_answer", "responses_answer", "split_words"]


def split_words(text: str, words: int) -> list[str]:
    """Split ``text`` into pieces of ``words`` words each; joining them gives ``text`` back."""
    tokens = re.findall(r"\s*\S+\s*", text) or ([text] if text else [])
    return ["".join(tokens[i : i + words]) for i in range(0, len(tokens), max(1, words))]


def _split_n(text: str, parts: int) -> list[str]:
    size = max(1, -(-len(text) // parts))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def chat_answer(
    body: Json, ident: Callable[..., str], model: str, content: str | None, calls: list[Json],
    used: int, made: int, pieces: Callable[[str], list[str]],
) -> Json | list[bytes]:  # fmt: skip
    """The Chat Completions answer: a ``chat.completion`` dict, or its SSE chunks when
    streamed (``stream_options.include_usage`` adds the usage chunk)."""
    rid, created = ident("chatcmpl-"), int(time.time())
    finish = "tool_calls" if calls else "stop"
    usage = {
        "prompt_tokens": used, "completion_tokens": made, "total_tokens": used + made,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
    }  # fmt: skip
    head = {"id": rid, "created": created, "model": model, "system_fingerprint": "fp_scripted"}
    pick = ("name", "arguments")
    tool_calls = [
        {"id": c["id"], "type": "function", "function": {k: c[k] for k in pick}} for c in calls
    ]
    if not body.get("stream"):
        message: Json = {"role": "assistant", "content": content, "refusal": None}
        if tool_calls:
            message["tool_calls"] = tool_calls
        choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": finish}
        return {**head, "object": "chat.completion", "choices": [choice], "usage": usage}
    with_usage = bool((body.get("stream_options") or {}).get("include_usage"))
    extra = {"usage": None} if with_usage else {}

    def chunk(delta: Json, reason: str | None = None) -> Json:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": reason}
        return {**head, "object": "chat.completion.chunk", "choices": [choice], **extra}

    out = [chunk({"role": "assistant", "content": "" if content is not None else None})]
    out += [chunk({"content": p}) for p in pieces(content or "")]
    for i, call in enumerate(tool_calls):
        fn = {"name": call["function"]["name"], "arguments": ""}
        start = {"index": i, "id": call["id"], "type": "function", "function": fn}
        out.append(chunk({"tool_calls": [start]}))
        out += [
            chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
            for piece in _split_n(call["function"]["arguments"], 3)
        ]
    out.append(chunk({}, finish))
    if with_usage:
        out.append({**head, "object": "chat.completion.chunk", "choices": [], "usage": usage})
    return [b"data: %s\n\n" % dumps(c) for c in out] + [b"data: [DONE]\n\n"]


def responses_answer(
    body: Json, ident: Callable[..., str], model: str, content: str | None, calls: list[Json],
    used: int, made: int, pieces: Callable[[str], list[str]],
) -> Json | list[bytes]:  # fmt: skip
    """The Responses API answer: a ``response`` dict, or its SSE events when streamed."""
    output: list[Json] = []
    if content is not None:
        part = {"type": "output_text", "text": content, "annotations": [], "logprobs": []}
        output.append({
            "id": ident("msg_"), "type": "message", "status": "completed",
            "role": "assistant", "content": [part],
        })  # fmt: skip
    for i, c in enumerate(calls):
        output.append({
            "id": ident("fc_", i), "type": "function_call", "status": "completed",
            "call_id": c["id"], "name": c["name"], "arguments": c["arguments"],
        })  # fmt: skip
    usage = {
        "input_tokens": used, "output_tokens": made, "total_tokens": used + made,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0},
    }  # fmt: skip
    tools = [{"description": None, "strict": True, **t} for t in body.get("tools") or []]
    base = {
        "id": ident("resp_"), "object": "response", "status": "in_progress",
        "created_at": int(time.time()), "error": None, "incomplete_details": None,
        "instructions": body.get("instructions"), "metadata": body.get("metadata") or {},
        "max_output_tokens": body.get("max_output_tokens"), "model": model, "output": [],
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "previous_response_id": body.get("previous_response_id"),
        "reasoning": {"effort": None, "summary": None}, "store": body.get("store", True),
        "temperature": body.get("temperature", 1.0), "top_p": body.get("top_p", 1.0),
        "text": body.get("text") or {"format": {"type": "text"}}, "tools": tools,
        "tool_choice": body.get("tool_choice", "auto"), "truncation": "disabled",
        "usage": None, "user": body.get("user"),
    }  # fmt: skip
    final = {**base, "status": "completed", "output": output, "usage": usage}
    if not body.get("stream"):
        return final
    events: list[Json] = []

    def emit(kind: str, **fields: Any) -> None:
        events.append({"type": kind, "sequence_number": len(events), **fields})

    emit("response.created", response=base)
    emit("response.in_progress", response=base)
    for index, item in enumerate(output):
        at: Json = {"item_id": item["id"], "output_index": index}
        if item["type"] == "message":
            part, text = item["content"][0], item["content"][0]["text"]
            started = {**item, "status": "in_progress", "content": []}
            emit("response.output_item.added", output_index=index, item=started)
            at["content_index"] = 0
            emit("response.content_part.added", **at, part={**part, "text": ""})
            for piece in pieces(text):
                emit("response.output_text.delta", **at, delta=piece, logprobs=[])
            emit("response.output_text.done", **at, text=text, logprobs=[])
            emit("response.content_part.done", **at, part=part)
        else:
            started = {**item, "status": "in_progress", "arguments": ""}
            emit("response.output_item.added", output_index=index, item=started)
            for piece in _split_n(item["arguments"], 3):
                emit("response.function_call_arguments.delta", **at, delta=piece)
            emit("response.function_call_arguments.done", **at, name=item["name"],
                 arguments=item["arguments"])  # fmt: skip
        emit("response.output_item.done", output_index=index, item=item)
    emit("response.completed", response=final)
    return [b"event: %s\ndata: %s\n\n" % (e["type"].encode(), dumps(e)) for e in events]
