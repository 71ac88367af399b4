"""Paired significance tests for every pair of runs at once.

Each test takes the (topics, runs) score matrix, forms the (topics, pairs)
matrix of per-topic differences z = x_a - x_b for all pairs a < b, and computes
every pair's statistic and two-sided p-value with whole-matrix operations. The
resampling tests draw one resampling matrix shared by every pair (never a loop
over pairs x samples) and report Monte-Carlo p-values (count + 1)/(B + 1).

Tests
  t             paired t-test (scipy.stats.ttest_rel's statistic and p)
  wilcoxon      Wilcoxon signed-rank (scipy.stats.wilcoxon, zeros dropped)
  sign          sign test: binomial on the non-tied topics
  bootstrap     Sakai's paired bootstrap test (SIGIR 2006; textbook 5.x): the
                studentised mean difference, its null distribution from B
                resamples of topics of the differences shifted to mean 0
  randomisation Fisher's paired randomisation test: random sign flips of the
                differences (or all 2^n of them with ``exact=True``)
  tukey         randomised Tukey HSD over all runs (see ``tukey.py``)
  friedman      Friedman's test over all runs; per pair Nemenyi's post-hoc p and
                the difference of mean ranks (see ``tukey.py``)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from scipy import stats

from service.metrics.stats.common import (
    as_rng,
    as_score_matrix,
    at_least,
    monte_carlo_p,
    pair_indices,
    t_statistic,
)
from service.metrics.stats.correction import Correction, adjust

Test = Literal["t", "wilcoxon", "sign", "bootstrap", "randomisation", "tukey", "friedman"]
TESTS: tuple[str, ...] = ("bootstrap", "t", "wilcoxon", "sign", "randomisation", "tukey", "friedman")


@dataclass(frozen=True)
class PairwiseResult:
    """One test over every pair (a, b), a < b; diff = mean_a - mean_b."""

    test: str
    runs: tuple[str, ...]
    a: np.ndarray
    b: np.ndarray
    mean_a: np.ndarray
    mean_b: np.ndarray
    statistic: np.ndarray
    p: np.ndarray
    p_adjusted: np.ndarray
    correction: str
    alpha: float
    n_topics: int
    resamples: int | None = None
    notes: tuple[str, ...] = field(default=())

    @property
    def diff(self) -> np.ndarray:
        return self.mean_a - self.mean_b

    @property
    def significant(self) -> np.ndarray:
        return self.p_adjusted < self.alpha

    def p_matrix(self, adjusted: bool = True) -> np.ndarray:
        """(runs, runs) symmetric matrix of p-values (1 on the diagonal)."""
        n = len(self.runs)
        out = np.ones((n, n))
        p = self.p_adjusted if adjusted else self.p
        out[self.a, self.b] = p
        out[self.b, self.a] = p
        return out

    def pair(self, run_a: str, run_b: str) -> int:
        i, j = self.runs.index(run_a), self.runs.index(run_b)
        lo, hi = min(i, j), max(i, j)
        return int(np.flatnonzero((self.a == lo) & (self.b == hi))[0])


def pairwise(
    scores: np.ndarray,
    runs: list[str] | tuple[str, ...] | None = None,
    test: Test = "bootstrap",
    *,
    resamples: int = 1000,
    alpha: float = 0.05,
    correction: Correction = "none",
    seed: int | np.random.Generator | None = None,
    exact: bool = False,
) -> PairwiseResult:
    """Run ``test`` on every pair of runs of a (topics, runs) score matrix."""
    if not 0 < alpha < 1:
        raise ValueError("alpha must lie strictly between 0 and 1")
    if resamples < 1:
        raise ValueError("the number of resamples B must be positive")
    sm = as_score_matrix(scores, runs)
    x = sm.values
    means = x.mean(axis=0)
    a, b = pair_indices(sm.n_runs)
    notes = (f"{sm.dropped_topics} topics with missing scores left out",) if sm.dropped_topics else ()
    used_b: int | None = None
    if test == "tukey":
        from service.metrics.stats.tukey import randomised_tukey_hsd

        hsd = randomised_tukey_hsd(x, resamples=resamples, seed=seed)
        stat, p, used_b = means[a] - means[b], hsd.p[a, b], resamples
    elif test == "friedman":
        from service.metrics.stats.tukey import friedman

        fr = friedman(x)
        stat, p = fr.mean_ranks[b] - fr.mean_ranks[a], fr.posthoc_p[a, b]
        notes += (f"Friedman chi-square {fr.statistic:.4f}, p = {fr.p:.4g} (all runs)",)
    else:
        z = x[:, a] - x[:, b]
        if test == "t":
            stat, p = paired_t(z)
        elif test == "wilcoxon":
            stat, p = wilcoxon(z)
        elif test == "sign":
            stat, p = sign_test(z)
        elif test == "bootstrap":
            boot = bootstrap(z, resamples=resamples, seed=seed)
            stat, p, used_b = boot.t_observed, boot.p, resamples
        elif test == "randomisation":
            stat, p = randomisation(z, resamples=resamples, seed=seed, exact=exact)
            used_b = None if exact else resamples
        else:
            raise ValueError(f"unknown test {test!r}; choose one of {', '.join(TESTS)}")
    return PairwiseResult(
        test=test, runs=sm.runs, a=a, b=b, mean_a=means[a], mean_b=means[b],
        statistic=np.asarray(stat, dtype=np.float64), p=np.asarray(p, dtype=np.float64),
        p_adjusted=adjust(np.asarray(p, dtype=np.float64), correction), correction=correction,
        alpha=alpha, n_topics=sm.n_topics, resamples=used_b, notes=notes,
    )


# ----------------------------------------------------------------------- classic tests
def paired_t(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Paired t-test on differences z (topics, pairs); identical runs get t = 0, p = 1."""
    n = z.shape[0]
    t = t_statistic(z.mean(axis=0), z.std(axis=0, ddof=1), n)
    return t, 2.0 * stats.t.sf(np.abs(t), n - 1)


