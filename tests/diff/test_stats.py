"""cassette.diff.stats against hand-computed answers and scipy's reference values."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from scipy import stats as sp

from cassette.diff import EpisodeDiff
from cassette.diff.stats import (
    bootstrap_ci,
    is_success,
    mcnemar_exact,
    paired_stats,
    pass_hat_k,
    pass_k_table,
    permutation_test,
    task_of,
    wilcoxon_signed_rank,
)


def _episodes(pairs: list[tuple[object, float | None, float | None]]) -> list[EpisodeDiff]:
    return [EpisodeDiff(env, "identical", reward_a=a, reward_b=b) for env, a, b in pairs]  # type: ignore[arg-type]


# --- McNemar -----------------------------------------------------------------------------


def test_mcnemar_by_hand() -> None:
    # 6 improved, 2 regressed: 2 * P(X <= 2), X ~ Bin(8, 1/2) = 2 * (1 + 8 + 28) / 256
    assert mcnemar_exact(6, 2) == 74 / 256
    assert mcnemar_exact(2, 6) == 74 / 256
    assert mcnemar_exact(5, 0) == 2 / 32
    assert mcnemar_exact(0, 0) == 1.0 and mcnemar_exact(3, 3) == 1.0


@pytest.mark.parametrize(("b", "c"), [(1, 0), (6, 2), (12, 30), (40, 15), (100, 130), (0, 17)])
def test_mcnemar_matches_scipy_binomtest(b: int, c: int) -> None:
    assert mcnemar_exact(b, c) == pytest.approx(sp.binomtest(min(b, c), b + c).pvalue, rel=1e-12)


# --- permutation test --------------------------------------------------------------------


def test_permutation_by_hand() -> None:
    # sign flips of (1, 2, 3): sums 6, 4, 2, 0, 0, -2, -4, -6; |sum| >= 6 in 2 of 8
    assert permutation_test([1.0, 2.0, 3.0]) == (0.25, "exact")
    # zeros do not count; one non-zero delta: both signs are as extreme
    assert permutation_test([0.0, 0.0, 0.5]) == (1.0, "exact")
    assert permutation_test([0.0, 0.0]) == (1.0, "exact")


@pytest.mark.parametrize("n", [5, 10, 16])
def test_exact_permutation_matches_scipy(n: int) -> None:
    rng = random.Random(n)
    d = [round(rng.gauss(0.3, 1), 2) for _ in range(n)]
    ref = sp.permutation_test(
        (np.array(d),), np.mean, permutation_type="samples", n_resamples=np.inf
    ).pvalue
    p, method = permutation_test(d)
    assert method == "exact" and p == pytest.approx(ref, abs=1e-12)


def test_monte_carlo_permutation_is_seeded_and_near_the_exact_value() -> None:
    rng = random.Random(3)
    d = [round(rng.gauss(0.4, 1), 2) for _ in range(17)]  # 2**17: scipy can still be exact
    exact = sp.permutation_test(
        (np.array(d),), np.mean, permutation_type="samples", n_resamples=np.inf
    ).pvalue
    p, method = permutation_test(d, seed=1)
    assert method == "monte-carlo"
    assert p == permutation_test(d, seed=1)[0]  # deterministic
    assert p != permutation_test(d, seed=2)[0]
    assert abs(p - exact) < 0.01  # 10,000 resamples: standard error ~0.004
    # a clear shift: p = 1 / 10,001 (no resample as extreme)
    assert permutation_test([1.0 + i / 100 for i in range(40)])[0] == 1 / 10001


# --- Wilcoxon ----------------------------------------------------------------------------


def test_wilcoxon_by_hand() -> None:
    # d = 1, 2, 3, -4: W+ = 6, W- = 4; of the 16 sign patterns 7 have W+ >= 6: p = 14/16
    assert wilcoxon_signed_rank([1.0, 2.0, 3.0, -4.0]) == (4.0, 0.875, "exact")
    assert wilcoxon_signed_rank([1.0, 2.0, 3.0, 4.0, 5.0]) == (0.0, 2 / 32, "exact")


@pytest.mark.parametrize("n", [6, 20, 50])
def test_exact_wilcoxon_matches_scipy(n: int) -> None:
    rng = random.Random(n)
    mags = rng.sample([i / 10 for i in range(1, 300)], n)  # distinct magnitudes: no ties
    d = [m if rng.random() < 0.6 else -m for m in mags]
    stat, p, method = wilcoxon_signed_rank(d)
    ref = sp.wilcoxon(d, method="exact")
    assert method == "exact"
    assert stat == ref.statistic and p == pytest.approx(ref.pvalue, rel=1e-9)


@pytest.mark.parametrize("n", [30, 51, 400])
def test_normal_wilcoxon_with_ties_and_zeros_matches_scipy(n: int) -> None:
    rng = random.Random(n)
    d = [round(rng.gauss(0.1, 1), 1) for _ in range(n)]  # ties and zeros
    stat, p, method = wilcoxon_signed_rank(d)
    nz = [x for x in d if x != 0]
    ref = sp.wilcoxon(nz, method="approx", correction=False)
    assert method == "normal"
    assert stat == ref.statistic and p == pytest.approx(ref.pvalue, rel=1e-9)


# --- bootstrap ---------------------------------------------------------------------------


def test_bootstrap_constant_and_seeded() -> None:
    assert bootstrap_ci([0.25] * 10) == (0.25, 0.25)
    d = [1.0, 0.0, -1.0, 0.0, 1.0, 1.0, 0.0, 0.0]
    assert bootstrap_ci(d, seed=4) == bootstrap_ci(d, seed=4)
    low, high = bootstrap_ci(d)
    assert -1 <= low < sum(d) / len(d) < high <= 1
    assert all(math.isnan(x) for x in bootstrap_ci([]))


def test_bootstrap_near_scipy_percentile_interval() -> None:
    rng = random.Random(5)
    d = [rng.choice([-1.0, 0.0, 0.0, 1.0, 1.0]) for _ in range(200)]
    ref = sp.bootstrap(
        (np.array(d),), np.mean, method="percentile", n_resamples=20000, rng=0
    ).confidence_interval
    low, high = bootstrap_ci(d)  # 2,000 resamples, another generator: near, not equal
    assert abs(low - ref.low) < 0.02 and abs(high - ref.high) < 0.02


# --- pass^k ------------------------------------------------------------------------------


def test_pass_hat_k_as_tau2() -> None:
    assert pass_hat_k(4, 2, 1) == 0.5 and pass_hat_k(4, 2, 2) == 1 / 6
    assert pass_hat_k(4, 4, 4) == 1.0 and pass_hat_k(4, 3, 4) == 0.0
    with pytest.raises(ValueError, match="fewer than k=3"):
        pass_hat_k(2, 1, 3)
    assert is_success(1.0) and is_success(1 - 1e-7) and not is_success(0.99)
    assert task_of("airline/7/trial-2") == "airline/7" and task_of("airline/7") is None
    assert task_of(3) is None


def test_pass_k_table_groups_trials_per_task() -> None:
    # task x: A passes 3/3, B 2/3; task y: A 1/3, B 3/3
    rewards = {"x": ([1, 1, 1], [1, 0, 1]), "y": ([0, 1, 0], [1, 1, 1])}
    eps = _episodes(
        [(f"mock/{t}/trial-{i}", a[i], b[i]) for t, (a, b) in rewards.items() for i in range(3)]
    )
    tasks, rows = pass_k_table(eps)
    assert tasks == 2
    got = {r.k: (r.a, r.b) for r in rows}
    assert got[1] == pytest.approx(((1 + 1 / 3) / 2, (2 / 3 + 1) / 2))
    assert got[2] == pytest.approx(((1 + 0) / 2, (1 / 3 + 1) / 2))  # C(2,2)/C(3,2) = 1/3
    assert got[3] == pytest.approx((0.5, 0.5))
    assert pass_k_table(_episodes([("a/1/trial-0", 1.0, 1.0)])) == (0, [])  # one trial
    assert pass_k_table(_episodes([(0, 1.0, 0.0)])) == (0, [])


# --- the summary -------------------------------------------------------------------------


def test_paired_stats_binary_by_hand() -> None:
    pairs = [(1, 1), (1, 0), (0, 1), (0, 1), (1, 1), (0, 0), (0, 1), (0, 1), (0, 1), (0, 1)]
    eps = _episodes([(i, float(a), float(b)) for i, (a, b) in enumerate(pairs)])
    eps += _episodes([(99, 1.0, None)])  # not paired
    s = paired_stats(eps)
    assert (s.paired, s.improved, s.regressed, s.unchanged, s.still_failing) == (10, 6, 1, 2, 1)
    assert s.binary and s.mean_a == 0.3 and s.mean_b == 0.8
    assert s.mean_delta == pytest.approx(0.5)
    assert [t.name for t in s.tests] == ["McNemar"]
    assert s.p_value == 2 * (1 + 7) / 128  # Bin(7, 1/2), P(X <= 1), two-sided
    assert s.ci_low is not None and s.ci_high is not None and s.ci_low < 0.5 < s.ci_high
    assert s.p_value is not None and s.p_value >= 0.05


def test_paired_stats_continuous_runs_permutation_and_wilcoxon() -> None:
    rng = random.Random(9)
    eps = _episodes([(i, rng.random(), rng.random() + 0.3) for i in range(30)])
    s = paired_stats(eps, seed=3)
    assert not s.binary
    assert [(t.name, t.method) for t in s.tests] == [
        ("paired permutation", "monte-carlo"),
        ("Wilcoxon signed-rank", "exact"),
    ]
    d = [round(e.reward_b - e.reward_a, 12) for e in eps]  # type: ignore[operator]
    assert s.tests[1].p_value == pytest.approx(sp.wilcoxon(d, method="exact").pvalue)
    assert s.p_value is not None and s.p_value < 0.05 and s.seed == 3
    assert paired_stats(eps, seed=3).to_dict() == s.to_dict()  # reproducible


def test_paired_stats_without_rewards() -> None:
    s = paired_stats(_episodes([(0, None, 1.0)]))
    assert s.paired == 0 and s.tests == [] and s.p_value is None and s.mean_delta is None
