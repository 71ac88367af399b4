"""Randomised Tukey HSD (Carterette 2012; Sakai's textbook) and the Friedman test.

Randomised Tukey HSD tests all pairs of runs at once and controls the
family-wise error: under the null hypothesis that all runs are equivalent, the
scores of each topic are exchangeable across runs. For each of B trials the
scores are permuted within every topic, the run means recomputed, and the
statistic is the largest minus the smallest mean. A pair's p-value is the share
of trials whose range is at least the pair's observed |mean difference|
(ties counted, with a float tolerance), with the +1 correction.

This is not scipy's ``tukey_hsd``, which is the one-way test for independent
groups (unpaired); ranx's "tukey" is that unpaired test too.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from service.metrics.stats.common import as_rng, as_score_matrix, at_least, monte_carlo_p, pair_indices


@dataclass(frozen=True)
class TukeyResult:
    p: np.ndarray  # (runs, runs) p-values, 1 on the diagonal
    ranges: np.ndarray  # (B,) max - min of the permuted run means
    resamples: int


def randomised_tukey_hsd(
    scores: np.ndarray,
    *,
    resamples: int = 1000,
    seed: int | np.random.Generator | None = None,
    max_cells: int = 20_000_000,
) -> TukeyResult:
    """Randomised Tukey HSD on a (topics, runs) matrix (B trials, permutations within topics)."""
    x = as_score_matrix(scores).values
    n, m = x.shape
    rng = as_rng(seed)
    ranges = np.empty(resamples)
    chunk = max(1, max_cells // (n * m))
    for lo in range(0, resamples, chunk):
        k = min(chunk, resamples - lo)
        # A random permutation of the runs within each (trial, topic): argsort of uniforms.
        perm = np.argsort(rng.random((k, n, m)), axis=2)
        permuted = np.take_along_axis(np.broadcast_to(x, (k, n, m)), perm, axis=2)
        means = permuted.mean(axis=1)  # (k, m)
        ranges[lo : lo + k] = means.max(axis=1) - means.min(axis=1)
    obs = np.abs(x.mean(axis=0)[:, None] - x.mean(axis=0)[None, :])  # (m, m)
    count = at_least(ranges[None, None, :], obs[:, :, None]).sum(axis=2)
    p = monte_carlo_p(count, resamples)
    np.fill_diagonal(p, 1.0)
    return TukeyResult(p, ranges, resamples)


@dataclass(frozen=True)
class FriedmanResult:
    statistic: float
    p: float
    mean_ranks: np.ndarray  # (runs,), rank 1 = best (highest score) in a topic
    posthoc_p: np.ndarray  # (runs, runs) Nemenyi p-values


def friedman(scores: np.ndarray) -> FriedmanResult:
    """Friedman's test over runs (topics as blocks) with Nemenyi's post-hoc test.

    The statistic and p are scipy.stats.friedmanchisquare's (tie-corrected).
    Nemenyi: |R_a - R_b| / sqrt(k(k+1)/(6n)) * sqrt(2) follows the studentised
    range distribution with k groups and infinite degrees of freedom.
    """
    x = as_score_matrix(scores, min_runs=3).values
    n, k = x.shape
    res = stats.friedmanchisquare(*x.T)
    ranks = stats.rankdata(-x, axis=1)  # average ranks within each topic
    mean_ranks = ranks.mean(axis=0)
    se = np.sqrt(k * (k + 1) / (6.0 * n))
    q = np.abs(mean_ranks[:, None] - mean_ranks[None, :]) / se * np.sqrt(2.0)
    a, b = pair_indices(k)
    post = np.ones((k, k))
    pv = stats.studentized_range.sf(q[a, b], k, np.inf)
    post[a, b] = pv
    post[b, a] = pv
    statistic, p = float(res.statistic), float(res.pvalue)
    if not np.isfinite(statistic):  # every topic ranks all runs equally
        statistic, p = 0.0, 1.0
    return FriedmanResult(statistic, p, mean_ranks, post)
