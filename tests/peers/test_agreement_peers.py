"""Judging the judges against independent implementations, on generated inputs with ties.

Expected values and what each peer defines:

* scikit-learn (``sklearn.metrics``): ``cohen_kappa_score(a, b, labels=levels, weights=None |
  "linear" | "quadratic")`` (weights |i - j| and (i - j)^2 on the labels' positions, as
  Cranfield) and ``confusion_matrix(a, b, labels=levels)``. Where kappa is undefined (both sets
  used one and the same level) scikit-learn returns NaN, as Cranfield does.
* ``krippendorff`` (``krippendorff.alpha(reliability_data, value_domain=..., level_of_measurement=...)``):
  several raters with NaN for missing ratings; it raises where no unit has two ratings (Cranfield:
  NaN with the reason).
* scipy.stats: ``kendalltau`` (its default variant is tau-b), ``spearmanr``, ``pearsonr``; NaN
  (with a warning) for a constant input, as Cranfield.
* statsmodels' ``graphics.agreement.mean_diff_plot(m1, m2, sd_limit)`` (Bland-Altman): it plots
  m1 - m2 against the means with lines at the mean difference and at mean -+ sd_limit * SD, SD
  with ddof = 0. Cranfield's SD has ddof = 1, so statsmodels is given
  sd_limit = z * sqrt(n / (n - 1)) and the lines are read back from the axes.
* autojudge-evaluate (TREC AutoJudge's meta-evaluation): its ``pyircore.tauap_b`` (the
  ``tauap_b`` correlation of its leaderboard meta-evaluation, a port of Urbano's ircor) is
  Urbano & Marrero's tau_AP_b. The package's ``__init__`` imports its CLI, which needs TIRA and
  autojudge-base, and autojudge-base downloads NLTK data when imported (impossible offline), so
  the module file alone is loaded (it imports only numpy and scipy). Where one vector ranks every
  run equal, pyircore scores that walk 0 and averages it in; Cranfield (and ircor: 2/0 * 0) give
  NaN, so those inputs are compared separately. Its correlations "kendall", "pearson",
  "spearman" and "kendall@10" are pandas' and live in ``evaluation.py``, which cannot be imported
  for the same reason; scipy covers the first three and ``kendall@k`` is checked below against
  its definition there (Kendall of the truth's top k runs).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from service.metrics.stats.agreement import bland_altman, confusion_matrix, krippendorff, label_agreement
from service.metrics.stats.rank_agreement import (
    pearson,
    spearman,
    tau_ap_b,
    tau_ap_symmetric,
    tau_b,
    tau_top_k,
)
from tests.support.peers import load_peer_file, require_peer

pytestmark = [pytest.mark.peer, pytest.mark.filterwarnings("ignore")]

sk_metrics = require_peer("sklearn.metrics", "scikit-learn")
kripp = require_peer("krippendorff")
scipy_stats = require_peer("scipy.stats", "scipy")
sm_agreement = require_peer("statsmodels.graphics.agreement", "statsmodels")
pyircore = load_peer_file("autojudge-evaluate", "autojudge_evaluate/pyircore.py", "autojudge_evaluate_pyircore")

ATOL = 1e-12
SCALES = [(0, 1), (0, 1, 2), (0, 1, 2, 3), (-2, 0, 1, 2), (0, 1, 2, 3, 4)]


def same(a: float, b: float, atol: float = ATOL) -> bool:
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= atol


@st.composite
def labels(draw):  # type: ignore[no-untyped-def]
    """Two aligned label vectors on one of SCALES, often with few levels used (ties, one level)."""
    levels = draw(st.sampled_from(SCALES))
    n = draw(st.integers(1, 60))
    used = draw(st.lists(st.sampled_from(levels), min_size=1, max_size=len(levels), unique=True))
    a = draw(st.lists(st.sampled_from(used), min_size=n, max_size=n))
    b = draw(st.lists(st.sampled_from(levels), min_size=n, max_size=n))
    return levels, a, b


@st.composite
def score_pair(draw, min_size: int = 2, max_size: int = 40):  # type: ignore[no-untyped-def]
    """Two score vectors of the same runs: distinct floats, or few distinct values (ties)."""
    n = draw(st.integers(min_size, max_size))
    if draw(st.booleans()):
        values = st.integers(0, draw(st.integers(1, 5))).map(float)
    else:
        values = st.floats(0, 1, allow_nan=False, width=32)
    return (np.array(draw(st.lists(values, min_size=n, max_size=n))),
            np.array(draw(st.lists(values, min_size=n, max_size=n))))


# ------------------------------------------------------------------ scikit-learn
@settings(max_examples=400, deadline=None)
@given(labels())
def test_kappa_and_confusion_match_scikit_learn(case) -> None:  # type: ignore[no-untyped-def]
    levels, a, b = case
    ours = label_agreement(a, b, levels)
    assert (ours.confusion == sk_metrics.confusion_matrix(a, b, labels=list(levels))).all()
    assert (confusion_matrix(a, b, levels) == ours.confusion).all()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for mine, weights in ((ours.kappa, None), (ours.kappa_linear, "linear"), (ours.kappa_quadratic, "quadratic")):
            theirs = float(sk_metrics.cohen_kappa_score(a, b, labels=list(levels), weights=weights))
            assert same(mine, theirs), (weights, mine, theirs)


# ------------------------------------------------------------------ krippendorff
@st.composite
def reliability(draw):  # type: ignore[no-untyped-def]
    """(raters, units) ratings on a scale, NaN for missing; at least one unit rated twice and two
    values used (the package refuses fewer)."""
    levels = draw(st.sampled_from(SCALES))
    raters = draw(st.integers(2, 6))
    units = draw(st.integers(1, 30))
    cells = st.one_of(st.sampled_from(levels).map(float), st.just(math.nan))
    data = np.array(draw(st.lists(st.lists(cells, min_size=units, max_size=units), min_size=raters,
                                  max_size=raters)))
    return levels, data


@settings(max_examples=300, deadline=None)
@given(reliability(), st.sampled_from(["nominal", "ordinal", "interval", "ratio"]))
def test_alpha_matches_krippendorff(case, level: str) -> None:  # type: ignore[no-untyped-def]
    levels, data = case
    assume(((~np.isnan(data)).sum(axis=0) >= 2).any())
    assume(level != "ratio" or min(levels) >= 0)  # ratio needs a scale without negative values
    ours = krippendorff(data, level, values=levels).value  # type: ignore[arg-type]
    theirs = float(kripp.alpha(reliability_data=data, value_domain=list(levels), level_of_measurement=level))
    assert same(ours, theirs, 1e-9), (ours, theirs)


@settings(max_examples=200, deadline=None)
@given(labels(), st.sampled_from(["nominal", "ordinal", "interval"]))
def test_two_set_alpha_matches_krippendorff(case, level: str) -> None:  # type: ignore[no-untyped-def]
    levels, a, b = case
    assume(len(a) >= 1)
    ours = label_agreement(a, b, levels, alpha_level=level).alpha  # type: ignore[arg-type]
    theirs = float(kripp.alpha(reliability_data=np.array([a, b], dtype=float), value_domain=list(levels),
                               level_of_measurement=level))
    assert same(ours, theirs, 1e-9), (ours, theirs)


def test_krippendorff_refuses_what_cranfield_calls_nan() -> None:
    data = np.array([[1, np.nan], [np.nan, 2]])
    with pytest.raises(ValueError):
        kripp.alpha(reliability_data=data, level_of_measurement="ordinal")
    assert krippendorff(data).reason == "no unit has two ratings"


# ------------------------------------------------------------------ scipy
@settings(max_examples=400, deadline=None)
@given(score_pair())
def test_correlations_match_scipy(pair) -> None:  # type: ignore[no-untyped-def]
    x, y = pair
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kt = scipy_stats.kendalltau(x, y).statistic  # tau-b
        sr = scipy_stats.spearmanr(x, y).statistic
        pr = scipy_stats.pearsonr(x, y).statistic if len(x) >= 2 else math.nan
    assert same(tau_b(x, y), float(kt), 1e-12)
    assert same(spearman(x, y), float(sr), 1e-12)
    assert same(pearson(x, y), float(pr), 1e-12)


# ------------------------------------------------------------------ statsmodels (Bland-Altman)
@settings(max_examples=60, deadline=None)
@given(score_pair(min_size=3, max_size=30))
def test_bland_altman_matches_statsmodels(pair) -> None:  # type: ignore[no-untyped-def]
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ref, other = pair
    ours = bland_altman(ref, other)
    assume(ours.sd > 0)
    n = len(ref)
    z = float(scipy_stats.norm.ppf(0.975))
    fig, ax = plt.subplots()
    try:
        sm_agreement.mean_diff_plot(other, ref, sd_limit=z * math.sqrt(n / (n - 1)), ax=ax)
        mean_line, low_line, high_line = (float(line.get_ydata()[0]) for line in ax.lines)
        points = ax.collections[0].get_offsets()
    finally:
        plt.close(fig)
    assert abs(ours.bias - mean_line) <= 1e-12
    assert abs(ours.lower - low_line) <= 1e-12 and abs(ours.upper - high_line) <= 1e-12
    assert np.allclose(points[:, 0], ours.averages, atol=1e-12) and np.allclose(points[:, 1], ours.differences,
                                                                                atol=1e-12)


# ------------------------------------------------------------------ autojudge-evaluate
@settings(max_examples=400, deadline=None)
@given(score_pair())
def test_tau_ap_b_matches_autojudge_evaluate(pair) -> None:  # type: ignore[no-untyped-def]
    x, y = pair
    assume(len(set(x.tolist())) > 1 and len(set(y.tolist())) > 1)
    theirs = float(pyircore.tauap_b(x, y))
    assert abs(tau_ap_b(x, y) - theirs) <= 1e-12
    if len(set(x.tolist())) == len(x) and len(set(y.tolist())) == len(y):
        assert abs(tau_ap_symmetric(x, y) - theirs) <= 1e-12


def test_tau_ap_b_where_a_vector_is_constant() -> None:
    """pyircore scores the walk of a constant vector 0 (no run below its top group) and averages
    it in; Cranfield returns NaN, as tau_AP_b is undefined there (ircor computes 2/0 * 0 - 1)."""
    x, c = np.array([0.3, 0.2, 0.1]), np.array([0.5, 0.5, 0.5])
    assert float(pyircore.tauap_b(x, c)) == pytest.approx(-0.5)  # (-1 + 0) / 2
    assert math.isnan(tau_ap_b(x, c))


@settings(max_examples=200, deadline=None)
@given(score_pair(min_size=3, max_size=40), st.integers(3, 12))
def test_tau_at_k_is_kendall_over_the_truth_top_k(pair, k: int) -> None:  # type: ignore[no-untyped-def]
    """autojudge-evaluate's kendall@k: sort the truth's runs by score (decreasing), keep the
    first k, Kendall (tau-b) between the two sets on those. Without ties at the k-th place this
    is Cranfield's tau over the top k."""
    truth, judge = pair
    order = np.argsort(-truth, kind="stable")
    assume(len(truth) <= k or truth[order[k - 1]] != truth[order[k]])
    top = order[:k]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = float(scipy_stats.kendalltau(truth[top], judge[top]).statistic)
    assert same(tau_top_k(truth, judge, k), theirs, 1e-12)


