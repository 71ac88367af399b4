"""Judging the judges: label agreement, Bland-Altman and system-ranking agreement against the papers.

Expected values come from the papers' definitions, written here as direct (loop) formulas or
worked by hand, and from published figures:

* Krippendorff (2011), "Computing Krippendorff's alpha-reliability", the example of 4 observers
  and 12 units with missing values: alpha = 0.743 (nominal), 0.815 (ordinal), 0.849 (interval),
  0.797 (ratio), as printed there to three decimals.
* The ircor R package's manual (Urbano & Marrero's reference implementation of tau_AP_a and
  tau_AP_b), the example of ``?tauAP`` and its printed output: tauAP = 0.3928571, tauAP_a with
  ties in y = 0.39903, tauAP_b = 0.3317019, and 0.339418 with ties in x too. The rounded vectors
  are written out (x[1] = 0.45 rounds to 0.4, as in the published output).

The independent implementations (scikit-learn, krippendorff, scipy, autojudge-evaluate) are in
tests/peers/test_agreement_peers.py.
"""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from service.metrics.stats import rank_agreement
from service.metrics.stats.agreement import (
    NO_OVERLAP,
    SINGLE_LEVEL,
    bland_altman,
    cohen_kappa,
    confusion_matrix,
    judged_overlap,
    krippendorff,
    krippendorff_alpha,
    label_agreement,
    label_agreement_by_topic,
)
from service.metrics.stats.common import pair_indices
from service.metrics.stats.rank_agreement import (
    competition_ranks,
    largest_rank_change,
    mid_ranks,
    pearson,
    ranking_agreement,
    significance_agreement,
    spearman,
    tau_ap,
    tau_ap_b,
    tau_ap_symmetric,
    tau_b,
    tau_top_k,
    top_k_runs,
    topic_correlation,
)

LEVELS = (0, 1, 2, 3)


# ------------------------------------------------------------------ direct formulas (the papers)
def tau_ap_direct(reference: list[float], other: list[float]) -> float:
    """Yilmaz et al. (2008), eq. (1): walk ``other``'s ranking; C(i) = runs above position i
    that the reference also ranks above the run at i. No ties anywhere."""
    order = sorted(range(len(other)), key=lambda k: -other[k])
    n = len(order)
    total = 0.0
    for i in range(1, n):
        c = sum(1 for j in range(i) if reference[order[j]] > reference[order[i]])
        total += c / i
    return 2.0 / (n - 1) * total - 1.0


def tau_ap_a_direct(reference: list[float], other: list[float]) -> float:
    """Urbano & Marrero's tau_AP_a by its meaning: the mean of tau_AP over every way of breaking
    the ties of ``other`` (all permutations of the tied runs)."""
    n = len(other)
    groups = sorted({v for v in other}, reverse=True)
    members = [[k for k in range(n) if other[k] == g] for g in groups]
    values = []
    for perms in itertools.product(*(itertools.permutations(m) for m in members)):
        order = [k for p in perms for k in p]
        strict = [0.0] * n
        for pos, k in enumerate(order):
            strict[k] = float(n - pos)
        values.append(tau_ap_direct(reference, strict))
    return float(np.mean(values))


def tau_ap_b_direct(x: list[float], y: list[float]) -> float:
    """Urbano & Marrero (2017), tau_AP_b: mean of the two walks; walking y, each run i with
    p_i > 0 runs strictly above it in y adds (#{those also strictly above i in x}) / p_i."""
    def walk(truth: list[float], walked: list[float]) -> float:
        terms = []
        for i in range(len(walked)):
            above = [j for j in range(len(walked)) if walked[j] > walked[i]]
            if above:
                terms.append(sum(1 for j in above if truth[j] > truth[i]) / len(above))
        return 2.0 * float(np.mean(terms)) - 1.0
    return (walk(x, y) + walk(y, x)) / 2.0


