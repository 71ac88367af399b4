"""Two-way ANOVA without replication, confidence intervals and effect sizes.

Follows Sakai's textbook (Table 5.1 examples; ../shared/conformance/sakai-book):
runs are the factor of interest and topics the blocks, one observation per cell.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from service.metrics.stats.common import as_rng, as_score_matrix, pair_indices, t_ppf, t_statistic
from service.metrics.stats.pairwise import bootstrap


@dataclass(frozen=True)
class AnovaTable:
    """Sums of squares, degrees of freedom, mean squares, F and p of runs and topics."""

    ss_runs: float
    ss_topics: float
    ss_residual: float
    df_runs: int
    df_topics: int
    df_residual: int
    f_runs: float
    f_topics: float
    p_runs: float
    p_topics: float

    @property
    def ms_runs(self) -> float:
        return self.ss_runs / self.df_runs

    @property
    def ms_topics(self) -> float:
        return self.ss_topics / self.df_topics

    @property
    def ms_residual(self) -> float:
        """V_E, the residual variance."""
        return self.ss_residual / self.df_residual


def anova_two_way(scores: np.ndarray) -> AnovaTable:
    """Two-way ANOVA without replication on a (topics, runs) matrix."""
    from scipy import stats  # here: a second of import that compare's t intervals do not need

    x = as_score_matrix(scores).values
    n, m = x.shape
    grand = x.mean()
    run_means, topic_means = x.mean(axis=0), x.mean(axis=1)
    ss_runs = float(n * ((run_means - grand) ** 2).sum())
    ss_topics = float(m * ((topic_means - grand) ** 2).sum())
    # Residuals computed directly (not total - runs - topics, which leaves round-off).
    ss_res = float(((x - run_means[None, :] - topic_means[:, None] + grand) ** 2).sum())
    if ss_res <= 1e-24 * float((x * x).sum()):
        ss_res = 0.0  # round-off of an exactly additive table
    df_r, df_t, df_e = m - 1, n - 1, (m - 1) * (n - 1)
    ms_e = ss_res / df_e
    f_r = (ss_runs / df_r) / ms_e if ms_e > 0 else (np.inf if ss_runs > 0 else 0.0)
    f_t = (ss_topics / df_t) / ms_e if ms_e > 0 else (np.inf if ss_topics > 0 else 0.0)
    return AnovaTable(
        ss_runs, ss_topics, ss_res, df_r, df_t, df_e, float(f_r), float(f_t),
        float(stats.f.sf(f_r, df_r, df_e)) if f_r > 0 else 1.0,
        float(stats.f.sf(f_t, df_t, df_e)) if f_t > 0 else 1.0,
    )


@dataclass(frozen=True)
class RunIntervals:
    mean: np.ndarray
    low: np.ndarray
    high: np.ndarray
    margin: np.ndarray
    method: str
    level: float


def run_intervals(
    scores: np.ndarray, *, level: float = 0.95, method: Literal["t", "anova"] = "t"
) -> RunIntervals:
    """Confidence interval of each run's mean.

    ``t`` (default): mean +- t_{(1+level)/2, n-1} sd/sqrt(n) from the run's own
    per-topic scores, so a run's interval does not move when runs are added.
    ``anova``: the textbook's margin of error t_{(1+level)/2, df_E} sqrt(V_E/n),
    from the two-way ANOVA residual variance (one width for all runs).
    """
    x = as_score_matrix(scores, min_runs=1 if method == "t" else 2).values
    n, m = x.shape
    mean = x.mean(axis=0)
    q = (1.0 + level) / 2.0
    if method == "t":
        margin = t_ppf(q, n - 1) * x.std(axis=0, ddof=1) / np.sqrt(n)
    elif method == "anova":
        table = anova_two_way(x)
        margin = np.full(m, t_ppf(q, table.df_residual) * np.sqrt(table.ms_residual / n))
    else:
        raise ValueError(f"interval method must be t or anova, not {method!r}")
    return RunIntervals(mean, mean - margin, mean + margin, margin, method, level)


@dataclass(frozen=True)
class EffectSizes:
    """Per pair (a < b): mean difference, its bootstrap interval and standardised effects."""

    a: np.ndarray
    b: np.ndarray
    diff: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    standardised: np.ndarray  # diff / sd of the per-topic differences (paired)
    standardised_anova: np.ndarray  # diff / sqrt(V_E) (Tukey HSD effect size)


def effect_sizes(
    scores: np.ndarray,
    *,
    level: float = 0.95,
    resamples: int = 1000,
    seed: int | np.random.Generator | None = None,
) -> EffectSizes:
    x = as_score_matrix(scores).values
    a, b = pair_indices(x.shape[1])
    z = x[:, a] - x[:, b]
    diff = z.mean(axis=0)
    # A constant non-zero difference is an infinite standardised effect (t-statistic rules).
    standardised = t_statistic(diff, z.std(axis=0, ddof=1), 1)
    v_e = anova_two_way(x).ms_residual
    standardised_anova = t_statistic(diff, np.full(diff.shape, np.sqrt(v_e)), 1)
    draws = bootstrap(z, resamples=resamples, seed=as_rng(seed)).diff_star
    tail = (1.0 - level) / 2.0 * 100
    low, high = np.percentile(draws, [tail, 100 - tail], axis=0)
    return EffectSizes(a, b, diff, low, high, standardised, standardised_anova)
