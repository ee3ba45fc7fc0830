"""Many runs against one, and the noise floor: each metric of A vs B against the same of
A vs A2 (a second run of A), exceeded when ``|A vs B| - |A vs A2|`` is positive."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import field
from string import ascii_uppercase
from typing import Annotated, Any, Literal

from pydantic import Field, computed_field
from pydantic.dataclasses import dataclass

from ..storage.index import Index
from ..types import EnvIndex
from .run import diff_runs
from .types import _CONFIG, NoiseFloor, NoiseMetric, RunDiff, RunSummary, Unit, _Data

__all__ = ["MAX_RUNS", "ManyDiff", "diff_many", "metrics_of", "noise_floor"]

MAX_RUNS = 8
Run = str | os.PathLike[str] | Index


@dataclass(config=_CONFIG)
class ManyDiff(_Data):
    """Each run diffed against the first; ``noise`` is A vs the baseline run, if given."""

    format: Literal["rollout-cassette/diff-many"] = field(
        default="rollout-cassette/diff-many", init=False
    )
    version: Literal[1] = field(default=1, init=False)
    diffs: Annotated[list[RunDiff], Field(min_length=1, max_length=MAX_RUNS - 1)]
    noise: RunDiff | None = Field(default=None, exclude=True)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def baseline(self) -> RunSummary:
        return self.diffs[0].a

    @computed_field  # type: ignore[prop-decorator]
    @property
    def noise_baseline(self) -> str | None:
        return self.noise.b.label if self.noise is not None else None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def equivalent(self) -> bool:
        return all(d.equivalent for d in self.diffs)


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
    names = _names(runs, baseline, labels)
    kw: Any = {"ignore": list(ignore), "env": env, "seed": seed}
    noise = None
    if baseline is not None:
        noise = diff_runs(runs[0], baseline, labels=(names[0], names[-1]), **kw)
    diffs = []
    for i, run in enumerate(runs[1:], 1):
        d = diff_runs(runs[0], run, progress=progress, labels=(names[0], names[i]), **kw)
        d.noise = noise_floor(d, noise) if noise is not None else None
        diffs.append(d)
    return ManyDiff(diffs=diffs, noise=noise)


def _names(runs: Sequence[Run], baseline: Run | None, labels: Sequence[str] | None) -> list[str]:
    """``labels``, then each other run's path (a letter for an index, A2 the baseline)."""
    given = [*runs, baseline] if baseline is not None else list(runs)
    letters = [*ascii_uppercase[: len(runs)], "A2"]
    own = [n if isinstance(r, Index) else str(r) for r, n in zip(given, letters, strict=False)]
    named = list(labels or ())
    return named + own[len(named) :]


def _pct(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or a == 0 else (b - a) / a * 100


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def metrics_of(diff: RunDiff) -> dict[str, tuple[Unit, float | None]]:
    """The metrics of one diff: name -> (unit, value)."""
    s, c = diff.stats, diff.counts
    out: dict[str, tuple[Unit, float | None]] = {
        "mean reward delta": ("reward", s.mean_delta),
        "episodes whose reward changed": ("share", _share(s.improved + s.regressed, s.paired)),
        "episodes regressed": ("share", _share(s.regressed, s.paired)),
        "episodes diverged": ("share", _share(c["diverged"], c["identical"] + c["diverged"])),
        "tokens": ("percent", _pct(diff.a.total_tokens, diff.b.total_tokens)),
        "cost": ("percent", _pct(diff.a.cost, diff.b.cost)),
    }
    out |= {f"pass^{row.k} delta": ("reward", row.delta) for row in s.pass_k}
    return out


def noise_floor(observed: RunDiff, noise: RunDiff) -> NoiseFloor:
    """The noise floor of ``observed`` (A vs B) given ``noise`` (A vs A2)."""
    mn = metrics_of(noise)
    rows = [
        NoiseMetric(name, unit, value, mn.get(name, (unit, None))[1])
        for name, (unit, value) in metrics_of(observed).items()
    ]
    return NoiseFloor(noise.b.label, rows)