def kappa_direct(a: list[int], b: list[int], levels: tuple[int, ...], weights: str) -> float:
    """Cohen (1968): 1 - sum_ij w_ij p_ij / sum_ij w_ij p_i. p_.j on the levels' positions."""
    k, n = len(levels), len(a)
    pos = {v: i for i, v in enumerate(levels)}
    obs = [[0.0] * k for _ in range(k)]
    for u, v in zip(a, b):
        obs[pos[u]][pos[v]] += 1 / n
    row = [sum(r) for r in obs]
    col = [sum(obs[i][j] for i in range(k)) for j in range(k)]

    def w(i: int, j: int) -> float:
        return {"none": float(i != j), "linear": abs(i - j), "quadratic": (i - j) ** 2}[weights]
    num = sum(w(i, j) * obs[i][j] for i in range(k) for j in range(k))
    den = sum(w(i, j) * row[i] * col[j] for i in range(k) for j in range(k))
    return 1.0 - num / den


def strict_vectors(min_size: int = 2, max_size: int = 9) -> st.SearchStrategy[list[float]]:
    return st.lists(st.integers(-1000, 1000), min_size=min_size, max_size=max_size, unique=True).map(
        lambda v: [float(x) for x in v])


def tied_pair(max_size: int = 12, values: int = 4) -> st.SearchStrategy[tuple[list[float], list[float]]]:
    """Two score vectors of the same length with many ties (few distinct values)."""
    return st.integers(2, max_size).flatmap(lambda n: st.tuples(
        st.lists(st.integers(0, values).map(float), min_size=n, max_size=n),
        st.lists(st.integers(0, values).map(float), min_size=n, max_size=n)))


# ------------------------------------------------------------------ tau_AP (Yilmaz et al. 2008)
def test_tau_ap_identical_and_reversed() -> None:
    x = [0.9, 0.7, 0.5, 0.3, 0.1]
    assert tau_ap(x, x) == 1.0
    assert tau_ap(x, x[::-1]) == -1.0
    assert tau_ap_b(x, x) == 1.0 and tau_ap_b(x, x[::-1]) == -1.0


def test_a_swap_at_the_top_costs_more_than_one_at_the_bottom() -> None:
    """Worked by hand (n = 4, reference order r0 > r1 > r2 > r3). Swapping the top two:
    C(2..4) = 0, 2, 3, tau_AP = 2/3 (0/1 + 2/2 + 3/3) - 1 = 1/3. Swapping the bottom two:
    C = 1, 2, 2, tau_AP = 2/3 (1 + 1 + 2/3) - 1 = 7/9. Kendall's tau is 2/3 for both."""
    ref = [4.0, 3.0, 2.0, 1.0]
    top, bottom = [3.0, 4.0, 2.0, 1.0], [4.0, 3.0, 1.0, 2.0]
    assert tau_ap(ref, top) == pytest.approx(1 / 3, abs=1e-15)
    assert tau_ap(ref, bottom) == pytest.approx(7 / 9, abs=1e-15)
    assert tau_b(ref, top) == pytest.approx(2 / 3) and tau_b(ref, bottom) == pytest.approx(2 / 3)


def test_tau_ap_is_asymmetric_reference_first() -> None:
    """The reference's best run ranked last by the compared set. Walking the compared list,
    positions 2-4 are right and the last has C = 0: tau_AP = 2/4 (1 + 1 + 1 + 0) - 1 = 1/2.
    With the roles swapped the error is at the top of the walked list: C(i) / (i - 1) = 0, 1/2,
    2/3, 3/4, tau_AP = 2/4 * 23/12 - 1 = -1/24."""
    ref = [5.0, 4.0, 3.0, 2.0, 1.0]
    other = [0.0, 4.0, 3.0, 2.0, 1.0]
    assert tau_ap(ref, other) == pytest.approx(1 / 2) == tau_ap_direct(ref, other)
    assert tau_ap(other, ref) == pytest.approx(-1 / 24) == tau_ap_direct(other, ref)
    assert tau_ap_symmetric(ref, other) == pytest.approx((1 / 2 - 1 / 24) / 2)
    assert tau_ap_b(ref, other) == pytest.approx(tau_ap_symmetric(ref, other))


