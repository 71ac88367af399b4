"""Topic set size design: how many topics the next round needs (Sakai, IRJ 19(3), 2016).

T. Sakai, "Topic set size design", Information Retrieval Journal 19(3):256-283, 2016
(doi:10.1007/s10791-015-9273-z), applies Nagata's three sample size designs to the number of
topics: the paired t test, one-way ANOVA over m systems, and the width of a confidence
interval. Each starts from a variance estimate sigma^2 taken from a topic-by-run matrix of an
existing collection; here the residual variance V_E of the two-way ANOVA without replication
(:func:`service.metrics.stats.anova.anova_two_way`) by default, or the pooled within-system
variance (the one-way ANOVA's residual) on request. The exact procedures, in the words of
docs/statistics.md ("Topic set size design"):

- **paired t test** (:func:`ttest_topics`): sigma_t^2 = 2 sigma^2 is the variance of a
  per-topic difference and minDt = minD / sigma_t. Start from the normal approximation
  n0 = ((z_{alpha/2} + z_beta) / minDt)^2 + z_{alpha/2}^2 / 2; the answer is the smallest n
  whose exact power P(|T'| >= t_{alpha/2, n-1}), T' noncentral t with n - 1 degrees of
  freedom and noncentrality sqrt(n) minDt, is at least 1 - beta.
- **one-way ANOVA** (:func:`anova_topics`): the smallest n with
  P(F' >= F_alpha(m - 1, m(n - 1))) >= 1 - beta, F' noncentral F with noncentrality
  lambda = n minD^2 / (2 sigma^2): the least favourable arrangement of m system means whose
  range is minD (two at +-minD/2 around the others).
- **confidence interval** (:func:`ci_topics`): the smallest n whose expected width of the
  100(1 - alpha)% interval of a paired difference, 2 t_{alpha/2, n-1} sigma_t c(n) / sqrt(n)
  with c(n) = E[s]/sigma = sqrt(2/(n-1)) Gamma(n/2) / Gamma((n-1)/2), is at most delta.

Power and width are monotone in n, so the search (from the approximation, one step at a
time and then doubling, closed by bisection) returns the same n as stepping one topic at a
time as Sakai's tools do.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import special, stats

from service.metrics.stats.anova import anova_two_way
from service.metrics.stats.common import as_score_matrix

#: Beyond this many topics a design is reported as unreachable (a ValueError), not searched.
MAX_TOPICS = 10_000_000
DEFAULT_MIN_DIFFS = (0.02, 0.05, 0.10)
DEFAULT_WIDTHS = (0.05, 0.10)
Variance = Literal["residual", "within"]


@dataclass(frozen=True)
class TTestDesign:
    """Topics for the two-sided paired t test to detect ``min_diff`` with power 1 - beta."""

    n: int
    power: float  # the exact power at n (>= 1 - beta; below it at n - 1)
    min_diff: float
    variance: float  # sigma^2
    alpha: float
    beta: float
    min_dt: float  # minD / sigma_t, sigma_t^2 = 2 sigma^2
    approx_n: float  # the normal approximation the search starts from


@dataclass(frozen=True)
class AnovaDesign:
    """Topics for one-way ANOVA over ``systems`` systems to detect a range ``min_diff``."""

    n: int
    power: float
    min_diff: float
    variance: float
    alpha: float
    beta: float
    systems: int
    noncentrality: float  # lambda = n minD^2 / (2 sigma^2) at n


@dataclass(frozen=True)
class CIDesign:
    """Topics for the expected width of the paired difference's interval to be <= ``max_width``."""

    n: int
    width: float  # the expected width at n (<= max_width; above it at n - 1)
    max_width: float
    variance: float
    alpha: float


@dataclass(frozen=True)
class TopicSetSizes:
    """Every design of one (topics, runs) matrix, and the variance estimate they use."""

    variance: float  # sigma^2 used by the designs (``estimator``'s value)
    estimator: str  # "residual" (two-way ANOVA V_E) or "within" (pooled within-system variance)
    residual_variance: float  # V_E of the two-way ANOVA without replication
    within_variance: float  # sum (x_ij - mean_j)^2 / (m (n - 1)), the one-way ANOVA residual
    topics: int  # topics scored for every run (the others left out)
    runs: int
    dropped_topics: int
    alpha: float
    beta: float
    systems: int
    ttest: tuple[TTestDesign, ...]
    anova: tuple[AnovaDesign, ...]
    ci: tuple[CIDesign, ...]


# --------------------------------------------------------------------------- checks
def _probability(name: str, value: float) -> float:
    v = float(value)
    if not 0.0 < v < 1.0:
        raise ValueError(f"{name} must be between 0 and 1 (exclusive), not {value!r}")
    return v


