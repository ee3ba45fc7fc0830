"""The trajectories of the HTML report: per-step views of each side of an episode, drawn
side by side.

Each step shows what its request adds to the conversation (the messages after the
previous request of its channel, without the previous answer echoed back) and what its
response says, with tool calls as (name, arguments). Full requests are rebuilt once per
step along the delta chain.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape
from typing import Any

import orjson

from ...dataset.inspect import item_call, message_calls
from ...storage.index import Entry
from ...types import Json
from ..compare import Channels, full_request
from ..types import EpisodeDiff

__all__ = ["Call", "Message", "StepView", "e", "episode_views", "merged_keys", "trajectories_html"]

Key = tuple[str, int]
MAX_TEXT = 4000


@dataclass
class Call:
    name: str
    arguments: Any


@dataclass
class Message:
    role: str
    text: str = ""
    calls: list[Call] = field(default_factory=list)


@dataclass
class StepView:
    inputs: list[Message]
    outputs: list[Message]


def e(value: Any) -> str:
    """``value`` escaped for HTML text and attributes."""
    return escape(str(value), quote=True)


def _clip(text: str) -> str:
    if len(text) <= MAX_TEXT:
        return text
    return text[:MAX_TEXT] + f"… ({len(text) - MAX_TEXT:,} more characters)"


def _pretty(value: Any) -> str:
    return _clip(orjson.dumps(value, option=orjson.OPT_INDENT_2, default=str).decode())


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return _clip(content)
    if isinstance(content, list):
        texts = [p.get("text") for p in content if isinstance(p, dict)]
        if texts and all(isinstance(t, str) for t in texts):
            return _clip("\n".join(t for t in texts if isinstance(t, str)))
    return _pretty(content)


def _message(item: Any) -> Message:
    """A chat message or a Responses API item."""
    if not isinstance(item, dict):
        return Message("?", _pretty(item))
    kind = item.get("type")
    if kind == "function_call":
        return Message("assistant", calls=[Call(*item_call(item))])
    if kind == "function_call_output":
        return Message("tool", _text(item.get("output")))
    msg = Message(str(item.get("role") or kind or "?"), _text(item.get("content")))
    msg.calls.extend(Call(name, args) for name, args in message_calls(item))
    return msg


def _outputs(entry: Entry) -> list[Message]:
    if entry.error is not None:
        err = entry.error
        return [Message("error", f"{err.get('type')}: {err.get('message')}")]
    resp = entry.response
    if not isinstance(resp, dict):
        return [Message("error", "(no response recorded)")]
    choices = resp.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        return [_message(choices[0].get("message"))]
    if isinstance(resp.get("message"), dict):
        return [_message(resp["message"])]
    if isinstance(resp.get("output"), list):
        return [_message(item) for item in resp["output"]]
    content = resp.get("content")
    if isinstance(content, list):  # an MCP tool result
        return [Message("result", _text(content))]
    return [Message("response", _pretty(resp))]


def _inputs(full: Json, prev: list[Any] | None, answered: bool) -> tuple[list[Message], Any]:
    msgs = full.get("messages", full.get("input"))
    if not isinstance(msgs, list):
        if full.get("method") == "tools/call" and isinstance(full.get("params"), dict):
            params = full["params"]
            call = Call(str(params.get("name")), params.get("arguments"))
            return [Message("call", calls=[call])], None
        return [Message("request", _pretty(full))], None
    new = msgs
    if prev is not None and len(msgs) >= len(prev) and msgs[: len(prev)] == prev:
        new = msgs[len(prev) :]
        if answered and new and isinstance(new[0], dict) and new[0].get("role") == "assistant":
            new = new[1:]  # the previous answer, shown as the previous step's output
    return [_message(m) for m in new], msgs


def episode_views(channels: Channels | None) -> dict[Key, StepView]:
    """Every step of one side of an episode, in file order."""
    entries = sorted(
        (e for steps in (channels or {}).values() for e in steps.values()),
        key=lambda e: (e.source, e.line),
    )
    fulls: dict[int, Json] = {}
    prev: dict[str, list[Any] | None] = {}
    views: dict[Key, StepView] = {}
    for entry in entries:
        answered = entry.channel in prev
        inputs, msgs = _inputs(full_request(entry, fulls), prev.get(entry.channel), answered)
        prev[entry.channel] = msgs
        views[(entry.channel, entry.step)] = StepView(inputs, _outputs(entry))
    return views


def merged_keys(a: dict[Key, StepView], b: dict[Key, StepView]) -> list[Key]:
    """A's steps in order, with B's extra steps placed after their predecessor in B."""
    out = list(a)
    seen = set(out)
    last: Key | None = None
    for key in b:
        if key not in seen:
            at = out.index(last) + 1 if last is not None else 0
            out.insert(at, key)
            seen.add(key)
        last = key
    return out


def _message_html(msg: Message, out: bool) -> str:
    parts = [f'<div class="msg role-{e(msg.role)}{" out" if out else ""}">']
    parts.append(f'<span class="role">{e(msg.role)}</span>')
    if msg.text:
        parts.append(f'<div class="content">{e(msg.text)}</div>')
    for call in msg.calls:
        args = orjson.dumps(call.arguments, option=orjson.OPT_INDENT_2, default=str).decode()
        parts.append(
            f'<div class="tool-call"><div class="tool-name">{e(call.name)}</div>'
            f'<pre class="tool-args">{e(args)}</pre></div>'
        )
    parts.append("</div>")
    return "".join(parts)


def _step(view: StepView | None, side: str, key: tuple[str, int], part: str) -> str:
    channel, step = key
    if view is None:
        return (
            f'<div class="step {side} missing"><div class="step-head">{e(channel)} · step '
            f"{step}</div>not recorded in {side.upper()}</div>"
        )
    ins = "".join(_message_html(m, False) for m in view.inputs)
    outs = "".join(_message_html(m, True) for m in view.outputs)
    in_cls = " part-diverged" if part == "request" else ""
    out_cls = " part-diverged" if part == "response" else ""
    return (
        f'<div class="step {side}"><div class="step-head">{e(channel)} · step {step}</div>'
        f'<div class="inputs{in_cls}">{ins}</div><div class="outputs{out_cls}">{outs}</div></div>'
    )


def trajectories_html(n: int, ep: EpisodeDiff, labels: tuple[str, str], groups: Any) -> str:
    """Episode ``ep`` (number ``n`` on the page) step by step: both runs side by side,
    the first divergence marked, or the one run that has it."""
    va = episode_views(groups[0].get(ep.env_index))
    vb = episode_views(groups[1].get(ep.env_index))
    d = ep.divergence
    first = (d.channel, d.step) if d is not None and d.step is not None else None
    if ep.status in ("only_a", "only_b"):  # one column: the run that has the episode
        side = ep.status[-1]
        label = labels[0] if side == "a" else labels[1]
        steps = "".join(_step(v, side, k, "") for k, v in (va if side == "a" else vb).items())
        return (
            f'<p class="missing-run">Not in {"B" if side == "a" else "A"}.</p><div class="single">'
            f'<div class="col-head {side}">{side.upper()} · {e(label)}</div>{steps}</div>'
        )
    out = [
        '<div class="grid">',
        f'<div class="col-head a">A · {e(labels[0])}</div>',
        f'<div class="col-head b">B · {e(labels[1])}</div>',
    ]
    after = False
    for key in merged_keys(va, vb):
        here = key == first
        part = d.part if here and d is not None else ""
        cls = "step-row divergence" if here else "step-row after" if after else "step-row"
        ident = f' id="ep-{n}-divergence"' if here else ""
        out.append(f'<div class="{cls}"{ident}>')
        out.append(_step(va.get(key), "a", key, part) + _step(vb.get(key), "b", key, part))
        out.append("</div>")
        after = after or here
    out.append("</div>")
    return "".join(out)