def test_ircor_published_values() -> None:
    """ircor's manual, ``?tauAP`` (see the module docstring)."""
    x = [0.67, 0.45, 0.29, 0.12, 0.57, 0.24, 0.94, 0.75, 0.08, 0.54]
    y = [0.48, 0.68, 0.32, 0.09, 0.06, 0.61, 0.87, 0.22, 0.44, 0.84]
    assert tau_ap(x, y) == pytest.approx(0.3928571, abs=5e-8)
    y1 = [0.5, 0.7, 0.3, 0.1, 0.1, 0.6, 0.9, 0.2, 0.4, 0.8]  # round(y, 1)
    assert tau_ap(x, y1) == pytest.approx(0.39903, abs=5e-6)  # tauAP_a: ties in y only
    assert tau_ap_b(x, y1) == pytest.approx(0.3317019, abs=5e-8)
    x1 = [0.7, 0.4, 0.3, 0.1, 0.6, 0.2, 0.9, 0.8, 0.1, 0.5]  # round(x, 1)
    assert tau_ap_b(x1, y1) == pytest.approx(0.339418, abs=5e-7)
    # as ranks (lower is better): the same coefficient
    assert tau_ap_b(competition_ranks(x1) * -1.0, competition_ranks(y1) * -1.0) == pytest.approx(0.339418, abs=5e-7)


@settings(max_examples=300, deadline=None)
@given(strict_vectors(), st.randoms(use_true_random=False))
def test_tau_ap_matches_the_direct_formula(x: list[float], rnd) -> None:  # type: ignore[no-untyped-def]
    y = x[:]
    rnd.shuffle(y)
    assert tau_ap(x, y) == pytest.approx(tau_ap_direct(x, y), abs=1e-12)
    assert -1.0 <= tau_ap(x, y) <= 1.0
    # without ties tau_AP_b is the symmetrised tau_AP
    assert tau_ap_b(x, y) == pytest.approx(tau_ap_symmetric(x, y), abs=1e-12)


@settings(max_examples=200, deadline=None)
@given(strict_vectors(max_size=7), st.lists(st.integers(0, 2), min_size=7, max_size=7))
def test_tau_ap_with_ties_in_the_compared_list_is_the_mean_over_tie_orders(x: list[float], tied: list[int]) -> None:
    y = [float(v) for v in tied[: len(x)]]
    assert tau_ap(x, y) == pytest.approx(tau_ap_a_direct(x, y), abs=1e-12)


def test_tau_ap_needs_a_strict_reference() -> None:
    assert math.isnan(tau_ap([1.0, 1.0, 0.5], [0.3, 0.2, 0.1]))
    assert math.isnan(tau_ap([1.0], [1.0]))
    r = ranking_agreement([1.0, 1.0, 0.5], [0.3, 0.2, 0.1])
    assert math.isnan(r.tau_ap) and not math.isnan(r.tau_ap_b)
    assert any("reference ranks some runs equal" in n for n in r.notes)


@settings(max_examples=300, deadline=None)
@given(tied_pair())
def test_tau_ap_b_matches_the_definition(pair: tuple[list[float], list[float]]) -> None:
    x, y = pair
    assume(len(set(x)) > 1 and len(set(y)) > 1)
    value = tau_ap_b(x, y)
    assert value == pytest.approx(tau_ap_b_direct(x, y), abs=1e-12)
    assert value == pytest.approx(tau_ap_b(y, x), abs=1e-15)  # symmetric
    assert -1.0 <= value <= 1.0
    # invariant under increasing transformations of either vector
    assert tau_ap_b(np.exp(x), np.asarray(y) * 3 + 1) == pytest.approx(value, abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=2, max_size=12))
def test_tau_ap_b_is_one_for_the_same_ranking_with_the_same_ties(v: list[int]) -> None:
    assume(len(set(v)) > 1)
    x = [float(a) for a in v]
    assert tau_ap_b(x, [10 * a + 1 for a in x]) == 1.0
    assert tau_b(x, [10 * a + 1 for a in x]) == pytest.approx(1.0)


