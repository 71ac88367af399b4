"""Paired significance tests for every pair of runs at once.

Each test takes the (topics, runs) score matrix, forms the (topics, pairs)
matrix of per-topic differences z = x_a - x_b for all pairs a < b, and computes
every pair's statistic and two-sided p-value with whole-matrix operations. The
resampling tests draw one resampling matrix shared by every pair (never a loop
over pairs x samples) and report Monte-Carlo p-values (count + 1)/(B + 1).

Scale: the differences and the (B, pairs) replicates are made a block of pairs at a
time (``common.column_blocks``; a block stays within ``common.BLOCK_BYTES``), and
nothing of size B x pairs is kept: memory is linear in the number of pairs. The
resampling matrix is drawn once, before the first block, and every operation is the
whole-matrix one on fewer columns, so every pair's p-value is the same whatever the
block size; the draws are those of the former whole-matrix code for the same seed, and
so are the floats (``ROW_PAD``: exactly so for B a multiple of 4, such as the default
1000; otherwise up to the last bits of a few replicates, which were not stable across
thread counts before either). With ``baselines`` only the pairs that involve a
baseline run are tested, with the values the all-pairs call gives them.

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

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from scipy import stats

from service.metrics.stats.common import (
    BLOCK_BYTES,
    as_rng,
    as_score_matrix,
    at_least,
    baseline_pairs,
    block_width,
    column_blocks,
    monte_carlo_p,
    pair_indices,
    t_statistic,
)
from service.metrics.stats.correction import Correction, adjust

Test = Literal["t", "wilcoxon", "sign", "bootstrap", "randomisation", "tukey", "friedman"]
TESTS: tuple[str, ...] = ("bootstrap", "t", "wilcoxon", "sign", "randomisation", "tukey", "friedman")


@dataclass(frozen=True)
class PairwiseResult:
    """One test over every pair (a, b), a < b; diff = mean_a - mean_b.

    With ``baselines`` (run names) only the pairs with at least one baseline run were tested
    (still a < b, in the all-pairs order): ``p_matrix`` is NaN for the others, and the
    correction is over the pairs tested.
    """

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
    baselines: tuple[str, ...] = field(default=())

    @property
    def diff(self) -> np.ndarray:
        return self.mean_a - self.mean_b

    @property
    def significant(self) -> np.ndarray:
        return self.p_adjusted < self.alpha

    def p_matrix(self, adjusted: bool = True) -> np.ndarray:
        """(runs, runs) symmetric matrix of p-values (1 on the diagonal; NaN for pairs not tested)."""
        n = len(self.runs)
        out = np.ones((n, n)) if not self.baselines else np.full((n, n), np.nan)
        np.fill_diagonal(out, 1.0)
        p = self.p_adjusted if adjusted else self.p
        out[self.a, self.b] = p
        out[self.b, self.a] = p
        return out

    def pair(self, run_a: str, run_b: str) -> int:
        i, j = self.runs.index(run_a), self.runs.index(run_b)
        lo, hi = min(i, j), max(i, j)
        found = np.flatnonzero((self.a == lo) & (self.b == hi))
        if not len(found):
            raise KeyError(f"the pair ({run_a}, {run_b}) was not tested")
        return int(found[0])


class Differences:
    """The (topics, pairs) per-topic differences x[:, a] - x[:, b], made a block of pairs at a
    time; or, with ``a`` and ``b`` left out, a difference matrix given whole (``x`` itself)."""

    def __init__(self, x: np.ndarray, a: np.ndarray | None = None, b: np.ndarray | None = None) -> None:
        self.x = np.asarray(x, dtype=np.float64)
        if self.x.ndim != 2:
            raise ValueError(f"differences must be a (topics, pairs) matrix, got shape {self.x.shape}")
        if (a is None) != (b is None):
            raise ValueError("give both a and b, or neither")
        self.a, self.b = a, b
        self.n = int(self.x.shape[0])
        self.pairs = int(self.x.shape[1] if a is None else len(a))
        self._runs_topics = None if a is None else np.ascontiguousarray(self.x.T)

    def block(self, lo: int, hi: int) -> np.ndarray:
        """z[:, lo:hi], Fortran-ordered (each pair's differences contiguous) as ``x[:, a] - x[:, b]``
        makes it: the reductions and products over topics then give the same floats as always."""
        if self._runs_topics is None or self.a is None or self.b is None:
            return self.x[:, lo:hi]
        rt = self._runs_topics  # (runs, topics): a pair's two runs are two contiguous rows
        return (rt[self.a[lo:hi]] - rt[self.b[lo:hi]]).T

    def blocks(self, rows: int, block_bytes: int = BLOCK_BYTES) -> Iterator[tuple[int, int, np.ndarray]]:
        """(lo, hi, z[:, lo:hi]) with blocks sized so that a (rows, block) float64 array stays
        within ``block_bytes`` (rows: B for a resampling test, the topics for a classic one)."""
        for lo, hi in column_blocks(self.pairs, block_width(max(rows, self.n), block_bytes)):
            yield lo, hi, self.block(lo, hi)


def _differences(z: np.ndarray | Differences) -> Differences:
    return z if isinstance(z, Differences) else Differences(z)


def run_pairs(runs: Sequence[str], baselines: Sequence[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(a, b) of the pairs to test: every pair, or those with a run of ``baselines`` (names)."""
    if baselines is None:
        return pair_indices(len(runs))
    index = {r: i for i, r in enumerate(runs)}
    unknown = [r for r in baselines if r not in index]
    if unknown:
        raise ValueError(f"baseline run(s) not among the runs compared: {', '.join(map(str, unknown))}")
    return baseline_pairs(len(runs), [index[r] for r in baselines])


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
    baselines: Sequence[str] | None = None,
    block_bytes: int = BLOCK_BYTES,
) -> PairwiseResult:
    """Run ``test`` on every pair of runs of a (topics, runs) score matrix.

    With ``baselines`` (names of runs), only on the pairs with at least one of them: each
    pair's statistic and p are those of the all-pairs result (the same seed draws the same
    resamples), the correction covers the pairs tested. ``block_bytes`` bounds the blocks
    (see ``common.BLOCK_BYTES``); it changes no result.
    """
    if not 0 < alpha < 1:
        raise ValueError("alpha must lie strictly between 0 and 1")
    if resamples < 1:
        raise ValueError("the number of resamples B must be positive")
    sm = as_score_matrix(scores, runs)
    x = sm.values
    means = x.mean(axis=0)
    a, b = run_pairs(sm.runs, baselines)
    notes = (f"{sm.dropped_topics} topics with missing scores left out",) if sm.dropped_topics else ()
    used_b: int | None = None
    diffs = Differences(x, a, b)
    if test == "tukey":
        from service.metrics.stats.tukey import tukey_p, tukey_ranges

        ranges = tukey_ranges(x, resamples=resamples, seed=seed)
        stat, p, used_b = means[a] - means[b], tukey_p(np.sort(ranges), means, a, b), resamples
    elif test == "friedman":
        from service.metrics.stats.tukey import friedman_test, nemenyi_p

        statistic, fp, mean_ranks = friedman_test(x)
        stat, p = mean_ranks[b] - mean_ranks[a], nemenyi_p(mean_ranks, x.shape[0], a, b)
        notes += (f"Friedman chi-square {statistic:.4f}, p = {fp:.4g} (all runs)",)
    elif test in ("t", "wilcoxon", "sign"):
        kernel = {"t": paired_t, "wilcoxon": wilcoxon, "sign": sign_test}[test]
        stat, p = np.empty(diffs.pairs), np.empty(diffs.pairs)
        # scipy's Wilcoxon holds about a dozen arrays the size of its input: smaller blocks.
        for lo, hi, z in diffs.blocks(x.shape[0], max(1, block_bytes // 8) if test == "wilcoxon" else block_bytes):
            stat[lo:hi], p[lo:hi] = kernel(z)
    elif test == "bootstrap":
        boot = bootstrap(diffs, resamples=resamples, seed=seed, block_bytes=block_bytes)
        stat, p, used_b = boot.t_observed, boot.p, resamples
    elif test == "randomisation":
        stat, p = randomisation(diffs, resamples=resamples, seed=seed, exact=exact, block_bytes=block_bytes)
        used_b = None if exact else resamples
    else:
        raise ValueError(f"unknown test {test!r}; choose one of {', '.join(TESTS)}")
    p = np.asarray(p, dtype=np.float64)
    return PairwiseResult(
        test=test, runs=sm.runs, a=a, b=b, mean_a=means[a], mean_b=means[b],
        statistic=np.asarray(stat, dtype=np.float64), p=p,
        p_adjusted=adjust(p, correction), correction=correction,
        alpha=alpha, n_topics=sm.n_topics, resamples=used_b, notes=notes,
        baselines=tuple(dict.fromkeys(baselines)) if baselines is not None else (),
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
class BootstrapBlock:
    """Sakai's bootstrap on the pairs lo..hi-1: observed t and the B shifted replicates.

    From ``bootstrap_blocks(..., reuse=True)`` the arrays are overwritten by the next block.
    """

    lo: int
    hi: int
    t_observed: np.ndarray  # (pairs in the block,)
    t_star: np.ndarray  # (B, pairs in the block) studentised statistics of the shifted resamples
    mean_star: np.ndarray  # (B, pairs in the block) their mean differences
    abs_t_star: np.ndarray  # (B, pairs in the block) |t_star|

    def extreme_counts(self) -> np.ndarray:
        """#{|t*| >= |t|} per pair, ties counted with the float tolerance of ``at_least``."""
        return np.count_nonzero(at_least(self.abs_t_star, np.abs(self.t_observed)[None, :]), axis=0)


@dataclass(frozen=True)
class BootstrapDraws:
    """Sakai's bootstrap for every pair: observed t and ASL; the null replicates on demand.

    The replicates are not kept (they are B x pairs): ``blocks()`` makes them a block of
    pairs at a time from the shared count matrix, ``diff_percentiles`` reduces the unshifted
    ones block by block. ``t_star``, ``mean_star`` and ``diff_star`` assemble the whole
    (B, pairs) matrices, for small inputs only.
    """

    t_observed: np.ndarray  # (pairs,)
    p: np.ndarray  # (pairs,) ASL with the +1 correction
    counts: np.ndarray  # (B, n) how often each topic is drawn in each resample
    differences: Differences
    block_bytes: int = BLOCK_BYTES

    def blocks(self) -> Iterator[BootstrapBlock]:
        return bootstrap_blocks(self.differences, self.counts, self.block_bytes)

    def diff_blocks(self) -> Iterator[tuple[int, int, np.ndarray]]:
        """(lo, hi, (B, hi - lo) mean differences of the unshifted resamples)."""
        n, rows = self.differences.n, self.counts.shape[0]
        padded = padded_rows(self.counts)
        for lo, hi, z in self.differences.blocks(padded.shape[0], self.block_bytes):
            yield lo, hi, (padded @ z)[:rows] / n

    def diff_percentiles(self, q: Sequence[float]) -> np.ndarray:
        """(len(q), pairs): ``np.percentile(diff_star, q, axis=0)``, a block at a time."""
        out = np.empty((len(q), self.differences.pairs))
        for lo, hi, d in self.diff_blocks():
            out[:, lo:hi] = np.percentile(d, q, axis=0)
        return out

    @property
    def t_star(self) -> np.ndarray:  # (B, pairs): B x pairs floats, small inputs only
        return np.concatenate([blk.t_star for blk in self.blocks()], axis=1)

    @property
    def mean_star(self) -> np.ndarray:  # (B, pairs): small inputs only
        return np.concatenate([blk.mean_star for blk in self.blocks()], axis=1)

    @property
    def diff_star(self) -> np.ndarray:  # (B, pairs) unshifted mean differences (for intervals): small inputs only
        return np.concatenate([d for _, _, d in self.diff_blocks()], axis=1)


def resampling_counts(n: int, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """(B, n) matrix: how often each topic is drawn in each bootstrap sample of size n."""
    draws = rng.integers(0, n, size=(resamples, n))
    counts = np.zeros((resamples, n), dtype=np.float64)
    np.add.at(counts, (np.repeat(np.arange(resamples), n), draws.ravel()), 1.0)
    return counts


class _Scratch:
    """(rows, columns) arrays kept from one block of pairs to the next (``reuse``): no fresh
    memory pages per block; otherwise new arrays each time."""

    def __init__(self, rows: int, reuse: bool) -> None:
        self.rows, self.reuse = rows, reuse
        self.arrays: dict[str, np.ndarray] = {}

    def get(self, name: str, cols: int, dtype: type = np.float64) -> np.ndarray:
        if not self.reuse:
            return np.empty((self.rows, cols), dtype=dtype)
        flat = self.arrays.get(name)
        if flat is None or flat.shape[0] < self.rows * cols:
            flat = self.arrays[name] = np.empty(self.rows * cols, dtype=dtype)
        return flat[: self.rows * cols].reshape(self.rows, cols)  # contiguous, as a new array would be


#: Resampling matrices get zero rows up to a multiple of this many rows before their product
#: with a block of pairs. OpenBLAS computes the rows of a partial tile (the last B mod 4
#: rows, or the edge of a thread's share) with other code whose last bits depend on the
#: block's width and on the number of threads; rows in full tiles do not. Padded, every
#: pair's replicates are the same floats whatever the blocks and threads (and, for B a
#: multiple of 4, such as 1000, the floats of the former whole-matrix product).
ROW_PAD = 16


def padded_rows(m: np.ndarray) -> np.ndarray:
    """``m`` with zero rows appended up to a multiple of ``ROW_PAD`` rows (C-ordered)."""
    pad = -m.shape[0] % ROW_PAD
    if not pad and m.flags.c_contiguous:
        return m
    return np.vstack([m, np.zeros((pad, m.shape[1]), dtype=m.dtype)])


def bootstrap_blocks(
    z: np.ndarray | Differences, counts: np.ndarray, block_bytes: int = BLOCK_BYTES, *, reuse: bool = False
) -> Iterator[BootstrapBlock]:
    """The bootstrap replicates of every pair, a block of pairs at a time, from one count matrix.

    t(z) = mean(z) / (sd(z)/sqrt(n)); w = z - mean(z); per resample (a row of C),
    mean* = C w / n and sd* from C w^2; t* = mean* / (sd*/sqrt(n)) (``common.t_statistic``'s
    rules). Each operation is the one the whole-matrix formula does, on fewer columns, so the
    floats are the same whatever the blocks. With ``reuse`` the arrays of a block are
    overwritten by the next one (the hot loops' way: three B x block arrays in all).
    """
    diffs = _differences(z)
    n = diffs.n
    rows = counts.shape[0]
    padded = padded_rows(counts)
    scratch = _Scratch(padded.shape[0], reuse)
    root_n = np.sqrt(n)
    for lo, hi, zb in diffs.blocks(padded.shape[0], block_bytes):
        cols = hi - lo
        mean = zb.mean(axis=0)
        t_obs = t_statistic(mean, zb.std(axis=0, ddof=1), n)
        w = zb - mean
        # Centred differences at round-off level are zero (see t_statistic): otherwise resamples
        # of pure noise (equal noise values give sd* = 0) would count as infinitely extreme.
        w = np.where(np.abs(w) <= 1e-12 * np.max(np.abs(zb), axis=0), 0.0, w)
        # Sums over a resample are count-weighted sums: C @ w and C @ w^2.
        mean_star = np.matmul(padded, w, out=scratch.get("mean", cols))[:rows]
        mean_star /= n
        sd = np.matmul(padded, w * w, out=scratch.get("sd", cols))[:rows]
        t = scratch.get("t", cols)[:rows]
        np.multiply(mean_star, mean_star, out=t)  # var* = max(sum w*^2 - n mean*^2, 0) / (n - 1)
        t *= n
        sd -= t
        np.maximum(sd, 0.0, out=sd)
        sd /= n - 1
        np.sqrt(sd, out=sd)
        # t* = mean* / (sd* / sqrt(n)): an sd* below 1e-12 |mean*| is round-off (zero); 0/0 is 0.
        np.abs(mean_star, out=t)
        t *= 1e-12
        mask = scratch.get("mask", cols, np.bool_)[:rows]
        np.less_equal(sd, t, out=mask)
        np.copyto(sd, 0.0, where=mask)
        sd /= root_n
        with np.errstate(divide="ignore", invalid="ignore"):
            np.divide(mean_star, sd, out=t)
        np.equal(sd, 0.0, out=mask)
        if mask.any():
            mask &= mean_star == 0
            np.copyto(t, 0.0, where=mask)
        yield BootstrapBlock(lo, hi, t_obs, t, mean_star, np.abs(t, out=sd))


def bootstrap(
    z: np.ndarray | Differences,
    *,
    resamples: int = 1000,
    seed: int | np.random.Generator | None = None,
    block_bytes: int = BLOCK_BYTES,
) -> BootstrapDraws:
    """Sakai's paired bootstrap test on differences z (topics, pairs), two-sided.

    t(z) = mean(z) / (sd(z)/sqrt(n)); w = z - mean(z); for each of B samples of
    topics drawn with replacement (one count matrix C shared by all pairs),
    t* = mean(w*) / (sd(w*)/sqrt(n)); ASL = (#{|t*| >= |t|} + 1) / (B + 1).
    ``z`` may be a ``Differences`` (the pairs' differences made a block at a time).
    """
    diffs = _differences(z)
    rng = as_rng(seed)
    counts = resampling_counts(diffs.n, resamples, rng)
    t_obs = np.empty(diffs.pairs)
    count = np.empty(diffs.pairs)
    for blk in bootstrap_blocks(diffs, counts, block_bytes, reuse=True):
        t_obs[blk.lo : blk.hi] = blk.t_observed
        count[blk.lo : blk.hi] = blk.extreme_counts()
    return BootstrapDraws(t_obs, monte_carlo_p(count, resamples), counts, diffs, block_bytes)


@dataclass(frozen=True)
class PairEffects:
    """Per pair: the bootstrap percentile interval of the mean difference and mean(z)/sd(z)."""

    ci_low: np.ndarray
    ci_high: np.ndarray
    standardised: np.ndarray


def pair_effects(
    x: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    *,
    level: float = 0.95,
    resamples: int = 1000,
    seed: int | np.random.Generator | None = None,
    block_bytes: int = BLOCK_BYTES,
) -> PairEffects:
    """``anova.effect_sizes``' interval and standardised effect (the same floats) for the pairs
    (a, b) of a (topics, runs) matrix of complete topics, a block of pairs at a time: the
    percentiles of the B unshifted resampled mean differences (the bootstrap's count matrix
    for the same seed) and t_statistic(mean(z), sd(z), 1)."""
    diffs = Differences(np.asarray(x, dtype=np.float64), a, b)
    n = diffs.n
    padded = padded_rows(resampling_counts(n, resamples, as_rng(seed)))
    tail = (1.0 - level) / 2.0 * 100
    low, high, standardised = np.empty(diffs.pairs), np.empty(diffs.pairs), np.empty(diffs.pairs)
    for lo, hi, z in diffs.blocks(padded.shape[0], block_bytes):
        standardised[lo:hi] = t_statistic(z.mean(axis=0), z.std(axis=0, ddof=1), 1)
        low[lo:hi], high[lo:hi] = np.percentile((padded @ z)[:resamples] / n, [tail, 100 - tail], axis=0)
    return PairEffects(low, high, standardised)


def randomisation(
    z: np.ndarray | Differences,
    *,
    resamples: int = 1000,
    seed: int | np.random.Generator | None = None,
    exact: bool = False,
    block_bytes: int = BLOCK_BYTES,
) -> tuple[np.ndarray, np.ndarray]:
    """Fisher's paired randomisation test: statistic mean(z), p = P(|sum s z| >= |sum z|).

    Random sign vectors s (one matrix shared by all pairs, drawn before the first block of
    pairs), or with ``exact`` all 2^n of them (the exact p-value, no +1 correction).
    """
    diffs = _differences(z)
    n = diffs.n
    if exact and n > 24:
        raise ValueError(f"exact enumeration of 2^{n} sign flips is too large; use resamples")
    signs = None if exact else padded_rows(as_rng(seed).choice(np.array([-1.0, 1.0]), size=(resamples, n)))
    mean, p = np.empty(diffs.pairs), np.empty(diffs.pairs)
    for lo, hi, zb in diffs.blocks(1 if signs is None else signs.shape[0], block_bytes):
        observed = np.abs(zb.sum(axis=0))
        mean[lo:hi] = zb.mean(axis=0)
        if signs is None:
            p[lo:hi] = _exact_sign_flip_p(zb, observed)
        else:
            sums = (signs @ zb)[:resamples]
            count = np.count_nonzero(at_least(np.abs(sums, out=sums), observed[None, :]), axis=0)
            p[lo:hi] = monte_carlo_p(count, resamples)
    return mean, p


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
