"""What a recorded response says: its message, its tool calls, its token usage and cost
(as ``cassette diff``, ``show`` and ``stats`` count them). Pure functions over the
entries of a loaded :class:`~cassette.storage.index.Index`; nothing here prints.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from ..errors import CassetteError
from ..format.codec import dumps
from ..storage.index import Entry
from ..types import Json

__all__ = [
    "content_text",
    "cost_of",
    "item_call",
    "json_text",
    "message_calls",
    "parse_args",
    "response_calls",
    "response_message",
    "tool_calls",
    "usage_of",
    "usage_totals",
]


# --- what a message or a response says --------------------------------------------------


def content_text(content: Any) -> str:
    """The text of a message's content: a string, a list of parts, or anything JSON-able."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict):
                text = part.get("text")
                parts.append(text if isinstance(text, str) else f"[{part.get('type', 'part')}]")
        return " ".join(parts)
    return json_text(content)


def json_text(value: Any) -> str:
    """``value`` as compact JSON text; what JSON cannot write (nesting deeper than 254
    levels, ints beyond 64 bits: a damaged file) as a short note instead."""
    try:
        return dumps(value).decode()
    except CassetteError as exc:
        return f"<{type(value).__name__} that cannot be shown: {exc}>"


def _call_of(call: Any) -> tuple[str, str] | None:
    if not isinstance(call, dict):
        return None
    inner = call.get("function")
    fn: Json = inner if isinstance(inner, dict) else call
    name = fn.get("name")
    if not isinstance(name, str):
        return None
    args = fn.get("arguments", fn.get("input", ""))
    return name, args if isinstance(args, str) else json_text(args)


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else content_text(value)


def _delta(chunk: Any) -> Json:
    """The ``choices[0].delta`` of a chat.completion.chunk, or {}."""
    choices = chunk.get("choices") if isinstance(chunk, dict) else None
    first = choices[0] if isinstance(choices, list) and choices else None
    delta = first.get("delta") if isinstance(first, dict) else None
    return delta if isinstance(delta, dict) else {}


def _add_call_part(calls: dict[int, Json], part: Any) -> None:
    if not isinstance(part, dict):
        return
    index = part.get("index")
    slot = calls.setdefault(index if type(index) is int else len(calls), {"name": "", "args": ""})
    fn = part.get("function")
    fn = fn if isinstance(fn, dict) else {}
    slot["name"] += _text(fn.get("name"))
    slot["args"] += _text(fn.get("arguments"))


def _from_chunks(chunks: list[Any]) -> Json:
    """The message a chat.completion.chunk stream adds up to (content and tool calls)."""
    text: list[str] = []
    calls: dict[int, Json] = {}
    for delta in map(_delta, chunks):
        if isinstance(delta.get("content"), str):
            text.append(delta["content"])
        parts = delta.get("tool_calls")
        for part in parts if isinstance(parts, list) else ():
            _add_call_part(calls, part)
    message: Json = {"role": "assistant", "content": "".join(text) or None}
    if calls:
        message["tool_calls"] = [
            {"function": {"name": c["name"], "arguments": c["args"]}} for c in calls.values()
        ]
    return message


def _from_output(output: list[Any]) -> Json:
    """The message a Responses API ``output`` list says: its text and function calls."""
    items = [item for item in output if isinstance(item, dict)]
    texts = [content_text(i.get("content")) for i in items if i.get("type") == "message"]
    calls = [{"function": i} for i in items if i.get("type") == "function_call"]
    built: Json = {"role": "assistant", "content": " ".join(texts) or None}
    if calls:
        built["tool_calls"] = calls
    return built


def response_message(response: Json | None) -> Json | None:
    """The assistant message of a response: a chat completion, an assembled or raw stream,
    or a Responses API ``output`` list; None if the response holds none."""
    if not isinstance(response, dict):
        return None
    choices = response.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else None
    message = first.get("message") if isinstance(first, dict) else None
    message = message if isinstance(message, dict) else response.get("message")
    if isinstance(message, dict):
        return message
    if isinstance(response.get("output"), list):
        return _from_output(response["output"])
    if isinstance(response.get("chunks"), list):
        return _from_chunks(response["chunks"])
    return None


