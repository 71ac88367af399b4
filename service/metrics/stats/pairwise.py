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

import contextlib
import math
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from service.formats.text import nouned
from service.metrics.stats.common import (
    BLOCK_BYTES,
    CACHE_BYTES,
    as_rng,
    as_score_matrix,
    at_least,
    baseline_pairs,
    block_pool,
    block_width,
    column_blocks,
    column_slices,
    for_each_block,
    monte_carlo_p,
    pair_indices,
    run_slices,
    single_threaded_products,
    t_ppf,
    t_sf,
    t_statistic,
    tie_threshold,
    worker_count,
)
from service.metrics.stats.correction import Correction, adjust
from service.metrics.stats.sequential import MonteCarlo

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
    #: Per pair, for a resampling test (None for an exact one): the B its p is over (for the
    #: bootstrap, the informative resamples), its Monte Carlo standard error, the degenerate
    #: resamples left out (bootstrap); ``undecided``: the verdict still straddled alpha when the
    #: sequential resampling stopped (always False without ``sequential``).
    pair_resamples: np.ndarray | None = None
    mc_se: np.ndarray | None = None
    degenerate: np.ndarray | None = None
    undecided: np.ndarray | None = None
    sequential: bool = False
    #: Bootstrap with ``difference_required``: per pair, the difference required at alpha over the
    #: first B draws (``meta.discriminative_power``'s per-pair values).
    required: np.ndarray | None = None

    @property
    def diff(self) -> np.ndarray:
        return self.mean_a - self.mean_b

    @property
    def significant(self) -> np.ndarray:
        """Settled significant verdicts: adjusted p < alpha and not undecided."""
        sig = self.p_adjusted < self.alpha
        return sig if self.undecided is None else sig & ~self.undecided

    def verdicts(self) -> list[str]:
        """Per pair: "significant", "not significant" or "undecided" (at its B)."""
        und = self.undecided if self.undecided is not None else np.zeros(len(self.p), dtype=bool)
        return ["undecided" if u else "significant" if s else "not significant"
                for s, u in zip((self.p_adjusted < self.alpha).tolist(), und.tolist())]

    def significant_matrix(self) -> np.ndarray:
        """(runs, runs) bool: the pair's settled verdict is significant (undecided pairs: not)."""
        n = len(self.runs)
        out = np.zeros((n, n), dtype=bool)
        sig = self.significant
        out[self.a, self.b] = sig
        out[self.b, self.a] = sig
        return out

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
        raise ValueError(f"{nouned(len(unknown), 'baseline run')} not among the runs compared: "
                         f"{', '.join(map(str, unknown))}")
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
    sequential: bool = False,
    max_resamples: int | None = None,
    max_work: float | None = None,
    guarantee: float | None = None,
    difference_required: bool = False,
) -> PairwiseResult:
    """Run ``test`` on every pair of runs of a (topics, runs) score matrix.

    With ``baselines`` (names of runs), only on the pairs with at least one of them: each
    pair's statistic and p are those of the all-pairs result (the same seed draws the same
    resamples), the correction covers the pairs tested. ``block_bytes`` bounds the blocks
    (see ``common.BLOCK_BYTES``); it changes no result.

    ``sequential`` (resampling tests, not exact): after the first ``resamples`` draws, the pairs
    whose verdict straddles alpha are resampled further (``sequential.settle``: up to
    ``max_resamples`` per pair and ``max_work``), so that every settled verdict is the
    B -> infinity verdict with probability at least 1 - ``guarantee``; a pair still straddling is
    ``undecided``. Each pair's p is then over its own B (``pair_resamples``).

    ``difference_required`` (bootstrap): also each pair's difference required at ``alpha`` from
    the first ``resamples`` draws (``PairwiseResult.required``; see ``meta.discriminative_power``).
    """
    out = pairwise_many({"": scores}, runs, test, resamples=resamples, alpha=alpha, correction=correction,
                        seed=seed, exact=exact, baselines=baselines, block_bytes=block_bytes, sequential=sequential,
                        max_resamples=max_resamples, max_work=max_work, guarantee=guarantee,
                        difference_required=difference_required)[""]
    if isinstance(out, ValueError):
        raise out
    return out


def pairwise_many(
    tables: Mapping[str, np.ndarray],
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
    sequential: bool = False,
    max_resamples: int | None = None,
    max_work: float | None = None,
    guarantee: float | None = None,
    difference_required: bool = False,
) -> dict[str, PairwiseResult | ValueError]:
    """:func:`pairwise` on several (topics, runs) matrices of the same runs (a metric each), with
    the same parameters: per key its result, or the ValueError its matrix gave.

    Each matrix's result is the one ``pairwise`` gives it alone, but for ``sequential``: the
    verdicts are settled together (``sequential.settle`` with a segment per matrix, issue 38).
    Every stage's draws are the seed's, whatever the matrix, so the matrices with the same topics
    share one resampling matrix per stage (drawn once, not once per metric), and the guarantee is
    split over the pairs of every matrix: with probability at least 1 - ``guarantee`` every
    settled verdict of every matrix is its B -> infinity verdict, simultaneously."""
    if not 0 < alpha < 1:
        raise ValueError("alpha must lie strictly between 0 and 1")
    if resamples < 1:
        raise ValueError("the number of resamples B must be positive")
    out: dict[str, PairwiseResult | ValueError] = {}
    firsts: dict[str, _FirstStage] = {}
    for key, scores in tables.items():
        try:
            firsts[key] = _first_stage(scores, runs, test, resamples=resamples, alpha=alpha, seed=seed, exact=exact,
                                       baselines=baselines, block_bytes=block_bytes,
                                       difference_required=difference_required)
        except ValueError as exc:
            out[key] = exc
    settled: dict[str, MonteCarlo] = {}
    if sequential:
        settled = _sequential_many({k: f for k, f in firsts.items() if f.mc is not None}, seed=seed, b0=resamples,
                                   alpha=alpha, correction=correction, block_bytes=block_bytes,
                                   max_resamples=max_resamples, max_work=max_work, guarantee=guarantee)
    for key, first in firsts.items():
        out[key] = _finish(first, settled.get(key, first.mc), alpha=alpha, correction=correction, baselines=baselines)
    return {key: out[key] for key in tables}


@dataclass
class _FirstStage:
    """A matrix's test before any later stage: exact tests' p, or the resampling tests' first counts."""

    test: str
    runs: tuple[str, ...]
    x: np.ndarray
    a: np.ndarray
    b: np.ndarray
    means: np.ndarray
    stat: np.ndarray
    p: np.ndarray | None
    mc: MonteCarlo | None
    used_b: int | None
    required: np.ndarray | None
    notes: tuple[str, ...]
    n_topics: int
    rng: np.random.Generator | None