def _positive(name: str, value: float) -> float:
    v = float(value)
    if not (math.isfinite(v) and v > 0.0):
        raise ValueError(f"{name} must be a positive number, not {value!r}")
    return v


def _variance(value: float) -> float:
    v = float(value)
    if not math.isfinite(v) or v < 0.0:
        raise ValueError(f"the variance must be a non-negative number, not {value!r}")
    if v == 0.0:
        raise ValueError("the variance estimate is 0 (the runs differ by a constant on every topic): "
                         "any difference would be detected, so no topic set size follows from it")
    return v


def _systems(value: int) -> int:
    if isinstance(value, bool) or int(value) != value or int(value) < 2:
        raise ValueError(f"the number of systems must be an integer >= 2, not {value!r}")
    return int(value)


# --------------------------------------------------------------------------- power and width
def ttest_power(n: int, min_dt: float, alpha: float) -> float:
    """Exact power of the two-sided paired t test with n topics at standardised difference
    ``min_dt``: P(T' >= t) + P(T' <= -t), t = t_{alpha/2, n-1}, T' ~ nct(n - 1, sqrt(n) min_dt).

    The lower tail is taken as P(-T' >= t), -T' ~ nct(n - 1, -sqrt(n) min_dt) (the same
    probability): scipy's ``nct.cdf`` far in the lower tail of a large noncentrality returns NaN
    (scipy issues #25106, #25470; e.g. nct.cdf(-9.925, 2, 11.88)), and a NaN power made the search
    skip sizes that suffice (n = 36 instead of 4 for variance 0.001, minD 0.3066, alpha 0.01)."""
    df = n - 1
    crit = stats.t.isf(alpha / 2.0, df)
    nc = math.sqrt(n) * min_dt
    return float(stats.nct.sf(crit, df, nc) + stats.nct.sf(crit, df, -nc))


def anova_power(n: int, min_diff: float, variance: float, systems: int, alpha: float) -> float:
    """Power of one-way ANOVA, ``systems`` groups of n topics, when the means' range is ``min_diff``."""
    df_a, df_e = systems - 1, systems * (n - 1)
    crit = stats.f.isf(alpha, df_a, df_e)
    return float(stats.ncf.sf(crit, df_a, df_e, n * min_diff**2 / (2.0 * variance)))


def sd_bias(n: int) -> float:
    """c(n) = E[s]/sigma for n normal observations: sqrt(2/(n-1)) Gamma(n/2) / Gamma((n-1)/2)."""
    return math.sqrt(2.0 / (n - 1)) * float(special.poch((n - 1) / 2.0, 0.5))  # Gamma(z + 1/2) / Gamma(z)


def expected_ci_width(n: int, variance: float, alpha: float) -> float:
    """Expected width of the 100(1 - alpha)% t interval of a paired difference over n topics,
    sigma_t^2 = 2 ``variance``: 2 t_{alpha/2, n-1} sigma_t c(n) / sqrt(n)."""
    sigma_t = math.sqrt(2.0 * variance)
    return float(2.0 * stats.t.isf(alpha / 2.0, n - 1) * sigma_t * sd_bias(n) / math.sqrt(n))


def _start(approx: float) -> int:
    """The search's first n: the approximation rounded up (past the limit when it is huge)."""
    return math.ceil(approx) if approx < MAX_TOPICS else MAX_TOPICS + 1


def _smallest_n(ok: Callable[[int], bool], start: int, lowest: int = 2) -> int:
    """The smallest n >= ``lowest`` with ok(n), for ok false then true as n grows."""
    n = max(lowest, start)
    if n > MAX_TOPICS:
        raise ValueError(f"more than {MAX_TOPICS:,} topics would be needed")
    step = 1
    if ok(n):
        high = n
        while True:  # step down (1, 2, 4, ...) until a size falls short
            if high == lowest:
                return high
            candidate = max(lowest, high - step)
            if not ok(candidate):
                low = candidate
                break
            high, step = candidate, step * 2
    else:
        low = n
        while True:  # step up until a size is enough
            candidate = low + step
            if candidate > MAX_TOPICS:
                raise ValueError(f"more than {MAX_TOPICS:,} topics would be needed")
            if ok(candidate):
                high = candidate
                break
            low, step = candidate, step * 2
    while high - low > 1:  # ok(high), not ok(low)
        mid = (low + high) // 2
        if ok(mid):
            high = mid
        else:
            low = mid
    return high


