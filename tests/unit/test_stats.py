"""Significance tests and meta-evaluation.

Expected values come from Sakai's textbook (Table 5.1 data and answers in
../shared/conformance/sakai-book/README.md), from scipy called directly, or from
seeded simulations whose expected behaviour is stated beside them.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from service.formats.types import Qrels
from service.metrics.stats.anova import anova_two_way, effect_sizes, run_intervals
from service.metrics.stats.correction import adjust
from service.metrics.stats.meta import (
    discriminative_power,
    kendall_matrix,
    kendall_tau,
    kendall_threshold,
    reduce_qrels,
)
from service.metrics.stats.pairwise import pairwise, randomisation
from service.metrics.stats.tukey import friedman, randomised_tukey_hsd
from tests.conftest import require_shared


@pytest.fixture(scope="module")
def book() -> np.ndarray:
    folder = require_shared("conformance/sakai-book")
    return np.column_stack(
        [np.loadtxt(folder / f"{s}.csv", delimiter=",", skiprows=1, usecols=1) for s in "XYZ"]
    )


RUNS = ("X", "Y", "Z")


# ------------------------------------------------------------------- Sakai's textbook
def test_book_means_and_paired_t(book) -> None:  # type: ignore[no-untyped-def]
    assert book.mean(axis=0) == pytest.approx([0.3450, 0.2700, 0.2450], abs=5e-5)
    r = pairwise(book, RUNS, "t")
    i = r.pair("X", "Y")
    assert r.diff[i] == pytest.approx(0.0750, abs=5e-5)
    assert r.statistic[i] == pytest.approx(2.1158, abs=5e-5)
    assert r.p[i] == pytest.approx(0.0478, abs=5e-5)
    z = book[:, 0] - book[:, 1]
    assert z.var(ddof=1) == pytest.approx(0.0251, abs=5e-5)
    # 95% margin of error of the difference: t_{0.975,19} * sd/sqrt(n)
    assert stats.t.ppf(0.975, 19) * z.std(ddof=1) / np.sqrt(20) == pytest.approx(0.0742, abs=5e-5)


def test_book_anova_margin_and_effect_sizes(book) -> None:  # type: ignore[no-untyped-def]
    a = anova_two_way(book)
    assert (a.ss_runs, a.df_runs, a.ms_runs, a.f_runs, a.p_runs) == pytest.approx((0.1083, 2, 0.0542, 2.4749, 0.0976), abs=5e-5)
    assert (a.ss_topics, a.df_topics, a.f_topics, a.p_topics) == pytest.approx((1.0293, 19, 2.4754, 0.0086), abs=5e-5)
    assert (a.ss_residual, a.df_residual, a.ms_residual) == pytest.approx((0.8317, 38, 0.0219), abs=5e-5)
    assert run_intervals(book, method="anova").margin == pytest.approx([0.0670] * 3, abs=5e-5)
    e = effect_sizes(book, seed=1)
    xy = int(np.flatnonzero((e.a == 0) & (e.b == 1))[0])
    assert e.standardised[xy] == pytest.approx(0.4731, abs=5e-5)
    assert e.standardised_anova == pytest.approx([0.5070, 0.6760, 0.1690], abs=5e-5)  # X-Y, X-Z, Y-Z
    assert e.ci_low[xy] < e.diff[xy] < e.ci_high[xy]


def test_book_fisher_exact_counts_ties(book) -> None:  # type: ignore[no-untyped-def]
    # README: exact over all 2^20 sign flips p = 0.0659 (0.0330 counting only strictly larger).
    _, p = randomisation(book[:, [0]] - book[:, [1]], exact=True)
    assert p[0] == pytest.approx(0.0659, abs=5e-5)


def test_book_bootstrap_and_randomised_tests_within_monte_carlo_error(book) -> None:  # type: ignore[no-untyped-def]
    # Bootstrap X-Y with 10,000 resamples: p ~ 0.051-0.052; Monte-Carlo sd ~ 0.0022.
    r = pairwise(book, RUNS, "bootstrap", resamples=10_000, seed=2026)
    assert r.p[r.pair("X", "Y")] == pytest.approx(0.0515, abs=0.007)
    r = pairwise(book, RUNS, "randomisation", resamples=20_000, seed=2026)
    assert r.p[r.pair("X", "Y")] == pytest.approx(0.0659, abs=0.006)
    # Randomised Tukey HSD, 40,000 trials: 0.303, 0.107, 0.889 counting ties.
    h = randomised_tukey_hsd(book, resamples=40_000, seed=2026)
    assert [h.p[0, 1], h.p[0, 2], h.p[1, 2]] == pytest.approx([0.303, 0.107, 0.889], abs=0.01)


# ------------------------------------------------------------------ agreement with scipy
@pytest.fixture(scope="module")
def matrix() -> np.ndarray:
    rng = np.random.default_rng(11)
    quality = np.linspace(0.2, 0.5, 6)
    return np.clip(quality[None, :] + rng.normal(0, 0.15, size=(30, 6)), 0, 1).round(3)


def test_t_wilcoxon_sign_agree_with_scipy(matrix) -> None:  # type: ignore[no-untyped-def]
    t = pairwise(matrix, test="t")
    w = pairwise(matrix, test="wilcoxon")
    s = pairwise(matrix, test="sign")
    for k, (i, j) in enumerate(zip(t.a, t.b)):
        ref = stats.ttest_rel(matrix[:, i], matrix[:, j])
        assert t.statistic[k] == pytest.approx(ref.statistic, rel=1e-12)
        assert t.p[k] == pytest.approx(ref.pvalue, rel=1e-10)
        assert w.p[k] == pytest.approx(stats.wilcoxon(matrix[:, i], matrix[:, j]).pvalue, rel=1e-10)
        d = matrix[:, i] - matrix[:, j]
        wins, losses = int((d > 0).sum()), int((d < 0).sum())
        assert s.p[k] == pytest.approx(stats.binomtest(wins, wins + losses, 0.5).pvalue, rel=1e-10)


def test_corrections_agree_with_their_definitions() -> None:
    p = np.array([0.01, 0.04, 0.03, 0.2])
    # Holm: sorted 0.01*4, 0.03*3, 0.04*2, 0.2*1, monotone -> 0.04, 0.09, 0.09, 0.2
    assert adjust(p, "holm").tolist() == pytest.approx([0.04, 0.09, 0.09, 0.2])
    # BH: sorted 0.01*4/1, 0.03*4/2, 0.04*4/3, 0.2*4/4, monotone from the top -> .04 .0533 .0533 .2
    assert adjust(p, "bh").tolist() == pytest.approx([0.04, 0.16 / 3, 0.16 / 3, 0.2])
    assert adjust(p, "none").tolist() == p.tolist()


def test_kendall_agrees_with_scipy() -> None:
    rng = np.random.default_rng(3)
    x = rng.integers(0, 8, size=25).astype(float)  # ties on purpose
    y = x + rng.normal(0, 2, size=25).round()
    assert kendall_tau(x, y) == pytest.approx(stats.kendalltau(x, y).statistic, abs=1e-12)
    assert kendall_tau(x, y, "a") == pytest.approx(_tau_a(x, y), abs=1e-12)
    m = kendall_matrix(np.vstack([x, y, -x]))
    assert m[0, 2] == pytest.approx(-1.0) and m[0, 1] == m[1, 0]


def _tau_a(x, y):  # type: ignore[no-untyped-def]
    """Kendall's tau-a by its definition: (concordant - discordant) / (n choose 2)."""
    n = len(x)
    s = sum(np.sign(x[i] - x[j]) * np.sign(y[i] - y[j]) for i in range(n) for j in range(i + 1, n))
    return s / (n * (n - 1) / 2)


