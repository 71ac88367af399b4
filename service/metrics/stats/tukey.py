"""Randomised Tukey HSD (Carterette 2012; Sakai's textbook) and the Friedman test.

Randomised Tukey HSD tests all pairs of runs at once and controls the
family-wise error: under the null hypothesis that all runs are equivalent, the
scores of each topic are exchangeable across runs. For each of B trials the
scores are permuted within every topic, the run means recomputed, and the
statistic is the largest minus the smallest mean. A pair's p-value is the share
of trials whose range is at least the pair's observed |mean difference|
(ties counted, with a float tolerance), with the +1 correction. The B ranges are
sorted once and each pair's count is a binary search (``tukey_p``), so only the
pairs asked cost anything: memory and time are linear in them, never pairs x B.

This is not scipy's ``tukey_hsd``, which is the one-way test for independent
groups (unpaired); ranx's "tukey" is that unpaired test too.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from service.metrics.stats.common import as_rng, as_score_matrix, count_at_least, monte_carlo_p, pair_indices

#: Cells of the (trials, topics, runs) permutation arrays made at once: bounds the memory of
#: the draws (a few arrays of 8 bytes per cell) without changing them (trials are drawn in
#: order from one generator, whatever the number per chunk).
MAX_CELLS = 4_000_000


@dataclass(frozen=True)
class TukeyResult:
    p: np.ndarray  # (runs, runs) p-values, 1 on the diagonal
    ranges: np.ndarray  # (B,) max - min of the permuted run means
    resamples: int


def tukey_ranges(
    scores: np.ndarray,
    *,
    resamples: int = 1000,
    seed: int | np.random.Generator | None = None,
    max_cells: int = MAX_CELLS,
) -> np.ndarray:
    """(B,) the range (max - min) of the run means in each of B trials that permute the scores
    across runs within every topic."""
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
        del perm
        means = permuted.mean(axis=1)  # (k, m)
        ranges[lo : lo + k] = means.max(axis=1) - means.min(axis=1)
    return ranges


def tukey_counts(sorted_ranges: np.ndarray, means: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Each pair's #{range >= |mean_a - mean_b|} (``tukey_p``'s count)."""
    return count_at_least(sorted_ranges, np.abs(means[a] - means[b])).astype(np.float64)


def tukey_p(sorted_ranges: np.ndarray, means: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Each pair's p: (#{range >= |mean_a - mean_b|} + 1)/(B + 1), ties counted with the float
    tolerance of ``common.at_least``; ``sorted_ranges`` in increasing order (binary search, so
    memory and time are linear in the pairs asked, never pairs x B)."""
    obs = np.abs(means[a] - means[b])
    return monte_carlo_p(count_at_least(sorted_ranges, obs), sorted_ranges.shape[0])


def randomised_tukey_hsd(
    scores: np.ndarray,
    *,
    resamples: int = 1000,
    seed: int | np.random.Generator | None = None,
    max_cells: int = MAX_CELLS,
) -> TukeyResult:
    """Randomised Tukey HSD on a (topics, runs) matrix (B trials, permutations within topics)."""
    x = as_score_matrix(scores).values
    m = x.shape[1]
    ranges = tukey_ranges(x, resamples=resamples, seed=seed, max_cells=max_cells)
    means = x.mean(axis=0)
    a, b = pair_indices(m)
    p = np.ones((m, m))
    pv = tukey_p(np.sort(ranges), means, a, b)
    p[a, b] = pv
    p[b, a] = pv
    return TukeyResult(p, ranges, resamples)


@dataclass(frozen=True)
class FriedmanResult:
    statistic: float
    p: float
    mean_ranks: np.ndarray  # (runs,), rank 1 = best (highest score) in a topic
    posthoc_p: np.ndarray  # (runs, runs) Nemenyi p-values


def friedman_test(scores: np.ndarray) -> tuple[float, float, np.ndarray]:
    """Friedman's chi-square and p over all runs (scipy's, tie-corrected) and the mean ranks."""
    from scipy import stats  # here: importing scipy.stats is most of a second of a short command

    x = as_score_matrix(scores, min_runs=3).values
    res = stats.friedmanchisquare(*x.T)
    ranks = stats.rankdata(-x, axis=1)  # average ranks within each topic
    statistic, p = float(res.statistic), float(res.pvalue)
    if not np.isfinite(statistic):  # every topic ranks all runs equally
        statistic, p = 0.0, 1.0
    return statistic, p, ranks.mean(axis=0)


def nemenyi_p(mean_ranks: np.ndarray, n_topics: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Nemenyi's p for the pairs (a, b): |R_a - R_b| / sqrt(k(k+1)/(6n)) * sqrt(2) against the
    studentised range with k groups and infinite df (each distinct value evaluated once)."""
    from scipy import stats

    k = mean_ranks.shape[0]
    se = np.sqrt(k * (k + 1) / (6.0 * n_topics))
    q = np.abs(mean_ranks[a] - mean_ranks[b]) / se * np.sqrt(2.0)
    if not len(q):
        return q
    distinct, inverse = np.unique(q, return_inverse=True)
    return np.asarray(stats.studentized_range.sf(distinct, k, np.inf), dtype=np.float64)[inverse]


def friedman(scores: np.ndarray) -> FriedmanResult:
    """Friedman's test over runs (topics as blocks) with Nemenyi's post-hoc test.

    The statistic and p are scipy.stats.friedmanchisquare's (tie-corrected).
    Nemenyi: |R_a - R_b| / sqrt(k(k+1)/(6n)) * sqrt(2) follows the studentised
    range distribution with k groups and infinite degrees of freedom.
    """
    x = as_score_matrix(scores, min_runs=3).values
    n, k = x.shape
    statistic, p, mean_ranks = friedman_test(x)
    a, b = pair_indices(k)
    post = np.ones((k, k))
    pv = nemenyi_p(mean_ranks, n, a, b)
    post[a, b] = pv
    post[b, a] = pv
    return FriedmanResult(statistic, p, mean_ranks, post)
