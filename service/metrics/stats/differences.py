"""The difference between two runs on the same topics, and why a test and an interval can disagree.

:func:`paired_difference` summarises the per-topic differences d = x_a - x_b of one pair of
runs: their mean, the Student t interval of that mean, its bootstrap interval
(:func:`service.metrics.stats.intervals.bootstrap_interval`), the standardised effect size
mean(d)/sd(d) (the definition of ``anova.effect_sizes``, which ``cranfield compare`` prints) and
the wins, ties and losses of run a.

:func:`explain_disagreement` says, in plain language, why a test's verdict (p < alpha) and an
interval's verdict (it excludes 0) differ for the pair, when they do: with the studentised
bootstrap a few topics going the other way make the resampled t statistics heavy-tailed; a
correction for multiple comparisons applies to the p-value and not to the intervals; rank and
sign tests do not weigh the size of a difference; an interval's level may not be 1 - alpha.

:func:`named_test` and :func:`p_value_label` name a stored test and what its p-values are, so
that every page describes a statistic with the parameters it was computed with.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from service.metrics.stats.common import t_ppf, t_statistic
from service.metrics.stats.intervals import BootstrapInterval, bootstrap_interval

#: Plain names of the tests of ``pairwise`` (docs/statistics.md).
TEST_NAMES = {
    "bootstrap": "paired bootstrap test (studentised)",
    "t": "paired t-test",
    "wilcoxon": "Wilcoxon signed-rank test",
    "sign": "sign test",
    "randomisation": "Fisher's randomisation test",
    "tukey": "randomised Tukey HSD test",
    "friedman": "Friedman test with Nemenyi's pairwise comparisons",
}
#: The tests whose p-value is a Monte-Carlo estimate over B resamples or permutations.
RESAMPLING_TESTS = frozenset({"bootstrap", "randomisation", "tukey"})
#: The tests that control the error over all pairs of runs themselves (no correction is applied to them).
FAMILY_WISE_TESTS = frozenset({"tukey", "friedman"})
CORRECTION_NAMES = {"holm": "Holm", "bh": "Benjamini-Hochberg"}


def named_test(test: str, resamples: int | None = None) -> str:
    """"paired bootstrap test (studentised), B = 1000": the test, and B when it resamples."""
    name = TEST_NAMES.get(test, test)
    if test in RESAMPLING_TESTS and resamples:
        name += f", B = {resamples}"
    return name


def bootstrap_method_name(method: str) -> str:
    """"BCa" or "percentile": how a bootstrap interval is named on a page."""
    return "BCa" if method == "bca" else method


def comparisons(runs: int) -> int:
    """The number of run pairs among ``runs`` runs: what a correction adjusts for."""
    return runs * (runs - 1) // 2


def adjusted(test: str, correction: str | None) -> bool:
    """Whether the stored p-values were adjusted by a correction for multiple comparisons."""
    return correction in CORRECTION_NAMES and test not in FAMILY_WISE_TESTS


def p_value_label(test: str, correction: str | None, n_comparisons: int | None = None) -> str:
    """What the stored p-values are: "p-values (Holm-adjusted for the 28 comparisons)",
    "p-values (Benjamini-Hochberg-adjusted for the 28 comparisons)", or "p-values (no
    correction for multiple comparisons)". The Tukey HSD and Nemenyi's comparisons control the
    error over all pairs themselves, and say so."""
    among = f" for the {n_comparisons} comparisons" if n_comparisons else ""
    if test in FAMILY_WISE_TESTS:
        pairs = f" over all {n_comparisons} pairs" if n_comparisons else " over all pairs"
        return f"p-values (family-wise{pairs}, by the test itself)"
    if correction in CORRECTION_NAMES:
        return f"p-values ({CORRECTION_NAMES[correction]}-adjusted{among})"
    return "p-values (no correction for multiple comparisons)"


def correction_tag(test: str, correction: str | None) -> str:
    """The short form of :func:`p_value_label`: "Holm-adjusted", "no correction", ..."""
    if test in FAMILY_WISE_TESTS:
        return "family-wise, by the test"
    if correction in CORRECTION_NAMES:
        return f"{CORRECTION_NAMES[correction]}-adjusted"
    return "no correction"


def describe_test(test: str, *, alpha: float, correction: str | None, resamples: int | None = None,
                  n_comparisons: int | None = None) -> str:
    """The test with every parameter it was run with: name, B when it resamples, alpha, correction."""
    return f"{named_test(test, resamples)}, α = {alpha:g}; {p_value_label(test, correction, n_comparisons)}"


@dataclass(frozen=True, eq=False)
class PairedDifference:
    """The per-topic differences d = x_a - x_b of one pair of runs, summarised.

    Topics where either run has no score (NaN) are left out (``dropped`` says how many).
    """

    n: int  # topics compared
    dropped: int  # topics left out: a score missing in either run
    mean: float  # mean(d)
    sd: float  # sample standard deviation of d (ddof = 1); 0 when the differences are constant
    level: float  # of both intervals
    t_low: float  # Student t interval of mean(d): mean +- t_{(1+level)/2, n-1} sd / sqrt(n)
    t_high: float
    t: float  # the paired t statistic mean / (sd / sqrt(n)) (+-inf for a constant non-zero difference)
    bootstrap: BootstrapInterval  # the bootstrap interval of mean(d), with its method, level and B
    seed: int  # of the bootstrap draw
    effect_size: float  # mean(d) / sd(d): ``anova.effect_sizes(...).standardised``
    wins: int  # topics where d > 0
    ties: int
    losses: int
    differences: np.ndarray  # d on the compared topics, in input order
    topics: tuple[str, ...] | None = None  # their names, when given

    def other_way(self) -> list[tuple[str, float]]:
        """The topics whose difference has the sign opposite to the mean's, largest first,
        as (topic name or 1-based position, difference)."""
        if self.mean == 0 or not np.isfinite(self.mean):
            return []
        names = self.topics or tuple(str(i + 1) for i in range(self.n))
        found = [(names[i], float(v)) for i, v in enumerate(self.differences.tolist())
                 if v != 0 and (v > 0) != (self.mean > 0)]
        return sorted(found, key=lambda kv: -abs(kv[1]))


def paired_difference(x_a: Sequence[float] | np.ndarray, x_b: Sequence[float] | np.ndarray, *,
                      level: float = 0.95, resamples: int = 1000, seed: int = 0, method: str = "bca",
                      topics: Sequence[str] | None = None) -> PairedDifference:
    """Mean difference of run a over run b with its t and bootstrap intervals, effect size and
    wins/ties/losses. ``x_a`` and ``x_b`` are the runs' scores on the same topics (NaN: not
    scored, left out); ``topics`` optionally names them. Fewer than two topics compared is a
    ``ValueError``. The bootstrap draw depends only on ``seed``, ``resamples`` and the number of
    topics, so the same inputs always give the same interval."""
    a = np.asarray(x_a, dtype=np.float64)
    b = np.asarray(x_b, dtype=np.float64)
    if a.ndim != 1 or a.shape != b.shape:
        raise ValueError(f"x_a and x_b must be two score vectors of the same length, got {a.shape} and {b.shape}")
    if topics is not None and len(topics) != a.shape[0]:
        raise ValueError(f"{len(topics)} topic names for {a.shape[0]} scores")
    if np.isinf(a).any() or np.isinf(b).any():
        raise ValueError("scores contain infinite values")
    keep = ~(np.isnan(a) | np.isnan(b))
    d = a[keep] - b[keep]
    n = int(d.shape[0])
    if n < 2:
        raise ValueError(f"need at least 2 topics scored for both runs, got {n}")
    mean = float(d.mean())
    sd = float(d.std(ddof=1))
    if sd <= 1e-12 * abs(mean):
        sd = 0.0  # round-off of a constant difference (the t-statistic rule of docs/statistics.md)
    margin = float(t_ppf((1.0 + level) / 2.0, n - 1)) * sd / math.sqrt(n)
    t = float(t_statistic(np.array([mean]), np.array([sd]), n)[0])
    effect = float(t_statistic(np.array([mean]), np.array([sd]), 1)[0])
    boot = bootstrap_interval(d, resamples=resamples, level=level, method=method, seed=seed)
    names = tuple(str(t) for t, k in zip(topics, keep.tolist()) if k) if topics is not None else None
    return PairedDifference(
        n=n, dropped=int((~keep).sum()), mean=mean, sd=sd, level=level, t_low=mean - margin, t_high=mean + margin,
        t=t, bootstrap=boot, seed=seed, effect_size=effect, wins=int((d > 0).sum()), ties=int((d == 0).sum()),
        losses=int((d < 0).sum()), differences=d, topics=names)


def _excludes_zero(low: float, high: float) -> bool | None:
    """An interval's verdict: True if it excludes 0, False if it holds 0, None if undefined."""
    if not (np.isfinite(low) and np.isfinite(high)):
        return None
    return bool(low > 0 or high < 0)


