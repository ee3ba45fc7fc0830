"""A cassette as data for people: what a response says (its message, tool calls, token
usage; also as ``cassette diff`` counts them) and the readable transcript of ``cassette
show``. Pure functions over a loaded :class:`~cassette.index.Index`; nothing here prints.
The numbers of ``cassette stats`` are in :mod:`cassette.stats`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from .codec import dumps, is_ref
from .index import Entry, EnvIndex, Index

__all__ = [
    "Segment",
    "content_text",
    "episode_transcripts",
    "item_call",
    "message_calls",
    "parse_args",
    "response_calls",
    "response_message",
    "tool_calls",
    "usage_of",
    "usage_totals",
]

Json = dict[str, Any]
Segment = tuple[str, str | None]  # (text, style); a line of output is a list of segments
ROLE_STYLES = {"system": "dim", "user": "cyan", "assistant": "green", "tool": "yellow"}


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
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, dict):
                parts.append(f"[{part.get('type', 'part')}]")
        return " ".join(parts)
    return dumps(content).decode()


def _call_of(call: Any) -> tuple[str, str] | None:
    if not isinstance(call, dict):
        return None
    inner = call.get("function")
    fn: Json = inner if isinstance(inner, dict) else call
    name = fn.get("name")
    if not isinstance(name, str):
        return None
    args = fn.get("arguments", fn.get("input", ""))
    return name, args if isinstance(args, str) else dumps(args).decode()


def _from_chunks(chunks: list[Any]) -> Json:
    """The message a chat.completion.chunk stream adds up to (content and tool calls)."""
    text: list[str] = []
    calls: dict[int, Json] = {}
    for chunk in chunks:
        choices = chunk.get("choices") if isinstance(chunk, dict) else None
        delta = choices[0].get("delta") if isinstance(choices, list) and choices else None
        if not isinstance(delta, dict):
            continue
        if isinstance(delta.get("content"), str):
            text.append(delta["content"])
        for part in delta.get("tool_calls") or []:
            slot = calls.setdefault(int(part.get("index", len(calls))), {"name": "", "args": ""})
            fn = part.get("function") or {}
            slot["name"] += fn.get("name") or ""
            slot["args"] += fn.get("arguments") or ""
    message: Json = {"role": "assistant", "content": "".join(text) or None}
    if calls:
        message["tool_calls"] = [
            {"function": {"name": c["name"], "arguments": c["args"]}} for c in calls.values()
        ]
    return message


def response_message(response: Json | None) -> Json | None:
    """The assistant message of a response: a chat completion, an assembled or raw stream,
    or a Responses API ``output`` list; None if the response holds none."""
    if not isinstance(response, dict):
        return None
    choices = response.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        msg = choices[0].get("message")
        if isinstance(msg, dict):
            return msg
    message = response.get("message")
    if isinstance(message, dict):
        return message
    output = response.get("output")
    if isinstance(output, list):
        texts, calls = [], []
        for item in output:
            if not isinstance(item, dict):
                continue
            if item.get("type") == "function_call":
                calls.append({"function": item})
            elif item.get("type") == "message":
                texts.append(content_text(item.get("content")))
        built: Json = {"role": "assistant", "content": " ".join(texts) or None}
        if calls:
            built["tool_calls"] = calls
        return built
    if isinstance(response.get("chunks"), list):
        return _from_chunks(response["chunks"])
    return None


def tool_calls(response: Json | None) -> list[tuple[str, str]]:
    """(name, arguments) of each tool call that a response asks for, in order."""
    message = response_message(response)
    calls = (message or {}).get("tool_calls") or []
    return [c for c in (_call_of(call) for call in calls) if c is not None]


def usage_of(entry: Entry) -> dict[str, int]:
    """Token counts of one call: input, output, total, and cached/reasoning where given."""
    usage = entry.meta.get("usage")
    if not isinstance(usage, dict) and isinstance(entry.response, dict):
        usage = entry.response.get("usage")
        chunks = entry.response.get("chunks")
        if usage is None and isinstance(chunks, list):
            found = [c["usage"] for c in chunks if isinstance(c, dict) and c.get("usage")]
            usage = found[-1] if found else None
    if not isinstance(usage, dict):
        return {}

    def num(*keys: str, within: Any = usage) -> int:
        for key in keys:
            value = within.get(key) if isinstance(within, dict) else None
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return int(value)
        return 0

    out = {
        "input": num("prompt_tokens", "input_tokens"),
        "output": num("completion_tokens", "output_tokens"),
    }
    out["total"] = num("total_tokens") or out["input"] + out["output"]
    details_in = usage.get("prompt_tokens_details") or usage.get("input_tokens_details")
    details_out = usage.get("completion_tokens_details") or usage.get("output_tokens_details")
    out["cached"] = num("cached_tokens", within=details_in) or num("cache_read_input_tokens")
    out["reasoning"] = num("reasoning_tokens", within=details_out)
    return out


# --- what a response asks for and costs, as ``cassette diff`` counts them ----------------
#
# The same questions as tool_calls / usage_of above, answered differently where the shapes
# are unusual, and the diff's results depend on it: here a raw chunk stream asks for no
# calls (tool_calls assembles it); ``choices[0].message``, ``message`` and ``output`` all
# count (tool_calls reads the first that is there); a call is named by ``str(name)`` only
# when it has a ``function``, and its arguments are parsed; the response's usage comes
# before ``meta.usage``, a Responses API stream's from its last event; and a cost is read.


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
    for call in message.get("tool_calls") or ():
        fn = call.get("function") if isinstance(call, dict) else None
        if isinstance(fn, dict):
            yield str(fn.get("name")), parse_args(fn.get("arguments"))


def item_call(item: Json) -> tuple[str, Any]:
    """(name, parsed arguments) of a Responses API ``function_call`` item."""
    return str(item.get("name")), parse_args(item.get("arguments"))


def response_calls(response: Any) -> list[tuple[str, Any]]:
    """(name, parsed arguments) of the tool calls in a response: chat
    ``choices[0].message.tool_calls``, Responses API ``output`` items of type
    ``function_call``, a stream's assembled ``message``."""
    if not isinstance(response, dict):
        return []
    out: list[tuple[str, Any]] = []
    messages: list[Any] = []
    choices = response.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        messages.append(choices[0].get("message"))
    messages.append(response.get("message"))
    items = response.get("output")
    for msg in messages:
        if not isinstance(msg, dict):
            continue
        out.extend(message_calls(msg))
        items = items if items is not None else msg.get("output")
    for item in items if isinstance(items, list) else ():
        if isinstance(item, dict) and item.get("type") == "function_call":
            out.append(item_call(item))
    return out


