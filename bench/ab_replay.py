"""Replay per call of two or more checkouts of this project, measured side by side.

    python bench/ab_replay.py TREE_A TREE_B [...] [--rounds 4] [--envs 100]

Each TREE is the root of a checkout (``git worktree add DIR COMMIT`` makes one). Every
round runs each tree once, in turn, in a fresh process with ``PYTHONPATH=TREE``: the
process records bench_core's (a) workload (``--envs`` episodes x 30 steps) with that
tree's code, opens it in replay mode, and times the ``cas.call`` loop of every episode
(strict matching); per call = the lower quartile of the episode times / 30. The table
shows each tree's best and median over the rounds, and its ratio to the first tree.
Alternating in fresh processes keeps the machine's other work from favouring one tree.
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


def child(envs: int, passes: int) -> None:
    """Run under one tree: record, replay ``passes`` times, print the per-call figure."""
    sys.path.insert(0, str(HERE))
    from bench_core import STEPS, Workload, episode_seconds, record

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
    print(json.dumps({"per_call": statistics.quantiles(times, n=4)[0] / STEPS}))


def measure(tree: Path, envs: int, passes: int) -> float:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run(
        [sys.executable, __file__, "--child", str(envs), str(passes)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    result: float = json.loads(out.stdout.strip().splitlines()[-1])["per_call"]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("trees", nargs="*", type=Path)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--envs", type=int, default=100)
    parser.add_argument("--passes", type=int, default=3, help="replays of the file a process")
    parser.add_argument("--child", nargs=2, type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    if len(args.trees) < 2:
        parser.error("give two or more checkouts to compare")
    samples: dict[Path, list[float]] = {t: [] for t in args.trees}
    for r in range(args.rounds):
        order = args.trees if r % 2 == 0 else args.trees[::-1]
        for tree in order:
            samples[tree].append(measure(tree, args.envs, args.passes))
    first = min(samples[args.trees[0]])
    print(f"{'tree':<40} {'best µs':>8} {'median µs':>10} {'best/first':>10}   all µs")
    for tree, got in samples.items():
        cells = " ".join(f"{s * 1e6:.1f}" for s in got)
        print(
            f"{tree.name:<40} {min(got) * 1e6:>8.2f} {statistics.median(got) * 1e6:>10.2f} "
            f"{min(got) / first:>10.3f}   {cells}"
        )


if __name__ == "__main__":
    main()