def test_kendall_threshold() -> None:
    # Issue text: 0.332 for n = 30 at alpha = 0.01 (the papers round it to 0.34).
    assert kendall_threshold(30, 0.01) == pytest.approx(0.332, abs=5e-4)


# ------------------------------------------------------------------- behaviour of tests
def test_seeded_results_are_identical_and_independent_of_global_state(matrix) -> None:  # type: ignore[no-untyped-def]
    a = pairwise(matrix, test="bootstrap", seed=5)
    np.random.seed(123)
    b = pairwise(matrix, test="bootstrap", seed=5)
    assert np.array_equal(a.p, b.p)
    c = pairwise(matrix, test="randomisation", seed=np.random.default_rng(5))
    d = pairwise(matrix, test="randomisation", seed=np.random.default_rng(5))
    assert np.array_equal(c.p, d.p)
    assert np.array_equal(randomised_tukey_hsd(matrix, seed=9).p, randomised_tukey_hsd(matrix, seed=9).p)


@pytest.mark.parametrize("test", ["t", "wilcoxon", "sign", "bootstrap", "randomisation", "tukey"])
def test_identical_runs_have_p_one(test: str) -> None:
    col = np.array([0.1, 0.5, 0.3, 0.9, 0.2])
    x = np.column_stack([col, col, col * 0.5])
    r = pairwise(x, test=test, seed=1, resamples=200)
    assert r.p[r.pair("run1", "run2")] == 1.0


def test_nan_topics_are_dropped_and_too_few_topics_is_a_clear_error() -> None:
    x = np.array([[0.1, 0.2], [np.nan, 0.3], [0.4, 0.1], [0.3, 0.3]])
    r = pairwise(x, test="t")
    assert r.n_topics == 3 and r.notes == ("1 topics with missing scores left out",)
    with pytest.raises(ValueError, match="at least 2 topics"):
        pairwise(np.array([[0.1, 0.2]]), test="t")
    with pytest.raises(ValueError, match="at least 2 runs"):
        pairwise(np.array([[0.1], [0.2]]), test="t")
    with pytest.raises(ValueError, match="unknown test"):
        pairwise(np.array([[0.1, 0.2], [0.3, 0.1]]), test="magic")  # type: ignore[arg-type]


