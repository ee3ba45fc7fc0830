"""The functions that assemble a recorded openai stream into a readable message (stored
next to the chunks, for diffs and for the next request's references)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ...types import Json

__all__ = ["assemble_chat", "assemble_response", "first_choices"]


def first_choices(chunks: Iterable[Json]) -> Iterator[Json]:
    """Choice 0 of each chunk of a stream, in order."""
    for chunk in chunks:
        for choice in chunk.get("choices") or ():
            if isinstance(choice, dict) and choice.get("index", 0) == 0:
                yield choice


def _merge_call(calls: dict[int, Json], call: Json) -> None:
    """Add one tool call delta to the calls assembled so far (by its index)."""
    slot = calls.setdefault(
        call.get("index", len(calls)),
        {"id": None, "type": "function", "function": {"name": "", "arguments": ""}},
    )
    for key in ("id", "type"):
        if call.get(key):
            slot[key] = call[key]
    function = call.get("function") or {}
    for key in ("name", "arguments"):
        if isinstance(function.get(key), str):
            slot["function"][key] += function[key]


def assemble_chat(chunks: list[Json]) -> Json:
    """The assistant message of choice 0, merged from the deltas of a chat stream."""
    message: Json = {"role": "assistant", "content": None}
    parts: dict[str, list[str]] = {"content": [], "refusal": []}
    calls: dict[int, Json] = {}
    for choice in first_choices(chunks):
        delta = choice.get("delta") or {}
        if delta.get("role"):
            message["role"] = delta["role"]
        for key, got in parts.items():
            if isinstance(delta.get(key), str):
                got.append(delta[key])
        for call in delta.get("tool_calls") or ():
            _merge_call(calls, call)
    for key, got in parts.items():
        if got:
            message[key] = "".join(got)
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
