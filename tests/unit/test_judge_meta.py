"""Meta-evaluation of one judge against a reference, with a bootstrap interval over topics
(service.metrics.stats.judge_meta).

Where the expected values come from:

* point values: the rank_agreement functions and scipy.stats (``kendalltau``, whose default is
  tau-b, ``spearmanr``, ``pearsonr``) on the runs' ``np.nanmean`` over topics;
* intervals: :func:`reference_bootstrap` below, a plain loop written from the definition in
  docs/statistics.md with the documented draw, ``default_rng(seed).integers(0, n_topics,
  size=(resamples, n_topics))``, row b being resample b, and ``np.quantile`` of the defined
  statistics. (scipy.stats.bootstrap draws the same indices; tests/peers/test_judge_meta_peers.py
  compares with it.)
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import numpy as np
import pytest
from scipy import stats

from service.metrics.stats import judge_meta
from service.metrics.stats import rank_agreement as ra
from service.metrics.stats.judge_meta import MEASURES, JudgeAgreement, judge_agreement

FUNCTIONS: dict[str, Callable[[np.ndarray, np.ndarray], float]] = {
    "kendall": ra.tau_b, "tau_ap": ra.tau_ap, "tau_ap_b": ra.tau_ap_b, "spearman": ra.spearman,
    "pearson": ra.pearson, "tau_top_k": lambda x, y: ra.tau_top_k(x, y, 10),
}


def nanmean(x: np.ndarray) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # "Mean of empty slice"
        return np.nanmean(x, axis=0)


def on_scored(f: Callable[[np.ndarray, np.ndarray], float], mx: np.ndarray, my: np.ndarray) -> float:
    keep = ~(np.isnan(mx) | np.isnan(my))
    return float(f(mx[keep], my[keep]))


def reference_bootstrap(x: np.ndarray, y: np.ndarray, f: Callable[[np.ndarray, np.ndarray], float], resamples: int,
                        level: float, seed: int) -> tuple[float, float, int, np.ndarray]:
    """(low, high, undefined resamples, every resample's statistic), one resample at a time."""
    keep = ~(np.isnan(nanmean(x)) | np.isnan(nanmean(y)))
    x, y = x[:, keep], y[:, keep]
    draws = np.random.default_rng(seed).integers(0, x.shape[0], size=(resamples, x.shape[0]))
    values = np.array([on_scored(f, nanmean(x[rows]), nanmean(y[rows])) for rows in draws])
    defined = values[~np.isnan(values)]
    if not defined.shape[0]:
        return math.nan, math.nan, resamples, values
    low, high = np.quantile(defined, [(1 - level) / 2, (1 + level) / 2])
    return float(low), float(high), resamples - defined.shape[0], values


def judged_pair(rng: np.random.Generator, topics: int, runs: int, noise: float = 0.1,
                missing: float = 0.0, grid: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per-topic scores of runs of different strength under a reference and a noisy candidate;
    ``grid`` rounds them to multiples of 1/grid (ties), ``missing`` blanks that share of cells."""
    strength = rng.random(runs)
    ref = np.clip(strength[None, :] + rng.normal(0, 0.3, (topics, runs)), 0, 1)
    cand = np.clip(ref + rng.normal(0, noise, ref.shape), 0, 1)
    if grid:
        ref, cand = np.round(ref * grid) / grid, np.round(cand * grid) / grid
    if missing:
        ref[rng.random(ref.shape) < missing] = np.nan
        cand[rng.random(cand.shape) < missing] = np.nan
    return ref, cand


def same(a: float, b: float, tol: float = 1e-12) -> bool:
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= tol


# ------------------------------------------------------------------ point values
@pytest.mark.parametrize("measure", MEASURES)
def test_point_value_is_the_rank_agreement_function_on_the_run_means(measure: str) -> None:
    rng = np.random.default_rng(1)
    x, y = judged_pair(rng, 25, 30, missing=0.05)
    got = judge_agreement(x, y, measure, resamples=20)
    assert got.measure == measure and got.n_topics == 25 and got.n_runs == 30
    assert got.value == on_scored(FUNCTIONS[measure], nanmean(x), nanmean(y))


def test_point_values_match_scipy() -> None:
    rng = np.random.default_rng(2)
    for grid in (None, 4):  # continuous scores, and scores with tied means
        x, y = judged_pair(rng, 20, 25, grid=grid, missing=0.1)
        mx, my = nanmean(x), nanmean(y)
        assert same(judge_agreement(x, y, "kendall", resamples=5).value, stats.kendalltau(mx, my).statistic)
        assert same(judge_agreement(x, y, "spearman", resamples=5).value, stats.spearmanr(mx, my).statistic)
        assert same(judge_agreement(x, y, "pearson", resamples=5).value, stats.pearsonr(mx, my).statistic)


def test_tau_ap_takes_the_reference_first() -> None:
    x = np.array([[0.9, 0.8, 0.7, 0.6], [0.9, 0.8, 0.7, 0.6]])
    y = x[:, [1, 0, 2, 3]]  # the candidate swaps the top two runs
    assert judge_agreement(x, y, "tau_ap", resamples=5).value == pytest.approx(1 / 3)  # docs: 1/3 for n = 4
    y = x[:, [0, 1, 3, 2]]  # ... or the bottom two
    assert judge_agreement(x, y, "tau_ap", resamples=5).value == pytest.approx(7 / 9)


# ------------------------------------------------------------------ the interval
@pytest.mark.parametrize("measure", MEASURES)
def test_interval_equals_the_plain_loop(measure: str) -> None:
    rng = np.random.default_rng(3)
    x, y = judged_pair(rng, 15, 14, noise=0.15)
    got = judge_agreement(x, y, measure, resamples=300, level=0.9, seed=42)
    low, high, undefined, _ = reference_bootstrap(x, y, FUNCTIONS[measure], 300, 0.9, 42)
    assert (got.low, got.high, got.undefined_resamples) == (low, high, undefined)
    assert got.level == 0.9 and got.resamples == 300 and got.defined_resamples == 300 - undefined


@pytest.mark.parametrize("measure", ["kendall", "tau_ap", "tau_ap_b", "tau_top_k"])
def test_interval_equals_the_plain_loop_with_ties_and_missing_scores(measure: str) -> None:
    """Scores on a grid tie many run means, and NaN cells change which topics each mean uses:
    the vectorised means must be np.nanmean's to the last bit for the ties to fall alike."""
    rng = np.random.default_rng(4)
    x, y = judged_pair(rng, 12, 16, grid=3, missing=0.2)
    got = judge_agreement(x, y, measure, resamples=400, seed=9)
    low, high, undefined, _ = reference_bootstrap(x, y, FUNCTIONS[measure], 400, 0.95, 9)
    assert (got.low, got.high, got.undefined_resamples) == (low, high, undefined)
    if measure == "tau_ap":  # tied reference means leave tau_AP undefined on some resamples
        assert got.undefined_resamples > 0 and any("undefined" in n for n in got.notes)


def test_chunking_and_generators_do_not_change_the_result(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(5)
    x, y = judged_pair(rng, 20, 12, missing=0.1)
    whole = judge_agreement(x, y, "kendall", resamples=250, seed=3)
    assert judge_agreement(x, y, "kendall", resamples=250, seed=np.random.default_rng(3)) == whole
    monkeypatch.setattr(judge_meta, "_CHUNK_CELLS", 7 * 20 * 12)  # 7 resamples per chunk
    assert judge_agreement(x, y, "kendall", resamples=250, seed=3) == whole
    assert judge_agreement(x, y, "kendall", resamples=250, seed=4) != whole


def test_identical_judgments_give_one_and_a_degenerate_interval() -> None:
    rng = np.random.default_rng(6)
    x, _ = judged_pair(rng, 30, 20)
    for measure in ("kendall", "tau_ap", "tau_ap_b", "tau_top_k"):
        got = judge_agreement(x, x.copy(), measure, resamples=200)
        assert (got.value, got.low, got.high, got.undefined_resamples) == (1.0, 1.0, 1.0, 0), measure
    for measure in ("spearman", "pearson"):
        got = judge_agreement(x, x.copy(), measure, resamples=200)
        assert got.value == pytest.approx(1.0, abs=1e-12) and got.low == pytest.approx(1.0, abs=1e-12)
        assert got.high == pytest.approx(1.0, abs=1e-12)


def test_a_reversed_judge_gives_minus_one() -> None:
    x = np.tile(np.linspace(0, 1, 8), (10, 1)) + np.random.default_rng(0).normal(0, 1e-3, (10, 8))
    got = judge_agreement(x, -x, "kendall", resamples=100)
    assert got.value == -1.0 and got.low == got.high == -1.0


def test_interval_brackets_the_value_and_narrows_with_more_topics() -> None:
    rng = np.random.default_rng(7)
    x, y = judged_pair(rng, 200, 25, noise=0.3)
    small = judge_agreement(x[:20], y[:20], "kendall", resamples=500)
    large = judge_agreement(x, y, "kendall", resamples=500)
    for got in (small, large):
        assert -1 <= got.low <= got.value <= got.high <= 1
    assert large.high - large.low < small.high - small.low


def test_coverage_of_a_known_agreement() -> None:
    """A simulation where the population statistic is known: a candidate drawn independently of
    the reference (population tau 0), whose interval should cover 0 in most replications. (The
    other extreme, identical judgments with tau 1, is the degenerate [1, 1] test above.)"""
    covered = 0
    for rep in range(40):
        rng = np.random.default_rng(100 + rep)
        x = rng.random((25, 12))
        y = rng.random((25, 12))  # independent of x: no agreement in the population
        got = judge_agreement(x, y, "kendall", resamples=300, seed=rep)
        covered += got.low <= 0.0 <= got.high
    assert covered >= 30  # 95% nominal (40 of 40 here); the percentile bootstrap of a tau of means is not exact


# ------------------------------------------------------------------ NaN handling
def test_a_run_scored_on_no_topic_is_left_out_with_a_note() -> None:
    rng = np.random.default_rng(8)
    x, y = judged_pair(rng, 18, 10)
    x[:, 3] = np.nan
    y[:, 7] = np.nan
    got = judge_agreement(x, y, "kendall", resamples=100)
    assert got.n_runs == 8 and got.n_topics == 18
    assert got.value == ra.tau_b(np.delete(nanmean(x), [3, 7]), np.delete(nanmean(y), [3, 7]))
    assert any("2 runs left out" in n and "column 3, 7" in n for n in got.notes)
    low, high, undefined, _ = reference_bootstrap(x, y, ra.tau_b, 100, 0.95, 0)
    assert (got.low, got.high, got.undefined_resamples) == (low, high, undefined)


def test_a_run_missing_from_a_resample_is_left_out_of_that_resample() -> None:
    rng = np.random.default_rng(9)
    x, y = judged_pair(rng, 10, 6)
    x[1:, 0] = np.nan  # run 0 is scored on topic 0 only: many resamples do not draw it
    got = judge_agreement(x, y, "kendall", resamples=300)
    assert got.n_runs == 6 and got.undefined_resamples == 0
    assert any("some run had no scored topic among the drawn ones" in n for n in got.notes)
    low, high, _, values = reference_bootstrap(x, y, ra.tau_b, 300, 0.95, 0)
    assert (got.low, got.high) == (low, high) and not np.isnan(values).any()


def test_undefined_resamples_are_counted_and_left_out_of_the_interval() -> None:
    # two runs, each scored on different topics: a resample drawing only one run's topics leaves a
    # single run, and tau is undefined there
    x = np.array([[0.2, np.nan], [np.nan, 0.5], [0.3, np.nan], [np.nan, 0.1], [0.4, 0.4]])
    y = x + 0.01
    got = judge_agreement(x, y, "kendall", resamples=500, seed=1)
    low, high, undefined, values = reference_bootstrap(x, y, ra.tau_b, 500, 0.95, 1)
    assert got.undefined_resamples == undefined > 0 and (got.low, got.high) == (low, high)
    assert any(f"{undefined} of the 500 resamples leave kendall undefined; the interval is over the other "
               f"{500 - undefined}" in n for n in got.notes)
    assert np.isnan(values).sum() == undefined


def test_everything_undefined() -> None:
    x = np.array([[0.5, 0.5, 0.5], [0.2, 0.2, 0.2]])  # every run has the same mean: tau undefined
    got = judge_agreement(x, x + np.array([0.0, 0.1, 0.2]), "kendall", resamples=50)
    assert math.isnan(got.value) and math.isnan(got.low) and math.isnan(got.high)
    assert got.undefined_resamples == 50
    assert any("undefined on the full topic set: the reference ranks every run equal" in n for n in got.notes)
    # said plainly, not "50 of 50 resample(s) leave kendall undefined; the interval is over the other 0"
    assert "kendall is undefined in all 50 resamples: no interval can be given" in got.notes
    assert not any("resample(s)" in n or "the other 0" in n for n in got.notes)
    # only one run left after the runs scored on no topic are left out
    x = np.array([[0.5, np.nan, np.nan], [0.2, np.nan, np.nan]])
    got = judge_agreement(x, x, "tau_ap_b", resamples=20)
    assert got.n_runs == 1 and math.isnan(got.value) and got.undefined_resamples == 20
    assert any("fewer than two runs" in n for n in got.notes)
    # no run at all
    got = judge_agreement(np.full((3, 2), np.nan), np.zeros((3, 2)), "spearman", resamples=10)
    assert got.n_runs == 0 and math.isnan(got.low) and got.undefined_resamples == 10


def test_tau_ap_with_a_tied_reference() -> None:
    x = np.array([[0.5, 0.5, 0.2, 0.1]] * 4)
    y = np.array([[0.6, 0.5, 0.2, 0.1]] * 4)
    got = judge_agreement(x, y, "tau_ap", resamples=10)
    assert math.isnan(got.value) and any("tau_AP needs a strict reference" in n for n in got.notes)
    assert judge_agreement(x, y, "tau_ap_b", resamples=10).value == pytest.approx(ra.tau_ap_b(x[0], y[0]))


def test_tau_top_k_uses_top_k() -> None:
    rng = np.random.default_rng(10)
    x, y = judged_pair(rng, 15, 20, noise=0.2)
    for k in (3, 5, 20, 50):
        got = judge_agreement(x, y, "tau_top_k", resamples=50, top_k=k)
        assert got.value == ra.tau_top_k(nanmean(x), nanmean(y), k)
        low, high, _, _ = reference_bootstrap(x, y, lambda a, b, k=k: ra.tau_top_k(a, b, k), 50, 0.95, 0)
        assert (got.low, got.high) == (low, high)


# ------------------------------------------------------------------ errors
@pytest.mark.parametrize(("args", "kwargs", "message"), [
    ((np.zeros((3, 4)), np.zeros((3, 5)), "kendall"), {}, "same shape"),
    ((np.zeros(4), np.zeros(4), "kendall"), {}, r"\(topics, runs\) matrices"),
    ((np.zeros((2, 3, 4)), np.zeros((2, 3, 4)), "kendall"), {}, r"\(topics, runs\) matrices"),
    ((np.zeros((0, 4)), np.zeros((0, 4)), "kendall"), {}, "at least one topic"),
    ((np.zeros((3, 1)), np.zeros((3, 1)), "kendall"), {}, "at least two runs"),
    ((np.full((3, 2), np.inf), np.zeros((3, 2)), "kendall"), {}, "infinite"),
    ((np.zeros((3, 2)), np.zeros((3, 2)), "tau"), {}, "unknown measure 'tau'.*kendall, tau_ap"),
    ((np.zeros((3, 2)), np.zeros((3, 2)), "kendall"), {"resamples": 0}, "resamples"),
    ((np.zeros((3, 2)), np.zeros((3, 2)), "kendall"), {"resamples": 2.5}, "resamples"),
    ((np.zeros((3, 2)), np.zeros((3, 2)), "kendall"), {"resamples": True}, "resamples"),
    ((np.zeros((3, 2)), np.zeros((3, 2)), "kendall"), {"level": 1.0}, "level"),
    ((np.zeros((3, 2)), np.zeros((3, 2)), "kendall"), {"level": 0}, "level"),
    ((np.zeros((3, 2)), np.zeros((3, 2)), "tau_top_k"), {"top_k": 0}, "top_k"),
])
def test_errors(args: tuple, kwargs: dict, message: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(ValueError, match=message):
        judge_agreement(*args, **kwargs)


def test_result_is_frozen() -> None:
    got = judge_agreement(np.eye(3), np.eye(3), "kendall", resamples=10)
    assert isinstance(got, JudgeAgreement)
    with pytest.raises(AttributeError):
        got.value = 0.0  # type: ignore[misc]


def test_a_realistic_size() -> None:
    """1000 resamples x 100 runs x 50 topics, every measure (a smoke test: no timing assertion)."""
    rng = np.random.default_rng(11)
    x, y = judged_pair(rng, 50, 100, noise=0.2, missing=0.01)
    for measure in MEASURES:
        got = judge_agreement(x, y, measure)
        assert got.resamples == 1000 and got.n_runs == 100 and got.low <= got.high
        outside = not got.low <= got.value <= got.high
        assert outside == any("outside the percentile interval" in n for n in got.notes)
    # the percentile interval is not bias-corrected: here kendall's full-sample value (0.914) lies
    # above the resamples' 97.5% quantile (0.910), and the notes say so
    got = judge_agreement(x, y, "kendall")
    assert got.value > got.high and any("biases kendall (usually down)" in n for n in got.notes)


# --------------------------------------------------------------------------- the topics both judged (issue 25, item 8)
def test_common_topics_keep_the_topics_both_judged_and_score_zero_where_one_found_nothing_relevant() -> None:
    from service.metrics.stats.judge_meta import common_topics

    rng = np.random.default_rng(5)
    topics = ["t1", "t2", "t3", "t4", "t5"]
    x, y = rng.random((5, 4)), rng.random((5, 4))
    x[4] = np.nan  # t5: a judged it, nothing relevant (no score)
    y[1] = np.nan  # t2: b judged it, nothing relevant
    y[2] = np.nan  # t3: b never judged it
    judged_a = {"t1": True, "t2": True, "t3": True, "t4": True, "t5": False, "t6": False}
    judged_b = {"t1": True, "t2": False, "t4": True, "t5": True, "t6": False, "t7": True}
    ct = common_topics(topics, x, y, judged_a, judged_b)
    assert ct.topics == ("t1", "t2", "t4", "t5")
    assert (ct.only_a, ct.only_b, ct.no_relevant) == (("t3",), ("t7",), ("t6",))
    assert (ct.zero_a, ct.zero_b) == (("t5",), ("t2",))
    np.testing.assert_array_equal(ct.reference, np.vstack([x[0], x[1], x[3], np.zeros(4)]))
    np.testing.assert_array_equal(ct.candidate, np.vstack([y[0], np.zeros(4), y[3], y[4]]))
    ma, mb = ct.means()
    np.testing.assert_allclose(ma, ct.reference.mean(axis=0), rtol=0, atol=1e-15)
    np.testing.assert_allclose(mb, ct.candidate.mean(axis=0), rtol=0, atol=1e-15)
    summary = ct.summary()
    assert (summary["compared"], summary["left_out"]) == (4, 3)
    assert "compared on the 4 topics both sets judged; 3 left out (1 judged by a only, 1 by b only" in \
        summary["sentence"] and "1 compared topic judged by a and 1 by b without any relevant document score 0" \
        in summary["sentence"]


def test_common_topics_without_judged_topics_use_the_scored_ones_and_keep_missing_runs_missing() -> None:
    from service.metrics.stats.judge_meta import common_topics

    x = np.array([[0.5, np.nan], [0.2, 0.4], [np.nan, np.nan]])
    y = np.array([[0.1, 0.3], [np.nan, np.nan], [0.7, 0.6]])
    ct = common_topics(["a", "b", "c"], x, y)
    assert ct.topics == ("a",) and ct.only_a == ("b",) and ct.only_b == ("c",) and not ct.zero_a
    assert np.isnan(ct.reference[0, 1])  # a run without a score on a compared topic stays unscored
    ma, _ = ct.means()
    assert np.isnan(ma[1])
    with pytest.raises(ValueError, match="matrices of 2 topics"):
        common_topics(["a", "b"], x, y)


def test_the_judge_board_ranks_on_the_topics_both_judged() -> None:
    """rank_judges (judge_track) compares each set with the official one on the topics both
    judged: the same figures as judge_agreement on the matrices cut by hand."""
    from service.evaluation.judging.judge_track import rank_judges

    rng = np.random.default_rng(9)
    runs = [f"r{i}" for i in range(6)]
    topics = [f"t{i}" for i in range(8)]
    official = {r: {t: float(rng.random()) for t in topics} for r in runs}
    judge = {r: {t: float(rng.random()) for t in topics[:5]} for r in runs}  # judged t0..t4; t4 nothing relevant
    for r in runs:
        del judge[r]["t4"]
    params = {"measure": "kendall", "resamples": 200, "level": 0.95, "seed": 0, "top_k": 10}
    doc = rank_judges(official, [{"judgment_set": "j", "team": None, "source": "llm", "model": "m", "version": 1,
                                  "scores": judge, "judged": {t: t != "t4" for t in topics[:5]}}],
                      "nDCG@10", params, {t: True for t in topics})
    (row,) = doc["rows"]
    assert (row["topics"], row["topics_left_out"]) == (5, 3)
    x = np.array([[official[r][t] for r in runs] for t in topics[:5]])
    y = np.array([[judge[r].get(t, 0.0) for r in runs] for t in topics[:5]])
    expected = judge_agreement(x, y, "kendall", resamples=200, level=0.95, seed=0)
    assert row["value"] == pytest.approx(expected.value, abs=1e-12)
    assert (row["low"], row["high"]) == (pytest.approx(expected.low, abs=1e-12), pytest.approx(expected.high,
                                                                                             abs=1e-12))
    assert row["bias"] == pytest.approx(np.mean(y.mean(axis=1) - x.mean(axis=1)), abs=1e-12)
    assert "compared on the 5 topics" in row["compared_topics"]
    assert "0 compared topics judged by a and 1 by b without any relevant document scores 0" in row["compared_topics"]
