"""Both sides of an episode step by step for the HTML report: what each request adds to the
conversation and what its response says."""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape
from typing import Any

import orjson

from ...dataset.inspect import content_text, parsed_calls, response_message
from ...format.entry import Rebuilder
from ...storage.index import Entry
from ...types import Json
from ..compare import Channels, in_file_order
from ..types import EpisodeDiff

__all__ = ["e", "trajectories_html"]

Key = tuple[str, int]
MAX_TEXT = 4000


@dataclass
class Message:
    role: str
    text: str = ""
    calls: list[tuple[str, Any]] = field(default_factory=list)


@dataclass
class StepView:
    inputs: list[Message]
    outputs: list[Message]


Views = dict[Key, StepView]


def e(value: Any) -> str:
    """``value`` escaped for HTML text and attributes."""
    return escape(str(value), quote=True)


def _clip(text: str) -> str:
    more = len(text) - MAX_TEXT
    return text if more <= 0 else text[:MAX_TEXT] + f"… ({more:,} more characters)"


def _pretty(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2, default=str).decode()


def _text(content: Any) -> str:
    return _clip(content_text(content))


def _message(item: Any) -> Message:
    """A chat message or Responses API item."""
    if not isinstance(item, dict):
        return Message("?", _text(item))
    kind = item.get("type")
    if kind == "function_call":
        return Message("assistant", calls=parsed_calls([item]))
    if kind == "function_call_output":
        return Message("tool", _text(item.get("output")))
    role = str(item.get("role") or kind or "?")
    return Message(role, _text(item.get("content")), parsed_calls(item.get("tool_calls")))


def _outputs(entry: Entry) -> list[Message]:
    """What a response says: its (assembled) assistant message, an MCP result, an error."""
    err, resp, message = entry.error, entry.response, response_message(entry.response)
    if err is not None:
        return [Message("error", f"{err.get('type')}: {err.get('message')}")]
    if message is not None:
        return [_message(message)]
    if not isinstance(resp, dict):
        return [Message("error", "(no response recorded)")]
    kind = "result" if isinstance(resp.get("content"), list) else "response"  # MCP: a result
    return [Message(kind, _text(resp["content"]) if kind == "result" else _clip(_pretty(resp)))]


def _not_a_chat(full: Json) -> list[Message]:
    params = full.get("params")
    if full.get("method") == "tools/call" and isinstance(params, dict):
        return [Message("call", calls=[(str(params.get("name")), params.get("arguments"))])]
    return [Message("request", _clip(_pretty(full)))]


def _inputs(full: Json, prev: list[Any] | None) -> tuple[list[Message], Any]:
    msgs = full.get("messages", full.get("input"))
    if not isinstance(msgs, list):
        return _not_a_chat(full), None
    return [_message(m) for m in _new(msgs, prev)], msgs


def _new(msgs: list[Any], prev: list[Any] | None) -> list[Any]:
    """What ``msgs`` adds to the previous request's ``prev``, less the previous step's answer."""
    if prev is None or msgs[: len(prev)] != prev:
        return msgs
    new = msgs[len(prev) :]
    answer = new and isinstance(new[0], dict) and new[0].get("role") == "assistant"
    return new[1:] if answer else new


def _views(channels: Channels | None) -> Views:
    entries = in_file_order(e for steps in (channels or {}).values() for e in steps.values())
    rebuilder, prev, views = Rebuilder(), dict[str, Any](), Views()
    for entry in entries:
        inputs, prev[entry.channel] = _inputs(rebuilder.full(entry), prev.get(entry.channel))
        views[(entry.channel, entry.step)] = StepView(inputs, _outputs(entry))
    return views


def _merged_keys(a: Views, b: Views) -> list[Key]:
    """A's steps in order, with B's extra steps placed after their predecessor in B."""
    out = list(a)
    last: Key | None = None
    for key in b:
        if key not in a:
            out.insert(out.index(last) + 1 if last is not None else 0, key)
        last = key
    return out


def _message_html(msg: Message, out: bool) -> str:
    calls = "".join(
        f'<div class="tool-call"><div class="tool-name">{e(name)}</div>'
        f'<pre class="tool-args">{e(_pretty(args))}</pre></div>'
        for name, args in msg.calls
    )
    text = f'<div class="content">{e(msg.text)}</div>' if msg.text else ""
    return (
        f'<div class="msg role-{e(msg.role)}{" out" * out}">'
        f'<span class="role">{e(msg.role)}</span>{text}{calls}</div>'
    )


def _step(view: StepView | None, side: str, key: Key, part: str) -> str:
    head = f'<div class="step-head">{e(key[0])} · step {key[1]}</div>'
    if view is None:
        return f'<div class="step {side} missing">{head}not recorded in {side.upper()}</div>'
    ins = "".join(_message_html(m, False) for m in view.inputs)
    outs = "".join(_message_html(m, True) for m in view.outputs)
    in_cls = " part-diverged" * (part == "request")
    out_cls = " part-diverged" * (part == "response")
    return (
        f'<div class="step {side}">{head}<div class="inputs{in_cls}">{ins}</div>'
        f'<div class="outputs{out_cls}">{outs}</div></div>'
    )


def _single(ep: EpisodeDiff, labels: tuple[str, str], views: Views) -> str:
    side = ep.status[-1]
    steps = "".join(_step(v, side, k, "") for k, v in views.items())
    return (
        f'<p class="missing-run">Not in {"B" if side == "a" else "A"}.</p><div class="single">'
        f'<div class="col-head {side}">{side.upper()} · {e(labels[side == "b"])}</div>'
        f"{steps}</div>"
    )


def trajectories_html(n: int, ep: EpisodeDiff, labels: tuple[str, str], groups: Any) -> str:
    """Episode ``ep`` (number ``n`` on the page) step by step, by both runs or the one."""
    va, vb = (_views(group.get(ep.env_index)) for group in groups)
    if ep.status in ("only_a", "only_b"):
        return _single(ep, labels, va if ep.status == "only_a" else vb)
    return _grid(n, ep, labels, va, vb)


def _grid(n: int, ep: EpisodeDiff, labels: tuple[str, str], va: Views, vb: Views) -> str:
    d = ep.divergence
    first, part = ((d.channel, d.step), d.part) if d is not None else (None, "")
    out = [
        '<div class="grid">',
        f'<div class="col-head a">A · {e(labels[0])}</div>',
        f'<div class="col-head b">B · {e(labels[1])}</div>',
    ]
    after = False
    for key in _merged_keys(va, vb):
        here = key == first
        ident = f' id="ep-{n}-divergence"' * here
        out.append(f'<div class="step-row{" after" * after}{" divergence" * here}"{ident}>')
        out.append(_step(va.get(key), "a", key, part * here))
        out.append(_step(vb.get(key), "b", key, part * here) + "</div>")
        after = after or here
    return "".join(out) + "</div>"
