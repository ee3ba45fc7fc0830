"""The secret prefilter ``Redactor.hits`` against an older version of it, in the same run.

    python bench/bench_redact_speed.py               # against the version at --old (a rev)
    python bench/bench_redact_speed.py --old HEAD~3  # any rev that has cassette/redact/

The lines are the ones ``hits`` sees when the agent loop of ``bench_core.py`` is recorded
(interaction lines of ~1.6 KB, none of which holds a secret). The old ``cassette/redact``
modules are read with ``git show`` into a temporary package and imported from there.
Prints one table: µs per line of this version and of the old one (the fastest of
several repeats), and their ratio; both must agree on every line. A second table times
the record path of ``bench_core.py`` (c) with each version's whole ``Redactor`` (gates,
walk, streams) handed to ``cassette.open``, the two alternating episode by episode.
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

import bench_core as core
from _common import command_line

import cassette
from cassette.redact import Redactor

ROOT = Path(__file__).resolve().parent.parent
MODULES = ("__init__", "context", "derive", "gates", "patterns", "redactor", "streams")  # any rev's


def old_redactor(rev: str, into: Path) -> Any:
    """``Redactor()`` of the cassette/redact modules at ``rev``, as package ``old_redact``."""
    pkg = into / "old_redact"
    pkg.mkdir()
    for name in MODULES:
        shown = subprocess.run(
            ["git", "show", f"{rev}:cassette/redact/{name}.py"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        source = shown.stdout if shown.returncode == 0 else ""
        (pkg / f"{name}.py").write_text(source.replace("from ..", "from cassette."))
    sys.path.insert(0, str(into))
    cls = importlib.import_module("old_redact.redactor").Redactor
    if not hasattr(cls, "described"):  # (what cassette.open asks of a Redactor now)
        cls.described = lambda self: {}
    return cls()


def bench_lines(interactions: int) -> list[bytes]:
    """The bytes ``hits`` is given while the bench's agent loop is recorded."""
    seen: list[bytes] = []
    real = Redactor.hits

    def spy(self: Redactor, raw: bytes) -> bool:
        seen.append(raw)
        return real(self, raw)

    Redactor.hits = spy  # type: ignore[method-assign]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            core.record(Path(tmp) / "a.jsonl", core.Workload().run(interactions))
    finally:
        Redactor.hits = real  # type: ignore[method-assign]
    return seen


def per_line(
    versions: list[Callable[[bytes], bool]], lines: list[bytes], repeat: int
) -> list[float]:
    """µs per line of each version, the fastest of ``repeat`` passes (taken in turn)."""
    best = [float("inf")] * len(versions)
    for _ in range(repeat):
        for i, hits in enumerate(versions):
            took = timeit.timeit(lambda hits=hits: [hits(x) for x in lines], number=1)
            best[i] = min(best[i], took / len(lines) * 1e6)
    return best


def record_overhead(
    run: list[core.Episode], redactors: dict[str, Any], rounds: int
) -> dict[str, list[float]]:
    """Per-call record cost (µs) of (c)'s loop, each version's Redactor recording its own
    cassette, the versions taken in turn episode by episode (each first every other
    episode); the fastest of ``rounds``."""
    times: dict[str, list[list[float]]] = {name: [] for name in redactors}
    clock = time.perf_counter
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(rounds):
            cases = {}
            for name, redactor in redactors.items():
                times[name].append([])
                path = Path(tmp) / f"{name}-{i}.jsonl"
                cases[name] = cassette.open(path, "record", redact=redactor)
            for env, ep in enumerate(run):
                turn = list(cases.items())  # who goes first alternates (the second is faster)
                for name, cas in turn if env % 2 else turn[::-1]:
                    call = cas.call
                    for request, response in ep:
                        live = core._const(response)
                        t0 = clock()
                        call(request, live=live, env_index=env)
                        times[name][-1].append(clock() - t0)
            for cas in cases.values():
                cas.close()
    return {name: [t * 1e6 for t in core._fastest(trials)] for name, trials in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", default="a06647a", help="git rev of the old version")
    parser.add_argument("--quick", action="store_true", help="a smaller run (smoke test)")
    args = parser.parse_args()
    print(f"$ {command_line()}")
    lines = bench_lines(150 if args.quick else 900)
    new = Redactor()
    with tempfile.TemporaryDirectory() as tmp:
        old = old_redactor(args.old, Path(tmp))
        agree = sum(new.hits(x) == old.hits(x) for x in lines)
        print(f"the two gates agree on {agree} of {len(lines)} lines")
        repeat = 5 if args.quick else 30
        t_new, t_old = per_line([new.hits, old.hits], lines, repeat)
        size = statistics.median(len(x) for x in lines)
        print(f"\nhits() on {len(lines)} bench lines (median {size:.0f} bytes), µs per line")
        print(f"{'this version':>14} {'old (' + args.old + ')':>18} {'ratio':>7}")
        print(f"{t_new:14.2f} {t_old:18.2f} {t_new / t_old:6.2f}x")

        run = core.Workload().run(300 if args.quick else 1500)
        got = record_overhead(run, {"new": new, "old": old}, 2 if args.quick else 3)
    med = {k: statistics.median(v) for k, v in got.items()}
    p90 = {k: core._p90(v) for k, v in got.items()}
    print(f"\n(c)'s record loop, {len(got['new'])} calls, µs per call (fastest of the rounds)")
    print(f"{'':8} {'this version':>13} {'old':>8} {'ratio':>7}")
    for label, d in (("median", med), ("p90", p90)):
        print(f"{label:8} {d['new']:13.1f} {d['old']:8.1f} {d['new'] / d['old']:6.2f}x")


if __name__ == "__main__":
    main()
