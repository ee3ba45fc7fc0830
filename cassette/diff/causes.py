"""Why episodes diverged: the first differing path of each, classified, and counted.

A divergence's cause is the kind of its first differing path: the system prompt, the
tool schema, a tool result, the model's own output, a user message, the sampling
parameters, the model name, another request field, one run making more calls, or only
the outcome. A path inside ``messages[i]`` / ``input[i]`` is classified by that
message's role (or Responses item type), read from the full request of that step.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from .types import CauseGroup, Divergence, EpisodeDiff, Json

__all__ = ["CAUSES", "SHORT", "CauseGroup", "classify", "group_causes", "sentence"]

# cause -> (what changed, as it reads after "diverged because"; a short name for a table)
_NAMES = {
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
CAUSES = {cause: names[0] for cause, names in _NAMES.items()}
SHORT = {cause: names[1] for cause, names in _NAMES.items()}
SAMPLING = {
    "temperature", "top_p", "top_k", "max_tokens", "max_completion_tokens",
    "max_output_tokens", "seed", "n", "presence_penalty", "frequency_penalty", "stop",
    "logit_bias", "logprobs", "top_logprobs", "reasoning_effort", "reasoning", "thinking",
    "stop_sequences", "parallel_tool_calls",
}  # fmt: skip
TOOL_SCHEMA = {"tools", "functions", "tool_choice", "function_call"}
SYSTEM = {"system", "instructions"}
_BY_KEY = ((TOOL_SCHEMA, "tool_schema"), (SYSTEM, "system_prompt"), (SAMPLING, "sampling"),
           ({"model"}, "model"))  # fmt: skip
_KEY = re.compile(r"^request\.(?P<key>[A-Za-z_$][\w$-]*)(?:$|[.\[])")
_MESSAGE = re.compile(r"^request\.(?P<field>messages|input)\[(?P<i>\d+)\]")


def _role_cause(message: Any) -> str:
    if not isinstance(message, dict):
        return "request_other"
    kind, role = message.get("type"), message.get("role")
    if kind == "function_call_output" or role in ("tool", "function"):
        return "tool_result"
    if kind in ("function_call", "reasoning") or role == "assistant":
        return "model_output"
    if role in ("system", "developer"):
        return "system_prompt"
    if role == "user":
        content = message.get("content")
        if isinstance(content, list) and any(
            isinstance(p, dict) and p.get("type") == "tool_result" for p in content
        ):
            return "tool_result"
        return "user_message"
    return "request_other"


def _message_at(request: Json | None, fld: str, i: int) -> Any:
    msgs = (request or {}).get(fld)
    return msgs[i] if isinstance(msgs, list) and 0 <= i < len(msgs) else None


def classify(d: Divergence, request_a: Json | None = None, request_b: Json | None = None) -> str:
    """The cause of divergence ``d``; ``request_a`` / ``request_b`` are the full requests
    of the step where it happened (needed for paths inside the conversation)."""
    if d.part in ("step", "outcome"):
        return "steps" if d.part == "step" else "outcome"
    method = str((request_a or request_b or {}).get("method"))
    if d.part == "response":  # an MCP tool's answer, else the model's
        return {"tools/call": "tool_result", "tools/list": "tool_schema"}.get(
            method, "model_output"
        )
    m = _MESSAGE.match(d.path)
    if m is not None:
        fld, i = m.group("field"), int(m.group("i"))
        return _role_cause(_message_at(request_a, fld, i) or _message_at(request_b, fld, i))
    m = _KEY.match(d.path)
    key = m.group("key") if m is not None else ""
    for keys, cause in _BY_KEY:
        if key in keys:
            return cause
    if method == "tools/call" and key == "params":
        return "model_output"  # the arguments the model chose for the tool
    return "request_other"


def sentence(cause: str, count: int) -> str:
    """``"40 episodes diverged because the tool schema changed"``."""
    noun = "episode" if count == 1 else "episodes"
    return f"{count} {noun} diverged because {CAUSES.get(cause, cause)}"


def group_causes(episodes: Sequence[EpisodeDiff], examples: int = 20) -> list[CauseGroup]:
    """Diverged episodes grouped by cause, the largest group first."""
    groups: dict[str, CauseGroup] = {}
    for ep in episodes:
        if ep.status != "diverged" or ep.cause is None:
            continue
        g = groups.get(ep.cause)
        if g is None:
            g = groups[ep.cause] = CauseGroup(ep.cause, 0)
        g.count += 1
        if len(g.episodes) < examples:
            g.episodes.append(ep.env_index)
        path = re.sub(r"\[\d+\]", "[*]", ep.divergence.path) if ep.divergence else ""
        g.paths[path] = g.paths.get(path, 0) + 1
    out = sorted(groups.values(), key=lambda g: (-g.count, list(CAUSES).index(g.cause)))
    for g in out:  # the five commonest paths, commonest first
        g.paths = dict(sorted(g.paths.items(), key=lambda kv: -kv[1])[:5])
        g.text = sentence(g.cause, g.count)
    return out