def test_constant_vectors_give_nan_with_a_reason() -> None:
    x, c = [0.3, 0.2, 0.1], [0.5, 0.5, 0.5]
    for f in (tau_b, tau_ap_b, spearman, pearson):
        assert math.isnan(f(x, c)) and math.isnan(f(c, x))
    assert math.isnan(tau_ap(c, x))
    assert tau_ap(x, c) == pytest.approx(0.0)  # all tied in the compared list: the mean over orders is 0
    r = ranking_agreement(x, c)
    assert math.isnan(r.kendall) and math.isnan(r.tau_ap_b)
    assert any("the other set ranks every run equal" in n for n in r.notes)
    r1 = ranking_agreement([0.4], [0.1])
    assert r1.runs == 1 and math.isnan(r1.kendall) and any("fewer than two runs" in n for n in r1.notes)
    r0 = ranking_agreement([], [])
    assert r0.runs == 0 and r0.largest_change is None and math.isnan(r0.tau_ap_b)


def test_blocked_computation_gives_the_same_values(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(3)
    x, y = rng.integers(0, 20, 300).astype(float), rng.integers(0, 20, 300).astype(float)
    z = rng.random(300)
    whole = (tau_ap_b(x, y), tau_ap(z, y))
    monkeypatch.setattr(rank_agreement, "BLOCK_CELLS", 301 * 7)
    assert (tau_ap_b(x, y), tau_ap(z, y)) == whole


# ------------------------------------------------------------------ other ranking figures
def test_ranks() -> None:
    s = [0.5, 0.9, 0.5, 0.1]
    assert competition_ranks(s).tolist() == [2, 1, 2, 4]
    assert mid_ranks(s).tolist() == [2.5, 4.0, 2.5, 1.0]


def test_top_k_includes_the_runs_tied_with_the_kth() -> None:
    ref = [0.9, 0.8, 0.7, 0.7, 0.1]
    assert top_k_runs(ref, 3).tolist() == [0, 1, 2, 3]
    assert top_k_runs(ref, 2).tolist() == [0, 1]
    assert top_k_runs(ref, 10).tolist() == [0, 1, 2, 3, 4]
    other = [0.1, 0.2, 0.3, 0.4, 0.9]  # the bottom run ranked first: outside the top 3
    assert tau_top_k(ref, other, 3) == pytest.approx(tau_b([0.9, 0.8, 0.7, 0.7], [0.1, 0.2, 0.3, 0.4]))
    with pytest.raises(ValueError):
        top_k_runs(ref, 0)
    assert math.isnan(tau_top_k(ref, other, 1))  # one run


def test_largest_rank_change() -> None:
    ref = [0.9, 0.8, 0.7, 0.6, 0.5]
    other = [0.9, 0.5, 0.7, 0.6, 0.8]  # run b: 2 -> 5, run e: 5 -> 2 (equal moves: b is ranked better)
    change = largest_rank_change(ref, other, ["a", "b", "c", "d", "e"])
    assert change is not None
    assert (change.name, change.reference_rank, change.other_rank, change.shift) == ("b", 2, 5, -3)
    r = ranking_agreement(ref, other, runs=list("abcde"), top_k=3)
    assert r.largest_change == change and r.top_k_runs == 3
    assert r.reference_ranks.tolist() == [1, 2, 3, 4, 5] and r.other_ranks.tolist() == [1, 5, 3, 4, 2]


def test_ranking_agreement_drops_runs_missing_a_score() -> None:
    r = ranking_agreement([0.3, np.nan, 0.2, 0.1], [0.3, 0.5, 0.1, 0.2], runs=["a", "b", "c", "d"])
    assert r.runs == 3 and r.dropped == 1
    assert r.kendall == pytest.approx(1 / 3)
    assert r.largest_change is not None and r.largest_change.name in ("c", "d")
    with pytest.raises(ValueError):
        ranking_agreement([0.1, np.inf], [0.1, 0.2])
    with pytest.raises(ValueError):
        tau_ap_b([0.1, np.nan], [0.1, 0.2])


# ------------------------------------------------------------------ significance agreement
def test_significance_agreement_counts_every_verdict() -> None:
    # pairs (0,1) (0,2) (0,3) (1,2) (1,3) (2,3)
    p_ref = np.array([0.01, 0.01, 0.01, 0.50, 0.50, np.nan])
    p_oth = np.array([0.02, 0.30, 0.01, 0.01, 0.70, 0.01])
    d_ref = np.array([0.1, 0.1, 0.1, 0.0, 0.1, 0.1])
    d_oth = np.array([0.1, 0.1, -0.1, 0.2, 0.1, 0.1])
    s = significance_agreement(p_ref, p_oth, d_ref, d_oth, alpha=0.05)
    assert (s.pairs, s.untested) == (5, 1)
    assert (s.kept_significant, s.lost, s.flipped, s.gained, s.kept_not_significant) == (1, 1, 1, 1, 1)
    assert s.agreement == pytest.approx(2 / 5) and s.kept_of_significant == pytest.approx(1 / 3)
    assert sum(s.shares().values()) == pytest.approx(1.0)
    # the same as (runs, runs) matrices (upper triangle) and as boolean flags
    a, b = pair_indices(4)

    def matrix(v: np.ndarray) -> np.ndarray:
        m = np.full((4, 4), -9.0)
        m[a, b] = v
        return m
    assert significance_agreement(matrix(p_ref), matrix(p_oth), matrix(d_ref), matrix(d_oth)) == s
    flags = significance_agreement(p_ref[:5] < 0.05, p_oth[:5] < 0.05, d_ref[:5], d_oth[:5])
    assert flags == dataclasses.replace(s, untested=0)
    empty = significance_agreement(np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0))
    assert empty.pairs == 0 and math.isnan(empty.agreement) and math.isnan(empty.kept_of_significant)
    with pytest.raises(ValueError):
        significance_agreement(p_ref, p_oth[:3], d_ref, d_oth)


