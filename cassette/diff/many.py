"""Many runs against one: ``cassette diff A B C ...`` diffs each run against the first,
and with ``baseline`` (a second run of A) sets each diff against A's noise floor.

The noise floor: each metric is measured on A vs B and on A vs A2; ``excess`` is
``|A vs B| - |A vs A2|``, and B's change in that metric ``exceeds`` the noise when the
excess is positive."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ..storage.index import Index
from ..types import EnvIndex
from .run import diff_runs
from .types import Json, NoiseFloor, NoiseMetric, RunDiff

__all__ = ["MAX_RUNS", "ManyDiff", "diff_many", "metrics_of", "noise_floor"]

MAX_RUNS = 8
Run = str | os.PathLike[str] | Index


@dataclass
class ManyDiff:
    """Each run diffed against the first; ``noise`` is A vs the baseline run, if given."""

    diffs: list[RunDiff]
    noise: RunDiff | None = None

    @property
    def equivalent(self) -> bool:
        return all(d.equivalent for d in self.diffs)

    def to_dict(self) -> Json:
        return {
            "format": "rollout-cassette/diff-many",
            "version": 1,
            "baseline": self.diffs[0].a.to_dict(),
            "noise_baseline": self.noise.b.label if self.noise is not None else None,
            "equivalent": self.equivalent,
            "diffs": [d.to_dict() for d in self.diffs],
        }


def diff_many(
    runs: Sequence[Run],
    *,
    baseline: Run | None = None,
    labels: Sequence[str] | None = None,
    ignore: Iterable[str] = (),
    env: EnvIndex | None = None,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> ManyDiff:
    """Diff ``runs[1:]`` each against ``runs[0]`` (2 to 8 runs); ``baseline`` is a second
    run of ``runs[0]``'s configuration, whose diff against it is the noise floor.
    ``labels`` name the runs, then the baseline. Raises ValueError for too few or too
    many runs (and as :func:`diff_runs` does)."""
    if not 2 <= len(runs) <= MAX_RUNS:
        raise ValueError(f"diff takes 2 to {MAX_RUNS} runs, got {len(runs)}; drop some")
    ignore = list(ignore)
    names = [_name(r, chr(65 + i)) for i, r in enumerate(runs)]
    names = list(labels) if labels is not None else names
    if baseline is not None and len(names) == len(runs):
        names.append(_name(baseline, "A2"))
    first = runs[0]
    noise = None
    if baseline is not None:
        pair = (names[0], names[-1])
        noise = diff_runs(first, baseline, ignore=ignore, env=env, seed=seed, labels=pair)
    diffs = []
    for i, run in enumerate(runs[1:], 1):
        pair = (names[0], names[i])
        d = diff_runs(first, run, ignore=ignore, env=env, seed=seed, progress=progress, labels=pair)
        if noise is not None:
            d.noise = noise_floor(d, noise)
        diffs.append(d)
    return ManyDiff(diffs, noise)


def _name(run: Run, default: str) -> str:
    return default if isinstance(run, Index) else str(run)


def _pct(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or a == 0:
        return None
    return (b - a) / a * 100


def metrics_of(diff: RunDiff) -> dict[str, tuple[str, float | None]]:
    """The metrics of one diff: name -> (unit, value)."""
    s, c = diff.stats, diff.counts
    both = c["identical"] + c["diverged"]
    out: dict[str, tuple[str, float | None]] = {
        "mean reward delta": ("reward", s.mean_delta if s else None),
        "episodes whose reward changed": (
            "share",
            (s.improved + s.regressed) / s.paired if s and s.paired else None,
        ),
        "episodes regressed": ("share", s.regressed / s.paired if s and s.paired else None),
        "episodes diverged": ("share", c["diverged"] / both if both else None),
        "tokens": ("percent", _pct(diff.a.total_tokens, diff.b.total_tokens)),
        "cost": ("percent", _pct(diff.a.cost, diff.b.cost)),
    }
    for row in s.pass_k if s else []:
        out[f"pass^{row.k} delta"] = ("reward", row.delta)
    return out


def noise_floor(observed: RunDiff, noise: RunDiff) -> NoiseFloor:
    """The noise floor of ``observed`` (A vs B) given ``noise`` (A vs A2)."""
    mo, mn = metrics_of(observed), metrics_of(noise)
    rows = [
        NoiseMetric(name, unit, value, mn.get(name, (unit, None))[1])
        for name, (unit, value) in mo.items()
    ]
    return NoiseFloor(noise.b.label, rows)
