"""The functions that assemble a recorded openai stream into a readable message (stored
next to the chunks, for diffs and for the next request's references)."""

from __future__ import annotations

from ...types import Json

__all__ = ["assemble_chat", "assemble_response"]


def assemble_chat(chunks: list[Json]) -> Json:
    """The assistant message of choice 0, merged from the deltas of a chat stream."""
    message: Json = {"role": "assistant", "content": None}
    content: list[str] = []
    refusal: list[str] = []
    calls: dict[int, Json] = {}
    for chunk in chunks:
        for choice in chunk.get("choices") or ():
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            if delta.get("role"):
                message["role"] = delta["role"]
            if isinstance(delta.get("content"), str):
                content.append(delta["content"])
            if isinstance(delta.get("refusal"), str):
                refusal.append(delta["refusal"])
            for call in delta.get("tool_calls") or ():
                slot = calls.setdefault(
                    call.get("index", len(calls)),
                    {"id": None, "type": "function", "function": {"name": "", "arguments": ""}},
                )
                if call.get("id"):
                    slot["id"] = call["id"]
                if call.get("type"):
                    slot["type"] = call["type"]
                function = call.get("function") or {}
                for key in ("name", "arguments"):
                    if isinstance(function.get(key), str):
                        slot["function"][key] += function[key]
    if content:
        message["content"] = "".join(content)
    if refusal:
        message["refusal"] = "".join(refusal)
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return message


_FINAL_EVENTS = ("response.completed", "response.incomplete", "response.failed")


def assemble_response(chunks: list[Json]) -> Json:
    """The final response of a Responses API stream (from its last terminal event)."""
    for event in reversed(chunks):
        if event.get("type") in _FINAL_EVENTS and isinstance(event.get("response"), dict):
            response: Json = event["response"]
            return response
    return {}
