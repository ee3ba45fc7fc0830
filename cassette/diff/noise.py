"""The noise floor: how much of A-vs-B exceeds A-vs-A2, where A2 is a second run of A's
configuration (``cassette diff A B --baseline A2``).

Each metric is measured on both diffs; ``excess`` is ``|A vs B| - |A vs A2|``, and B's
change in that metric ``exceeds`` the noise when the excess is positive.
"""

from __future__ import annotations

from .types import NoiseFloor, NoiseMetric, RunDiff

__all__ = ["NoiseFloor", "NoiseMetric", "metrics_of", "noise_floor"]


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