def wilcoxon(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Wilcoxon signed-rank (scipy's, zero differences dropped); all-zero pairs get p = 1.

    scipy picks the exact or the normal-approximation p-value from the number of
    non-zero differences and the presence of ties, deciding once per call; pairs
    are therefore tested in groups that share both, so each p-value is the one
    ``scipy.stats.wilcoxon(x_a, x_b)`` gives for that pair alone.
    """
    stat = np.zeros(z.shape[1])
    p = np.ones(z.shape[1])
    nonzero = (z != 0).sum(axis=0)
    s = np.sort(np.abs(z), axis=0)
    ties = np.any((s[1:] == s[:-1]) & (s[1:] != 0), axis=0)
    for key in set(zip(nonzero.tolist(), ties.tolist())):
        if key[0] == 0:
            continue
        cols = np.flatnonzero((nonzero == key[0]) & (ties == key[1]))
        res = stats.wilcoxon(z[:, cols], axis=0, zero_method="wilcox")
        stat[cols] = res.statistic
        p[cols] = res.pvalue
    return stat, p


def sign_test(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two-sided sign test; the statistic is the number of topics where run a wins."""
    wins = (z > 0).sum(axis=0)
    losses = (z < 0).sum(axis=0)
    n = wins + losses
    k = np.minimum(wins, losses)
    p = np.where(n > 0, np.minimum(1.0, 2.0 * stats.binom.cdf(k, np.maximum(n, 1), 0.5)), 1.0)
    return wins.astype(np.float64), p


# --------------------------------------------------------------------- resampling tests
@dataclass(frozen=True)
class BootstrapDraws:
    """Sakai's bootstrap for every pair: observed t, ASL, and the null replicates."""

    t_observed: np.ndarray  # (pairs,)
    p: np.ndarray  # (pairs,) ASL with the +1 correction
    t_star: np.ndarray  # (B, pairs) studentised statistics of the shifted resamples
    mean_star: np.ndarray  # (B, pairs) their mean differences
    diff_star: np.ndarray  # (B, pairs) mean differences of the unshifted resamples (for intervals)


def resampling_counts(n: int, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """(B, n) matrix: how often each topic is drawn in each bootstrap sample of size n."""
    draws = rng.integers(0, n, size=(resamples, n))
    counts = np.zeros((resamples, n), dtype=np.float64)
    np.add.at(counts, (np.repeat(np.arange(resamples), n), draws.ravel()), 1.0)
    return counts


def bootstrap(z: np.ndarray, *, resamples: int = 1000, seed: int | np.random.Generator | None = None) -> BootstrapDraws:
    """Sakai's paired bootstrap test on differences z (topics, pairs), two-sided.

    t(z) = mean(z) / (sd(z)/sqrt(n)); w = z - mean(z); for each of B samples of
    topics drawn with replacement (one count matrix C shared by all pairs),
    t* = mean(w*) / (sd(w*)/sqrt(n)); ASL = (#{|t*| >= |t|} + 1) / (B + 1).
    """
    n = z.shape[0]
    rng = as_rng(seed)
    counts = resampling_counts(n, resamples, rng)
    mean = z.mean(axis=0)
    t_obs = t_statistic(mean, z.std(axis=0, ddof=1), n)
    w = z - mean
    # Centred differences at round-off level are zero (see t_statistic): otherwise resamples
    # of pure noise (equal noise values give sd* = 0) would count as infinitely extreme.
    w = np.where(np.abs(w) <= 1e-12 * np.max(np.abs(z), axis=0), 0.0, w)
    # Sums over a resample are count-weighted sums: C @ w and C @ w^2.
    mean_star = counts @ w / n
    sq_star = counts @ (w * w)
    var_star = np.maximum(sq_star - n * mean_star**2, 0.0) / (n - 1)
    t_star = t_statistic(mean_star, np.sqrt(var_star), n)
    count = at_least(np.abs(t_star), np.abs(t_obs)[None, :]).sum(axis=0)
    diff_star = counts @ z / n
    return BootstrapDraws(t_obs, monte_carlo_p(count, resamples), t_star, mean_star, diff_star)


def randomisation(
    z: np.ndarray,
    *,
    resamples: int = 1000,
    seed: int | np.random.Generator | None = None,
    exact: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Fisher's paired randomisation test: statistic mean(z), p = P(|sum s z| >= |sum z|).

    Random sign vectors s (one matrix shared by all pairs), or with ``exact`` all
    2^n of them (the exact p-value, no +1 correction).
    """
    n = z.shape[0]
    observed = np.abs(z.sum(axis=0))
    if exact:
        if n > 24:
            raise ValueError(f"exact enumeration of 2^{n} sign flips is too large; use resamples")
        return z.mean(axis=0), _exact_sign_flip_p(z, observed)
    rng = as_rng(seed)
    signs = rng.choice(np.array([-1.0, 1.0]), size=(resamples, n))
    count = at_least(np.abs(signs @ z), observed[None, :]).sum(axis=0)
    return z.mean(axis=0), monte_carlo_p(count, resamples)


def _exact_sign_flip_p(z: np.ndarray, observed: np.ndarray) -> np.ndarray:
    n, pairs = z.shape
    chunk = max(1, (1 << 24) >> n)  # bounds memory to ~2^24 sums at a time
    p = np.empty(pairs)
    for lo in range(0, pairs, chunk):
        zz = z[:, lo : lo + chunk]
        sums = np.zeros((1, zz.shape[1]))
        for i in range(n):  # all 2^(i+1) sign patterns of the first i+1 topics
            sums = np.concatenate([sums + zz[i], sums - zz[i]])
        p[lo : lo + chunk] = at_least(np.abs(sums), observed[lo : lo + chunk][None, :]).mean(axis=0)
    return p
