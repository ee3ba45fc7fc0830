"""Paired outcome statistics of two runs (is B's change in reward more than noise?) and
tau2's pass^k; pure Python (numpy would not pay for its import), checked against scipy."""

from __future__ import annotations

import math
import random
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from fractions import Fraction
from itertools import groupby
from typing import Literal, TypeGuard

from .types import BOOTSTRAP_RESAMPLES, SEED, EpisodeDiff, PairedStats, PassK, Significance

__all__ = [
    "PairedStats",
    "PassK",
    "Significance",
    "bootstrap_ci",
    "is_success",
    "mcnemar_exact",
    "paired_stats",
    "pass_hat_k",
    "pass_k_table",
    "permutation_test",
    "task_of",
    "wilcoxon_signed_rank",
]

PERMUTATION_RESAMPLES = 10000
EXACT_PERMUTATION_MAX = 16  # 2**16 sign assignments
EXACT_WILCOXON_MAX = 50  # as scipy's method="auto"
_TRIAL = re.compile(r"^(?P<task>.+)/trial-(?P<trial>\d+)$")


def is_success(reward: float) -> bool:
    """tau2's rule: a reward within 1e-6 of 1."""
    return (1 - 1e-6) <= reward <= (1 + 1e-6)


def task_of(env_index: object) -> str | None:
    """The task of a multi-trial key ``"<domain>/<task>/trial-<n>"``, else None."""
    if not isinstance(env_index, str):
        return None
    m = _TRIAL.match(env_index)
    return m.group("task") if m else None


def mcnemar_exact(improved: int, regressed: int) -> float:
    """Two-sided exact McNemar p-value (``scipy.stats.binomtest(min(b, c), b + c).pvalue``)."""
    n = improved + regressed
    if n == 0:
        return 1.0
    low = min(improved, regressed)
    tail = Fraction(sum(math.comb(n, i) for i in range(low + 1)), 2**n)
    return float(min(Fraction(1), 2 * tail))


def _byte_tables(values: Sequence[float]) -> list[list[float]]:
    """For each group of 8 values, the sum of the values each byte's set bits pick."""
    tables = []
    for start in range(0, len(values), 8):
        chunk = values[start : start + 8]
        table = [0.0] * 256
        for mask in range(1, 256):
            low = mask & -mask
            bit = low.bit_length() - 1
            table[mask] = table[mask ^ low] + (chunk[bit] if bit < len(chunk) else 0.0)
        tables.append(table)
    return tables


def _flipped_sums(tables: list[list[float]], data: bytes) -> float:
    return sum(map(list.__getitem__, tables, data))


def permutation_test(
    deltas: Sequence[float], *, resamples: int = PERMUTATION_RESAMPLES, seed: int = SEED
) -> tuple[float, str]:
    """Two-sided paired sign-flip test of the mean delta: (p-value, method), exact up to 16
    non-zero deltas, else Monte Carlo with p = (hits + 1) / (resamples + 1), as scipy's."""
    d = [x for x in deltas if x != 0]
    n = len(d)
    if n == 0:
        return 1.0, "exact"
    total = math.fsum(d)
    observed = abs(total)
    eps = 1e-9 * max(1.0, observed)
    tables = _byte_tables(d)
    exact = n <= EXACT_PERMUTATION_MAX
    rng = random.Random(seed)
    masks = range(2**n) if exact else (rng.getrandbits(n) for _ in range(resamples))
    hits = sum(
        abs(total - 2 * _flipped_sums(tables, mask.to_bytes(len(tables), "little")))
        >= observed - eps
        for mask in masks
    )
    return (hits / 2**n, "exact") if exact else ((hits + 1) / (resamples + 1), "monte-carlo")


def _ranks(values: Sequence[float]) -> list[float]:
    """Average ranks (1-based) of ``values``, ties sharing the mean of their ranks."""
    ranks, start = [0.0] * len(values), 0
    for _, tied in groupby(sorted(range(len(values)), key=values.__getitem__), values.__getitem__):
        group = list(tied)
        for k in group:
            ranks[k] = start + (len(group) + 1) / 2
        start += len(group)
    return ranks


