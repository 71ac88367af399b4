"""The difference between two runs (service/metrics/stats/differences.py): its intervals and
effect size against scipy and the CLI's own definitions, and the explanation of a test that
disagrees with an interval (issue 14, item 5)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from service.metrics.stats.anova import effect_sizes
from service.metrics.stats.differences import (
    describe_test,
    explain_disagreement,
    named_test,
    p_value_label,
    paired_difference,
)
from service.metrics.stats.intervals import bootstrap_interval
from service.metrics.stats.pairwise import pairwise
from service.metrics.stats.presentation import format_p

# AP of RUN-01 and RUN-07 of samples/ntcir-like (`cranfield eval ... -m AP --format matrix`): run 1
# is better on 17 topics by about 0.35 and worse on two (0001 and 0018) by about 0.27.
SAMPLE_TOPICS = [f"{i:04d}" for i in range(1, 20)]
SAMPLE_A = [0.0, 0.605851, 0.562422, 0.581084, 0.618456, 0.560782, 0.576442, 0.566261, 0.564032, 0.591966,
            0.555701, 0.58726, 0.604003, 0.606529, 0.599233, 0.595949, 0.498079, 0.0, 0.618373]
SAMPLE_B = [0.290866, 0.205006, 0.198436, 0.156056, 0.272692, 0.269055, 0.239863, 0.241618, 0.235712, 0.258738,
            0.271339, 0.23725, 0.261873, 0.233979, 0.118509, 0.232626, 0.205219, 0.254751, 0.247285]


def stored_like(a: list[float] | np.ndarray, b: list[float] | np.ndarray, test: str = "bootstrap",
                correction: str = "none") -> float:
    """The p the workers store for the pair: ``pairwise`` with the default settings (B = 1000, seed 0)."""
    return float(pairwise(np.column_stack([a, b]), ["a", "b"], test, resamples=1000, seed=0,
                          correction=correction).p_adjusted[0])


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(14)


def test_the_t_interval_is_scipys_paired_t_interval(rng: np.random.Generator) -> None:
    for n in (2, 5, 19, 50):
        a, b = rng.uniform(size=n), rng.uniform(size=n)
        for level in (0.9, 0.95, 0.99):
            d = paired_difference(a, b, level=level)
            ci = stats.ttest_rel(a, b).confidence_interval(level)
            assert d.t_low == pytest.approx(ci.low, rel=1e-10, abs=1e-12)
            assert d.t_high == pytest.approx(ci.high, rel=1e-10, abs=1e-12)
            assert d.t == pytest.approx(stats.ttest_rel(a, b).statistic, rel=1e-10)
            assert d.mean == pytest.approx(float(np.mean(a - b)), abs=1e-15) and d.n == n


def test_the_effect_size_is_the_one_cranfield_compare_prints(rng: np.random.Generator) -> None:
    """``cranfield compare`` prints ``anova.effect_sizes(...).standardised``: mean(d)/sd(d)."""
    for _ in range(5):
        x = rng.uniform(size=(23, 2))
        d = paired_difference(x[:, 0], x[:, 1])
        assert d.effect_size == pytest.approx(float(effect_sizes(x, resamples=10, seed=0).standardised[0]), rel=1e-12)
    # the sample's pair: the figure `cranfield compare` printed for RUN-01 vs RUN-07 on AP
    assert paired_difference(SAMPLE_A, SAMPLE_B).effect_size == pytest.approx(1.416405, abs=1e-6)
    # a constant non-zero difference is an infinite effect (the t-statistic rule), none at all is 0
    assert paired_difference([0.3, 0.4, 0.5], [0.2, 0.3, 0.4]).effect_size == math.inf
    same = paired_difference([0.3, 0.4, 0.5], [0.3, 0.4, 0.5])
    assert same.effect_size == 0.0 and same.t_low == same.t_high == 0.0


def test_the_bootstrap_interval_is_bootstrap_interval_of_the_differences(rng: np.random.Generator) -> None:
    a, b = rng.uniform(size=30), rng.uniform(size=30)
    for method in ("bca", "percentile"):
        d = paired_difference(a, b, resamples=500, seed=7, method=method, level=0.9)
        expected = bootstrap_interval(a - b, resamples=500, seed=7, method=method, level=0.9)
        assert (d.bootstrap.low, d.bootstrap.high) == (expected.low, expected.high)
        assert (d.bootstrap.method, d.bootstrap.resamples, d.bootstrap.level, d.seed) == (method, 500, 0.9, 7)
    # the same seed gives the same interval (a page reloaded shows the same numbers); another seed does not
    first, again = paired_difference(a, b, seed=3), paired_difference(a, b, seed=3)
    assert (first.bootstrap.low, first.bootstrap.high) == (again.bootstrap.low, again.bootstrap.high)
    assert paired_difference(a, b, seed=4).bootstrap.low != first.bootstrap.low


def test_wins_ties_losses_missing_topics_and_bad_input() -> None:
    d = paired_difference([0.5, 0.2, 0.3, np.nan, 0.9], [0.1, 0.2, 0.4, 0.5, np.nan], topics=list("vwxyz"))
    assert (d.wins, d.ties, d.losses, d.n, d.dropped) == (1, 1, 1, 3, 2)
    assert d.topics == ("v", "w", "x") and d.differences.tolist() == pytest.approx([0.4, 0.0, -0.1])
    assert d.other_way() == [("x", pytest.approx(-0.1))]
    with pytest.raises(ValueError, match="at least 2 topics"):
        paired_difference([0.5, np.nan], [0.1, 0.2])
    with pytest.raises(ValueError, match="same length"):
        paired_difference([0.5, 0.1], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="topic names"):
        paired_difference([0.5, 0.1], [0.1, 0.2], topics=["only one"])


def test_the_samples_studentised_bootstrap_disagreement_is_explained() -> None:
    """RUN-01 vs RUN-07 on AP: ASL above alpha, both intervals exclude 0."""
    p = stored_like(SAMPLE_A, SAMPLE_B)
    d = paired_difference(SAMPLE_A, SAMPLE_B, topics=SAMPLE_TOPICS)
    assert p >= 0.05 and d.t == pytest.approx(6.17, abs=0.01)
    assert d.t_low > 0 and d.bootstrap.low > 0
    text = explain_disagreement(p, 0.05, "bootstrap", d)
    assert text is not None
    assert f"p = {format_p(p, 0.05)} ≥ α = 0.05" in text  # printed on its side of alpha (issue 25, item 3)
    assert "2 the other" in text and "17 of 19" in text  # how many topics go the other way
    assert "topic 0001, −0.291" in text  # and the largest of them
    assert "heavy tails" in text and "assumes normally distributed differences" in text
    assert "better guide" in text  # which to trust
    assert "per-topic differences" in text  # where to look
    assert "adjusted" not in text  # no correction was applied


def test_a_constructed_disagreement_of_the_same_shape() -> None:
    """19 topics, 17 gains near +0.3 and two large losses: the studentised bootstrap's ASL is
    large while both intervals exclude 0; the explanation names the two topics' share."""
    noise = np.random.default_rng(1).normal(0, 0.02, 17)
    diffs = np.concatenate([0.3 + noise, [-0.45, -0.35]])
    b = np.full(19, 0.5)
    a = b + diffs
    topics = [f"t{i}" for i in range(19)]
    p = stored_like(a, b)
    d = paired_difference(a, b, topics=topics)
    assert p >= 0.05 and d.t_low > 0 and d.bootstrap.low > 0, (p, d.t_low, d.bootstrap.low)
    text = explain_disagreement(p, 0.05, "bootstrap", d)
    assert text is not None and "topic t17, −0.450" in text and "both of those topics" in text
    assert f"{100 * (17 / 19) ** 19:.0f}% of them" in text


