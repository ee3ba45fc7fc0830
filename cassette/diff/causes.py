"""Why episodes diverged: the first differing path of each, classified (inside a message by
its role or Responses item type), and counted."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from .types import Cause, CauseGroup, Divergence, EpisodeDiff, Json

__all__ = ["CAUSES", "SHORT", "CauseGroup", "classify", "group_causes", "sentence"]

# cause -> (what changed, as it reads after "diverged because"; a short name for a table)
_NAMES: dict[Cause, tuple[str, str]] = {
    "tool_schema": ("the tool schema changed", "tool schema"),
    "system_prompt": ("the system prompt changed", "system prompt"),
    "tool_result": ("a tool result changed", "tool result"),
    "model_output": ("the model's own output changed", "model output"),
    "user_message": ("a user message changed", "user message"),
    "sampling": ("the sampling parameters changed", "sampling"),
    "model": ("the model changed", "model"),
    "request_other": ("another request field changed", "other request field"),
    "steps": ("one run made more calls", "more calls"),
    "outcome": ("only the outcome changed", "outcome only"),
}
CAUSES: dict[str, str] = {cause: names[0] for cause, names in _NAMES.items()}
SHORT: dict[str, str] = {cause: names[1] for cause, names in _NAMES.items()}
SAMPLING = """temperature top_p top_k max_tokens max_completion_tokens max_output_tokens seed n
    presence_penalty frequency_penalty stop logit_bias logprobs top_logprobs reasoning_effort
    reasoning thinking stop_sequences parallel_tool_calls"""
_BY_KEY: dict[str, Cause] = dict.fromkeys(SAMPLING.split(), "sampling")
_BY_KEY |= dict.fromkeys(("tools", "functions", "tool_choice", "function_call"), "tool_schema")
_BY_KEY |= {"system": "system_prompt", "instructions": "system_prompt", "model": "model"}
# a message's role, or a Responses item's type -> its cause; the first cause of _ROLE_ORDER wins
_BY_ROLE: dict[Any, Cause] = dict.fromkeys(("tool", "function"), "tool_result")
_BY_ROLE |= {"assistant": "model_output", "user": "user_message"}
_BY_ROLE |= dict.fromkeys(("system", "developer"), "system_prompt")
_BY_TYPE: dict[Any, Cause] = {"function_call_output": "tool_result"}
_BY_TYPE |= dict.fromkeys(("function_call", "reasoning"), "model_output")
_ROLE_ORDER: tuple[Cause, ...] = ("tool_result", "model_output", "system_prompt", "user_message")
_MCP_RESPONSE: dict[str, Cause] = {"tools/call": "tool_result", "tools/list": "tool_schema"}
_KEY = re.compile(r"^request\.(?P<key>[A-Za-z_$][\w$-]*)(?:$|[.\[])")
_MESSAGE = re.compile(r"^request\.(?P<field>messages|input)\[(?P<i>\d+)\]")


def _holds_tool_results(message: Json) -> bool:
    """Whether a message holds tool results (Anthropic's come in a user message)."""
    content = message.get("content")
    parts = content if isinstance(content, list) else []
    return any(isinstance(p, dict) and p.get("type") == "tool_result" for p in parts)


def _role_cause(message: Any) -> Cause:
    if not isinstance(message, dict):
        return "request_other"
    found = {_BY_TYPE.get(message.get("type")), _BY_ROLE.get(message.get("role"))}
    cause: Cause = next((c for c in _ROLE_ORDER if c in found), "request_other")
    return "tool_result" if cause == "user_message" and _holds_tool_results(message) else cause


def _message_at(request: Json | None, fld: str, i: int) -> Any:
    msgs = (request or {}).get(fld)
    return msgs[i] if isinstance(msgs, list) and 0 <= i < len(msgs) else None


def _request_cause(path: str, method: str, request_a: Json | None, request_b: Json | None) -> Cause:
    m = _MESSAGE.match(path)
    if m is not None:
        fld, i = m.group("field"), int(m.group("i"))
        return _role_cause(_message_at(request_a, fld, i) or _message_at(request_b, fld, i))
    key = m.group("key") if (m := _KEY.match(path)) is not None else ""
    if method == "tools/call" and key == "params":
        return "model_output"  # the arguments the model chose for the tool
    return _BY_KEY.get(key, "request_other")


def classify(d: Divergence, request_a: Json | None = None, request_b: Json | None = None) -> Cause:
    """The cause of ``d``, given the full requests of its step (for paths in a conversation)."""
    method = str((request_a or request_b or {}).get("method"))
    if d.part == "response":  # an MCP tool's answer, else the model's
        return _MCP_RESPONSE.get(method, "model_output")
    if d.part == "request":
        return _request_cause(d.path, method, request_a, request_b)
    return "steps" if d.part == "step" else "outcome"


def sentence(cause: str, count: int) -> str:
    """``"40 episodes diverged because the tool schema changed"``."""
    noun = "episode" if count == 1 else "episodes"
    return f"{count} {noun} diverged because {CAUSES.get(cause, cause)}"


def group_causes(episodes: Sequence[EpisodeDiff], examples: int = 20) -> list[CauseGroup]:
    """Diverged episodes grouped by cause, the largest group first, with its 5 commonest paths."""
    groups: dict[Cause, CauseGroup] = {}
    for ep in episodes:
        if ep.cause is None or ep.divergence is None:  # identical, or in one run only
            continue
        g = groups.setdefault(ep.cause, CauseGroup(ep.cause, 0))
        g.count += 1
        if len(g.episodes) < examples:
            g.episodes.append(ep.env_index)
        path = re.sub(r"\[\d+\]", "[*]", ep.divergence.path)
        g.paths[path] = g.paths.get(path, 0) + 1
    out = sorted(groups.values(), key=lambda g: (-g.count, list(CAUSES).index(g.cause)))
    for g in out:
        g.paths = dict(sorted(g.paths.items(), key=lambda kv: -kv[1])[:5])
        g.text = sentence(g.cause, g.count)
    return out
