"""Assemble a recorded stream into its message (stored next to the chunks): openai's chat
and Responses streams, Anthropic's Messages stream. Pure functions, no SDK imported."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator

import orjson

from ...types import Json

__all__ = ["assemble_chat", "assemble_message", "assemble_response", "first_choices"]

_FINAL_EVENTS = ("response.completed", "response.incomplete", "response.failed")
_BLOCK_DELTAS = {"text_delta": "text", "thinking_delta": "thinking"}


def first_choices(chunks: Iterable[Json]) -> Iterator[Json]:
    """Choice 0 of each chunk of a stream, in order."""
    for chunk in chunks:
        for choice in chunk.get("choices") or ():
            if isinstance(choice, dict) and choice.get("index", 0) == 0:
                yield choice


def _merge_call(calls: dict[int, Json], call: Json) -> None:
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


def _chat_delta(
    message: Json, parts: dict[str, list[str]], calls: dict[int, Json], delta: Json
) -> None:
    if delta.get("role"):
        message["role"] = delta["role"]
    for key, got in parts.items():
        if isinstance(delta.get(key), str):
            got.append(delta[key])
    for call in delta.get("tool_calls") or ():
        _merge_call(calls, call)


def assemble_chat(chunks: list[Json]) -> Json:
    """The assistant message of choice 0, merged from the deltas of a chat stream."""
    message: Json = {"role": "assistant", "content": None}
    parts: dict[str, list[str]] = {"content": [], "refusal": []}
    calls: dict[int, Json] = {}
    for choice in first_choices(chunks):
        _chat_delta(message, parts, calls, choice.get("delta") or {})
    message.update({key: "".join(got) for key, got in parts.items() if got})
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return message


def assemble_response(chunks: list[Json]) -> Json:
    """The final response of a Responses API stream (from its last terminal event)."""
    for event in reversed(chunks):
        if event.get("type") in _FINAL_EVENTS and isinstance(event.get("response"), dict):
            response: Json = event["response"]
            return response
    return {}


def _block_event(blocks: dict[int, Json], partial: dict[int, list[str]], event: Json) -> None:
    index = int(event.get("index", 0))
    if event.get("type") == "content_block_start":
        blocks[index] = dict(event.get("content_block") or {})
        return
    block = blocks.setdefault(index, {"type": "text", "text": ""})
    delta = event.get("delta") or {}
    field = _BLOCK_DELTAS.get(str(delta.get("type")))
    if field is not None:
        block[field] = str(block.get(field, "")) + str(delta.get(field, ""))
    elif delta.get("type") == "input_json_delta":
        partial.setdefault(index, []).append(str(delta.get("partial_json", "")))


def _message_delta(message: Json, event: Json) -> None:
    message.update(event.get("delta") or {})
    usage = event.get("usage")
    if isinstance(usage, dict):
        message["usage"] = {**(message.get("usage") or {}), **usage}


def _json_input(parts: list[str]) -> object:
    """A tool use block's input from its JSON parts (the text itself if not JSON)."""
    with contextlib.suppress(orjson.JSONDecodeError):
        return orjson.loads("".join(parts) or "{}")
    return "".join(parts)


def assemble_message(events: list[Json]) -> Json:
    """The final message of a Messages stream, merged from its events."""
    message: Json = {}
    blocks: dict[int, Json] = {}
    partial: dict[int, list[str]] = {}
    for event in events:
        kind = event.get("type")
        if kind == "message_start" and isinstance(event.get("message"), dict):
            message = dict(event["message"])
        elif kind in ("content_block_start", "content_block_delta"):
            _block_event(blocks, partial, event)
        elif kind == "message_delta":
            _message_delta(message, event)
    for index, parts in partial.items():
        blocks[index]["input"] = _json_input(parts)
    message["content"] = [blocks[i] for i in sorted(blocks)]
    return message