def test_agreement_says_nothing(rng: np.random.Generator) -> None:
    clear_b = rng.uniform(0.2, 0.4, 25)
    clear_a = clear_b + rng.normal(0.1, 0.03, 25)  # a clearly better run
    p = stored_like(clear_a, clear_b)
    d = paired_difference(clear_a, clear_b)
    assert p < 0.05 and d.t_low > 0 and d.bootstrap.low > 0
    assert explain_disagreement(p, 0.05, "bootstrap", d) is None
    x = rng.uniform(0.2, 0.4, 25)
    y = x + rng.normal(0.0, 0.05, 25)  # no real difference
    for test in ("bootstrap", "t", "wilcoxon", "sign", "randomisation"):
        p = stored_like(x, y, test)
        d = paired_difference(x, y)
        assert p >= 0.05 and d.t_low < 0 < d.t_high and d.bootstrap.low < 0 < d.bootstrap.high, test
        assert explain_disagreement(p, 0.05, test, d) is None, test
    # no stored p, or an interval that cannot be computed: nothing to explain
    assert explain_disagreement(None, 0.05, "bootstrap", d) is None
    assert explain_disagreement(float("nan"), 0.05, "bootstrap", d) is None
    # the t-test and the t interval at level 1 - alpha always agree
    for i in range(20):
        a, b = rng.uniform(size=12), rng.uniform(size=12)
        d = paired_difference(a, b)
        p = stored_like(a, b, "t")
        assert (p < 0.05) == (d.t_low > 0 or d.t_high < 0), i