def _first_stage(scores: np.ndarray, runs: list[str] | tuple[str, ...] | None, test: str, *, resamples: int,
                 alpha: float, seed: int | np.random.Generator | None, exact: bool,
                 baselines: Sequence[str] | None, block_bytes: int, difference_required: bool) -> _FirstStage:
    sm = as_score_matrix(scores, runs)
    x = sm.values
    means = x.mean(axis=0)
    a, b = run_pairs(sm.runs, baselines)
    notes = (f"{sm.dropped_topics} topics with missing scores left out",) if sm.dropped_topics else ()
    used_b: int | None = None
    required: np.ndarray | None = None
    p: np.ndarray | None = None
    diffs = Differences(x, a, b)
    mc: MonteCarlo | None = None
    rng = as_rng(seed) if test in RESAMPLING and not (test == "randomisation" and exact) else None
    if test == "tukey":
        from service.metrics.stats.tukey import tukey_counts, tukey_ranges

        ranges = tukey_ranges(x, resamples=resamples, seed=rng)
        stat, used_b = means[a] - means[b], resamples
        count = tukey_counts(np.sort(ranges), means, a, b)
        mc = _monte_carlo(count, np.full(len(a), float(resamples)), resamples)
    elif test == "friedman":
        from service.metrics.stats.tukey import friedman_test, nemenyi_p

        statistic, fp, mean_ranks = friedman_test(x)
        stat, p = mean_ranks[b] - mean_ranks[a], nemenyi_p(mean_ranks, x.shape[0], a, b)
        notes += (f"Friedman chi-square {statistic:.4f}, p = {fp:.4g} (all runs)",)
    elif test in ("t", "wilcoxon", "sign"):
        kernel = {"t": paired_t, "wilcoxon": wilcoxon, "sign": sign_test}[test]
        stat, p = np.empty(diffs.pairs), np.empty(diffs.pairs)

        def classic(lo: int, hi: int) -> None:
            stat[lo:hi], p[lo:hi] = kernel(diffs.block(lo, hi))

        # scipy's Wilcoxon holds about a dozen arrays the size of its input: smaller blocks.
        # Blocks side by side on the CPUs (each writes its own slice), a few per CPU at least.
        cap = max(1, block_bytes // 8) if test == "wilcoxon" else block_bytes
        width = min(block_width(x.shape[0], cap), max(MIN_PARALLEL_BLOCK, -(-diffs.pairs // 8)))
        for_each_block(classic, column_blocks(diffs.pairs, width), workers=1 if test == "wilcoxon" else None)
    elif test == "bootstrap":
        boot = bootstrap(diffs, resamples=resamples, seed=rng, block_bytes=block_bytes,
                         required_alpha=alpha if difference_required else None)
        stat, used_b, required = boot.t_observed, resamples, boot.required
        assert boot.extreme is not None and boot.informative is not None
        mc = _monte_carlo(boot.extreme, boot.informative, resamples)
    elif test == "randomisation":
        if exact:
            stat, p = randomisation(diffs, exact=True, block_bytes=block_bytes)
        else:
            stat, count = _randomisation_counts(diffs, _sign_rows(rng, resamples, diffs.n), block_bytes, resamples)
            mc = _monte_carlo(count, np.full(len(a), float(resamples)), resamples)
            used_b = resamples
    else:
        raise ValueError(f"unknown test {test!r}; choose one of {', '.join(TESTS)}")
    return _FirstStage(test, sm.runs, x, a, b, means, np.asarray(stat, dtype=np.float64), p, mc, used_b, required,
                       notes, sm.n_topics, rng)


def _finish(first: _FirstStage, mc: MonteCarlo | None, *, alpha: float, correction: Correction,
            baselines: Sequence[str] | None) -> PairwiseResult:
    test, a, b, means, notes = first.test, first.a, first.b, first.means, first.notes
    p = np.asarray(mc.p if mc is not None else first.p, dtype=np.float64)
    if mc is not None:
        degenerate = mc.degenerate if test == "bootstrap" else None
        if degenerate is not None and degenerate.any():
            hit = int(np.count_nonzero(degenerate))
            notes += ((f"bootstrap: {hit} of {len(a)} pairs had degenerate resamples (zero spread, t* undefined), "
                       f"{int(degenerate.sum())} resamples in all, at most {int(degenerate.max())} for one pair; "
                       "their p is over the informative resamples"),)
        if mc.sequential and mc.undecided.any():
            notes += ((f"{int(mc.undecided.sum())} of {len(a)} pairs undecided at B = "
                       f"{int(mc.drawn[mc.undecided].max())}: the verdict still straddles alpha"),)
    return PairwiseResult(
        test=test, runs=first.runs, a=a, b=b, mean_a=means[a], mean_b=means[b],
        statistic=first.stat, p=p,
        p_adjusted=adjust(p, correction), correction=correction,
        alpha=alpha, n_topics=first.n_topics, resamples=first.used_b, notes=notes,
        baselines=tuple(dict.fromkeys(baselines)) if baselines is not None else (),
        pair_resamples=None if mc is None else mc.resamples,
        mc_se=np.zeros(len(a)) if mc is None else mc.se,
        degenerate=None if mc is None or test != "bootstrap" else mc.degenerate,
        undecided=np.zeros(len(a), dtype=bool) if mc is None else mc.undecided,
        sequential=bool(mc is not None and mc.sequential),
        required=first.required,
    )


#: The narrowest block a classic test's pairs are split into to run on several CPUs.
MIN_PARALLEL_BLOCK = 4096
#: The tests whose p is a Monte Carlo estimate (randomisation unless exact).
RESAMPLING = frozenset({"bootstrap", "randomisation", "tukey"})
#: Rows of a later stage drawn at a time (bounds the memory of its draws, changes no result).
STAGE_CHUNK = 32768


def _monte_carlo(count: np.ndarray, trials: np.ndarray, b0: int) -> MonteCarlo:
    m = len(count)
    return MonteCarlo(np.asarray(count, dtype=np.float64), np.asarray(trials, dtype=np.float64),
                      np.full(m, float(b0)), np.zeros(m, dtype=bool), 1, False)


def _sign_rows(rng: np.random.Generator | None, rows: int, n: int) -> np.ndarray:
    """(rows, n) random signs, padded (see ``ROW_PAD``)."""
    assert rng is not None
    return padded_rows(rng.choice(np.array([-1.0, 1.0]), size=(rows, n)))


def _randomisation_counts(diffs: Differences, signs: np.ndarray, block_bytes: int,
                          rows: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(mean difference, #{|sum s z| >= |sum z|}) per pair over the sign rows (the first ``rows``)."""
    rows = signs.shape[0] if rows is None else rows
    mean, count = np.empty(diffs.pairs), np.empty(diffs.pairs)
    for lo, hi, zb in diffs.blocks(signs.shape[0], block_bytes):
        observed = np.abs(zb.sum(axis=0))
        mean[lo:hi] = zb.mean(axis=0)
        sums = (signs @ zb)[:rows]
        count[lo:hi] = tally(at_least(np.abs(sums, out=sums), observed[None, :]))
    return mean, count


def _sequential_many(firsts: Mapping[str, _FirstStage], *, seed: int | np.random.Generator | None, b0: int,
                     alpha: float, correction: Correction, block_bytes: int, max_resamples: int | None,
                     max_work: float | None, guarantee: float | None) -> dict[str, MonteCarlo]:
    """The later stages of every matrix's resampling test, settled together (issue 38): the
    guarantee is split over the pairs of all of them. Matrices whose draws are the same (the
    bootstrap or the randomisation test, an integer seed, the same number of topics) form one
    group: each stage's resampling matrix is drawn once for the group and every straddling pair
    of every matrix of it is counted on it (a ``Differences`` over the matrices side by side).
    Tukey's null depends on the scores: a matrix per group."""
    family = sum(len(f.a) for f in firsts.values())
    groups: dict[object, list[str]] = {}
    for key, f in firsts.items():
        share = f.test in ("bootstrap", "randomisation") and isinstance(seed, (int, np.integer))
        groups.setdefault((f.test, f.x.shape[0]) if share else key, []).append(key)
    out: dict[str, MonteCarlo] = {}
    for keys in groups.values():
        out.update(_sequential_group([(k, firsts[k]) for k in keys], seed=seed, b0=b0, alpha=alpha,
                                     correction=correction, block_bytes=block_bytes, max_resamples=max_resamples,
                                     max_work=max_work, guarantee=guarantee, family=family))
    return out


def _sequential_group(group: Sequence[tuple[str, _FirstStage]], *, seed: int | np.random.Generator | None, b0: int,
                      alpha: float, correction: Correction, block_bytes: int, max_resamples: int | None,
                      max_work: float | None, guarantee: float | None, family: int) -> dict[str, MonteCarlo]:
    """``sequential.settle`` of the matrices of ``group`` (one segment each) with their test's
    later stages: each stage's draws come ``STAGE_CHUNK`` rows at a time, each chunk from a child
    stream of the seed of its own (``chunk_stream``)."""
    from service.metrics.stats import sequential as seq

    test = group[0][1].test
    firsts = [f for _, f in group]
    n, runs = firsts[0].x.shape
    if isinstance(seed, (int, np.integer)):
        base = int(seed)
    else:  # a Generator or None: one number from the stream after the first stage's draws
        rng = firsts[0].rng
        assert rng is not None
        base = int(rng.integers(2**62))
    # The matrices side by side: pair (a, b) of the k-th is (a + k runs, b + k runs).
    x = firsts[0].x if len(firsts) == 1 else np.hstack([f.x for f in firsts])
    a = np.concatenate([f.a + k * runs for k, f in enumerate(firsts)])
    b = np.concatenate([f.b + k * runs for k, f in enumerate(firsts)])
    sizes_of = [len(f.a) for f in firsts]
    segments = np.repeat(np.arange(len(firsts)), sizes_of)
    means = x.mean(axis=0)
    cap = seq.MAX_RESAMPLES if max_resamples is None else int(max_resamples)

    def draw(stage: int, sub: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        from service.metrics.stats.tukey import tukey_counts, tukey_ranges

        total = seq.stage_rows(stage, b0, cap)
        sizes = [min(STAGE_CHUNK, total - lo) for lo in range(0, total, STAGE_CHUNK)]
        diffs = Differences(x, a[sub], b[sub])
        # Each chunk's draws come from a stream of its own (``seq.chunk_stream``), so chunks are
        # drawn and counted side by side on the CPUs (the drawing is most of a later stage's time
        # when few pairs are left) and every count is the same whatever the threads and order.
        # A single chunk (an early stage: many pairs, few draws) is split by pairs instead.
        side_by_side = len(sizes) > 1 and worker_count() > 1
        parts: list[tuple[np.ndarray, np.ndarray]] = [(np.zeros(len(sub)), np.zeros(len(sub))) for _ in sizes]

        def chunk(j: int, _: int) -> None:
            gen, rows = seq.chunk_stream(base, stage, j), sizes[j]
            count, trials = parts[j]
            with single_threaded_products() if side_by_side else contextlib.nullcontext():
                if test == "bootstrap":
                    _bootstrap_counts(diffs, resampling_counts(n, rows, gen, np.int32), block_bytes, None, count, trials,
                                      workers=1 if side_by_side else None)
                elif test == "randomisation":
                    count += _randomisation_counts(diffs, _sign_rows(gen, rows, n), block_bytes, rows)[1]
                    trials += rows
                else:  # tukey: one null for every pair
                    count += tukey_counts(np.sort(tukey_ranges(x, resamples=rows, seed=gen)), means, a[sub], b[sub])
                    trials += rows

        for_each_block(chunk, [(j, j + 1) for j in range(len(sizes))], workers=None if side_by_side else 1)
        # whole numbers: their sum is the same in any order
        return np.sum([c for c, _ in parts], axis=0), np.sum([t for _, t in parts], axis=0)

    kwargs = {k: v for k, v in (("max_resamples", max_resamples), ("max_work", max_work),
                                ("guarantee", guarantee)) if v is not None}
    assert all(f.mc is not None for f in firsts)
    count = np.concatenate([f.mc.count for f in firsts])  # type: ignore[union-attr]
    trials = np.concatenate([f.mc.resamples for f in firsts])  # type: ignore[union-attr]
    mc = seq.settle(count, trials, draw, b0=b0, alpha=alpha, correction=correction, shared=test == "tukey",
                    cost_per_draw=float(n * runs if test == "tukey" else n), segments=segments, family=family,
                    **kwargs)
    out, lo = {}, 0
    for (key, _), size in zip(group, sizes_of):
        part = slice(lo, lo + size)
        out[key] = MonteCarlo(mc.count[part], mc.resamples[part], mc.drawn[part], mc.undecided[part], mc.stages, True)
        lo += size
    return out


# ----------------------------------------------------------------------- classic tests
def paired_t(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Paired t-test on differences z (topics, pairs); identical runs get t = 0, p = 1."""
    n = z.shape[0]
    t = t_statistic(z.mean(axis=0), z.std(axis=0, ddof=1), n)
    return t, 2.0 * t_sf(np.abs(t), n - 1)


def wilcoxon(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Wilcoxon signed-rank (scipy's, zero differences dropped); all-zero pairs get p = 1.

    scipy picks the exact or the normal-approximation p-value from the number of
    non-zero differences and the presence of ties, deciding once per call; pairs
    are therefore tested in groups that share both, so each p-value is the one
    ``scipy.stats.wilcoxon(x_a, x_b)`` gives for that pair alone.
    """
    from scipy import stats

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
    from scipy import stats

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
        """#{|t*| >= |t|} per pair over the informative resamples (finite t*), ties counted with the
        float tolerance of ``at_least``. A degenerate resample (sd* = 0 with mean* != 0, t* = +-inf:
        its studentised statistic is undefined) is left out, not counted as extreme: see
        ``informative_counts`` and docs/statistics.md, "Degenerate resamples"."""
        return np.count_nonzero(at_least(self.abs_t_star, np.abs(self.t_observed)[None, :])
                                & np.isfinite(self.abs_t_star), axis=0)

    def informative_counts(self) -> np.ndarray:
        """#{resamples with a finite t*} per pair: the B of the pair's conditional p."""
        return np.count_nonzero(np.isfinite(self.abs_t_star), axis=0)

    def p(self) -> np.ndarray:
        """Each pair's ASL over its informative resamples: (count + 1) / (B_informative + 1)."""
        return monte_carlo_p(self.extreme_counts(), self.informative_counts())


@dataclass(frozen=True)
class BootstrapDraws:
    """Sakai's bootstrap for every pair: observed t and ASL; the null replicates on demand.

    The replicates are not kept (they are B x pairs): ``blocks()`` makes them a block of
    pairs at a time from the shared count matrix, ``diff_percentiles`` reduces the unshifted
    ones block by block. ``t_star``, ``mean_star`` and ``diff_star`` assemble the whole
    (B, pairs) matrices, for small inputs only.
    """

    t_observed: np.ndarray  # (pairs,)
    p: np.ndarray  # (pairs,) ASL with the +1 correction, over the informative resamples
    counts: np.ndarray  # (B, n) how often each topic is drawn in each resample
    differences: Differences
    block_bytes: int = BLOCK_BYTES
    extreme: np.ndarray | None = None  # (pairs,) #{|t*| >= |t|} among the informative resamples
    informative: np.ndarray | None = None  # (pairs,) resamples with a finite t* (B minus the degenerate ones)
    required: np.ndarray | None = None  # (pairs,) difference required at ``required_alpha`` (when asked)

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


def resampling_counts(n: int, resamples: int, rng: np.random.Generator,
                      index_dtype: type = np.int64) -> np.ndarray:
    """(B, n) matrix: how often each topic is drawn in each bootstrap sample of size n.

    ``index_dtype``: the integers the topics are drawn as. np.int32 draws (exactly uniform too) in
    about half the time of np.int64 but other draws from the same stream: only the sequential
    rule's later stages use it (issue 38; their draws are identified by ``sequential.RULE``), so
    that every first stage, fixed-B test and interval keeps the draws of its seed."""
    draws = rng.integers(0, n, size=(resamples, n), dtype=index_dtype)
    if resamples * n >= np.iinfo(draws.dtype).max:
        draws = draws.astype(np.int64)
    draws += (np.arange(resamples, dtype=draws.dtype) * n)[:, None]  # a flat (resample, topic) cell index
    # Counted straight into floats (numpy's unbuffered add.at): half the time of bincount then astype
    # (issue 38: a later stage's draws are most of its time when few pairs are left), the same counts.
    out = np.zeros(resamples * n)
    np.add.at(out, draws.ravel(), 1.0)
    return out.reshape(resamples, n)


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
    rows = counts.shape[0]
    padded = padded_rows(counts)
    scratch = _Scratch(padded.shape[0], reuse)
    for lo, hi, zb in diffs.blocks(padded.shape[0], block_bytes):
        t_obs, t, mean_star, abs_t = _bootstrap_block(zb, padded, rows, scratch)
        yield BootstrapBlock(lo, hi, t_obs, t, mean_star, abs_t)


def _bootstrap_block(zb: np.ndarray, padded: np.ndarray, rows: int, scratch: _Scratch
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One block of :func:`bootstrap_blocks`: (t observed, t*, mean*, |t*|)."""
    n, cols = zb.shape
    t_obs, mean_star, sq = _bootstrap_sums(zb, padded, rows, scratch)
    t, abs_t, _ = _studentised(mean_star, sq, n, scratch.get("t", cols)[:rows], scratch.get("mask", cols, np.bool_)[:rows])
    return t_obs, t, mean_star, abs_t


def _bootstrap_sums(zb: np.ndarray, padded: np.ndarray, rows: int, scratch: _Scratch
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(t observed, C w / n, C w^2) of a block of pairs: the resamples' means and sums of squares."""
    n, cols = zb.shape
    t_obs, w, w2 = _centred(zb)
    # Sums over a resample are count-weighted sums: C @ w and C @ w^2.
    mean_star = np.matmul(padded, w, out=scratch.get("mean", cols))[:rows]
    mean_star /= n
    sq = np.matmul(padded, w2, out=scratch.get("sd", cols))[:rows]
    return t_obs, mean_star, sq


def _studentised(mean_star: np.ndarray, sq: np.ndarray, n: int, t: np.ndarray, mask: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, bool]:
    """(t*, |t*|, whether some sd* is 0) from a block's mean* and sum of squares ``sq`` (overwritten,
    as are ``t`` and ``mask``, arrays of the same shape; element by element, so any split of the
    columns gives the same floats). Without a zero sd* every t* is finite (an sd* above 1e-12
    |mean*| bounds |t*|), which lets :func:`_bootstrap_counts` skip the finiteness passes."""
    np.multiply(mean_star, mean_star, out=t)  # var* = max(sum w*^2 - n mean*^2, 0) / (n - 1)
    t *= n
    # sum w*^2 - n mean*^2 cancels when a resample's values are all equal: a remainder within
    # 1e-12 of sum w*^2 is round-off (the resample has zero spread), not variation.
    np.subtract(sq, t, out=t)  # the remainder, in t's array; then 1e-12 sum w*^2 in sq's
    np.multiply(sq, 1e-12, out=sq)
    np.less_equal(t, sq, out=mask)
    sd, t = t, sq
    np.copyto(sd, 0.0, where=mask)
    np.maximum(sd, 0.0, out=sd)
    sd /= n - 1
    np.sqrt(sd, out=sd)
    # t* = mean* / (sd* / sqrt(n)): an sd* below 1e-12 |mean*| is round-off (zero); 0/0 is 0.
    np.abs(mean_star, out=t)
    t *= 1e-12
    np.less_equal(sd, t, out=mask)
    np.copyto(sd, 0.0, where=mask)
    sd /= np.sqrt(n)
    with np.errstate(divide="ignore", invalid="ignore"):
        np.divide(mean_star, sd, out=t)
    np.equal(sd, 0.0, out=mask)
    zero_sd = bool(mask.any())
    if zero_sd:
        mask &= mean_star == 0
        np.copyto(t, 0.0, where=mask)
    return t, np.abs(t, out=sd), zero_sd


def _bootstrap_counts(diffs: Differences, counts: np.ndarray, block_bytes: int,
                      t_obs: np.ndarray | None, extreme: np.ndarray, informative: np.ndarray,
                      required: tuple[float, np.ndarray] | None = None, workers: int | None = None,
                      lanes: bool = False) -> None:
    """Each pair's observed t (into ``t_obs`` unless None), #{|t*| >= |t|} among the informative
    resamples (added to ``extreme``) and the informative resamples (added to ``informative``):
    ``BootstrapBlock.extreme_counts`` and ``informative_counts``, the same counts, with blocks
    the size of a core's cache (``common.CACHE_BYTES``) side by side on the CPUs, and fewer
    passes over each (:func:`_extreme_counts`). The resamples are taken a slice of rows at a
    time (:func:`_row_slices`, whole tiles of ``ROW_PAD`` rows): with B = 10,000 a block of
    pairs then multiplies a slice of the count matrix that stays in the cache instead of the
    whole matrix, read again for every dozen pairs.

    ``required`` = (alpha, out): also each pair's difference required at alpha (into ``out``)
    from the same replicates, a block of pairs at a time: the meta-evaluation's second pass over
    every replicate is not needed. Each replicate's r is kept as a (pairs, B) lane and the chosen
    replicate found among them (:func:`_required_from_r`, issue 38); with ``lanes``, or where that
    cannot choose, each replicate's |t*| and |mean*| are kept and chosen among
    (:func:`required_from_lanes`, the definition's plain form: the same values).
    ``workers``: the threads (default: ``worker_count``; 1 when the caller runs several at once)."""
    rows, n = counts.shape
    padded = padded_rows(counts)
    slices = _row_slices(padded.shape[0], n)
    local = threading.local()  # each thread's own arrays, reused from block to block
    keep_lanes = required is not None and lanes  # every replicate's |t*| and |mean*|
    keep_r = required is not None and not lanes  # every replicate's r (_required_from_r)
    lean = not keep_lanes  # the counts of _extreme_counts_only
    # the lean counts in single precision, the few replicates near a bound settled in double
    # (_extreme_counts_single); counts are small whole numbers, exact in float32
    padded32 = (padded.astype(np.float32) if required is None and n <= SINGLE_MAX_TOPICS
                and diffs.pairs >= SINGLE_MIN_PAIRS else None)

    def lanes_pass(w: np.ndarray, w2: np.ndarray, threshold: np.ndarray, parts: Sequence[tuple[int, int]],
                   own: _Scratch, kept: _Scratch) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        assert required is not None
        return _lanes_pass(padded, rows, required[0], w, w2, threshold, parts, own, kept)

    def work(lo: int, hi: int, parts: Sequence[tuple[int, int]] | None = None,
             into: tuple[np.ndarray, np.ndarray] = (extreme, informative)) -> None:
        parts = slices if parts is None else parts
        own = getattr(local, "scratch", None)
        if own is None:
            own = local.scratch = _Scratch(max(r1 - r0 for r0, r1 in slices), True)
            local.lanes = _Scratch(width, True) if required is not None else None
        if keep_lanes:
            observed, w, w2 = _centred(diffs.block(lo, hi))
            if t_obs is not None:
                t_obs[lo:hi] = observed
            with single_threaded_products():
                count, trials, value = lanes_pass(w, w2, tie_threshold(np.abs(observed)), parts, own, local.lanes)
            into[0][lo:hi] += count
            into[1][lo:hi] += trials
            assert required is not None
            required[1][lo:hi] = value
            return
        observed, w, w2 = _centred(diffs.block(lo, hi))
        if t_obs is not None:
            t_obs[lo:hi] = observed
        threshold = tie_threshold(np.abs(observed))
        cols = hi - lo
        # single precision where the double path's decisions do not hang on round-off: not for a
        # pair whose observed t is itself round-off (0 < |t| < 1e-6, a mean difference that is
        # zero but for its last bits: there r is compared with a bound of round-off size)
        single = (padded32 is not None and cols >= SINGLE_MIN_PAIRS and _single_fits(w)
                  and not bool(np.any((threshold > 0) & (threshold < 1e-6))))
        if single:
            w32, w2_32 = w.astype(np.float32), w2.astype(np.float32)
        if keep_r:  # every replicate's n mean*, sum w*^2 and r, (B, pairs) each
            big = getattr(local, "big", None)
            if big is None:
                big = local.big = _Scratch(padded.shape[0], True)
            sums, squares = big.get("sums", cols), big.get("squares", cols)
            r_lanes = local.lanes.get("r", rows)[:cols]  # (pairs, B): each pair's r, a contiguous lane
            largest = np.full(cols, -np.inf)
        with single_threaded_products():
            for r0, r1 in parts:
                real = min(r1, rows) - r0  # the slice's resamples (the rest: padding)
                if single:
                    assert padded32 is not None
                    count, trials = _single_slice(padded, padded32, r0, r1, real, (w, w2, w32, w2_32),
                                                  threshold, own)
                    into[0][lo:hi] += count
                    into[1][lo:hi] += trials
                    continue
                # on n mean* (the product itself: the division by n is folded into the bounds)
                if keep_r:  # kept whole: the chosen replicates' floats are read back from them
                    sum_star = np.matmul(padded[r0:r1], w, out=sums[r0:r1])[:real]
                    sq = np.matmul(padded[r0:r1], w2, out=squares[r0:r1])[:real]
                else:
                    sum_star = np.matmul(padded[r0:r1], w, out=own.get("mean", cols)[: r1 - r0])[:real]
                    sq = np.matmul(padded[r0:r1], w2, out=own.get("sd", cols)[: r1 - r0])[:real]
                r = own.get("r", cols)[:real] if keep_r else None
                count, trials, top = _extreme_counts_only(sum_star, sq, n, threshold, own, r)
                if keep_r:
                    r_lanes[:, r0 : r0 + real] = r.T
                    np.fmax(largest, top, out=largest)
                into[0][lo:hi] += count
                into[1][lo:hi] += trials
            if keep_r:
                assert required is not None

                value = _required_from_r(r_lanes, sums[:rows], squares[:rows], largest, np.any(w == 0, axis=0), n,
                                         max(1, math.ceil(rows * required[0])))
                if value is None:  # a replicate near zero spread or near the chosen one: every lane
                    value = lanes_pass(w, w2, threshold, parts, own, _Scratch(cols, False))[2]
                required[1][lo:hi] = value

    width = block_width(max(max(r1 - r0 for r0, r1 in slices), n), min(block_bytes, CACHE_BYTES))
    if required is not None:  # the lanes of a block: two (width, B) arrays per thread, within block_bytes
        width = min(width, block_width(rows, max(block_bytes // 8, 1)))
    blocks = list(column_blocks(diffs.pairs, width))
    if lean:  # few pairs (a later stage): longer slices, so that each pass is worth its call
        slices = _row_slices(padded.shape[0], n, min(width, diffs.pairs))
    workers = worker_count() if workers is None else workers
    if required is None and t_obs is None and 1 < workers and len(blocks) < workers and len(slices) >= 2 * workers:
        _rows_shared(work, blocks, slices, workers, extreme, informative)
        return
    for_each_block(work, blocks, workers=workers)


def _rows_shared(work: Callable[..., None], blocks: Sequence[tuple[int, int]], slices: Sequence[tuple[int, int]],
                 workers: int, extreme: np.ndarray, informative: np.ndarray) -> None:
    """Few pairs and many resamples (a later stage, issue 38): the threads share the resamples
    (``slices``) instead of the pairs, each counting its own rows into arrays of its own
    (``work(lo, hi, parts, into)``, :func:`_bootstrap_counts`'). The counts are whole numbers, so
    their sum is the same in any order: the same counts as one thread."""
    lock = threading.Lock()

    def rows_part(g0: int, g1: int) -> None:
        mine = (np.zeros_like(extreme), np.zeros_like(informative))
        for lo, hi in blocks:
            work(lo, hi, slices[g0:g1], mine)
        with lock:
            extreme[:] += mine[0]
            informative[:] += mine[1]

    step = -(-len(slices) // workers)
    for_each_block(rows_part, [(g, min(g + step, len(slices))) for g in range(0, len(slices), step)])


def _lanes_pass(padded: np.ndarray, rows: int, alpha: float, w: np.ndarray, w2: np.ndarray, threshold: np.ndarray,
                parts: Sequence[tuple[int, int]], own: _Scratch, kept: _Scratch
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(extreme, informative, difference required) of a block's pairs (w, w2: their centred
    differences and squares) from every replicate's |t*| and |mean*|, kept as (pairs, B) lanes in
    ``kept``: :func:`_bootstrap_counts` with ``lanes``, or where :func:`_required_from_r` cannot
    choose. ``padded``: the padded count matrix of ``rows`` resamples."""
    n, cols = w.shape
    count, trials = np.zeros(cols), np.zeros(cols)
    degenerate = False  # a degenerate replicate (inf |t*|) in the lanes
    abs_t_lanes, magnitude_lanes = kept.get("abs_t", rows)[:cols], kept.get("magnitude", rows)[:cols]
    for r0, r1 in parts:
        real = min(r1, rows) - r0  # the slice's resamples (the rest: padding)
        mean_star = np.matmul(padded[r0:r1], w, out=own.get("mean", cols)[: r1 - r0])[:real]
        sq = np.matmul(padded[r0:r1], w2, out=own.get("sd", cols)[: r1 - r0])[:real]
        mean_star /= n
        c, t, abs_t, magnitude = _extreme_counts(mean_star, sq, n, threshold, own)
        count += c
        trials += t
        degenerate |= np.any(t != real)
        abs_t_lanes[:, r0 : r0 + real] = abs_t.T
        magnitude_lanes[:, r0 : r0 + real] = magnitude.T
    return count, trials, required_from_lanes(abs_t_lanes, magnitude_lanes, alpha, finite=not degenerate)


def _single_slice(padded: np.ndarray, padded32: np.ndarray, r0: int, r1: int, real: int,
                  block: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], threshold: np.ndarray,
                  own: _Scratch) -> tuple[np.ndarray, np.ndarray | int]:
    """:func:`_extreme_counts_single`'s counts of the resamples r0:r1 (``real`` of them, the rest
    padding) for a block whose (w, w2) are given in double and single precision (``block``)."""
    w, w2, w32, w2_32 = block
    cols = w.shape[1]

    def exact(at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The double-precision products of the slice's resamples ``at`` (every pair of the block;
        their last bits may differ from the whole slice's: _extreme_counts_single)."""
        picked = padded_rows(padded[r0 + at])
        return (picked @ w)[: len(at)], (picked @ w2)[: len(at)]

    return _extreme_counts_single(
        np.matmul(padded32[r0:r1], w32, out=own.get("s32", cols, np.float32)[: r1 - r0])[:real],
        np.matmul(padded32[r0:r1], w2_32, out=own.get("q32", cols, np.float32)[: r1 - r0])[:real],
        w.shape[0], threshold, own, exact)


#: The relative half-width in r of the window around a pair's chosen replicate (_required_from_r):
#: far beyond the floats' error in r or |t*| (below 1e-12 while r < n (1 - 1e-3)), and narrow
#: enough that a replicate rarely falls between one and two widths of it (then every |t*| is kept).
REQUIRED_WINDOW = 1e-9
#: A pair with a replicate whose r is within this share of n of zero spread is chosen from its |t*|.
NEAR_ZERO_SPREAD = 1e-3


def _required_from_r(r_lanes: np.ndarray, sums: np.ndarray, squares: np.ndarray, largest: np.ndarray,
                     zero_w: np.ndarray, n: int, k: int) -> np.ndarray | None:
    """Each pair's difference required from its replicates' r = n^2 mean*^2 / sum w*^2 (issue 38):
    :func:`required_from_lanes`' choice (|mean*| of the replicate with the k-th largest |t*|, ties
    in resample order) without every replicate's |t*|. ``r_lanes``: (pairs, B), each pair's r;
    ``sums`` (n mean*) and ``squares`` (sum w*^2): (B, pairs), the floats of the slices' products.
    |t*| increases with r (t*^2 = (n - 1) r / (n - r)), so the k-th largest r, v, is the chosen
    replicate's up to the floats; the replicates with r within REQUIRED_WINDOW of v (usually v's
    alone, more where replicates tie) get their |t*| and |mean*| as :func:`_extreme_counts`
    computes them, and the chosen one is the (k - a)-th of them by decreasing |t*| then resample
    order, a being the replicates above the window. A replicate between one and two window widths
    from v on either side would make that ordering unsure: then, as for a replicate near zero
    spread (``largest`` r near n, where degenerate replicates are left out) or a k-th r of 0, None
    is returned and the caller keeps every |t*|. Every replicate is informative here (k = ceil(B
    alpha)); ``zero_w``: the pairs with a zero centred difference, the only ones whose r may be 0/0
    (NaN: t* = 0, the smallest |t*|). ``r_lanes`` is overwritten."""
    pairs, b = r_lanes.shape
    if not bool((largest < n * (1.0 - NEAR_ZERO_SPREAD)).all()):  # (NaN: every replicate 0/0)
        return None
    for j in np.flatnonzero(zero_w).tolist():
        lane = r_lanes[j]
        np.copyto(lane, 0.0, where=np.isnan(lane))
    part = r_lanes.copy()  # the partial sort reorders its lanes
    part.partition(b - k, axis=1)
    v = part[:, b - k].copy()
    if not bool((v > 0).all()):
        return None
    up, up2 = v * (1 + REQUIRED_WINDOW), v * (1 + 2 * REQUIRED_WINDOW)
    down, down2 = v * (1 - REQUIRED_WINDOW), v * (1 - 2 * REQUIRED_WINDOW)
    higher = part[:, b - k + 1 :]  # the k - 1 largest r of each lane, unordered
    above = np.count_nonzero(higher > up[:, None], axis=1)
    if bool(np.any((higher > up[:, None]) & (higher <= up2[:, None]))):
        return None
    cells = np.flatnonzero(r_lanes >= down2[:, None])  # lane by lane, each in resample order
    pair_of, at = np.divmod(cells, b)
    value = r_lanes.ravel()[cells]
    if bool(np.any(value < down[pair_of])):
        return None
    inside = value <= up[pair_of]
    at, pair_of = at[inside], pair_of[inside]
    # _extreme_counts' operations, in its order (no round-off case: every r is below n (1 - 1e-3))
    mean = sums[at, pair_of] / n
    sd = mean * mean
    sd *= n
    sd = squares[at, pair_of] - sd
    sd /= n - 1
    np.sqrt(sd, out=sd)
    sd /= np.sqrt(n)
    magnitude = np.abs(mean)
    abs_t = magnitude / sd
    order = np.lexsort((at, -abs_t, pair_of))  # by pair, then decreasing |t*|, then resample order
    pairs_in_order = pair_of[order]
    pick = np.searchsorted(pairs_in_order, np.arange(pairs)) + (k - above) - 1
    if not bool(np.all(pairs_in_order[np.minimum(pick, len(order) - 1)] == np.arange(pairs))):
        return None  # (cannot happen: the window holds the (k - a)-th; kept as a check)
    return magnitude[order][pick]


def required_from_lanes(abs_t: np.ndarray, magnitude: np.ndarray, alpha: float, finite: bool = False) -> np.ndarray:
    """Per pair (a row of the (pairs, B) lanes), the difference required at ``alpha``: |mean*| of
    the resample with the k-th largest |t*| among the pair's informative resamples (finite t*;
    k = max(1, ceil(B_informative alpha)), as the ASL counts only those), ties in |t*| taken in
    resample order (the choice of a stable sort by decreasing |t*|). NaN for a pair without an
    informative resample. ``abs_t`` is overwritten (a degenerate resample's inf becomes -1).
    ``finite``: the caller knows every |t*| is finite (no degenerate resample): not checked again.

    One partial sort per lane (linear in B) finds the k-th largest value; the resamples above it
    are counted among the k - 1 it leaves on its right, and a tie is resolved only in the lanes
    that have one."""
    pairs, rows = abs_t.shape
    if finite:
        informative = np.full(pairs, rows)
    else:
        ok = np.isfinite(abs_t)
        informative = np.count_nonzero(ok, axis=1)
        if (informative < rows).any():
            np.copyto(abs_t, -1.0, where=~ok)  # the degenerate ones last, never chosen (k <= informative)
    out = np.full(pairs, np.nan)
    wanted = np.array([max(1, math.ceil(int(i) * alpha)) for i in informative.tolist()], dtype=np.int64)
    for k in np.unique(wanted[informative > 0]).tolist():
        lanes = np.flatnonzero((wanted == k) & (informative > 0))
        key = abs_t if len(lanes) == pairs else abs_t[lanes]
        part = key.copy()  # the partial sort reorders its lanes
        part.partition(rows - k, axis=1)
        kth = part[:, rows - k]
        above = np.count_nonzero(part[:, rows - k + 1 :] > kth[:, None], axis=1)
        rank = k - 1 - above  # the wanted resample's place among those tied at the k-th value (0-based)
        tied = key == kth[:, None]
        chosen = np.argmax(tied, axis=1)  # the first tied resample: right when rank is 0
        more = np.flatnonzero(rank > 0)
        if len(more):
            t = tied[more]
            chosen[more] = np.argmax(t & (np.cumsum(t, axis=1) == rank[more, None] + 1), axis=1)
        out[lanes] = magnitude[lanes, chosen]
    return out


#: A slice of resamples for a block of pairs has at least this many cells (resamples x pairs)
#: where the block is narrow, up to 8 times the rows the cache would take: each pass over a
#: slice is a numpy call whose fixed cost, paid holding the GIL, otherwise outweighs its work
#: when few pairs are left (issue 38: a later stage's two threads took turns).
MIN_SLICE_CELLS = 1 << 17


def _row_slices(padded_rows_: int, n: int, cols: int | None = None) -> list[tuple[int, int]]:
    """[r0, r1) slices of a padded count matrix's rows, each a whole number of ``ROW_PAD`` tiles
    and about half of ``CACHE_BYTES`` of counts (n topics a row); longer for a block of only
    ``cols`` pairs (``MIN_SLICE_CELLS``). Where the slices end changes no float (whole tiles)."""
    step = max(ROW_PAD, (CACHE_BYTES // 2) // (8 * max(n, 1)) // ROW_PAD * ROW_PAD)
    if cols is not None and step * cols < MIN_SLICE_CELLS:
        step = min(8 * step, -(-MIN_SLICE_CELLS // max(cols, 1) // ROW_PAD) * ROW_PAD)
    return [(r0, min(r0 + step, padded_rows_)) for r0 in range(0, padded_rows_, step)]


def _centred(zb: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(t observed, w, w^2) of a block of differences: w = z - mean(z), round-off zeroed."""
    n = zb.shape[0]
    mean = zb.mean(axis=0)
    t_obs = t_statistic(mean, zb.std(axis=0, ddof=1), n)
    w = zb - mean
    # Centred differences at round-off level are zero (see t_statistic): otherwise resamples
    # of pure noise (equal noise values give sd* = 0) would count as infinitely extreme.
    w = np.where(np.abs(w) <= 1e-12 * np.max(np.abs(zb), axis=0), 0.0, w)
    return t_obs, w, w * w


def _extreme_counts(mean_star: np.ndarray, sq: np.ndarray, n: int, threshold: np.ndarray, scratch: _Scratch
                    ) -> tuple[np.ndarray, np.ndarray | int, np.ndarray, np.ndarray]:
    """Per pair of a block, #{|t*| >= threshold} among the finite t* and the finite t*, from the
    resamples' mean* and sums of squares (``sq``, overwritten): :func:`_studentised`'s t* and the
    counts of ``BootstrapBlock``, the same floats and counts, in fewer passes: |t*| is computed as
    |mean*| / sd* (exactly |mean* / sd*|: sd* >= 0), ``_studentised``'s max(., 0) is left out
    (every remainder it meets is already above 1e-12 sum w*^2 >= 0), and without a zero sd*, every
    t* is finite (an sd* above 1e-12 |mean*| bounds |t*|), so finiteness needs no pass. Also returns
    |t*| (inf: a degenerate resample) and |mean*|, in the arrays of ``sq`` and ``mean_star``.

    A slice whose every replicate has mean*^2 / sq clearly below (1 - 1e-12) / n (its largest, one
    reduction; issue 38) has no zero or round-off spread, so the round-off tests change nothing and
    are skipped: the same floats and counts in about two thirds of the passes."""
    rows, cols = mean_star.shape
    t = scratch.get("t", cols)[:rows]
    mask = scratch.get("mask", cols, np.bool_)[:rows]
    np.multiply(mean_star, mean_star, out=t)
    ratio = scratch.get("ratio", cols)[:rows]
    with np.errstate(divide="ignore", invalid="ignore"):
        np.divide(t, sq, out=ratio)
    # NaN (0/0: a replicate without spread or difference) fails the test too
    if rows and bool((ratio.max(axis=0) < (1.0 - 1e-12) / n * (1.0 - 1e-6)).all()):
        t *= n
        np.subtract(sq, t, out=t)  # sum w*^2 - n mean*^2, at least 1e-6 of sum w*^2 here
        t /= n - 1
        np.sqrt(t, out=t)
        t /= np.sqrt(n)
        magnitude = np.abs(mean_star, out=mean_star)
        abs_t = np.divide(magnitude, t, out=sq)
        hit = np.greater_equal(abs_t, threshold[None, :], out=mask)
        return tally(hit), rows, abs_t, magnitude
    t *= n
    np.subtract(sq, t, out=t)  # sum w*^2 - n mean*^2; round-off (zero spread) within 1e-12 sum w*^2
    np.multiply(sq, 1e-12, out=sq)
    np.less_equal(t, sq, out=mask)
    sd = t
    np.copyto(sd, 0.0, where=mask)
    sd /= n - 1
    np.sqrt(sd, out=sd)
    magnitude = np.abs(mean_star, out=mean_star)  # |mean*|, in mean*'s array (not needed after)
    np.multiply(magnitude, 1e-12, out=sq)  # an sd* below 1e-12 |mean*| is round-off (zero)
    np.less_equal(sd, sq, out=mask)
    np.copyto(sd, 0.0, where=mask)
    sd /= np.sqrt(n)
    zero_sd = bool(sd.min() == 0.0)
    abs_t = sq
    with np.errstate(divide="ignore", invalid="ignore"):
        np.divide(magnitude, sd, out=abs_t)
    if zero_sd:
        np.equal(sd, 0.0, out=mask)
        mask &= magnitude == 0  # 0/0: no difference, t* = 0
        np.copyto(abs_t, 0.0, where=mask)
    hit = np.greater_equal(abs_t, threshold[None, :], out=mask)
    if not zero_sd:
        return tally(hit), rows, abs_t, magnitude
    finite = np.isfinite(abs_t)  # degenerate resamples (t* = +-inf) are left out
    hit &= finite
    return tally(hit), tally(finite), abs_t, magnitude


def _extreme_counts_only(sum_star: np.ndarray, sq: np.ndarray, n: int, threshold: np.ndarray,
                         scratch: _Scratch, r: np.ndarray | None = None
                         ) -> tuple[np.ndarray, np.ndarray | int, np.ndarray]:
    """:func:`_extreme_counts`' two counts in about a third of its passes, for every count that
    needs nothing else (issue 38: a first stage without the difference required and every later
    stage of the sequential rule), from each replicate's sum_star = sum of its w* (n mean*: the
    product itself) and sq = sum w*^2. With r = sum_star^2 / sq = n^2 mean*^2 / sq (at most n:
    Cauchy-Schwarz):

    - |t*| >= h is n (n - 1) mean*^2 >= h^2 (sq - n mean*^2) (both sides squared, the subtraction
      moved over: no square root, no cancellation), that is r >= F = n h^2 / (n - 1 + h^2) per
      pair; h <= 0 gives F = 0 (every resample is at least h);
    - sd* is zero (round-off) where sq - n mean*^2 <= 1e-12 sq, that is r >= G = n (1 - 1e-12)
      (_extreme_counts' second test, (sq - n mean*^2) / (n - 1) <= 1e-24 mean*^2, is r >= n in
      doubles, which implies the first). One reduction (the largest r of each pair) shows which
      pairs have such a replicate at all; only theirs are counted.

    F is capped at G (an h above about 7e6, or an infinite one, can only be reached by a zero
    spread), so every zero-spread replicate with mean* != 0 (degenerate: left out) is also
    counted by the first test and is taken off it. A zero-spread replicate with mean* = 0 (t* =
    0) has r = 0/0 (NaN): it is counted as informative and never as reaching h > 0; for a pair
    with h <= 0 every informative replicate is extreme. The comparisons differ from
    _extreme_counts' only in the last bits of a quotient, far inside the tie tolerance (1e-9)
    around h; tests/unit/test_settled_boundary.py holds the two to the same counts.
    r is written into ``r`` if given, else over ``sum_star``; each pair's largest r is returned
    too (NaN where every replicate is 0/0)."""
    rows, cols = sum_star.shape
    h = np.asarray(threshold, dtype=np.float64)
    big = n * (1.0 - 1e-12)
    with np.errstate(invalid="ignore", over="ignore"):
        h2 = np.where(h > 0, h * h, 0.0)  # NaN or h <= 0: every resample is at least h
        bound = n * h2 / (n - 1 + h2)  # inf / inf (an infinite h): NaN, capped to G below
    bound = np.where(np.isnan(bound) | (bound > big), big, bound)
    r = np.multiply(sum_star, sum_star, out=sum_star if r is None else r)
    with np.errstate(divide="ignore", invalid="ignore"):
        np.divide(r, sq, out=r)
    hit = np.greater_equal(r, bound[None, :], out=scratch.get("hit", cols, np.bool_)[:rows])
    count = tally(hit)
    anything = h <= 0
    top = by_column(np.fmax, r)  # NaN only where every replicate is 0/0
    zero_cols = np.flatnonzero(top >= big)
    if not len(zero_cols) and not anything.any():
        return count, rows, top
    informative = np.full(cols, rows, dtype=np.int64)
    if len(zero_cols):
        degenerate = np.count_nonzero(r[:, zero_cols] >= big, axis=0)  # zero spread, mean* != 0 (r > 0)
        count[zero_cols] -= degenerate
        informative[zero_cols] -= degenerate
    count = np.where(anything, informative, count)
    return count, informative, top


#: The single-precision lean count (:func:`_extreme_counts_single`) is used up to this many
#: topics: its error bound on r grows with n^2 (the band of replicates settled in double with it).
SINGLE_MAX_TOPICS = 512


def by_column(ufunc: np.ufunc, a: np.ndarray, dtype: type | None = None) -> np.ndarray:
    """``ufunc.reduce(a, axis=0)`` of a C-ordered (rows, columns) array, for an associative and
    commutative ufunc whose result does not depend on the order (max, fmax, integer sums): with
    few columns numpy's reduction runs an inner loop of only that many elements per row, so
    ``fold`` rows are first reduced side by side as one row of about 256 (issue 38: a later
    stage's few pairs over thousands of resamples, 4 to 13 times faster)."""
    rows, cols = a.shape
    fold = max(1, 256 // max(cols, 1))
    if fold == 1 or rows < 2 * fold or not a.flags.c_contiguous:
        return ufunc.reduce(a, axis=0, dtype=dtype)
    full = rows // fold * fold
    out = ufunc.reduce(ufunc.reduce(a[:full].reshape(full // fold, fold * cols), axis=0, dtype=dtype)
                       .reshape(fold, cols), axis=0, dtype=dtype)
    return out if full == rows else ufunc(out, ufunc.reduce(a[full:], axis=0, dtype=dtype))


def tally(hit: np.ndarray) -> np.ndarray:
    """The True cells of each column of a (rows, columns) bool array: a sum over the rows of its
    bytes in 32-bit integers (:func:`by_column`), in a half to a tenth of the time of
    ``np.count_nonzero(hit, axis=0)``."""
    return by_column(np.add, hit.view(np.uint8), np.int32)


#: Blocks of fewer pairs count in double (:func:`_extreme_counts_single` saves nothing there: the
#: fixed cost of its extra numpy calls outweighs the products it halves).
SINGLE_MIN_PAIRS = 32


def _single_fits(w: np.ndarray) -> bool:
    """Whether a block's centred differences keep their squares and sums in float32's normal range
    (every nonzero |w| within [1e-18, 1e15]; scores are rarely outside [0, 1]): the error bound of
    :func:`single_error` holds only without underflow or overflow."""
    a = np.abs(w)
    nonzero = a[a > 0]
    return not nonzero.size or bool(nonzero.min() >= 1e-18 and nonzero.max() <= 1e15)


def single_error(n: int) -> float:
    """A bound on |r32 - r64| for any replicate of n topics: r32 = S32^2 / Q32 from float32 products
    (counts exact, w and w^2 rounded to float32) against r64, :func:`_extreme_counts_only`'s r.

    With u = 2^-24 and a = gamma_n + 2u (gamma_n = n u / (1 - n u), a dot product's bound with or
    without fused multiply-adds): |S32 - S| <= a sum c|w| <= a sqrt(n Q) (Cauchy-Schwarz, sum c = n)
    and |Q32 - Q| <= a Q (positive terms), so with r = S^2/Q <= n, |S32^2/Q32 - r| <= (2 a n + a^2 n +
    a n) / (1 - a), and the square and the division round twice more (2u + u^2 of r). The same
    bound at double's u covers r64's own error; their sum, doubled, is returned."""
    def bound(u: float) -> float:
        a = n * u / (1 - n * u) + 2 * u
        rel = (3 * a * n + a * a * n) / (1 - a)
        return rel + (2 * u + u * u) * (n + rel)
    return 2.0 * (bound(2.0**-24) + bound(2.0**-53))


def _extreme_counts_single(s32: np.ndarray, q32: np.ndarray, n: int, threshold: np.ndarray, scratch: _Scratch,
                           exact: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]
                           ) -> tuple[np.ndarray, np.ndarray | int]:
    """:func:`_extreme_counts_only`'s counts from single-precision products (issue 38: about a
    fifth less time for a later stage's counting), the same counts. A replicate whose r32 lies
    within :func:`single_error` of its pair's bound F, or near zero spread (r32 near n, where the
    double path tells degenerate replicates apart), is decided again on its double products
    (``exact(rows)``: (S64, Q64) of those resamples of the slice, every pair of the block, whose
    last bits may differ from the whole slice's product: a decision could then differ only for a
    replicate within round-off of F, far inside the tie tolerance around h, as between
    :func:`_extreme_counts_only` and :func:`_extreme_counts`; a block with a pair whose observed t
    is itself round-off, where that margin is gone, is counted in double by the caller); every
    other replicate is on the same side of F in both precisions. ``s32`` is overwritten."""
    rows, cols = s32.shape
    h = np.asarray(threshold, dtype=np.float64)
    big = n * (1.0 - 1e-12)
    err = single_error(n)
    with np.errstate(invalid="ignore", over="ignore"):
        h2 = np.where(h > 0, h * h, 0.0)
        bound = n * h2 / (n - 1 + h2)
    bound = np.where(np.isnan(bound) | (bound > big), big, bound)
    r = np.multiply(s32, s32, out=s32)
    with np.errstate(divide="ignore", invalid="ignore"):
        np.divide(r, q32, out=r)
    # certain hits at or above hi, certain misses below lo (float32 bounds rounded outward)
    lo = np.nextafter((bound - err).astype(np.float32), np.float32(-np.inf))
    hi = np.nextafter((bound + err).astype(np.float32), np.float32(np.inf))
    near = np.float32(n - 2 * err)  # at or above: possibly zero spread
    hit = scratch.get("hit", cols, np.bool_)[:rows]
    count = tally(np.greater_equal(r, hi[None, :], out=hit)).astype(np.int64)
    reach = tally(np.greater_equal(r, lo[None, :], out=hit))
    anything = h <= 0  # every informative replicate is extreme
    top = by_column(np.fmax, r)  # NaN only where every replicate is 0/0
    spread = np.flatnonzero(top >= near)  # pairs with a replicate near zero spread
    unsure = np.flatnonzero((reach > count) & ~anything)
    cells_row, cells_col = [], []
    if len(unsure):  # within the band around F
        band = r[:, unsure]
        at_row, at_col = np.nonzero((band >= lo[unsure]) & (band < hi[unsure]) & (band < near))
        cells_row.append(at_row)
        cells_col.append(unsure[at_col])
    informative: np.ndarray | int = rows
    if len(spread):  # near zero spread: taken off the certain hits, decided in double
        at_row, at_col = np.nonzero(r[:, spread] >= near)
        cols_ = spread[at_col]
        np.subtract.at(count, cols_, (r[at_row, cols_] >= hi[cols_]).astype(np.int64))
        cells_row.append(at_row)
        cells_col.append(cols_)
    if cells_row:
        at_row, at_col = np.concatenate(cells_row), np.concatenate(cells_col)
        need_rows, where = np.unique(at_row, return_inverse=True)
        s64, q64 = exact(need_rows)
        s = s64[where, at_col]
        r64 = s * s  # as _extreme_counts_only: (n mean*)^2, then / sum w*^2
        with np.errstate(divide="ignore", invalid="ignore"):
            r64 /= q64[where, at_col]
        degenerate = r64 >= big  # zero spread (mean* != 0): left out, as the double path does
        np.add.at(count, at_col, ((r64 >= bound[at_col]) & ~degenerate).astype(np.int64))
        if degenerate.any():
            informative = np.full(cols, rows, dtype=np.int64)
            np.subtract.at(informative, at_col, degenerate.astype(np.int64))
    count = np.where(anything, informative, count)
    return count, informative


def bootstrap(
    z: np.ndarray | Differences,
    *,
    resamples: int = 1000,
    seed: int | np.random.Generator | None = None,
    block_bytes: int = BLOCK_BYTES,
    required_alpha: float | None = None,
) -> BootstrapDraws:
    """Sakai's paired bootstrap test on differences z (topics, pairs), two-sided.

    t(z) = mean(z) / (sd(z)/sqrt(n)); w = z - mean(z); for each of B samples of
    topics drawn with replacement (one count matrix C shared by all pairs),
    t* = mean(w*) / (sd(w*)/sqrt(n)); ASL = (#{|t*| >= |t|} + 1) / (B + 1).
    ``z`` may be a ``Differences`` (the pairs' differences made a block at a time).
    With ``required_alpha`` each pair's difference required at that alpha is made from the
    same replicates (``required``; ``meta.discriminative_power`` takes its maximum).
    """
    diffs = _differences(z)
    rng = as_rng(seed)
    counts = resampling_counts(diffs.n, resamples, rng)
    t_obs = np.empty(diffs.pairs)
    count = np.zeros(diffs.pairs)
    informative = np.zeros(diffs.pairs)
    required = None if required_alpha is None else np.empty(diffs.pairs)
    _bootstrap_counts(diffs, counts, block_bytes, t_obs, count, informative,
                      None if required is None else (float(required_alpha), required))
    return BootstrapDraws(t_obs, monte_carlo_p(count, informative), counts, diffs, block_bytes, count, informative,
                          required)


@dataclass(frozen=True)
class PairEffects:
    """Per pair: an interval of the mean difference (``kind``: "percentile" bootstrap from
    ``pair_effects``, "t" from ``pair_t_intervals``) and mean(z)/sd(z)."""

    ci_low: np.ndarray
    ci_high: np.ndarray
    standardised: np.ndarray
    kind: str = "percentile"


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

    with block_pool() as pool:
        for lo, hi, z in diffs.blocks(padded.shape[0], block_bytes):
            standardised[lo:hi] = t_statistic(z.mean(axis=0), z.std(axis=0, ddof=1), 1)
            means = (padded @ z)[:resamples] / n

            def work(c0: int, c1: int, lo: int = lo, means: np.ndarray = means) -> None:
                # Each pair's B resampled means in a row of their own (contiguous), sorted: the
                # values of np.percentile, without its partition along a strided axis (slow).
                lanes = np.ascontiguousarray(means[:, c0:c1].T)
                lanes.sort(axis=1)
                low[lo + c0:lo + c1], high[lo + c0:lo + c1] = sorted_percentiles(lanes, [tail, 100 - tail])

            run_slices(pool, work, column_slices(hi - lo, resamples))
    return PairEffects(low, high, standardised)


def sorted_percentiles(lanes: np.ndarray, q: Sequence[float]) -> np.ndarray:
    """``np.percentile(lanes, q, axis=1)`` (method "linear") of rows already sorted in increasing
    order, the same floats: numpy's virtual index (n - 1) q / 100, its neighbours, and its
    interpolation (``numpy.lib._function_base_impl._lerp``; tests/unit/test_stats_scale.py holds
    it to np.percentile). A row with a NaN (sorted last) gives NaN, as in numpy."""
    n = lanes.shape[1]
    quantiles = np.true_divide(np.asarray(q, dtype=np.float64), 100)
    virtual = (n - 1) * quantiles
    previous = np.floor(virtual)
    following = previous + 1
    above = virtual >= n - 1
    previous[above] = following[above] = -1
    below = virtual < 0
    previous[below] = following[below] = 0
    previous, following = previous.astype(np.intp), following.astype(np.intp)
    gamma = (virtual - previous)[:, None]
    first, second = lanes[:, previous].T, lanes[:, following].T
    diff = second - first
    out = np.add(first, diff * gamma)
    np.subtract(second, diff * (1 - gamma), out=out, where=np.broadcast_to(gamma >= 0.5, out.shape))
    nan = np.isnan(lanes[:, -1])
    if nan.any():
        out[:, nan] = np.nan
    return out


def pair_t_intervals(x: np.ndarray, a: np.ndarray, b: np.ndarray, *, level: float = 0.95,
                     t: PairwiseResult | None = None, block_bytes: int = BLOCK_BYTES) -> PairEffects:
    """The paired t interval of each pair's mean difference, mean(z) +- t_{(1+level)/2, n-1} sd(z)/sqrt(n),
    and mean(z)/sd(z), in closed form with whole-array operations (what the t-test's pairs are shown
    with: no bootstrap). A constant difference has sd 0 (the round-off rule of ``t_statistic``).

    ``t``: the paired t-test of these pairs (``pairwise(..., "t")``): each standard error is then
    mean / t, and only the pairs with t = 0 (mean 0, where the ratio says nothing) are made again
    from their differences."""
    x = np.asarray(x, dtype=np.float64)
    n = x.shape[0]
    crit = float(t_ppf((1.0 + level) / 2.0, n - 1))
    if t is not None and t.test == "t" and len(t.a) == len(a):
        mean, stat = t.diff, t.statistic
        with np.errstate(divide="ignore", invalid="ignore"):
            se = np.where(np.isinf(stat), 0.0, mean / stat)
        redo = np.flatnonzero(stat == 0)
    else:
        mean, se, redo = np.empty(len(a)), np.empty(len(a)), np.arange(len(a))
    if len(redo):
        diffs = Differences(x, a[redo], b[redo])
        for lo, hi, z in diffs.blocks(n, block_bytes):
            m = z.mean(axis=0)
            sd = z.std(axis=0, ddof=1)
            mean[redo[lo:hi]] = m
            se[redo[lo:hi]] = np.where(sd <= 1e-12 * np.abs(m), 0.0, sd) / np.sqrt(n)
    margin = crit * se
    return PairEffects(mean - margin, mean + margin, t_statistic(mean, se * np.sqrt(n), 1), "t")


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
            count = tally(at_least(np.abs(sums, out=sums), observed[None, :]))
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
