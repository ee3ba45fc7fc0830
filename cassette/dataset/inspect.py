"""What a recorded response says: its message, tool calls, token usage and cost (as
``cassette diff``, ``show`` and ``stats`` count them); pure functions, nothing prints."""

from __future__ import annotations

from typing import Any

import orjson

from ..errors import CassetteError
from ..format.codec import dumps
from ..storage.index import Entry
from ..types import Json

__all__ = [
    "content_text",
    "cost_of",
    "json_text",
    "new_start",
    "number",
    "parse_args",
    "parsed_calls",
    "response_calls",
    "response_message",
    "tool_calls",
    "usage_of",
    "usage_totals",
]


def _dict(value: Any) -> Json:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _first(value: Any) -> Json:
    items = _list(value)
    return _dict(items[0]) if items else {}


def number(value: Any) -> float | None:
    """``value`` as a float if it is a JSON number (not a bool); else None."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _part_text(part: Any) -> str:
    if isinstance(part, str):
        return part
    text = part.get("text")
    return text if isinstance(text, str) else f"[{part.get('type', 'part')}]"


def content_text(content: Any) -> str:
    """The text of a message's content: a string, a list of parts, or anything JSON-able."""
    if isinstance(content, list):
        return " ".join(_part_text(p) for p in content if isinstance(p, (str, dict)))
    return content if isinstance(content, str) else "" if content is None else json_text(content)


def json_text(value: Any) -> str:
    """``value`` as compact JSON text, or a short note where JSON cannot write it."""
    try:
        return dumps(value).decode()
    except CassetteError as exc:
        return f"<{type(value).__name__} that cannot be shown: {exc}>"


def _call_of(call: Any) -> tuple[str, str] | None:
    call = _dict(call)
    inner = call.get("function")
    fn = inner if isinstance(inner, dict) else call
    name = fn.get("name")
    if not isinstance(name, str):
        return None
    args = fn.get("arguments", fn.get("input", ""))
    return name, args if isinstance(args, str) else json_text(args)


def _add_call_part(calls: dict[int, Json], part: Any) -> None:
    if not isinstance(part, dict):
        return
    index = part.get("index")
    slot = calls.setdefault(index if type(index) is int else len(calls), {"name": "", "args": ""})
    fn = _dict(part.get("function"))
    slot["name"] += content_text(fn.get("name"))
    slot["args"] += content_text(fn.get("arguments"))


def _from_chunks(chunks: list[Any]) -> Json:
    """The message a chat.completion.chunk stream adds up to."""
    text: list[str] = []
    calls: dict[int, Json] = {}
    for chunk in chunks:
        delta = _dict(_first(_dict(chunk).get("choices")).get("delta"))
        if isinstance(delta.get("content"), str):
            text.append(delta["content"])
        for part in _list(delta.get("tool_calls")):
            _add_call_part(calls, part)
    found = [{"function": {"name": c["name"], "arguments": c["args"]}} for c in calls.values()]
    return _message("".join(text), found)


def _message(text: str, calls: list[Json]) -> Json:
    message: Json = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = calls
    return message


def _from_output(output: list[Any]) -> Json:
    items = [_dict(item) for item in output]
    texts = [content_text(i.get("content")) for i in items if i.get("type") == "message"]
    calls = [{"function": i} for i in items if i.get("type") == "function_call"]
    return _message(" ".join(texts), calls)


def response_message(response: Json | None) -> Json | None:
    """The assistant message of a chat completion, a stream or a Responses API ``output``."""
    response = _dict(response)
    message = _first(response.get("choices")).get("message")
    for found in (message, response.get("message")):
        if isinstance(found, dict):
            return found
    if isinstance(response.get("output"), list):
        return _from_output(response["output"])
    return _from_chunks(response["chunks"]) if isinstance(response.get("chunks"), list) else None


def tool_calls(response: Json | None) -> list[tuple[str, str]]:
    """(name, arguments) of each tool call that a response asks for, in order."""
    return _calls(_dict(response_message(response)).get("tool_calls"))


def _calls(calls: Any) -> list[tuple[str, str]]:
    return [c for c in map(_call_of, _list(calls)) if c is not None]


def _usage(entry: Entry) -> Json:
    """``meta.usage``, the response's, or the last a stream's chunks carry."""
    resp = _dict(entry.response)
    chunks = reversed(_list(resp.get("chunks")))
    holders = [entry.meta, resp, *(h for c in chunks for h in (c, _dict(c).get("response")))]
    found = (_dict(h).get("usage") for h in holders)
    return next((usage for usage in found if isinstance(usage, dict)), {})


def _count(usage: Any, *keys: str) -> int:
    numbers = (number(_dict(usage).get(key)) for key in keys)
    return int(next((n for n in numbers if n is not None), 0))


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


def parsed_calls(calls: Any) -> list[tuple[str, Any]]:
    """(name, parsed arguments) of each item of a ``tool_calls`` list (or Responses items)."""
    return [(name, parse_args(args)) for name, args in _calls(calls)]


def response_calls(response: Any) -> list[tuple[str, Any]]:
    """:func:`tool_calls` with each call's arguments parsed from JSON."""
    return [(name, parse_args(args)) for name, args in tool_calls(response)]


def cost_of(entry: Entry) -> float | None:
    """``meta.cost``, ``meta.cost_usd``, the usage's or litellm's ``response_cost``, or None."""
    hidden = _dict(_dict(entry.response).get("_hidden_params")).get("response_cost")
    given = (entry.meta.get("cost"), entry.meta.get("cost_usd"), _usage(entry).get("cost"), hidden)
    return next((c for c in map(number, given) if c is not None), None)


def usage_totals(entry: Entry) -> tuple[float, float, float, float | None]:
    """(prompt, completion, total tokens, :func:`cost_of`) of one interaction (0: unknown)."""
    usage = usage_of(entry)
    return usage.get("input", 0), usage.get("output", 0), usage.get("total", 0), cost_of(entry)


def new_start(messages: list[Any], seen: list[Any], answer: Any) -> int:
    """Where a request's new messages start: after the ``seen`` ones of the previous request of
    its channel and, right after them, that request's ``answer`` coming back."""
    start = len(seen) if messages[: len(seen)] == seen else 0
    if 0 < start < len(messages) and _is_answer(messages[start], answer):
        start += 1
    return start


def _is_answer(message: Any, answer: Any) -> bool:
    if not isinstance(message, dict) or not isinstance(answer, dict):
        return False
    keys = [k for k in ("content", "tool_calls") if k in message or k in answer]
    return all(message.get(k) == answer.get(k) for k in keys)