def _interval_text(low: float, high: float) -> str:
    return f"[{low:.3f}, {high:.3f}]".replace("-", "\u2212")


def _percent(level: float) -> str:
    return f"{100 * level:g}%"


def explain_disagreement(p: float | None, alpha: float, test: str, difference: PairedDifference, *,
                         correction: str | None = "none", n_comparisons: int | None = None) -> str | None:
    """None when the test's verdict (p < alpha) and both intervals' verdicts (excludes 0) agree,
    or an interval is undefined; else a plain-language explanation of why they differ and which
    to trust. ``p`` is the p-value as the test stored it (adjusted when ``correction`` is holm
    or bh, over ``n_comparisons`` pairs); ``test`` one of :data:`TEST_NAMES`."""
    if p is None or not np.isfinite(p):
        return None
    d = difference
    significant = bool(p < alpha)
    boot = d.bootstrap
    from service.metrics.stats.presentation import interval_name  # the name the tables and headers give it

    t_name = f"{_percent(d.level)} t interval {_interval_text(d.t_low, d.t_high)}"
    boot_name = f"{interval_name(boot.method, boot.level)} {_interval_text(float(boot.low), float(boot.high))}"
    intervals = [(t_name, _excludes_zero(d.t_low, d.t_high)),
                 (boot_name, _excludes_zero(float(boot.low), float(boot.high)))]
    apart = [name for name, excludes in intervals if excludes is not None and excludes != significant]
    if not apart:
        return None
    from service.metrics.stats.presentation import format_p  # never rounded across alpha (issue 25, item 3)

    shown = format_p(p, alpha)
    verdict = (f"p {shown if shown.startswith('<') else '= ' + shown} < α = {alpha:g}: a significant difference"
               if significant else f"p = {shown} ≥ α = {alpha:g}: no significant difference")
    facts = (f"The {TEST_NAMES.get(test, test)} gives {verdict}, yet the {' and the '.join(apart)} of the mean "
             f"difference {_signed(d.mean)} {'include' if significant else 'exclude'}"
             f"{'s' if len(apart) == 1 else ''} 0. This is not an error: the test and the intervals answer "
             "different questions.")
    reasons: list[str] = []
    trust: list[str] = []
    other = d.other_way()
    shape = _shape(d, other)
    if abs((1.0 - d.level) - alpha) > 1e-9:
        reasons.append(f"The intervals are at {_percent(d.level)} while the test uses α = {alpha:g}; only an "
                       f"interval at {_percent(1.0 - alpha)} answers the same question as the test.")
    if not significant and adjusted(test, correction):
        among = f"the {n_comparisons} comparisons" if n_comparisons else "all the comparisons"
        reasons.append(f"The p-value is {CORRECTION_NAMES[str(correction)]}-adjusted for {among} among the runs, "
                       "while each interval is about this pair alone, unadjusted.")
        trust.append("For a claim about this pair among all those compared, trust the test; the intervals hold "
                     "for a pair chosen before looking at the results.")
    if not significant and test in FAMILY_WISE_TESTS:
        reasons.append(f"The {TEST_NAMES[test]} controls the error over every pair of runs at once, so it is "
                       "stricter than an interval of this pair alone.")
        trust.append("For a claim about this pair among all those compared, trust the test.")
    if test == "bootstrap" and not significant and other:
        k, n = len(other), d.n
        omitted = ((n - k) / n) ** n  # the chance that a resample of n topics drawn with replacement misses all k
        those = "that topic" if k == 1 else "both of those topics" if k == 2 else f"all {k} of those topics"
        drawn = f"each resample draws {n} topics at random, with replacement"
        if omitted >= 0.001:
            leaving = (f"resamples that leave out {those} ({_share(omitted)} of them, as {drawn}) have almost no "
                       "spread, so their t statistics are huge.")
        else:  # (almost) no resample leaves them all out: those that leave out most of them make the tail
            leaving = (f"resamples that leave out most of those {k} topics have little spread, so their t statistics "
                       f"are large (a resample that leaves out all {k} is rare, {_share(omitted)}, as {drawn}).")
        reasons.append(
            f"{shape} The studentised bootstrap divides each resampled mean by its resampled spread: {leaving} The "
            f"resampled t statistics have heavy tails, and the observed t = {_number(d.t, 2)} is not rare among them.")
        trust.append("For the sign and size of the mean difference the intervals are the better guide, the "
                     "bootstrap interval first: it does not divide by a resampled spread, while the t interval "
                     "assumes normally distributed differences, which these are not. A test of the mean that does "
                     "not studentise (Fisher's randomisation test) is not affected. Either way the verdict rests "
                     f"on {'that topic' if k == 1 else f'those {k} topics'}.")
    elif test in ("sign", "wilcoxon"):
        weighs = ("counts only which run wins on each topic" if test == "sign"
                  else "weighs each difference by its rank, not its size")
        reasons.append(f"The {TEST_NAMES[test]} {weighs} ({_count(d.wins, 'win')}, {_count(d.ties, 'tie')}, "
                       f"{_count(d.losses, 'loss', 'losses')}), "
                       f"while the intervals are about the mean difference. {_counts_against_sizes(d)}")
        trust.append("Trust the test for whether one run wins on most topics, the intervals for the size of the "
                     "mean difference.")
    elif not reasons:
        if test == "t" and t_name not in apart:
            reasons.append(f"The t-test and the t interval agree: both assume normally distributed differences. "
                           f"The bootstrap interval does not. {shape}")
        elif alpha / 2 <= p <= 2 * alpha:
            reasons.append(f"{shape} The t interval assumes normally distributed differences; the bootstrap "
                           "interval does not, and the test's p-value is near the line either way.")
        else:  # a p far from alpha (a bootstrap p over few informative resamples, say) is not "near the line"
            reasons.append(f"{shape} The t interval assumes normally distributed differences; the bootstrap "
                           "interval does not. The test's p-value is not near α (within a factor of 2 of it): "
                           "the test and the interval part because they weigh the few topics that decide it "
                           "differently, not by chance.")
        near = alpha / 2 <= p <= 2 * alpha
        trust.append("When the normal assumption and the bootstrap part, prefer the bootstrap interval"
                     + (", and read the verdict as borderline." if near else "."))
    closing = "Look at the per-topic differences to see which topics decide it."
    return " ".join([facts, *reasons, *trust, closing])