# ------------------------------------------------------------------ per-topic scores
def test_topic_correlation_and_the_topics_that_disagree_most() -> None:
    ref = np.array([[0.9, 0.5, 0.1],  # t1: same order under both sets
                    [0.9, 0.5, 0.1],  # t2: reversed
                    [0.2, 0.4, 0.6],  # t3: same order, but the other set scores +0.3 higher
                    [0.3, 0.3, 0.3]])  # t4: every run equal under the reference
    oth = np.array([[0.8, 0.6, 0.2],
                    [0.1, 0.5, 0.9],
                    [0.5, 0.7, 0.9],
                    [0.1, 0.2, 0.3]])
    tc = topic_correlation(ref, oth, topics=["t1", "t2", "t3", "t4"], runs=["a", "b", "c"])
    assert tc.topic_tau[:3].tolist() == pytest.approx([1.0, -1.0, 1.0]) and math.isnan(tc.topic_tau[3])
    assert tc.topic_mean_difference.tolist() == pytest.approx([1 / 30, 0.0, 0.3, -0.1])
    assert [t for t, _ in tc.most_disagreeing()] == ["t2", "t3", "t1", "t4"]  # ties broken by |mean diff|
    assert tc.most_disagreeing(1) == [("t2", pytest.approx(2.0))]
    assert any("without a run-ordering tau" in n for n in tc.notes)
    by_mean = topic_correlation(ref, oth, topics=["t1", "t2", "t3", "t4"], by="mean")
    assert [t for t, _ in by_mean.most_disagreeing()] == ["t3", "t4", "t1", "t2"]
    # per run over topics, and the per-topic means
    for j in range(3):
        assert tc.run_kendall[j] == pytest.approx(tau_b(ref[:, j], oth[:, j]))
        assert tc.run_pearson[j] == pytest.approx(pearson(ref[:, j], oth[:, j]))
    assert tc.mean_kendall == pytest.approx(tau_b(ref.mean(axis=1), oth.mean(axis=1)))
    assert tc.mean_pearson == pytest.approx(pearson(ref.mean(axis=1), oth.mean(axis=1)))


def test_topic_correlation_uses_the_cells_both_sets_scored() -> None:
    ref = np.array([[0.9, 0.5, np.nan], [0.1, 0.2, 0.3], [0.4, 0.8, 0.6]])
    oth = np.array([[0.8, 0.6, 0.1], [0.3, 0.2, 0.1], [np.nan, np.nan, np.nan]])
    tc = topic_correlation(ref, oth)
    assert tc.topic_tau[0] == pytest.approx(1.0) and tc.topic_tau[1] == pytest.approx(-1.0)
    assert math.isnan(tc.topic_tau[2]) and math.isnan(tc.topic_mean_difference[2])
    assert tc.order.tolist() == [1, 0, 2]
    assert math.isnan(tc.run_kendall[2])  # run 3: one topic scored by both sets
    assert tc.run_kendall[0] == pytest.approx(1.0)  # run 1 on topics 1-2: (0.9, 0.1) vs (0.8, 0.3)