def _wilcoxon_exact(n: int, w_plus: float) -> float:
    """Two-sided p of W+ = ``w_plus`` among the 2**n sign assignments of ranks 1..n."""
    counts = [1] + [0] * (n * (n + 1) // 2)  # subsets of 1..n by their sum
    for r in range(1, n + 1):
        for s in range(len(counts) - 1, r - 1, -1):
            counts[s] += counts[s - r]
    w = round(w_plus)
    return min(1.0, 2 * min(sum(counts[: w + 1]), sum(counts[w:])) / (1 << n))


def _wilcoxon_normal(n: int, w_plus: float, mags: list[float]) -> float:
    """Two-sided p of the normal approximation, tie-corrected, no continuity correction."""
    var = n * (n + 1) * (2 * n + 1) / 24 - sum(t**3 - t for t in Counter(mags).values()) / 48
    z = (w_plus - n * (n + 1) / 4) / math.sqrt(var) if var > 0 else 0.0
    return math.erfc(abs(z) / math.sqrt(2))


def wilcoxon_signed_rank(deltas: Sequence[float]) -> tuple[float, float, str]:
    """Two-sided Wilcoxon signed-rank test: (min(W+, W-), p, method), as scipy's "auto"."""
    d = [x for x in deltas if x != 0]
    n, mags = len(d), [abs(x) for x in d]
    w_plus = math.fsum(r for r, x in zip(_ranks(mags), d, strict=True) if x > 0)
    stat = min(w_plus, n * (n + 1) / 2 - w_plus)
    if n <= EXACT_WILCOXON_MAX and len(set(mags)) == n:
        return stat, _wilcoxon_exact(n, w_plus), "exact"
    return stat, _wilcoxon_normal(n, w_plus, mags), "normal"


def bootstrap_ci(deltas: Sequence[float], *, seed: int = SEED) -> tuple[float, float]:
    """Seeded 95% percentile bootstrap interval of the mean of ``deltas`` (numpy's quantiles)."""
    n = len(deltas)
    if n == 0:
        return (math.nan, math.nan)
    if min(deltas) == max(deltas):
        return (deltas[0], deltas[0])
    rng = random.Random(seed)
    pool = list(deltas)
    means = sorted(sum(rng.choices(pool, k=n)) / n for _ in range(BOOTSTRAP_RESAMPLES))
    return (_quantile(means, 0.025), _quantile(means, 0.975))  # PairedStats.ci_level


def _quantile(ordered: Sequence[float], q: float) -> float:
    pos = q * (len(ordered) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def pass_hat_k(trials: int, successes: int, k: int) -> float:
    """tau2's pass^k of one task: C(successes, k) / C(trials, k)."""
    if trials < k:
        raise ValueError(f"a task has {trials} trials, fewer than k={k}")
    return math.comb(successes, k) / math.comb(trials, k)


def _pass_k(rewards: dict[str, list[float]]) -> dict[int, float]:
    if not rewards:
        return {}
    max_k = min(len(v) for v in rewards.values())
    out = {}
    for k in range(1, max_k + 1):
        per_task = [pass_hat_k(len(v), sum(map(is_success, v)), k) for v in rewards.values()]
        out[k] = sum(per_task) / len(per_task)
    return out


def _by_task(episodes: Iterable[EpisodeDiff], side: Literal["a", "b"]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for ep in episodes:
        task = task_of(ep.env_index)
        reward: float | None = getattr(ep, f"reward_{side}")
        if task is not None and _numeric(reward):
            out.setdefault(task, []).append(reward)
    return out


def pass_k_table(episodes: Sequence[EpisodeDiff]) -> tuple[int, list[PassK]]:
    """(tasks, pass^k rows) when the episodes are tau2 trials with 2+ trials a task."""
    ra, rb = _by_task(episodes, "a"), _by_task(episodes, "b")
    trials = [len(v) for v in (*ra.values(), *rb.values())]
    if not trials or max(trials) < 2:
        return 0, []
    pa, pb = _pass_k(ra), _pass_k(rb)
    ks = sorted({*pa, *pb})
    return len(ra.keys() | rb.keys()), [PassK(k, pa.get(k), pb.get(k)) for k in ks]


def _numeric(value: float | None) -> TypeGuard[float]:
    return value is not None and value == value  # NaN is not


def _count(out: PairedStats, pairs: list[tuple[float, float]], deltas: list[float]) -> None:
    for (a, _b), d in zip(pairs, deltas, strict=True):
        kind = "improved" if d > 0 else "regressed" if d < 0 else None
        kind = kind or ("unchanged" if is_success(a) else "still_failing")
        setattr(out, kind, getattr(out, kind) + 1)


def _tests(out: PairedStats, deltas: list[float], seed: int) -> list[Significance]:
    if out.binary:
        p = mcnemar_exact(out.improved, out.regressed)
        stat = float(min(out.improved, out.regressed))
        return [Significance("McNemar", "exact binomial", stat, p)]
    p, method = permutation_test(deltas, seed=seed)
    w, pw, wmethod = wilcoxon_signed_rank(deltas)
    return [
        Significance("paired permutation", method, out.mean_delta or 0.0, p),
        Significance("Wilcoxon signed-rank", wmethod, w, pw),
    ]


def paired_stats(episodes: Sequence[EpisodeDiff], *, seed: int = SEED) -> PairedStats:
    """The paired statistics of ``episodes`` (McNemar for binary rewards, else permutation
    and Wilcoxon; a bootstrap interval of the mean delta; pass^k of tau2 trials)."""
    out = PairedStats(seed=seed)
    out.tasks, out.pass_k = pass_k_table(episodes)
    both = [e for e in episodes if _numeric(e.reward_a) and _numeric(e.reward_b)]
    if not both:
        return out
    pairs = [(float(e.reward_a), float(e.reward_b)) for e in both]  # type: ignore[arg-type]
    deltas = [round(b - a, 12) for a, b in pairs]
    ra, rb = zip(*pairs, strict=True)
    out.paired = len(pairs)
    _count(out, pairs, deltas)
    out.mean_a, out.mean_b = math.fsum(ra) / len(pairs), math.fsum(rb) / len(pairs)
    out.mean_delta = math.fsum(deltas) / len(deltas)
    out.ci_low, out.ci_high = bootstrap_ci(deltas, seed=seed)
    out.binary = {*ra, *rb} <= {0.0, 1.0}
    out.tests = _tests(out, deltas, seed)
    return out