@st.composite
def assessor_labels(draw):  # type: ignore[no-untyped-def]
    """Several assessors' labels of some documents of a few topics, many missing (each assessor
    labels a document or not)."""
    levels = draw(st.sampled_from([s for s in SCALES if min(s) >= 0]))  # a negative level is unjudged: left out
    raters = draw(st.integers(2, 6))
    units = draw(st.integers(2, 25))
    rows = []
    for u in range(units):
        for a in range(raters):
            if draw(st.booleans()) or a < 2:
                rows.append((f"t{u % 3}", f"d{u}", f"a{a}", draw(st.sampled_from(levels))))
    return levels, rows


@settings(max_examples=150, deadline=None)
@given(assessor_labels(), st.sampled_from(["nominal", "ordinal", "interval"]))
def test_assessor_alpha_and_pairs_match_krippendorff_and_scikit_learn(case, level: str) -> None:  # type: ignore[no-untyped-def]
    from service.metrics.stats.agreement import assessor_agreement

    levels, rows = case
    t, d, a, lv = (list(c) for c in zip(*rows))
    r = assessor_agreement(t, d, a, lv, levels)
    names = r.assessors
    units = sorted({(x, y) for x, y, _, _ in rows})
    by = {(x, y, z): v for x, y, z, v in rows}
    data = np.array([[by.get((u[0], u[1], n), np.nan) for u in units] for n in names], dtype=float)
    try:  # krippendorff raises (no pairable unit) or gives NaN (no variation) where alpha is undefined
        expected = kripp.alpha(reliability_data=data, value_domain=list(levels), level_of_measurement=level)
    except ValueError:
        expected = math.nan
    assert same(r.alpha[level].value, expected)
    for p in r.pairs:
        i, j = names.index(p.first), names.index(p.second)
        both = ~(np.isnan(data[i]) | np.isnan(data[j]))
        if both.sum() == 0:
            assert p.agreement.documents == 0
            continue
        la, lb = data[i][both].astype(int), data[j][both].astype(int)
        assert p.agreement.confusion.tolist() == sk_metrics.confusion_matrix(la, lb, labels=list(levels)).tolist()
        assert same(p.agreement.kappa_quadratic,
                    sk_metrics.cohen_kappa_score(la, lb, labels=list(levels), weights="quadratic"))