# ------------------------------------------------------------------ labels: kappa
def test_kappa_worked_example() -> None:
    """2 x 2 table [[20, 5], [10, 15]]: p_o = 0.7, p_e = (25 * 30 + 25 * 20) / 50^2 = 0.5,
    kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4 (with two levels every weighting gives the same)."""
    a = [0] * 25 + [1] * 25
    b = [0] * 20 + [1] * 5 + [0] * 10 + [1] * 15
    r = label_agreement(a, b, (0, 1))
    assert r.confusion.tolist() == [[20, 5], [10, 15]]
    assert (r.documents, r.observed) == (50, pytest.approx(0.7))
    assert r.kappa == pytest.approx(0.4) and r.kappa_linear == pytest.approx(0.4)
    assert r.kappa_quadratic == pytest.approx(0.4)
    assert (r.higher, r.lower) == (5, 10)


@settings(max_examples=200, deadline=None)
@given(st.integers(2, 40).flatmap(lambda n: st.tuples(st.lists(st.sampled_from(LEVELS), min_size=n, max_size=n),
                                                       st.lists(st.sampled_from(LEVELS), min_size=n, max_size=n))))
def test_kappa_matches_the_direct_formula(pair: tuple[list[int], list[int]]) -> None:
    a, b = pair
    assume(len(set(a) | set(b)) > 1)
    for w in ("none", "linear", "quadratic"):
        expected = kappa_direct(a, b, LEVELS, w)
        assert cohen_kappa(a, b, LEVELS, w) == pytest.approx(expected, abs=1e-12)  # type: ignore[arg-type]
    if len(set(a)) > 1:
        assert cohen_kappa(a, a, LEVELS) == pytest.approx(1.0)
    assert confusion_matrix(a, b, LEVELS).sum() == len(a)


def test_kappa_weights_are_on_positions_in_the_scale() -> None:
    """A scale (-2, 0, 1, 2) has the same weighted kappa as (0, 1, 2, 3) for the same positions."""
    a, b = [-2, 0, 1, 2, 2, 0], [0, 0, 2, 2, 1, -2]
    shift = {-2: 0, 0: 1, 1: 2, 2: 3}
    for w in ("linear", "quadratic"):
        assert cohen_kappa(a, b, (-2, 0, 1, 2), w) == pytest.approx(  # type: ignore[arg-type]
            cohen_kappa([shift[v] for v in a], [shift[v] for v in b], LEVELS, w))  # type: ignore[arg-type]


def test_label_edge_cases() -> None:
    single = label_agreement([1, 1, 1], [1, 1, 1], LEVELS)
    assert single.observed == 1.0 and math.isnan(single.kappa) and math.isnan(single.alpha)
    assert SINGLE_LEVEL in single.notes
    empty = label_agreement([], [], LEVELS)
    assert empty.documents == 0 and math.isnan(empty.observed) and NO_OVERLAP in empty.notes
    one_level_scale = label_agreement([0, 0], [0, 0], (0,))
    assert math.isnan(one_level_scale.kappa) and one_level_scale.confusion.tolist() == [[2]]
    # one set uses a single level, the other two: kappa is defined (0: no better than chance)
    assert label_agreement([1, 1, 1, 1], [0, 1, 0, 1], LEVELS).kappa == pytest.approx(0.0)
    with pytest.raises(ValueError, match="not levels of the scale"):
        label_agreement([0, 4], [0, 1], LEVELS)
    with pytest.raises(ValueError, match="aligned"):
        label_agreement([0, 1], [0], LEVELS)
    with pytest.raises(ValueError):
        label_agreement([0, 1], [0, 1], (1, 0))
    with pytest.raises(ValueError):
        label_agreement([0.5, 1], [0, 1], LEVELS)