def test_power_is_high_and_false_positive_rate_near_alpha() -> None:
    # 200 simulated experiments of 40 topics: under H0 (same distribution) the share of
    # p < 0.05 is ~5% (binomial sd 1.5%: accept 1%..11%); with a true difference of
    # 0.1 (effect size ~0.7) the bootstrap and t-test detect it nearly always.
    rng = np.random.default_rng(77)
    null_hits = {"t": 0, "bootstrap": 0, "randomisation": 0}
    power_hits = {"t": 0, "bootstrap": 0}
    trials = 200
    for _ in range(trials):
        base = rng.uniform(0.2, 0.8, size=40)
        x0 = np.column_stack([base + rng.normal(0, 0.1, 40), base + rng.normal(0, 0.1, 40)])
        x1 = np.column_stack([base + 0.1 + rng.normal(0, 0.1, 40), base + rng.normal(0, 0.1, 40)])
        for test in null_hits:
            null_hits[test] += int(pairwise(x0, test=test, resamples=500, seed=rng).p[0] < 0.05)
        for test in power_hits:
            power_hits[test] += int(pairwise(x1, test=test, resamples=500, seed=rng).p[0] < 0.05)
    for test, hits in null_hits.items():
        assert 0.01 <= hits / trials <= 0.11, (test, hits)
    for test, hits in power_hits.items():
        assert hits / trials >= 0.95, (test, hits)


def test_tukey_controls_the_family_not_each_pair(matrix) -> None:  # type: ignore[no-untyped-def]
    # Tukey HSD p-values are never below the pairwise randomisation test's on the same data.
    tk = pairwise(matrix, test="tukey", resamples=2000, seed=1)
    rt = pairwise(matrix, test="randomisation", resamples=2000, seed=1)
    assert np.all(tk.p >= rt.p - 0.02)


def test_friedman_matches_scipy_and_orders_ranks(matrix) -> None:  # type: ignore[no-untyped-def]
    f = friedman(matrix)
    ref = stats.friedmanchisquare(*matrix.T)
    assert f.statistic == pytest.approx(ref.statistic) and f.p == pytest.approx(ref.pvalue)
    assert np.argmin(f.mean_ranks) == int(np.argmax(matrix.mean(axis=0)))
    assert f.posthoc_p.shape == (6, 6) and np.all((f.posthoc_p > 0) & (f.posthoc_p <= 1))


def test_run_intervals_t_do_not_move_when_runs_are_added(matrix) -> None:  # type: ignore[no-untyped-def]
    a = run_intervals(matrix[:, :3])
    b = run_intervals(matrix)
    assert np.allclose(a.low, b.low[:3]) and np.allclose(a.high, b.high[:3])
    col = matrix[:, 0]
    half = stats.t.ppf(0.975, 29) * col.std(ddof=1) / np.sqrt(30)
    assert a.margin[0] == pytest.approx(half)


# ------------------------------------------------------------------------ meta-evaluation
def test_discriminative_power_separates_distinct_runs() -> None:
    rng = np.random.default_rng(4)
    base = rng.uniform(0.1, 0.6, size=(50, 1))
    distinct = base + np.linspace(0, 0.3, 5)[None, :] + rng.normal(0, 0.05, (50, 5))
    same = base + rng.normal(0, 0.05, (50, 5))
    hi = discriminative_power(distinct, alpha=0.05, resamples=1000, seed=1)
    lo = discriminative_power(same, alpha=0.05, resamples=1000, seed=1)
    assert hi.power == 1.0 and hi.pairs == 10
    assert lo.power <= 0.3
    # The difference required is about t_crit * se of a pair's differences (~0.02 here).
    assert 0.005 < hi.difference_required < 0.05


def test_reduced_qrels_are_nested_and_sized_as_the_paper_says() -> None:
    judgments = {f"t{k}": {**{f"r{i}": 1 + i % 2 for i in range(23)}, **{f"n{i}": 0 for i in range(57)}, "u": -1}
                 for k in range(3)}
    judgments["small"] = {"r0": 1, **{f"n{i}": 0 for i in range(6)}}
    q = Qrels.from_mapping(judgments)
    sizes = {}
    previous = None
    for j in (90, 70, 50, 30, 10):
        red = reduce_qrels(q, j, seed=3)
        m = red.to_mapping()
        rel = sum(v >= 1 for v in m["t0"].values())
        non = sum(v == 0 for v in m["t0"].values())
        sizes[j] = (rel, non)
        assert (rel, non) == (max(1, 23 * j // 100), max(10, 57 * j // 100))
        assert sum(v == 0 for v in m["small"].values()) == 6  # N < 10: all kept
        assert "u" not in m["t0"]
        if previous is not None:
            for t in m:
                assert set(m[t]) <= set(previous[t])  # nested
        previous = m
    assert reduce_qrels(q, 50, seed=3).to_mapping() == reduce_qrels(q, 50, seed=3).to_mapping()
    assert sizes[10] == (2, 10)
