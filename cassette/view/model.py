"""What ``cassette view`` shows of a run, as data: a row per episode and its calls, each request
keeping only the messages its channel's previous request and answer did not hold."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from ..dataset.inspect import new_start, response_message, tool_calls, usage_totals
from ..replay.fork import FORK_CHANNEL
from ..storage.index import Entry, Index
from ..types import EnvIndex, Json

__all__ = ["episode_calls", "run_summary"]

_CONVERSATION = ("messages", "input", "system", "instructions")


def _messages(request: Json) -> list[Any]:
    """The conversation a request carries: system/instructions, then its messages or input."""
    out = [{"role": "system", "content": request[k]} for k in _CONVERSATION[2:] if request.get(k)]
    messages = request.get("messages", request.get("input"))
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    return out + (messages if isinstance(messages, list) else [])


class _Channel:
    """What the previous call of one (episode, channel) showed: its conversation and answer."""

    __slots__ = ("answer", "seen", "settings")

    def __init__(self) -> None:
        self.seen: list[Any] = []
        self.answer: Any = None
        self.settings: Json = {}

    def new_part(self, messages: list[Any], call: Json, request: Json) -> None:
        """Put in ``call`` the messages not shown before, and the settings if they changed."""
        start = new_start(messages, self.seen, self.answer)
        self.seen, call["new"] = messages, messages[start:]
        settings = {k: v for k, v in request.items() if k not in _CONVERSATION}
        if settings != self.settings:
            call["settings"] = self.settings = settings


def _response(call: Json, entry: Entry) -> Json | None:
    """Put in ``call`` the answer (or the raw response), chunks and error of ``entry``."""
    response, message = entry.response, response_message(entry.response)
    if message is not None:
        call["answer"] = message
    elif response is not None:
        call["response"] = response
    if isinstance(response, dict) and isinstance(response.get("chunks"), list):
        call["chunks"] = response["chunks"]
    if entry.error is not None:
        call["error"] = entry.error
    return message


def _call(entry: Entry, request: Json, part: _Channel) -> Json:
    call: Json = {"ch": entry.channel, "step": entry.step}
    messages = _messages(request)
    if messages:
        part.new_part(messages, call, request)
    else:  # a tool call, a model list, an embedding: the request itself
        call["req"] = request
    part.answer = _response(call, entry)
    prompt, completion, total, cost = usage_totals(entry)
    call["ms"] = entry.meta.get("latency_ms")
    call["tokens"] = [prompt, completion, total or prompt + completion]
    call |= {"cost": cost} if cost is not None else {}
    call |= {"cut": True} if entry.meta.get("incomplete") else {}
    return call


def episode_calls(index: Index) -> Iterator[tuple[EnvIndex, list[Json]]]:
    """Each episode's calls in recorded order, messages stored once per channel."""
    calls: dict[EnvIndex, list[Json]] = defaultdict(list)
    parts: dict[tuple[EnvIndex, str], _Channel] = defaultdict(_Channel)
    for entry, request in index.iter_full():
        env = entry.env_index
        calls[env].append(_call(entry, request, parts[env, entry.channel]))
    for env in index.episodes():
        yield env, calls.get(env, [])


def _models(calls: list[Json]) -> list[str]:
    named = (c["settings"].get("model") for c in calls if isinstance(c.get("settings"), dict))
    return sorted({str(m) for m in named if m is not None})


def _ms(call: Json) -> float:
    return float(call["ms"]) if isinstance(call.get("ms"), (int, float)) else 0.0


def _tools(call: Json) -> int:
    return len(tool_calls({"message": call["answer"]})) if "answer" in call else 0


def _totals(calls: list[Json]) -> Json:
    """An episode's steps, channels, errors, tokens, latency, tool calls, cost and models."""
    costs = [c["cost"] for c in calls if "cost" in c]
    return {
        "steps": sum(c["ch"] != FORK_CHANNEL for c in calls),
        "channels": sorted({c["ch"] for c in calls}),
        "errors": sum("error" in c for c in calls),
        "tokens": sum(c["tokens"][2] for c in calls),
        "ms": sum(map(_ms, calls)),
        "tools": sum(map(_tools, calls)),
        **({"cost": sum(costs)} if costs else {}),
        "models": _models(calls),
    }


def _row(env: EnvIndex, calls: list[Json], outcome: Json | None) -> Json:
    row: Json = {"key": env, **_totals(calls)}
    if outcome is not None:
        row |= {"reward": outcome.get("reward"), "terminated": outcome.get("terminated")}
        row |= {"info": outcome["info"]} if outcome.get("info") else {}
    fork = next((c.get("response") for c in calls if c["ch"] == FORK_CHANNEL), None)
    return row | ({"fork": fork} if isinstance(fork, dict) else {})


def run_summary(index: Index, name: str) -> tuple[Json, list[list[Json]]]:
    """(the run: name, header meta, a row per episode; each episode's calls)."""
    rows, details = [], []
    for env, calls in episode_calls(index):
        rows.append(_row(env, calls, index.outcomes.get(env)))
        details.append(calls)
    header = index.headers[0] if index.headers and isinstance(index.headers[0], dict) else {}
    run = {"name": name, "meta": header.get("meta") or {}, "episodes": rows}
    return run | {"created_at": header.get("created_at")}, details
