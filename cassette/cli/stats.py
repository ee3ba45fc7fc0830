"""``cassette stats``: the numbers of a cassette (steps, models, tokens, cost, latency, ...)."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterator
from typing import Any, TypeGuard

import click

from ..dataset.inspect import cost_of, tool_calls, usage_of
from ..format.runid import set_run_id
from ..storage.index import Entry, Index
from ..types import EnvIndex, Json
from .console import Console, existing, format_option, load, plural

__all__ = ["compute_stats", "percentile", "stats", "stats_rows"]


def _json_safe(value: Any) -> Any:
    """``value`` with ints beyond 64 bits (a damaged file's sums) as floats, for orjson."""
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_safe(v) for v in value]
    if type(value) is int and not -(2**63) <= value < 2**64:
        return float(value)
    return value


def percentile(values: list[float], q: float) -> float | None:
    """The q-th percentile (0-100) of sorted ``values``, linearly interpolated."""
    if not values:
        return None
    pos = (len(values) - 1) * q / 100
    lo, hi = math.floor(pos), math.ceil(pos)
    return values[lo] + (values[hi] - values[lo]) * (pos - lo)


def _latency(values: list[float]) -> Json:
    values = sorted(values)
    out: Json = {"count": len(values)}
    for q in (50, 90, 99):
        value = percentile(values, q)
        out[f"p{q}"] = None if value is None else round(value, 3)
    out["max"] = values[-1] if values else None
    return out


def _number(value: Any) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class _Totals:
    def __init__(self) -> None:
        self.steps: Counter[str] = Counter()
        self.errors: Counter[str] = Counter()
        self.episodes: dict[str, set[tuple[str, EnvIndex]]] = defaultdict(set)
        self.latencies: dict[str, list[float]] = defaultdict(list)
        self.models: Counter[str] = Counter()
        self.tools: Counter[str] = Counter()
        self.tokens: Counter[str] = Counter()
        self.cost, self.costed = 0.0, 0

    def add(self, entry: Entry) -> None:
        channel = entry.channel
        self.steps[channel] += 1
        self.episodes[channel].add((type(entry.env_index).__name__, entry.env_index))
        self.errors[channel] += entry.error is not None
        model = entry.meta.get("model") or entry.param("model")
        if isinstance(model, str):
            self.models[model] += 1
        self.tokens.update(usage_of(entry))
        self.tools.update(name for name, _ in tool_calls(entry.response))
        spent = cost_of(entry)
        if spent is not None:
            self.cost, self.costed = self.cost + spent, self.costed + 1
        latency = entry.meta.get("latency_ms")
        if _number(latency):
            self.latencies[channel].append(float(latency))

    def channel(self, name: str) -> Json:
        latency = _latency(self.latencies[name])
        return {"steps": self.steps[name], "episodes": len(self.episodes[name]),
                "errors": self.errors[name], "latency_ms": latency}  # fmt: skip


def _outcomes(index: Index) -> Json:
    rewards = [float(o["reward"]) for o in index.outcomes.values() if _number(o.get("reward"))]
    mean = sum(rewards) / len(rewards) if rewards else None
    reward = {"count": len(rewards), "mean": mean, "min": min(rewards, default=None),
              "max": max(rewards, default=None)}  # fmt: skip
    terminated = sum(1 for o in index.outcomes.values() if o.get("terminated"))
    return {"count": len(index.outcomes), "terminated": terminated, "reward": reward}


def compute_stats(index: Index) -> Json:
    """The numbers of ``cassette stats`` as a JSON-able dict (stable keys, see the tests)."""
    t = _Totals()
    for entry in index.entries.values():
        t.add(entry)
    return {
        "episodes": len(index.episodes()),
        "interactions": sum(t.steps.values()),
        "errors": sum(t.errors.values()),
        "eval_protocol": index.eval_protocol,
        "channels": {name: t.channel(name) for name in sorted(t.steps)},
        "models": dict(t.models.most_common()),
        "tokens": {k: t.tokens[k] for k in ("input", "output", "total", "cached", "reasoning")},
        "cost": {"total": round(t.cost, 6) if t.costed else None, "calls_with_cost": t.costed},
        "latency_ms": _latency([v for vs in t.latencies.values() for v in vs]),
        "tool_calls": dict(t.tools.most_common()),
        "outcomes": _outcomes(index),
    }


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:,.6g}" if isinstance(x, float) else f"{x:,}"


def _counts(counts: Json) -> str:
    return ", ".join(f"{name} {n}" for name, n in counts.items()) or "-"


def _cost(cost: Json) -> str:
    if cost["total"] is None:
        return "- (no call recorded a cost)"
    return f"${cost['total']:.4f} (recorded on {plural(cost['calls_with_cost'], 'call')})"


def _latency_rows(data: Json) -> Iterator[tuple[str, str]]:
    latencies = [("all", data["latency_ms"])]
    latencies += [(ch, d["latency_ms"]) for ch, d in data["channels"].items()]
    for name, lat in latencies:
        qs = "  ".join(f"{q} {_num(lat[q])}" for q in ("p50", "p90", "p99", "max"))
        yield f"latency ms {name}", f"{qs}  (n={lat['count']})"


def stats_rows(data: Json) -> Iterator[tuple[str, str]]:
    """(label, text) rows of :func:`compute_stats`'s numbers, as ``cassette stats`` prints."""
    yield "run id", data["run_id"] or "- (no header)"
    yield "episodes", f"{data['episodes']}"
    channels = ", ".join(f"{name} {ch['steps']}" for name, ch in data["channels"].items())
    errors = plural(data["errors"], "recorded error")
    yield "interactions", f"{data['interactions']} ({channels or 'none'}), {errors}"
    yield "models", _counts(data["models"])
    t = data["tokens"]
    yield "tokens", " ".join(f"{k} {_num(t[k])}" for k in ("input", "output", "total", "cached"))
    yield "cost", _cost(data["cost"])
    yield from _latency_rows(data)
    yield "tool calls", _counts(data["tool_calls"])
    out, reward = data["outcomes"], data["outcomes"]["reward"]
    rewards = "  ".join(f"{k} {_num(reward[k])}" for k in ("mean", "min", "max"))
    yield "outcomes", f"{out['count']} ({out['terminated']} terminated)  reward {rewards}"


@click.command()
@click.argument("path")
@format_option
@click.option("--json", "as_json", is_flag=True, hidden=True, help="Same as --format json.")
def stats(path: str, fmt: str, as_json: bool) -> None:
    """Count episodes, steps, tokens, cost, latency, rewards.

    Episodes, steps per channel, models, token and cost totals, latency percentiles (from
    meta.latency_ms), the tool calls that responses asked for, and outcome rewards.

    \b
    Examples:
      cassette stats runs/a.jsonl
      cassette stats runs/shards/ --format json | jq .outcomes.reward.mean
    """
    console = Console()
    index = load(console, existing(console, path))
    run_id = set_run_id(index.headers) if index.headers else None
    data = {"path": path, "run_id": run_id, **compute_stats(index)}
    if as_json or fmt == "json":
        console.json(_json_safe(data))
    else:
        _print_rows(console, path, data)


def _print_rows(console: Console, path: str, data: Json) -> None:
    console.print(path, "bold")
    rows = list(stats_rows(data))
    width = max([16] + [len(label) + 2 for label, _ in rows])  # a gap after the longest label
    for label, value in rows:
        console.line((f"  {label:<{width}}", "bold"), value)