def _signed(value: float) -> str:
    return f"{value:+.3f}".replace("-", "\u2212")


def _number(value: float, digits: int) -> str:
    """``value`` to ``digits`` decimals with the minus sign of the rest of the text (U+2212)."""
    return f"{value:.{digits}f}".replace("-", "\u2212")


def _count(n: int, one: str, many: str | None = None) -> str:
    """"1 win", "2 wins", "1 loss", "0 losses": a count with its noun in the right number."""
    return f"{n} {one if n == 1 else many or one + 's'}"


def _share(share: float) -> str:
    """A share of resamples for people: "about 36%", "about 0.4%", "about 1 in 4,300", "fewer than
    1 in a million" (never "about 0%")."""
    if share >= 0.00995:
        return f"about {100 * share:.0f}%"
    if share >= 0.001:
        return f"about {100 * share:.1f}%"
    one_in = 1.0 / share if share > 0 else math.inf
    if one_in >= 1e6:
        return "fewer than 1 in a million"
    return f"about 1 in {float(f'{one_in:.2g}'):,.0f}"


def _shape(d: PairedDifference, other: list[tuple[str, float]]) -> str:
    """The differences' shape in a sentence: how many topics go the other way, the largest of them."""
    if not other:
        differ = d.n - d.ties
        return "The one topic that differs goes one way." if differ == 1 else \
            f"All {differ} topics that differ go the same way."
    name, value = other[0]
    k = len(other)
    largest = "it" if k == 1 else "the largest"
    sign = 1.0 if d.mean > 0 else -1.0
    majority = d.differences[sign * d.differences > 0]
    # Two groups: the topics going the other way lie far outside the majority's spread.
    gap = float(np.min(sign * majority)) - max(sign * v for _, v in other) if majority.size else 0.0
    spread = float(majority.std()) if majority.size > 1 else 0.0
    if majority.size > 1 and gap > 3 * spread + 1e-12:
        return (f"The per-topic differences fall in two groups: {majority.size} of {d.n} topics go one way "
                f"(median {_signed(float(np.median(majority)))}) and {k} the other ({largest}: topic {name}, "
                f"{_signed(value)}).")
    skew = _skewness(d.differences) if d.sd > 0 else 0.0
    return (f"The per-topic differences are {'skewed' if abs(skew) >= 1 else 'spread'}: {k} of {d.n} topics "
            f"{'goes' if k == 1 else 'go'} the other way ({largest}: topic {name}, {_signed(value)}), against a mean "
            f"of {_signed(d.mean)}.")


