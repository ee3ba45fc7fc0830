"""What ``cassette view`` shows of a run, as plain data: a row per episode for the table
(:class:`EpisodeRow` fields) and, per episode, its calls in order with each message stored
once (a request keeps only the messages that the episode's previous request and answer on
that channel did not already hold).

Everything here is data taken from a cassette: the page shows it as text, never as HTML.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from ..dataset.inspect import response_message, tool_calls, usage_totals
from ..storage.index import Entry, Index
from ..types import EnvIndex, Json

__all__ = ["episode_calls", "run_summary"]

FORK_CHANNEL = "fork"


def _messages(request: Json) -> list[Any]:
    """The conversation a request carries: system/instructions first, then its messages
    (chat, Anthropic) or input (Responses)."""
    out: list[Any] = []
    for key in ("system", "instructions"):
        if request.get(key):
            out.append({"role": "system", "content": request[key]})
    messages = request.get("messages", request.get("input"))
    if isinstance(messages, str):
        return [*out, {"role": "user", "content": messages}]
    if isinstance(messages, list):
        out.extend(messages)
    return out


def _settings(request: Json) -> Json:
    """What a request says besides its conversation (model, tools, temperature...)."""
    skip = {"messages", "input", "system", "instructions"}
    return {k: v for k, v in request.items() if k not in skip}


class _Channel:
    """What the previous call of one (episode, channel) showed: its conversation and answer."""

    __slots__ = ("answer", "seen", "settings")

    def __init__(self) -> None:
        self.seen: list[Any] = []
        self.answer: Any = None
        self.settings: Json = {}

    def new_part(self, request: Json) -> tuple[list[Any], Json | None]:
        """(the messages not shown before, the settings when they changed)."""
        messages = _messages(request)
        n = len(self.seen)
        start = 0
        if n and messages[:n] == self.seen:
            start = n
            if start < len(messages) and _same_message(messages[start], self.answer):
                start += 1
        self.seen = messages
        settings = _settings(request)
        changed = settings if settings != self.settings else None
        self.settings = settings
        return messages[start:], changed


def _same_message(message: Any, answer: Any) -> bool:
    """Whether ``message`` is the previous answer coming back in the next request."""
    if not isinstance(message, dict) or not isinstance(answer, dict):
        return False
    keys = ("content", "tool_calls")
    return all(message.get(k) == answer.get(k) for k in keys if k in message or k in answer)


def _call(entry: Entry, request: Json, part: _Channel) -> Json:
    """One call of an episode, as the page shows it."""
    response = entry.response
    call: Json = {"ch": entry.channel, "step": entry.step}
    if _messages(request):
        call["new"], settings = part.new_part(request)
        if settings is not None:
            call["settings"] = settings
    else:  # a tool call, a model list, an embedding: the request itself
        call["req"] = request
    message = response_message(response)
    part.answer = message
    prompt, completion, total, cost = usage_totals(entry)
    if message is not None:
        call["answer"] = message
    elif response is not None:
        call["response"] = response
    if isinstance(response, dict) and isinstance(response.get("chunks"), list):
        call["chunks"] = response["chunks"]
    if entry.error is not None:
        call["error"] = entry.error
    meta = entry.meta
    call["ms"] = meta.get("latency_ms")
    call["tokens"] = [prompt, completion, total or prompt + completion]
    if cost is not None:
        call["cost"] = cost
    if meta.get("incomplete"):
        call["cut"] = True
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
    """The models an episode's requests named."""
    named = (c["settings"].get("model") for c in calls if isinstance(c.get("settings"), dict))
    return sorted({str(m) for m in named if m is not None})


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) else 0.0


def _totals(calls: list[Json]) -> Json:
    """An episode's steps, channels, errors, tokens, latency, tool calls and cost."""
    answers = [c["answer"] for c in calls if "answer" in c]
    totals: Json = {
        "steps": sum(c["ch"] != FORK_CHANNEL for c in calls),
        "channels": sorted({c["ch"] for c in calls}),
        "errors": sum("error" in c for c in calls),
        "tokens": sum(c["tokens"][2] for c in calls),
        "ms": sum(_number(c.get("ms")) for c in calls),
        "tools": sum(len(tool_calls({"message": a})) for a in answers),
    }
    costs = [c["cost"] for c in calls if "cost" in c]
    if costs:
        totals["cost"] = sum(costs)
    return totals


def _outcome(outcome: Json | None) -> Json:
    """What the table shows of an episode's outcome."""
    if outcome is None:
        return {}
    shown = {"reward": outcome.get("reward"), "terminated": outcome.get("terminated")}
    return shown | ({"info": outcome["info"]} if outcome.get("info") else {})


def _row(env: EnvIndex, calls: list[Json], outcome: Json | None) -> Json:
    """The table row of one episode."""
    row: Json = {"key": env, **_totals(calls), "models": _models(calls), **_outcome(outcome)}
    fork = next((c.get("response") for c in calls if c["ch"] == FORK_CHANNEL), None)
    if isinstance(fork, dict):
        row["fork"] = fork
    return row


def run_summary(index: Index, name: str) -> tuple[Json, list[list[Json]]]:
    """(the run: name, header meta, a row per episode; each episode's calls)."""
    rows, details = [], []
    for env, calls in episode_calls(index):
        rows.append(_row(env, calls, index.outcomes.get(env)))
        details.append(calls)
    header = index.headers[0] if index.headers else {}
    meta = header.get("meta") if isinstance(header, dict) else None
    run: Json = {"name": name, "meta": meta or {}, "episodes": rows}
    run["created_at"] = header.get("created_at") if isinstance(header, dict) else None
    return run, details
