"""The core rows of two or more checkouts of this project, measured side by side.

    python bench/ab_replay.py TREE_A TREE_B [...] [--rounds 4] [--envs 100] [--calls 5000]

Each TREE is the root of a checkout (``git worktree add DIR COMMIT`` makes one). Every
round runs each tree once, in turn, in fresh processes with ``PYTHONPATH=TREE`` (this
checkout's bench code, that tree's cassette code), for bench_core's rows:

(a) replay per call: the process records the (a) workload (``--envs`` episodes x 30 steps),
    opens it in replay mode, and times the ``cas.call`` loop of every episode (strict);
    per call = the lower quartile of the episode times / 30.
(c) record overhead per call: the median of (c)'s per-call times over 10 of its episodes
    (each ``cas.call`` in record mode alternating with eval-protocol's per-step log).
(d) load throughput and (f) peak-RSS growth of the open / the file's size: (f)'s child
    opens one ``--calls``-call cassette (recorded once, by this checkout) in replay mode.

The table shows each tree's best and median over the rounds, and the ratio of its median
to the first tree's. Alternating in fresh processes keeps the machine's other work from
favouring one tree.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROWS = {
    "a": "(a) replay per call, µs",
    "c": "(c) record overhead per call, median, µs",
    "d": "(d) open of the {calls:,}-call file, MB/s (higher is better)",
    "f": "(f) open of that file, peak memory / file size",
}


def child(envs: int, passes: int) -> None:
    """Run under one tree: (a) and (c), printed as JSON in seconds."""
    sys.path.insert(0, str(HERE))
    from bench_core import STEPS, Workload, episode_seconds, record, record_costs

    import cassette

    run = Workload(0).run(envs * STEPS)
    times: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "ab.jsonl"
        record(path, run)
        for _ in range(passes):
            cas = cassette.open(path, "replay")
            times += [episode_seconds(cas, env, ep) for env, ep in enumerate(run)]
            assert not cas.unused()
            cas.close()
        costs = record_costs(run[:10], Path(tmp))[0]
    a = statistics.quantiles(times, n=4)[0] / STEPS
    print(json.dumps({"a": a, "c": statistics.median(costs)}))


def _run(tree: Path, *args: str) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run(
        [sys.executable, *args], env=env, check=True, capture_output=True, text=True
    )
    got: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return got


def measure(tree: Path, args: argparse.Namespace, lean: Path) -> dict[str, float]:
    """One round of ``tree``: each row's figure (µs, MB/s, or a ratio)."""
    ac = _run(tree, __file__, "--child", str(args.envs), str(args.passes))
    core = str(HERE / "bench_core.py")
    opened = _run(tree, core, "--child-lean", "lean", str(lean), str(args.calls))
    size = lean.stat().st_size
    return {
        "a": ac["a"] * 1e6,
        "c": ac["c"] * 1e6,
        "d": size / 1e6 / opened["seconds"],
        "f": opened["rss"] / size,
    }


def lean_file(path: Path, calls: int) -> Path:
    """The (d)/(f) cassette, recorded by this checkout's code."""
    sys.path.insert(0, str(HERE))
    from bench_core import LEAN_SEED, Workload, record

    record(path, Workload(LEAN_SEED).run(calls))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("trees", nargs="*", type=Path)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--envs", type=int, default=100)
    parser.add_argument("--passes", type=int, default=3, help="replays of the file a process")
    parser.add_argument("--calls", type=int, default=5_000, help="calls of the (d)/(f) file")
    parser.add_argument("--child", nargs=2, type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    if len(args.trees) < 2:
        parser.error("give two or more checkouts to compare")
    trees = [t.resolve() for t in args.trees]
    samples: dict[Path, list[dict[str, float]]] = {t: [] for t in trees}
    with tempfile.TemporaryDirectory() as tmp:
        lean = lean_file(Path(tmp) / "lean.jsonl", args.calls)
        for r in range(args.rounds):
            for tree in trees if r % 2 == 0 else trees[::-1]:
                samples[tree].append(measure(tree, args, lean))
    print(f"{'row':<58} {'tree':<24} {'best':>8} {'median':>8} {'/ first':>8}   all")
    for key, label in ROWS.items():
        label = label.format(calls=args.calls)
        first = statistics.median(s[key] for s in samples[trees[0]])
        best = max if key == "d" else min  # (MB/s: the most)
        for i, (tree, got) in enumerate(samples.items()):
            values = [s[key] for s in got]
            median = statistics.median(values)
            cells = " ".join(f"{v:.2f}" for v in values)
            print(
                f"{label if i == 0 else '':<58} {tree.name:<24} {best(values):>8.2f} "
                f"{median:>8.2f} {median / first:>8.3f}   {cells}"
            )


if __name__ == "__main__":
    main()
