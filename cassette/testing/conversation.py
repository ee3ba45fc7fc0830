"""The :class:`Conversation` the scripted server reads from a chat, Responses or Messages
request, the :class:`Reply` it scripts, and the text helpers its answers share."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from orjson import dumps

from ..types import Json
from .schema_values import requested_json

__all__ = ["Conversation", "Reply", "dumps", "parse_chat", "parse_messages", "parse_responses",
           "split_n", "split_words", "sse", "text_of"]  # fmt: skip


def sse(events: Iterable[Json], named: bool = False) -> list[bytes]:
    """``events`` as SSE frames: ``event: <type>`` lines when ``named``, else ``[DONE]`` last."""
    if named:
        return [b"event: %s\ndata: %s\n\n" % (e["type"].encode(), dumps(e)) for e in events]
    return [b"data: %s\n\n" % dumps(e) for e in events] + [b"data: [DONE]\n\n"]


def split_words(text: str, words: int) -> list[str]:
    """Split ``text`` into pieces of ``words`` words each; joining them gives ``text`` back."""
    tokens = re.findall(r"\s*\S+\s*", text) or ([text] if text else [])
    return ["".join(tokens[i : i + words]) for i in range(0, len(tokens), max(1, words))]


def split_n(text: str, parts: int) -> list[str]:
    """``text`` cut into ``parts`` pieces (tool-call arguments as a stream sends them)."""
    size = max(1, -(-len(text) // parts))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _part_text(part: Any) -> str:
    """The text of a content part (an Anthropic tool result or tool use included)."""
    if not isinstance(part, dict):
        return ""
    if part.get("type") == "tool_result":
        return text_of(part.get("content"))
    if part.get("type") == "tool_use":
        return json.dumps({"name": part.get("name"), "input": part.get("input")})
    return str(part.get("text", ""))


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(_part_text(p) for p in content)
    return "" if content is None else json.dumps(content)


@dataclass
class Conversation:
    messages: list[tuple[str, str]]  # (role, text)
    tools: list[tuple[str, Any]]  # (name, JSON schema of the arguments)
    tool_choice: Any
    metadata: Any
    wants_json: tuple[bool, Json | None] = (False, None)  # a JSON answer asked, its schema

    @property
    def last_user(self) -> str:
        return next((text for role, text in reversed(self.messages) if role == "user"), "")

    @property
    def tool_result(self) -> str | None:
        last = self.messages[-1] if self.messages else ("", "")
        return last[1] if last[0] in ("tool", "function") else None


@dataclass
class Reply:
    """What the server answers: content, tool calls (``{"id", "name", "arguments"}``), token
    counts, the model, ``ident(prefix, salt="")`` for ids and ``pieces(text)`` for stream chunks."""

    content: str | None
    calls: list[Json]
    used: int
    made: int
    model: str
    ident: Callable[..., str]
    pieces: Callable[[str], list[str]]


def _tools(body: Json) -> list[tuple[str, Any]]:
    """(name, arguments' schema) of the function tools: chat nests them under ``function``,
    the Responses API does not, Anthropic names the schema ``input_schema``."""
    found = []
    for tool in body.get("tools") or []:
        f = tool.get("function", tool) if isinstance(tool, dict) else {}
        if "name" in f and (tool.get("type") == "function" or "input_schema" in f):
            found.append((str(f["name"]), f.get("parameters", f.get("input_schema"))))
    return found


def _conversation(body: Json, msgs: list[tuple[str, str]]) -> Conversation:
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and choice.get("type") == "none":  # Anthropic's
        choice = "none"
    return Conversation(msgs, _tools(body), choice, body.get("metadata"), requested_json(body))


def parse_chat(body: Json) -> Conversation:
    msgs: list[tuple[str, str]] = []
    for m in body.get("messages") or []:
        if isinstance(m, dict):
            calls = json.dumps(m["tool_calls"]) if m.get("tool_calls") else ""
            msgs.append((str(m.get("role", "user")), text_of(m.get("content")) + calls))
    return _conversation(body, msgs)


_RESPONSES_ITEMS: dict[str, Callable[[Json], tuple[str, str]]] = {
    "message": lambda it: (str(it.get("role", "user")), text_of(it.get("content"))),
    "function_call_output": lambda it: ("tool", text_of(it.get("output"))),
    "function_call": lambda it: ("assistant", f"{it.get('name')}({it.get('arguments')})"),
}


def _responses_item(it: Json) -> tuple[str, str] | None:
    read = _RESPONSES_ITEMS.get(str(it.get("type", "message")))
    return None if read is None else read(it)


def parse_responses(body: Json) -> Conversation:
    msgs: list[tuple[str, str]] = []
    if isinstance(body.get("instructions"), str):
        msgs.append(("system", body["instructions"]))
    raw = body.get("input")
    for it in [{"role": "user", "content": raw}] if isinstance(raw, str) else raw or []:
        if isinstance(it, dict) and (msg := _responses_item(it)) is not None:
            msgs.append(msg)
    return _conversation(body, msgs)


def _anthropic_role(m: Json) -> str:
    content = m.get("content")
    blocks = content if isinstance(content, list) else []
    result = any(isinstance(b, dict) and b.get("type") == "tool_result" for b in blocks)
    return "tool" if result else str(m.get("role", "user"))


def parse_messages(body: Json) -> Conversation:
    """The conversation of an Anthropic Messages request."""
    system = [("system", text_of(body["system"]))] if body.get("system") else []
    msgs = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    said = [(_anthropic_role(m), text_of(m.get("content"))) for m in msgs]
    return _conversation(body, system + said)
