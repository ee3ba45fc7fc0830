"""The numbers of a cassette as data (``cassette stats``): episodes, steps per channel,
models, tokens and cost, latency percentiles, tool calls asked for, outcome rewards."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterator
from typing import Any

import click

from ..dataset.inspect import cost_of, tool_calls, usage_of
from ..errors import CassetteError
from ..format.runid import set_run_id
from ..storage.index import Index
from ..types import Json
from .console import Console, existing, format_option, load, plural

__all__ = ["compute_stats", "percentile", "stats", "stats_rows"]


def _json_safe(value: Any) -> Any:
    """``value`` with ints beyond 64 bits as floats (sums of counts a damaged or edited
    file holds): JSON output writes 64-bit ints only."""
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


def compute_stats(index: Index) -> Json:
    """The numbers of ``cassette stats`` as a JSON-able dict (stable keys, see the tests)."""
    channels: dict[str, Json] = defaultdict(lambda: {"steps": 0, "episodes": set(), "errors": 0})
    models: Counter[str] = Counter()
    tools: Counter[str] = Counter()
    tokens: Counter[str] = Counter()
    latencies: dict[str, list[float]] = defaultdict(list)
    cost, costed = 0.0, 0
    for entry in index.entries.values():
        ch = channels[entry.channel]
        ch["steps"] += 1
        ch["episodes"].add((type(entry.env_index).__name__, entry.env_index))
        ch["errors"] += entry.error is not None
        model = entry.meta.get("model") or entry.param("model")
        if isinstance(model, str):
            models[model] += 1
        tokens.update(usage_of(entry))
        tools.update(name for name, _ in tool_calls(entry.response))
        spent = cost_of(entry)
        if spent is not None:
            cost, costed = cost + spent, costed + 1
        latency = entry.meta.get("latency_ms")
        if isinstance(latency, (int, float)) and not isinstance(latency, bool):
            latencies[entry.channel].append(float(latency))
    rewards = [
        float(o["reward"])
        for o in index.outcomes.values()
        if isinstance(o.get("reward"), (int, float)) and not isinstance(o.get("reward"), bool)
    ]
    calls = sum(ch["steps"] for ch in channels.values())
    return {
        "episodes": len(index.episodes()),
        "interactions": calls,
        "errors": sum(ch["errors"] for ch in channels.values()),
        "eval_protocol": index.eval_protocol,
        "channels": {
            name: {
                "steps": ch["steps"],
                "episodes": len(ch["episodes"]),
                "errors": ch["errors"],
                "latency_ms": _latency(latencies[name]),
            }
            for name, ch in sorted(channels.items())
        },
        "models": dict(models.most_common()),
        "tokens": {k: tokens[k] for k in ("input", "output", "total", "cached", "reasoning")},
        "cost": {"total": round(cost, 6) if costed else None, "calls_with_cost": costed},
        "latency_ms": _latency([v for vs in latencies.values() for v in vs]),
        "tool_calls": dict(tools.most_common()),
        "outcomes": {
            "count": len(index.outcomes),
            "terminated": sum(1 for o in index.outcomes.values() if o.get("terminated")),
            "reward": {
                "count": len(rewards),
                "mean": sum(rewards) / len(rewards) if rewards else None,
                "min": min(rewards) if rewards else None,
                "max": max(rewards) if rewards else None,
            },
        },
    }


def stats_rows(data: Json) -> Iterator[tuple[str, str]]:
    """(label, text) rows of :func:`compute_stats`'s numbers, as ``cassette stats`` prints."""

    def num(x: float | None) -> str:
        return "-" if x is None else f"{x:,.6g}" if isinstance(x, float) else f"{x:,}"

    channels = ", ".join(f"{name} {ch['steps']}" for name, ch in data["channels"].items())
    if "run_id" in data:
        yield "run id", data["run_id"] or "- (no header)"
    yield "episodes", f"{data['episodes']}"
    errors = plural(data["errors"], "recorded error")
    yield "interactions", f"{data['interactions']} ({channels or 'none'}), {errors}"
    yield "models", ", ".join(f"{m} {n}" for m, n in data["models"].items()) or "-"
    t = data["tokens"]
    yield "tokens", " ".join(f"{k} {num(t[k])}" for k in ("input", "output", "total", "cached"))
    cost = data["cost"]
    if cost["total"] is not None:
        yield (
            "cost",
            f"${cost['total']:.4f} (recorded on {plural(cost['calls_with_cost'], 'call')})",
        )
    else:
        yield "cost", "- (no call recorded a cost)"
    for name, lat in [("all", data["latency_ms"])] + [
        (ch, d["latency_ms"]) for ch, d in data["channels"].items()
    ]:
        qs = "  ".join(f"{q} {num(lat[q])}" for q in ("p50", "p90", "p99", "max"))
        yield f"latency ms {name}", f"{qs}  (n={lat['count']})"
    yield "tool calls", ", ".join(f"{n} {c}" for n, c in data["tool_calls"].items()) or "-"
    out, reward = data["outcomes"], data["outcomes"]["reward"]
    rewards = "  ".join(f"{k} {num(reward[k])}" for k in ("mean", "min", "max"))
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
    try:
        index = load(console, existing(console, path))
        run_id = set_run_id(index.headers) if index.headers else None
        data = {"path": path, "run_id": run_id, **compute_stats(index)}
    except CassetteError as exc:
        console.fail(str(exc))
    if as_json or fmt == "json":
        console.json(_json_safe(data))
        return
    console.print(path, "bold")
    rows = list(stats_rows(data))
    width = max([16] + [len(label) + 2 for label, _ in rows])  # a gap after the longest label
    for label, value in rows:
        console.line((f"  {label:<{width}}", "bold"), value)