def tool_calls(response: Json | None) -> list[tuple[str, str]]:
    """(name, arguments) of each tool call that a response asks for, in order."""
    message = response_message(response)
    calls = (message or {}).get("tool_calls")
    calls = calls if isinstance(calls, list) else []
    return [c for c in (_call_of(call) for call in calls) if c is not None]


def _usage(entry: Entry) -> Json:
    """The usage dict of one interaction: ``meta.usage``, the response's, or a stream's
    (the last chunk or Responses API event that carries one)."""
    resp = entry.response if isinstance(entry.response, dict) else {}
    for usage in (entry.meta.get("usage"), resp.get("usage")):
        if isinstance(usage, dict):
            return usage
    chunks = resp.get("chunks")
    for chunk in reversed(chunks if isinstance(chunks, list) else []):
        inner = chunk.get("response") if isinstance(chunk, dict) else None
        for holder in (chunk, inner):
            usage = holder.get("usage") if isinstance(holder, dict) else None
            if isinstance(usage, dict):
                return usage
    return {}


def _count(usage: Any, *keys: str) -> int:
    for key in keys:
        value = usage.get(key) if isinstance(usage, dict) else None
        if (number := _number(value)) is not None:
            return int(number)
    return 0


def usage_of(entry: Entry) -> dict[str, int]:
    """Token counts of one call: input, output, total, and cached/reasoning where given."""
    usage = _usage(entry)
    if not usage:
        return {}
    out = {
        "input": _count(usage, "prompt_tokens", "input_tokens"),
        "output": _count(usage, "completion_tokens", "output_tokens"),
    }
    out["total"] = _count(usage, "total_tokens") or out["input"] + out["output"]
    details_in = usage.get("prompt_tokens_details") or usage.get("input_tokens_details")
    details_out = usage.get("completion_tokens_details") or usage.get("output_tokens_details")
    out["cached"] = _count(details_in, "cached_tokens") or _count(usage, "cache_read_input_tokens")
    out["reasoning"] = _count(details_out, "reasoning_tokens")
    return out


def parse_args(value: Any) -> Any:
    """A JSON-string tool argument as its value; anything else unchanged."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


def message_calls(message: Json) -> Iterator[tuple[str, Any]]:
    """(name, parsed arguments) of each ``tool_calls[*].function`` of a chat message."""
    calls = message.get("tool_calls")
    for call in calls if isinstance(calls, list) else ():
        fn = call.get("function") if isinstance(call, dict) else None
        if isinstance(fn, dict):
            yield str(fn.get("name")), parse_args(fn.get("arguments"))


def item_call(item: Json) -> tuple[str, Any]:
    """(name, parsed arguments) of a Responses API ``function_call`` item."""
    return str(item.get("name")), parse_args(item.get("arguments"))


def response_calls(response: Any) -> list[tuple[str, Any]]:
    """:func:`tool_calls` with each call's arguments parsed from JSON."""
    return [(name, parse_args(args)) for name, args in tool_calls(response)]


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def cost_of(entry: Entry) -> float | None:
    """The cost recorded for one interaction, or None if none was: ``meta.cost``,
    ``meta.cost_usd``, the usage's ``cost``, else litellm's ``_hidden_params.response_cost``
    (the first that is a number; a recorded 0 counts)."""
    meta = entry.meta
    for value in (meta.get("cost"), meta.get("cost_usd"), _usage(entry).get("cost")):
        if (cost := _number(value)) is not None:
            return cost
    resp = entry.response if isinstance(entry.response, dict) else {}
    hidden = resp.get("_hidden_params")
    return _number(hidden.get("response_cost")) if isinstance(hidden, dict) else None


def usage_totals(entry: Entry) -> tuple[float, float, float, float | None]:
    """(prompt, completion, total tokens, :func:`cost_of`) of one interaction; tokens are 0
    where unknown."""
    usage = usage_of(entry)
    return usage.get("input", 0), usage.get("output", 0), usage.get("total", 0), cost_of(entry)