def test_label_agreement_by_topic_pools_documents() -> None:
    topics = {"t1": ([0, 1, 2, 3], [0, 1, 2, 2]), "t2": ([1, 1], [1, 1]), "t3": ([], [])}
    r = label_agreement_by_topic(topics, LEVELS)
    assert set(r.per_topic) == {"t1", "t2", "t3"}
    pooled = label_agreement([0, 1, 2, 3, 1, 1], [0, 1, 2, 2, 1, 1], LEVELS)
    assert r.overall.confusion.tolist() == pooled.confusion.tolist()
    assert r.overall.kappa == pytest.approx(pooled.kappa) and r.overall.alpha == pytest.approx(pooled.alpha)
    assert r.defined["kappa"] == 1 and r.macro["kappa"] == pytest.approx(r.per_topic["t1"].kappa)
    assert r.defined["observed"] == 2 and r.macro["observed"] == pytest.approx((0.75 + 1.0) / 2)


# ------------------------------------------------------------------ labels: Krippendorff's alpha
KRIPPENDORFF_2011 = [  # 4 observers x 12 units, NaN = missing
    [1, 2, 3, 3, 2, 1, 4, 1, 2, np.nan, np.nan, np.nan],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, np.nan, 3],
    [np.nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, np.nan],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, np.nan],
]


@pytest.mark.parametrize(("level", "published"), [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849),
                                                   ("ratio", 0.797)])
def test_krippendorff_published_example(level: str, published: float) -> None:
    a = krippendorff(KRIPPENDORFF_2011, level)  # type: ignore[arg-type]
    assert round(a.value, 3) == published
    assert (a.units, a.pairable) == (11, 40)  # unit 12 has one rating: not pairable
    assert a.coincidence.sum() == pytest.approx(40)


def test_krippendorff_two_raters_equal_label_agreement() -> None:
    rng = np.random.default_rng(5)
    a = rng.integers(0, 4, 60)
    b = np.clip(a + rng.integers(-1, 2, 60), 0, 3)
    for level in ("nominal", "ordinal", "interval", "ratio"):
        assert label_agreement(a, b, LEVELS, alpha_level=level).alpha == pytest.approx(  # type: ignore[arg-type]
            krippendorff_alpha(np.vstack([a, b]), level), abs=1e-12)  # type: ignore[arg-type]


def test_krippendorff_edge_cases() -> None:
    assert math.isnan(krippendorff_alpha([[1, np.nan], [np.nan, 2]]))  # no unit has two ratings
    assert krippendorff([[1, np.nan], [np.nan, 2]]).reason == "no unit has two ratings"
    same = krippendorff([[2, 2, 2], [2, 2, np.nan]])
    assert math.isnan(same.value) and "no variation" in (same.reason or "")
    assert krippendorff_alpha([[1, 2, 3], [1, 2, 3]]) == 1.0
    # unused values of the domain do not change the ordinal alpha
    assert krippendorff_alpha([[0, 1, 1], [0, 1, 0]], "ordinal", values=[0, 1, 2, 3]) == pytest.approx(
        krippendorff_alpha([[0, 1, 1], [0, 1, 0]], "ordinal"))
    with pytest.raises(ValueError):
        krippendorff_alpha([[0, 1, 7]], values=[0, 1, 2])
    with pytest.raises(ValueError):
        krippendorff_alpha([0, 1, 2])  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        krippendorff_alpha([[0, 1]], level="cardinal")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="non-negative"):
        krippendorff_alpha([[-2, 1], [0, 1]], level="ratio")


# ------------------------------------------------------------------ judged documents, Bland-Altman
def test_judged_overlap() -> None:
    o = judged_overlap([("t1", "d1"), ("t1", "d2"), ("t2", "d1")], [("t1", "d2"), ("t2", "d1"), ("t2", "d9")])
    assert (o.first, o.second, o.both, o.only_first, o.only_second, o.union) == (3, 3, 2, 1, 1, 4)
    assert (o.share_of_first, o.jaccard) == (pytest.approx(2 / 3), 0.5)
    none = judged_overlap([], [])
    assert math.isnan(none.share_of_first) and math.isnan(none.jaccard)