def test_a_correction_and_a_different_level_are_named() -> None:
    d = paired_difference(SAMPLE_A, SAMPLE_B, topics=SAMPLE_TOPICS)
    text = explain_disagreement(0.09, 0.05, "t", d, correction="holm", n_comparisons=28)
    assert text is not None and "Holm-adjusted for the 28 comparisons" in text and "this pair alone" in text
    # a t-test at alpha 0.01 against 95% intervals: the levels are named
    z = stats.norm.ppf((np.arange(20) + 0.5) / 20)
    b = np.linspace(0.2, 0.4, 20)
    a = b + 2.5 * 0.05 / math.sqrt(20) + 0.05 * z / z.std(ddof=1)  # t = 2.5 on 19 df: p = 0.022
    d = paired_difference(a, b)
    p = stored_like(a, b, "t")
    assert 0.01 <= p < 0.05 and d.t_low > 0, p
    text = explain_disagreement(p, 0.01, "t", d)
    assert text is not None and "at 95% while the test uses α = 0.01" in text and "at 99%" in text


def test_a_sign_test_that_disagrees_with_the_mean() -> None:
    """15 small wins and 4 large losses: the sign test is significant, the mean difference not."""
    diffs = np.array([0.02] * 15 + [-0.1, -0.09, -0.08, -0.07])
    b = np.full(19, 0.5)
    p = stored_like(b + diffs, b, "sign")
    d = paired_difference(b + diffs, b)
    assert p < 0.05 and d.t_low < 0 < d.t_high
    text = explain_disagreement(p, 0.05, "sign", d)
    assert text is not None and "counts only which run wins on each topic (15 wins, 0 ties, 4 losses)" in text
    assert "includes 0" in text or "include 0" in text


def test_the_tests_are_named_with_their_parameters() -> None:
    assert named_test("bootstrap", 1000) == "paired bootstrap test (studentised), B = 1000"
    assert named_test("t", 1000) == "paired t-test"  # no B: the t-test does not resample
    assert p_value_label("bootstrap", "holm", 28) == "p-values (Holm-adjusted for the 28 comparisons)"
    assert p_value_label("t", "bh", 3) == "p-values (Benjamini-Hochberg-adjusted for the 3 comparisons)"
    assert p_value_label("t", "none", 3) == "p-values (no correction for multiple comparisons)"
    assert "adjusted" not in p_value_label("tukey", "none", 3)
    assert describe_test("randomisation", alpha=0.05, correction="none", resamples=500) == (
        "Fisher's randomisation test, B = 500, α = 0.05; p-values (no correction for multiple comparisons)")


def test_the_share_of_resamples_is_said_in_words_never_about_zero() -> None:
    """Issue 37, item 7: 15 of 43 topics go the other way; a resample leaves all 15 out about
    once in 10^8 draws, which was printed "about 0% of them: ((n − 15)/n)^n with n = 43". It is
    said in words now, and the tail is put down to the resamples that leave out most of them."""
    diffs = np.array([0.5] * 28 + [-0.05] * 15)
    b = np.full(43, 0.3)
    d = paired_difference(b + diffs, b)
    assert d.t_low > 0 and d.bootstrap.low > 0
    text = explain_disagreement(0.2, 0.05, "bootstrap", d)  # a p forced above alpha: the test and intervals part
    assert text is not None
    assert ("resamples that leave out most of those 15 topics have little spread, so their t statistics are large "
            "(a resample that leaves out all 15 is rare, fewer than 1 in a million, as each resample draws 43 "
            "topics at random, with replacement)") in text
    assert "about 0%" not in text and "^n" not in text and "n = 43" not in text


def test_counts_in_the_explanation_agree_with_their_nouns() -> None:
    """Issue 37, item 7: "1 tie, 1 loss", "1 of 17 topics goes", not "1 ties, 1 losses"."""
    diffs = np.array([0.05] * 15 + [0.0, -0.6])
    b = np.full(17, 0.5)
    d = paired_difference(b + diffs, b, topics=[f"t{i}" for i in range(17)])
    assert d.t_low < 0 < d.t_high
    text = explain_disagreement(0.001, 0.05, "sign", d)  # a p forced below alpha
    assert text is not None and "(15 wins, 1 tie, 1 loss)" in text
    assert "1 losses" not in text and "1 ties" not in text
    assert "15 topics go one way" in text and "1 the other" in text


def test_the_shape_sentence_skewness_is_scipys() -> None:
    # _shape calls the differences skewed when |skewness| >= 1: scipy.stats.skew's (biased)
    # figure, computed with numpy alone (no scipy.stats import in a short command)
    from scipy import stats

    from service.metrics.stats.differences import _skewness

    rng = np.random.default_rng(4)
    for x in [rng.random(50), rng.exponential(size=30), np.array([0.0, 0.0, 0.1, 0.9]), -rng.exponential(size=12)]:
        assert _skewness(x) == pytest.approx(float(stats.skew(x)), rel=1e-12, abs=1e-15)
    assert _skewness(np.full(5, 0.3)) == 0.0