# --------------------------------------------------------------------------- the three designs
def ttest_topics(variance: float, min_diff: float, *, alpha: float = 0.05, beta: float = 0.20) -> TTestDesign:
    """Sakai's t-test-based design: topics for the paired t test (two-sided, level alpha) to
    detect a true difference ``min_diff`` with power 1 - beta, sigma^2 = ``variance``."""
    sigma2, min_d = _variance(variance), _positive("the minimum difference", min_diff)
    alpha, beta = _probability("alpha", alpha), _probability("beta", beta)
    min_dt = min_d / math.sqrt(2.0 * sigma2)
    z_a, z_b = stats.norm.isf(alpha / 2.0), stats.norm.isf(beta)
    approx = ((z_a + z_b) / min_dt) ** 2 + z_a**2 / 2.0
    target = 1.0 - beta
    n = _smallest_n(lambda k: ttest_power(k, min_dt, alpha) >= target, _start(approx))
    return TTestDesign(n, ttest_power(n, min_dt, alpha), min_d, sigma2, alpha, beta, min_dt, float(approx))


def anova_topics(variance: float, min_diff: float, systems: int, *, alpha: float = 0.05,
                 beta: float = 0.20) -> AnovaDesign:
    """Sakai's ANOVA-based design: topics per system for one-way ANOVA over ``systems``
    systems (level alpha) to detect, with power 1 - beta, means whose range is ``min_diff``."""
    sigma2, min_d = _variance(variance), _positive("the minimum difference", min_diff)
    alpha, beta, m = _probability("alpha", alpha), _probability("beta", beta), _systems(systems)
    target = 1.0 - beta
    # Start from the two-sample normal approximation (exact for m = 2 up to the t correction).
    approx = 2.0 * sigma2 * ((stats.norm.isf(alpha / 2.0) + stats.norm.isf(beta)) / min_d) ** 2
    n = _smallest_n(lambda k: anova_power(k, min_d, sigma2, m, alpha) >= target, _start(approx))
    return AnovaDesign(n, anova_power(n, min_d, sigma2, m, alpha), min_d, sigma2, alpha, beta, m,
                       n * min_d**2 / (2.0 * sigma2))


def ci_topics(variance: float, max_width: float, *, alpha: float = 0.05) -> CIDesign:
    """Sakai's CI-based design: topics for the expected width of the 100(1 - alpha)% interval
    of a paired difference (sigma_t^2 = 2 ``variance``) to be at most ``max_width``."""
    sigma2, delta = _variance(variance), _positive("the interval width", max_width)
    alpha = _probability("alpha", alpha)
    approx = 2.0 * sigma2 * (2.0 * stats.norm.isf(alpha / 2.0) / delta) ** 2  # known-sigma width
    n = _smallest_n(lambda k: expected_ci_width(k, sigma2, alpha) <= delta, _start(approx))
    return CIDesign(n, expected_ci_width(n, sigma2, alpha), delta, sigma2, alpha)


# --------------------------------------------------------------------------- from a score matrix
def within_system_variance(scores: np.ndarray) -> float:
    """The pooled within-system variance sum_j sum_i (x_ij - mean_j)^2 / (m (n - 1)) of a
    (topics, runs) matrix: the residual variance of one-way ANOVA with runs as groups."""
    x = as_score_matrix(scores).values
    n, m = x.shape
    return float(((x - x.mean(axis=0)) ** 2).sum() / (m * (n - 1)))


def topic_set_sizes(
    scores: np.ndarray,
    *,
    min_diffs: Sequence[float] = DEFAULT_MIN_DIFFS,
    widths: Sequence[float] = DEFAULT_WIDTHS,
    alpha: float = 0.05,
    beta: float = 0.20,
    systems: int | None = None,
    estimator: Variance = "residual",
) -> TopicSetSizes:
    """Every design for each minimum difference and interval width, from the variance of a
    (topics, runs) matrix (topics lacking a score for some run left out). ``systems``
    (ANOVA's m) defaults to the matrix's number of runs."""
    sm = as_score_matrix(scores)
    residual = anova_two_way(sm.values).ms_residual
    within = within_system_variance(sm.values)
    if estimator == "residual":
        sigma2 = residual
    elif estimator == "within":
        sigma2 = within
    else:
        raise ValueError(f"the variance estimator must be residual or within, not {estimator!r}")
    m = _systems(sm.n_runs if systems is None else systems)
    return TopicSetSizes(
        sigma2, estimator, residual, within, sm.n_topics, sm.n_runs, sm.dropped_topics, float(alpha), float(beta), m,
        tuple(ttest_topics(sigma2, d, alpha=alpha, beta=beta) for d in min_diffs),
        tuple(anova_topics(sigma2, d, m, alpha=alpha, beta=beta) for d in min_diffs),
        tuple(ci_topics(sigma2, w, alpha=alpha) for w in widths),
    )