def test_bland_altman_worked_example_and_sign() -> None:
    ref = [0.2, 0.4, 0.6, 0.8, np.nan]
    oth = [0.3, 0.4, 0.8, 0.9, 0.5]  # differences 0.1, 0, 0.2, 0.1: the other set is more lenient
    ba = bland_altman(ref, oth)
    assert (ba.n, ba.dropped) == (4, 1)
    assert ba.bias == pytest.approx(0.1) and ba.direction == "more lenient"
    sd = math.sqrt((0 + 0.01 + 0.01 + 0) / 3)
    assert ba.sd == pytest.approx(sd)
    z = 1.959963984540054  # the standard normal 0.975 quantile
    assert ba.lower == pytest.approx(0.1 - z * sd) and ba.upper == pytest.approx(0.1 + z * sd)
    assert ba.bias_low == pytest.approx(0.1 - 3.182446305284263 * sd / 2)  # t_{0.975, 3}
    assert ba.averages.tolist() == pytest.approx([0.25, 0.4, 0.7, 0.85])
    assert bland_altman(oth[:4], ref[:4]).direction == "stricter"
    constant = bland_altman([0.1, 0.3, 0.5], [0.2, 0.4, 0.6])
    assert constant.sd == 0.0 and constant.lower == pytest.approx(0.1) == constant.upper
    one = bland_altman([0.1], [0.2])
    assert one.bias == pytest.approx(0.1) and math.isnan(one.sd) and one.notes
    none = bland_altman([np.nan], [0.2])
    assert none.n == 0 and math.isnan(none.bias) and none.direction == "no bias"


# --------------------------------------------------------------------------- several assessors (issue 25, item 9)
def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= 1e-12


def test_assessor_agreement_edge_cases() -> None:
    from service.metrics.stats.agreement import NO_PAIRS, assessor_agreement

    r = assessor_agreement(["1", "1", "1", "2"], ["a", "a", "b", "c"], ["x", "y", "x", "y"], [2, -1, 1, 0], [0, 1, 2])
    assert (r.assessors, r.documents, r.labels, r.unjudged) == (("x", "y"), 3, 3, 1)
    assert math.isnan(r.alpha["ordinal"].value) and r.alpha["ordinal"].reason == NO_PAIRS
    assert any("pooled but unjudged" in n for n in r.notes) and any("single label" in n for n in r.notes)
    assert r.pairs[0].agreement.documents == 0 and math.isnan(r.mean_kappa["x"])
    one = assessor_agreement(["1"], ["a"], ["x"], [1], [0, 1])
    assert any("fewer than two assessors" in n for n in one.notes) and one.pairs == []
    with pytest.raises(ValueError, match="assessor 'x' labels topic 1 document a twice"):
        assessor_agreement(["1", "1"], ["a", "a"], ["x", "x"], [1, 2], [0, 1, 2])
    with pytest.raises(ValueError, match=r"\[5\] are not levels"):
        assessor_agreement(["1"], ["a"], ["x"], [5], [0, 1, 2])
    with pytest.raises(ValueError, match="aligned"):
        assessor_agreement(["1"], ["a", "b"], ["x"], [1], [0, 1])


def test_alpha_without_an_assessor_is_the_alpha_of_the_others() -> None:
    from service.metrics.stats.agreement import assessor_agreement

    rng = np.random.default_rng(2)
    rows = [(t, d, a, int(rng.integers(0, 4))) for t in ("1", "2") for d in range(30) for a in ("p", "q", "r", "s")
            if rng.random() < 0.8]
    t, d, a, lv = (list(c) for c in zip(*rows))
    r = assessor_agreement(t, [str(x) for x in d], a, lv, [0, 1, 2, 3])
    for name in r.assessors:
        keep = [i for i, who in enumerate(a) if who != name]
        others = assessor_agreement([t[i] for i in keep], [str(d[i]) for i in keep], [a[i] for i in keep],
                                    [lv[i] for i in keep], [0, 1, 2, 3])
        for level in ("nominal", "ordinal", "interval"):
            assert _same(r.without[name][level], others.alpha[level].value)