def _skewness(x: np.ndarray) -> float:
    """The sample skewness m3 / m2^1.5 (scipy.stats.skew's default, biased), with numpy alone:
    scipy.stats costs most of a second to import in a short command."""
    centred = x - x.mean()
    m2 = float(np.mean(centred**2))
    return float(np.mean(centred**3)) / m2**1.5 if m2 > 0 else 0.0


def _counts_against_sizes(d: PairedDifference) -> str:
    """Wins against losses in a sentence: how many topics each side has and by how much."""
    names = d.topics or tuple(str(i + 1) for i in range(d.n))
    wins = [(names[i], v) for i, v in enumerate(d.differences.tolist()) if v > 0]
    losses = [(names[i], v) for i, v in enumerate(d.differences.tolist()) if v < 0]
    if not wins or not losses:
        return f"Every topic that differs goes the same way; the mean difference is {_signed(d.mean)}."
    more, fewer = (wins, losses) if len(wins) >= len(losses) else (losses, wins)
    name, value = max(fewer, key=lambda kv: abs(kv[1]))
    return (f"{_count(len(more), 'topic')} {'goes' if len(more) == 1 else 'go'} one way "
            f"(median {_signed(float(np.median([v for _, v in more])))}), {len(fewer)} "
            f"the other (median {_signed(float(np.median([v for _, v in fewer])))}; the largest: topic {name}, "
            f"{_signed(value)}), and the mean difference is {_signed(d.mean)}.")
