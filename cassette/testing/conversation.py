"""What the scripted server reads from a request: the conversation (roles and texts), the
tools offered, tool_choice, metadata and whether a JSON answer was asked for; from a Chat
Completions body (:func:`parse_chat`) or a Responses API body (:func:`parse_responses`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..types import Json
from .schema_values import requested_json

__all__ = ["Conversation", "parse_chat", "parse_responses", "text_of"]


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else json.dumps(content)


@dataclass
class Conversation:
    messages: list[tuple[str, str]]
    tools: list[tuple[str, Any]]
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


def _conversation(body: Json, msgs: list[tuple[str, str]]) -> Conversation:
    tools = [  # chat nests {"name", "parameters"} under "function"; the Responses API does not
        (str(f["name"]), f.get("parameters"))
        for t in body.get("tools") or []
        if isinstance(t, dict) and t.get("type") == "function"
        if isinstance(f := t.get("function", t), dict) and "name" in f
    ]
    meta, wants = body.get("metadata"), requested_json(body)
    return Conversation(msgs, tools, body.get("tool_choice"), meta, wants)


def parse_chat(body: Json) -> Conversation:
    msgs: list[tuple[str, str]] = []
    for m in body.get("messages") or []:
        if isinstance(m, dict):
            calls = json.dumps(m["tool_calls"]) if m.get("tool_calls") else ""
            msgs.append((str(m.get("role", "user")), text_of(m.get("content")) + calls))
    return _conversation(body, msgs)


def parse_responses(body: Json) -> Conversation:
    msgs: list[tuple[str, str]] = []
    if isinstance(body.get("instructions"), str):
        msgs.append(("system", body["instructions"]))
    raw = body.get("input")
    for it in [{"role": "user", "content": raw}] if isinstance(raw, str) else raw or []:
        if not isinstance(it, dict):
            continue
        kind = it.get("type", "message")
        if kind == "message":
            msgs.append((str(it.get("role", "user")), text_of(it.get("content"))))
        elif kind == "function_call_output":
            msgs.append(("tool", text_of(it.get("output"))))
        elif kind == "function_call":
            msgs.append(("assistant", f"{it.get('name')}({it.get('arguments')})"))
    return _conversation(body, msgs)
