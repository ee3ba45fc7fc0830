"""Paired outcome statistics of two runs: is B's change in reward more than noise?

Episodes are paired by env_index (those with a numeric reward in both runs). Counted:
improved, regressed, unchanged (equal and successful) and still failing (equal and not
successful; success is tau2's rule, a reward within 1e-6 of 1). The mean reward delta
gets a percentile bootstrap confidence interval (seeded, so a report is reproducible).
Binary rewards get an exact McNemar test (a two-sided binomial test on the discordant
pairs); continuous rewards get a paired permutation test of the mean delta (every sign
assignment when at most 16 deltas are non-zero, else seeded Monte Carlo) and a Wilcoxon
signed-rank test (exact distribution when n <= 50 without ties, else the normal
approximation). Episodes named ``<task>/trial-<n>`` (tau2's keys) are grouped per task
and pass^k is reported for k = 1 .. the fewest trials of a task, as tau2 computes it.

Pure Python: the tests are a few integer sums, and the Monte Carlo loops read
precomputed per-byte sums (one table lookup per 8 episodes), so numpy would not pay for
its import here; scipy is a test dependency that checks these values.
"""

from __future__ import annotations

import math
import random
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from fractions import Fraction
from typing import Literal

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


# --- the tests -----------------------------------------------------------------------------


def mcnemar_exact(improved: int, regressed: int) -> float:
    """Two-sided exact McNemar p-value: a binomial(n = discordant pairs, 1/2) test of the
    smaller count (as ``scipy.stats.binomtest(min(b, c), b + c).pvalue``)."""
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
    """Two-sided paired permutation (sign-flip) test of the mean delta: (p-value, method).

    Exact (every sign assignment) when at most 16 deltas are non-zero; otherwise
    ``resamples`` seeded random assignments and p = (hits + 1) / (resamples + 1), as
    ``scipy.stats.permutation_test(..., permutation_type="samples")``."""
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
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def wilcoxon_signed_rank(deltas: Sequence[float]) -> tuple[float, float, str]:
    """Two-sided Wilcoxon signed-rank test, zero deltas dropped: (statistic, p, method).

    The statistic is min(W+, W-) as scipy reports it; exact when n <= 50 and no ties (as
    ``scipy.stats.wilcoxon(d, method="exact")``), else the normal approximation with the
    tie correction and no continuity correction (``method="approx"``)."""
    d = [x for x in deltas if x != 0]
    n = len(d)
    if n == 0:
        return 0.0, 1.0, "exact"
    mags = [abs(x) for x in d]
    ranks = _ranks(mags)
    w_plus = math.fsum(r for r, x in zip(ranks, d, strict=True) if x > 0)
    w_minus = n * (n + 1) / 2 - w_plus
    stat = min(w_plus, w_minus)
    ties = len(set(mags)) < n
    if n <= EXACT_WILCOXON_MAX and not ties:
        counts = [1] + [0] * (n * (n + 1) // 2)  # subsets of 1..n by their sum
        for r in range(1, n + 1):
            for s in range(len(counts) - 1, r - 1, -1):
                counts[s] += counts[s - r]
        w = round(w_plus)
        cdf = sum(counts[: w + 1])
        sf = sum(counts[w:])
        p = min(1.0, 2 * min(cdf, sf) / 2**n)
        return stat, p, "exact"
    mean = n * (n + 1) / 4
    ties_of = Counter(mags).values()
    var = n * (n + 1) * (2 * n + 1) / 24 - sum(t**3 - t for t in ties_of) / 48
    z = (w_plus - mean) / math.sqrt(var) if var > 0 else 0.0
    return stat, math.erfc(abs(z) / math.sqrt(2)), "normal"


def bootstrap_ci(
    deltas: Sequence[float],
    *,
    level: float = 0.95,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = SEED,
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``deltas`` (seeded, deterministic;
    quantiles interpolated linearly, as numpy's default)."""
    n = len(deltas)
    if n == 0:
        return (math.nan, math.nan)
    if min(deltas) == max(deltas):
        return (deltas[0], deltas[0])
    rng = random.Random(seed)
    pool = list(deltas)
    means = sorted(sum(rng.choices(pool, k=n)) / n for _ in range(resamples))
    return (_quantile(means, (1 - level) / 2), _quantile(means, 1 - (1 - level) / 2))


def _quantile(ordered: Sequence[float], q: float) -> float:
    pos = q * (len(ordered) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


# --- pass^k ------------------------------------------------------------------------------


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
        reward = ep.reward_a if side == "a" else ep.reward_b
        if task is not None and _numeric(reward):
            out.setdefault(task, []).append(float(reward))  # type: ignore[arg-type]
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


# --- the summary ---------------------------------------------------------------------------


def _numeric(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value


def paired_stats(episodes: Sequence[EpisodeDiff], *, seed: int = SEED) -> PairedStats:
    """The paired statistics of ``episodes`` (see the module docstring)."""
    pairs = [
        (float(e.reward_a), float(e.reward_b))  # type: ignore[arg-type]
        for e in episodes
        if _numeric(e.reward_a) and _numeric(e.reward_b)
    ]
    out = PairedStats(seed=seed)
    out.tasks, out.pass_k = pass_k_table(episodes)
    if not pairs:
        return out
    out.paired = len(pairs)
    deltas = [round(b - a, 12) for a, b in pairs]
    for (a, _b), d in zip(pairs, deltas, strict=True):
        if d > 0:
            out.improved += 1
        elif d < 0:
            out.regressed += 1
        elif is_success(a):
            out.unchanged += 1
        else:
            out.still_failing += 1
    out.mean_a = math.fsum(a for a, _ in pairs) / len(pairs)
    out.mean_b = math.fsum(b for _, b in pairs) / len(pairs)
    out.mean_delta = math.fsum(deltas) / len(deltas)
    out.ci_low, out.ci_high = bootstrap_ci(deltas, seed=seed)
    out.binary = all(v in (0.0, 1.0) for pair in pairs for v in pair)
    if out.binary:
        p = mcnemar_exact(out.improved, out.regressed)
        stat = float(min(out.improved, out.regressed))
        out.tests.append(Significance("McNemar", "exact binomial", stat, p))
    else:
        p, method = permutation_test(deltas, seed=seed)
        out.tests.append(Significance("paired permutation", method, out.mean_delta, p))
        w, pw, wmethod = wilcoxon_signed_rank(deltas)
        out.tests.append(Significance("Wilcoxon signed-rank", wmethod, w, pw))
    return out