def _num(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def usage_totals(entry: Entry) -> tuple[float, float, float, float]:
    """(prompt, completion, total tokens, cost) of one interaction; 0 where unknown (a
    total of 0 is taken as prompt + completion)."""
    resp = entry.response if isinstance(entry.response, dict) else {}
    meta = entry.meta
    usage = resp.get("usage") or meta.get("usage")
    chunks = resp.get("chunks")
    if not isinstance(usage, dict) and isinstance(chunks, list) and chunks:
        last = chunks[-1] if isinstance(chunks[-1], dict) else {}
        inner = last.get("response")
        usage = last.get("usage") or (inner.get("usage") if isinstance(inner, dict) else None)
    usage = usage if isinstance(usage, dict) else {}
    p = _num(usage.get("prompt_tokens", usage.get("input_tokens")))
    c = _num(usage.get("completion_tokens", usage.get("output_tokens")))
    total = _num(usage.get("total_tokens"))
    hidden = resp.get("_hidden_params")
    cost = (
        _num(meta.get("cost"))
        or _num(meta.get("cost_usd"))
        or _num(usage.get("cost"))
        or (_num(hidden.get("response_cost")) if isinstance(hidden, dict) else 0.0)
    )
    return p, c, total, cost


# --- show -------------------------------------------------------------------------------

_INDENT = " " * 16


def _excerpt(text: str, width: int | None) -> str:
    if width is None:
        return text.replace("\n", "\n" + _INDENT)
    one = " ".join(text.split())
    return one if len(one) <= width else one[: width - 1] + "…"


def _message_line(message: Any, width: int | None) -> list[Segment]:
    if not isinstance(message, dict):
        return [(f"{'?':>10}  ", None), (_excerpt(dumps(message).decode(), width), None)]
    role = str(message.get("role") or message.get("type") or "?")
    text = _excerpt(content_text(message.get("content")), width)
    if role == "tool" and message.get("tool_call_id"):
        text = f"[{message['tool_call_id']}] {text}"
    calls = [f"{name}({_excerpt(args, width)})" for name, args in tool_calls({"message": message})]
    body = "  ".join(p for p in (text, *(f"→ {c}" for c in calls)) if p)
    return [(f"{role:>10}  ", ROLE_STYLES.get(role, "bold")), (body, None)]


def _filled(message: Any) -> Any:
    if not isinstance(message, dict):
        return message
    return {k: v for k, v in message.items() if v not in (None, [], {}, "")}


def _new_positions(
    entry: Entry, messages: list[Any], prev: tuple[list[Any], Json | None] | None
) -> Iterator[int]:
    """Indices of the messages this step adds: not in the previous request of its
    (env_index, channel), and not the previous step's answer (shown with that step)."""
    if entry.delta is not None:  # exact: the delta says what is new
        keep = int(entry.delta.get("keep", 0))
        stored = entry.request.get(entry.delta.get("field", "messages")) or []
        yield from (keep + i for i, msg in enumerate(stored) if not is_ref(msg))
        return
    start = 0
    if prev is not None:
        before, answer = prev
        while start < min(len(before), len(messages)) and messages[start] == before[start]:
            start += 1
        if start and start < len(messages) and _filled(messages[start]) == _filled(answer):
            start += 1
    yield from range(start, len(messages))


def _step_head(entry: Entry) -> list[Segment]:
    meta = entry.meta
    bits = [str(meta["model"])] if meta.get("model") else []
    if isinstance(meta.get("latency_ms"), (int, float)):
        bits.append(f"{meta['latency_ms']:g} ms")
    usage = usage_of(entry)
    if usage:
        bits.append(f"{usage['input']}+{usage['output']} tokens")
    if meta.get("redacted"):
        bits.append(f"{meta['redacted']} redacted")
    head = f"  {entry.channel} step {entry.step}"
    return [(head, "bold"), ("  " + "  ".join(bits) if bits else "", "dim")]


def _step_lines(
    entry: Entry, request: Json, shown: Iterator[int] | None, width: int | None
) -> Iterator[list[Segment]]:
    yield _step_head(entry)
    messages = request.get((entry.delta or {}).get("field", _message_field(request)))
    if isinstance(messages, list):
        for i in range(len(messages)) if shown is None else shown:
            yield [("    ", None), *_message_line(messages[i], width)]
    else:
        yield [(f"    {'request':>10}  ", "bold"), (_excerpt(dumps(request).decode(), width), None)]
    if entry.error is not None:
        err = f"{entry.error.get('type')}: {entry.error.get('message')}"
        yield [(f"  → {'error':>10}  ", "red"), (_excerpt(err, width), "red")]
        return
    message = response_message(entry.response)
    if message is not None:
        yield [("  → ", "green"), *_message_line(message, width)]
    elif entry.response is not None:
        text = _excerpt(dumps(entry.response).decode(), width)
        yield [(f"  → {'response':>10}  ", "green"), (text, None)]
    chunks = (entry.response or {}).get("chunks")
    if isinstance(chunks, list):
        cut = ", cut short" if entry.meta.get("incomplete") else ""
        yield [(f"{_INDENT}(streamed, {len(chunks)} chunks{cut})", "dim")]


def _message_field(request: Json) -> str:
    return "input" if isinstance(request.get("input"), list) else "messages"


def _outcome_text(outcome: Json | None) -> str:
    if outcome is None:
        return "no outcome"
    parts = []
    if outcome.get("reward") is not None:
        parts.append(f"reward={outcome['reward']:g}")
    if outcome.get("terminated") is not None:
        parts.append("terminated" if outcome["terminated"] else "not terminated")
    if outcome.get("info"):
        parts.append("info=" + _excerpt(dumps(outcome["info"]).decode(), 120))
    return "  ".join(parts) or "outcome recorded"


def episode_transcripts(
    index: Index, *, env: str | None = None, channel: str | None = None, full: bool = False
) -> dict[EnvIndex, list[list[Segment]]]:
    """Per episode (in order of appearance), the lines that ``cassette show`` prints: a
    heading with the outcome, then each step with the messages it adds and its response.
    ``full``: every message of each request, untruncated. ``env`` matches an env_index by
    its text (``"0"`` matches 0); ``channel`` keeps one channel."""
    out: dict[EnvIndex, list[list[Segment]]] = {
        e: [[(f"episode {e!r}", "bold"), ("  " + _outcome_text(index.outcomes.get(e)), None)]]
        for e in index.episodes()
        if env is None or str(e) == env
    }
    width = None if full else 160
    prev: dict[tuple[EnvIndex, str], tuple[list[Any], Json | None]] = {}
    for entry, request in index.iter_full() if out else ():
        lines = out.get(entry.env_index)
        if lines is None or (channel is not None and entry.channel != channel):
            continue
        messages = request.get(_message_field(request))
        shown = None
        if isinstance(messages, list):
            key = (entry.env_index, entry.channel)
            shown = None if full else _new_positions(entry, messages, prev.get(key))
            prev[key] = (messages, response_message(entry.response))
        lines.extend(_step_lines(entry, request, shown, width))
    return out
