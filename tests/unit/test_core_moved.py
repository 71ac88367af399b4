"""The statistics that used to live in the use cases, now in the core: the stored mean
interval, the meta-evaluation of a job, the reusability analysis and the reduced-judgment
experiment. Expected values are worked out by hand beside each assertion (or are the core's
own lower-level functions, where the function under test only assembles them)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from service.formats.types import Qrels, Run
from service.metrics import pooling
from service.metrics.scoring import EvalSettings
from service.metrics.stats.intervals import mean_interval
from service.metrics.stats.meta import (
    asl_curve,
    discriminative_power,
    meta_evaluation,
    reduced_judgments,
    reduction_experiment,
)


# --------------------------------------------------------------------------- intervals
def test_mean_interval_of_the_scored_topics() -> None:
    # scored: 0.2, 0.4, 0.6 -> mean 0.4, s = 0.2, n = 3; t_{0.975, 2} = 4.302652729911275
    r = mean_interval(np.array([0.2, np.nan, 0.4, 0.6]))
    assert r.n == 3 and r.mean == pytest.approx(0.4)
    assert r.margin == pytest.approx(4.302652729911275 * 0.2 / math.sqrt(3))  # 0.49683...
    assert (r.low, r.high) == (pytest.approx(0.4 - 0.49683, abs=1e-5), pytest.approx(0.4 + 0.49683, abs=1e-5))
    # 90%: t_{0.95, 2} = 2.919985580355516
    ninety = mean_interval(np.array([0.2, 0.4, 0.6]), level=0.9)
    assert ninety.margin == pytest.approx(2.919985580355516 * 0.2 / math.sqrt(3))


def test_mean_interval_is_undefined_below_two_topics_and_the_level_is_checked() -> None:
    one = mean_interval(np.array([np.nan, 0.5]))
    assert one.n == 1 and one.mean == 0.5 and math.isnan(one.margin) and math.isnan(one.low)
    none = mean_interval(np.array([np.nan]))
    assert none.n == 0 and math.isnan(none.mean)
    with pytest.raises(ValueError, match="level"):
        mean_interval(np.array([0.1, 0.2]), level=1.0)


def test_mean_interval_equals_the_t_formula_bit_for_bit() -> None:
    """The stored interval must not move: the same expression as before the move."""
    values = np.random.default_rng(3).uniform(size=50)
    expected = float(stats.t.ppf(0.975, 49) * values.std(ddof=1) / np.sqrt(50))
    assert mean_interval(values).margin == expected and mean_interval(values).mean == float(values.mean())


# ------------------------------------------------------------------------ meta-evaluation
def test_asl_curve_sorts_drops_non_finite_and_thins() -> None:
    assert asl_curve(np.array([0.5, np.nan, 0.01, 0.2])) == [(1, 0.01), (2, 0.2), (3, 0.5)]
    assert asl_curve(np.array([np.nan])) == []
    thinned = asl_curve(np.linspace(0, 1, 1001), points=200)
    assert len(thinned) == 200 and thinned[0] == (1, 0.0) and thinned[-1] == (1001, 1.0)


def test_meta_evaluation_power_tau_and_threshold() -> None:
    rng = np.random.default_rng(0)
    base = rng.uniform(0.2, 0.4, size=(30, 1))
    up = base + np.array([0.0, 0.2, 0.4]) + rng.normal(0, 0.02, (30, 3))  # runs 10 < 11 < 12
    down = base + np.array([0.4, 0.2, 0.0]) + rng.normal(0, 0.02, (30, 3))  # the reverse ranking
    meta = meta_evaluation({"M1": ([10, 11, 12], up), "M2": ([10, 11, 12], down),
                            "few": ([10, 11], np.array([[0.1, 0.2]])),  # one topic: power cannot be computed
                            "alone": ([10], up[:, :1])},  # one run: left out
                           alpha=0.05, resamples=200, seed=1)
    assert meta.alpha == 0.05 and meta.resamples == 200
    assert set(meta.power) == {"M1", "M2"} and set(meta.errors) == {"few"}
    assert "at least 2 topics" in meta.errors["few"]
    direct = discriminative_power(up, alpha=0.05, resamples=200, seed=1)
    m1 = meta.power["M1"]
    assert (m1.power, m1.significant_pairs, m1.pairs) == (1.0, 3, 3) == (direct.power, direct.significant_pairs, 3)
    assert m1.difference_required == direct.difference_required
    assert m1.asl_curve == asl_curve(direct.asl)
    # the two rankings are exactly reversed: every one of the 3 pairs discordant, tau = -1
    assert meta.tau == {("M1", "M2"): pytest.approx(-1.0)}
    # z_{0.995} sqrt(2(2n + 5) / (9n(n - 1))) with n = 3: 2.5758293 * sqrt(22 / 54) = 1.64410...
    assert meta.tau_significant_above == pytest.approx(2.5758293035489 * math.sqrt(22 / 54))


def test_meta_evaluation_of_nothing() -> None:
    meta = meta_evaluation({}, alpha=0.05, resamples=10, seed=0)
    assert meta.power == {} and meta.tau == {} and meta.tau_significant_above is None


# ---------------------------------------------------------------------------- reusability
A = Run.from_rankings("A", {"1": ["d1", "d2", "d3"], "2": ["e1", "e2"]})
B = Run.from_rankings("B", {"1": ["d2", "d4", "d1"], "2": ["e3"]})
C = Run.from_rankings("C", {"1": ["d5"], "2": ["e1", "e4"]})
QRELS = Qrels.from_mapping({"1": {"d1": 1, "d2": 2, "d3": 1, "d4": 0, "d5": 3, "d6": -1},
                            "2": {"e1": 1, "e2": 0, "e4": 2}})


def test_pool_statistics_count_the_union_judged_and_relevant() -> None:
    contrib = pooling.contributions({"A": A, "B": B}, {"A": "A", "B": "B"}, 2)
    # topic 1: {d1, d2, d4}, all judged, d1 and d2 relevant; topic 2: {e1, e2, e3}: e3 unjudged, e1 relevant
    assert pooling.pool_statistics(QRELS, contrib) == [pooling.TopicPool("1", 3, 3, 2), pooling.TopicPool("2", 3, 2, 1)]
    assert pooling.pool_statistics(QRELS, contrib)[1].judged_share == pytest.approx(2 / 3)
    # a topic the qrels do not have: nothing judged; an empty union has no share
    assert pooling.pool_statistics(QRELS, {"9": {"x": {"A"}}, "8": {}}) == [pooling.TopicPool("8", 0, 0, 0),
                                                                            pooling.TopicPool("9", 1, 0, 0)]
    assert pooling.TopicPool("8", 0, 0, 0).judged_share is None


def test_reusability_of_a_pool_made_of_some_runs() -> None:
    teams = {"A": "x", "B": "x", "C": "y"}
    r = pooling.reusability(QRELS, [A, B, C], teams, "AP", 3, EvalSettings(), pooled=["A", "C"])
    # pool of A and C at depth 3: topic 1 {d1, d2, d3, d5}, topic 2 {e1, e2, e4}: all judged;
    # relevant: 4 of topic 1's, e1 and e4 of topic 2's
    assert r.topics == [pooling.TopicPool("1", 4, 4, 4), pooling.TopicPool("2", 3, 3, 2)]
    assert r.mean_judged_share == 1.0
    rows = {x.run: x for x in r.runs}
    assert [x.run for x in r.runs] == ["A", "B", "C"] and [x.pooled for x in r.runs] == [True, False, True]
    # B is not pooled, so A alone contributed d1, d2, d3 (relevant) and e2 (not); C alone d5 and e4
    assert {t: x.unique_relevant for t, x in rows.items()} == {"A": 3, "B": 0, "C": 2}
    # Judged@10 = judged in the top 10 / 10: A (3 + 2) / 20, B (3 + 0) / 20, C (1 + 2) / 20
    assert [x.judged_at_10 for x in r.runs] == pytest.approx([0.25, 0.15, 0.15])
    # Judged@3: A (3/3 + 2/3) / 2, B (3/3 + 0) / 2, C (1/3 + 2/3) / 2
    assert [x.judged_at_depth for x in r.runs] == pytest.approx([5 / 6, 0.5, 0.5])
    assert r.teams == [pooling.TeamContribution("x", 3, ["A", "B"]), pooling.TeamContribution("y", 2, ["C"])]
    assert r.leave_one_team_out == pooling.leave_one_team_out(QRELS, [A, B, C], teams, "AP", 3, EvalSettings(),
                                                              pooled=["A", "C"])


# --------------------------------------------------------------------- reduced judgments
def test_settings_keep_the_declared_top_level_or_take_the_judgments() -> None:
    assert EvalSettings().with_max_level_of(QRELS).max_level == 3  # d5 is judged 3
    assert EvalSettings(max_level=4).with_max_level_of(QRELS).max_level == 4


def test_reduced_judgments_fix_the_gain_scale_and_list_the_shares() -> None:
    runs = [A, B, C]
    r = reduced_judgments(QRELS, runs, ["nDCG", "AP"], EvalSettings(), [50.0], alpha=0.05, resamples=50, seed=2)
    assert r.kept == [100.0, 50.0] and r.runs == 3
    rows, _ = reduction_experiment(QRELS, runs, ["nDCG", "AP"], EvalSettings(max_level=3), [50.0], 0.05, 50, 2)
    assert r.rows == rows
    assert [(row["kept"], row["metric"]) for row in r.rows] == [(100.0, "nDCG"), (100.0, "AP"), (50.0, "nDCG"),
                                                                 (50.0, "AP")]
    assert all(row["tau_vs_full"] == 1.0 for row in r.rows if row["kept"] == 100.0)
