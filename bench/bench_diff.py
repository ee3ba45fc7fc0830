"""Benchmark of ``cassette diff``: diffing two runs against just reading them.

    python bench/bench_diff.py                 # 2,000 episodes x 50 steps = 100k interactions a run
    python bench/bench_diff.py --quick         # 10x fewer episodes (smoke run)
    python bench/bench_diff.py --changed 1     # B differs in every episode, not 1%

Two cassettes are recorded through ``cassette.open(..., "record")``: run A, and run B, a
re-recording of the same behaviour in which every response id, ``created`` time, system
fingerprint and generated tool-call id differs (so no request hash matches after the
first tool call, as between two real runs), and in which the model answers differently
in 1% of the episodes (another tool argument at some step, and a lower reward).
Messages are small (~60-120 bytes), so reading and comparing dominate, not IO.

Measured (best of --repeat runs; wall and CPU time; each ends with ``gc.collect(0)``
inside the timing, so that the collection a paused GC defers is counted):
(a) reading both files: ``load_index`` of A, then of B;
(b) ``diff_runs(A, B)`` from the paths, reading included (which now also computes the
paired statistics, the grouped causes and the aligned tool calls of diverged episodes);
(c) of (b), the statistics alone (``paired_stats``: bootstrap, McNemar/permutation);
(d) what ``cassette diff --format json`` and ``--format markdown`` add: rendering.
Targets: (b) <= 2x (a), and (b) + (d) < 10 s.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import shlex
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

import cassette
from cassette.diff import diff_runs
from cassette.diff.report import render_json, render_markdown
from cassette.diff.stats import paired_stats
from cassette.storage.index import load_index

Json = dict[str, Any]
MODEL = "gpt-4o-mini"
CITIES = ["Paris", "Lyon", "Oslo", "Rome", "Lima", "Kyiv", "Pune", "Cork", "Nice", "Bern"]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "Look a city up.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]


def response(tag: str, n: int, env: int, step: int, steps: int, city: str) -> Json:
    if step == steps - 1:
        message: Json = {"role": "assistant", "content": f"Done with task {env}: {city}."}
    else:
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": f"call_{tag}{n}",
                    "type": "function",
                    "function": {"name": "lookup", "arguments": f'{{"city":"{city}"}}'},
                }
            ],
        }
    return {
        "id": f"chatcmpl-{tag}{n}",
        "object": "chat.completion",
        "created": 1772355600 + n,
        "model": MODEL,
        "system_fingerprint": f"fp_{tag}",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 20 + 30 * step, "completion_tokens": 12, "total_tokens": 0},
    }


def record(path: Path, tag: str, episodes: int, steps: int, changed: set[int]) -> None:
    n = 0
    with cassette.open(path, "record") as cas:
        for env in range(episodes):
            rng = random.Random(env)
            messages: list[Json] = [
                {"role": "system", "content": "Look cities up, one call a step; be brief."},
                {"role": "user", "content": f"Task {env}: look up {steps - 1} cities."},
            ]
            fork = rng.randrange(steps - 1) if env in changed else steps
            for step in range(steps):
                city = rng.choice(CITIES)
                if step >= fork:
                    city = CITIES[(CITIES.index(city) + 1) % len(CITIES)]
                n += 1
                request = {"model": MODEL, "messages": list(messages), "tools": TOOLS}
                resp = cas.call(
                    request,
                    live=lambda n=n, e=env, s=step, c=city: response(tag, n, e, s, steps, c),
                    env_index=env,
                )
                msg = resp["choices"][0]["message"]
                messages.append(msg)
                for call in msg.get("tool_calls") or ():
                    text = f"{city}: {rng.randrange(-5, 35)} C, {rng.choice(['sun', 'rain'])}"
                    messages.append({"role": "tool", "tool_call_id": call["id"], "content": text})
            reward = 0.0 if env in changed else 1.0
            cas.outcome(env, reward=reward, terminated=True)


def best_of(repeat: int, fn: Any) -> tuple[float, float]:
    """Best (wall, cpu) seconds of ``fn()`` and of the young-generation collection that
    follows it (both load_index and diff_runs pause the collector, which then has every
    object they made to look at once; the next allocation would trigger that pass)."""
    walls, cpus = [], []
    for _ in range(repeat):
        gc.collect()
        wall, cpu = time.perf_counter(), time.process_time()
        result = fn()
        gc.collect(0)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
        del result
    return min(walls), min(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--episodes", type=int, default=2000)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="10x fewer episodes")
    parser.add_argument(
        "--changed",
        type=float,
        default=0.01,
        help="share of episodes in which B answers differently (1 = every episode diverges, "
        "and every one gets its tool calls aligned and its cause classified)",
    )
    args = parser.parse_args()
    episodes = args.episodes // 10 if args.quick else args.episodes
    share = max(1, round(episodes * args.changed))
    changed = set(random.Random(7).sample(range(episodes), min(episodes, share)))
    console = Console()
    with tempfile.TemporaryDirectory() as tmp:
        a, b = Path(tmp) / "a.jsonl", Path(tmp) / "b.jsonl"
        started = time.perf_counter()
        record(a, "a", episodes, args.steps, set())
        record(b, "b", episodes, args.steps, changed)
        made = time.perf_counter() - started
        size = (a.stat().st_size + b.stat().st_size) / 1e6
        console.print(
            f"2 runs x {episodes * args.steps:,} interactions ({episodes:,} episodes x "
            f"{args.steps} steps, {size:.0f} MB), recorded in {made:.0f} s",
            soft_wrap=True,
        )

        def read() -> Any:
            return load_index([a]), load_index([b])

        shipped = best_of(args.repeat, read)
        result: list[Any] = []
        diff = best_of(args.repeat, lambda: result.append(diff_runs(a, b)) or result.pop())
        done = diff_runs(a, b)
        counts = done.counts
        stats = best_of(args.repeat, lambda: paired_stats(done.episodes))
        report = best_of(args.repeat, lambda: (render_json(done), render_markdown(done)))
        verdict = done.stats.tests[0] if done.stats and done.stats.tests else None
    table = Table(title=f"cassette diff vs reading both runs (best of {args.repeat})")
    for col in ("measurement", "wall", "cpu", "target", "ok?"):
        table.add_column(col, justify="left" if col == "measurement" else "right")
    table.add_row("read both (load_index x2)", *_s(shipped), "", "")
    table.add_row("diff_runs(A, B), reading included", *_s(diff), "< 10 s", _ok(diff[0] < 10))
    table.add_row("  of which paired statistics", *_s(stats), "", "")
    table.add_row("render json + markdown", *_s(report), "", "")
    total = diff[0] + report[0], diff[1] + report[1]
    table.add_row("cassette diff --format json, in all", *_s(total), "< 10 s", _ok(total[0] < 10))
    ratio = f"{diff[0] / shipped[0]:.2f}x", f"{diff[1] / shipped[1]:.2f}x"
    table.add_row("ratio diff / read", *ratio, "<= 2x", _ok(diff[0] / shipped[0] <= 2))
    table.add_row(
        "episodes diverged / identical",
        f"{counts['diverged']} / {counts['identical']}",
        "",
        f"{len(changed)} / {episodes - len(changed)}",
        _ok(counts["diverged"] == len(changed) and counts["identical"] == episodes - len(changed)),
    )
    console.print(table)
    if verdict is not None:
        console.print(f"{verdict.name} p = {verdict.p_value:.3g} over {done.stats.paired:,} pairs")  # type: ignore[union-attr]
    load = os.getloadavg()[0]
    console.print(f"load average {load:.1f} on {os.cpu_count()} cores while measuring")
    console.print("command: " + shlex.join(["python", "bench/bench_diff.py", *sys.argv[1:]]))


def _s(times: tuple[float, float]) -> tuple[str, str]:
    return f"{times[0]:.2f} s", f"{times[1]:.2f} s"


def _ok(flag: bool) -> str:
    return "yes" if flag else "NO"


if __name__ == "__main__":
    main()
