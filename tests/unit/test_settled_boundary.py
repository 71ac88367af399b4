"""Issue 38: the settled verdicts' stopping boundary and the draws shared by every metric.

Peers: the resampling risk of the boundary computed exactly (the binomial distribution of a
pair's count carried from checkpoint to checkpoint, the settled paths taken out), and the exact
randomisation test (every sign flip: the B -> infinity p of the Monte Carlo one).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np
import pytest
from scipy import stats

from service.metrics.stats import sequential as seq
from service.metrics.stats.pairwise import pairwise, pairwise_many
from tests.unit.test_significance_precision import near_alpha_cases


def resampling_risk(p: float, alpha: float, b0: int, cap: int, first: float, later: Callable[[int, int], float]
                    ) -> float:
    """The probability that the rule of ``sequential.settle`` (one pair, no correction) settles on
    the side of alpha other than p's own (p < alpha: significant), computed exactly. The rule: the
    interval at level ``first`` on the first B0 draws; for a pair that straddles it, at each later
    checkpoint s the interval at ``later(s, stages)`` on the draws after the first B0, intersected
    with the first one and widened to hold the reported p (over all draws). For each first
    count that straddles, the distribution of the later count over the paths not yet settled is
    convolved with each stage's binomial draws."""
    grid = seq.checkpoints(b0, cap)
    wrong = 0.0
    first_counts = np.arange(b0 + 1, dtype=np.float64)
    weights = stats.binom.pmf(first_counts, b0, p)

    def verdicts(low: np.ndarray, high: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return high < alpha, low >= alpha

    low0, high0 = seq.bracket(first_counts, np.full(b0 + 1, float(b0)), first)
    significant, not_significant = verdicts(low0, high0)
    wrong += float(weights[not_significant if p < alpha else significant].sum())
    cp_low0, cp_high0 = seq.clopper_pearson(first_counts, np.full(b0 + 1, float(b0)), first)
    for c0 in np.flatnonzero(~(significant | not_significant)):
        dist = np.array([weights[c0]])  # over the later count, 0 .. its draws
        for s in range(1, len(grid)):
            rows = grid[s] - grid[s - 1]
            dist = np.convolve(dist, stats.binom.pmf(np.arange(rows + 1), rows, p))
            late = np.arange(len(dist), dtype=np.float64)
            low, high = seq.clopper_pearson(late, np.full(len(dist), float(grid[s] - b0)), later(s, len(grid)))
            cp_low, cp_high = np.maximum(cp_low0[c0], low), np.minimum(cp_high0[c0], high)
            reported = (c0 + late + 1) / (grid[s] + 1)
            significant, not_significant = verdicts(np.minimum(cp_low, reported), np.maximum(cp_high, reported))
            wrong += float(dist[not_significant if p < alpha else significant].sum())
            dist = np.where(significant | not_significant, 0.0, dist)
    return wrong


NEAR = [0.03, 0.04, 0.045, 0.048, 0.049, 0.0495, 0.0499, 0.05, 0.0501, 0.0505, 0.051, 0.052, 0.055, 0.06, 0.07]


def test_the_boundary_s_resampling_risk_is_at_most_the_guarantee_near_alpha() -> None:
    # One pair under a guarantee of 1%: settle's levels without a correction (each tail may spend
    # the pair's whole share at a checkpoint: the two-sided interval at 1 - 2 gamma); the pair is
    # the only one, so it is also the only one left after the first checkpoint.
    guarantee = 0.01
    stages = len(seq.checkpoints(100, 3200))
    first = 2 * seq.first_gamma(1, guarantee, stages)

    def later(stage: int, stages: int) -> float:
        return 2 * seq.later_gamma(stage, 1, guarantee, stages)

    risks = [resampling_risk(p, 0.05, 100, 3200, first, later) for p in NEAR]
    assert max(risks) <= guarantee
    assert max(risks) > guarantee / 1000  # the computation sees the risk at all (near alpha)

    # The test can fail: a boundary that spends the whole 1% at every checkpoint (no split over
    # the checkpoints) has a resampling risk above 1% near alpha.
    naive = [resampling_risk(p, 0.05, 100, 3200, 2 * guarantee, lambda s, k: 2 * guarantee) for p in NEAR]
    assert max(naive) > guarantee


def test_the_later_checkpoints_share_is_split_over_the_pairs_left() -> None:
    # The first checkpoint spends FIRST_SHARE of the guarantee over every pair; the later ones the
    # rest over the pairs that straddled after it: summed over the later checkpoints and those
    # pairs, each test spends exactly its share's later part, however few pairs are left.
    stages = len(seq.checkpoints(10_000))
    assert seq.first_gamma(54_450, 0.01, stages) * 54_450 == pytest.approx(0.01 * seq.FIRST_SHARE)
    for live in (1, 37, 1264):
        spent = sum(seq.later_gamma(s, live, 0.002, stages) * live for s in range(1, stages))
        assert spent == pytest.approx(0.002 * (1 - seq.FIRST_SHARE))
    # with no later checkpoint, the first spends all of it
    assert seq.first_gamma(10, 0.01, 1) * 10 == pytest.approx(0.01)


def test_settle_spends_the_boundary_it_was_checked_with() -> None:
    # settle's own verdicts on a simulated pair follow the boundary above: a pair whose count
    # sits exactly at alpha at every checkpoint never settles, one far below settles within a few checkpoints.
    def draw_at(p: float) -> Callable[[int, np.ndarray], tuple[np.ndarray, np.ndarray]]:
        def draw(stage: int, sub: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            rows = seq.stage_rows(stage, 100, 3200)
            return np.full(len(sub), round(p * rows)), np.full(len(sub), float(rows))
        return draw

    at = seq.settle(np.array([5.0]), np.array([100.0]), draw_at(0.05), b0=100, alpha=0.05, correction="none",
                    max_resamples=3200, futility=0)
    assert at.undecided[0] and at.drawn[0] == 3200
    # with the futility stop, the same pair is left undecided before the cap: its estimate sits
    # on alpha, so the cap's interval could not clear it
    stopped = seq.settle(np.array([5.0]), np.array([100.0]), draw_at(0.05), b0=100, alpha=0.05, correction="none",
                         max_resamples=3200)
    assert stopped.undecided[0] and stopped.drawn[0] < 3200
    far = seq.settle(np.array([0.0]), np.array([100.0]), draw_at(0.0), b0=100, alpha=0.05, correction="none",
                     max_resamples=3200)
    # 0 of N: the upper end falls below alpha once N is about log(1/gamma)/alpha (a few hundred)
    assert not far.undecided[0] and far.drawn[0] <= 400


def test_checkpoints_are_fixed_in_advance_and_end_at_the_cap() -> None:
    grid = seq.checkpoints(10_000, 10_000_000)
    assert grid[0] == 10_000 and grid[-1] == 10_000_000
    assert all(b / a <= seq.RATIO * 1.001 or b == grid[-1] for a, b in itertools.pairwise(grid))
    assert list(grid) == sorted(set(grid))
    assert seq.checkpoints(1000, 500) == (1000,) and seq.checkpoints(1000, 1000) == (1000,)
    assert sum(seq.stage_rows(s, 10_000) for s in range(len(grid))) == 10_000_000


def test_metrics_settled_together_share_draws_and_split_the_guarantee() -> None:
    """pairwise_many settles every matrix with the draws it would have alone (the seed's, whatever
    the matrix) and the guarantee split over the pairs of all: each result equals pairwise's on
    that matrix alone with its share of the guarantee."""
    rng = np.random.default_rng(7)
    base = rng.random((25, 6))
    tables = {f"m{k}": np.clip(base + rng.normal(0, 0.15, base.shape), 0, 1) for k in range(3)}
    for test in ("bootstrap", "randomisation"):
        plain = pairwise_many(tables, None, test, resamples=500, seed=3)
        for key, x in tables.items():
            alone = pairwise(x, None, test, resamples=500, seed=3)
            res = plain[key]
            assert not isinstance(res, ValueError)
            assert np.array_equal(res.p, alone.p) and np.array_equal(res.statistic, alone.statistic)
        together = pairwise_many(tables, None, test, resamples=500, seed=3, sequential=True, max_resamples=64_000)
        total = sum(len(r.p) for r in together.values() if not isinstance(r, ValueError))
        resampled = 0
        for key, x in tables.items():
            res = together[key]
            assert not isinstance(res, ValueError)
            alone = pairwise(x, None, test, resamples=500, seed=3, sequential=True, max_resamples=64_000,
                             guarantee=seq.GUARANTEE * len(res.p) / total)
            assert res.undecided is not None and alone.undecided is not None
            assert np.array_equal(res.p, alone.p) and np.array_equal(res.undecided, alone.undecided)
            assert np.array_equal(res.pair_resamples, alone.pair_resamples)
            resampled += int((res.pair_resamples > 500).sum())
        assert resampled > 0  # some pair went past the first stage (the shared draws were used)


def test_a_matrix_that_fails_is_reported_and_the_others_settle() -> None:
    good = np.random.default_rng(1).random((10, 3))
    out = pairwise_many({"good": good, "bad": np.zeros((10, 1))}, None, "bootstrap", resamples=200, seed=0,
                        sequential=True)
    assert isinstance(out["bad"], ValueError)
    assert not isinstance(out["good"], ValueError) and len(out["good"].p) == 3


def test_settled_verdicts_equal_the_exact_ones_under_many_seeds() -> None:
    # The constructed pairs (exact randomisation p 0.0479 and 0.0552), each as the only pair of a
    # "metric" settled together, from B0 = 1000: the settled verdict is the exact one under every seed.
    cases = near_alpha_cases()
    tables = {f"case{i}": np.c_[d, np.zeros_like(d)] for i, (d, _) in enumerate(cases)}
    for seed in range(12):
        out = pairwise_many(tables, None, "randomisation", resamples=1000, seed=seed, sequential=True)
        for i, (_, exact) in enumerate(cases):
            res = out[f"case{i}"]
            assert not isinstance(res, ValueError) and res.undecided is not None
            assert not res.undecided[0], (seed, exact)
            assert bool(res.significant[0]) == (exact < 0.05), (seed, exact, res.p[0])


@pytest.mark.parametrize("correction", ["none", "holm", "bh"])
def test_no_settled_verdict_contradicts_a_clear_reference(correction: str) -> None:
    # 8 runs x 30 topics: a B = 400,000 reference decides most pairs beyond doubt; the settled
    # verdicts (any seed) agree with it on those.
    rng = np.random.default_rng(11)
    x = np.clip(rng.random((30, 1)) * 0.5 + rng.random((30, 8)) * 0.5 + np.linspace(0, 0.12, 8), 0, 1)
    big = 400_000
    ref = pairwise(x, None, "randomisation", resamples=big, seed=99, correction=correction)
    low, high = seq.bracket(ref.p * (big + 1) - 1, np.full(len(ref.p), float(big)), 1e-4)
    from service.metrics.stats.correction import adjust

    clear = (adjust(low, correction) < 0.05) == (adjust(high, correction) < 0.05)
    for seed in range(3):
        res = pairwise(x, None, "randomisation", resamples=1000, seed=seed, correction=correction, sequential=True,
                       max_resamples=1_000_000)
        assert res.undecided is not None
        decided = ~res.undecided & clear
        assert (res.significant[decided] == ref.significant[decided]).all()


def test_the_later_stages_lean_counts_equal_the_full_ones() -> None:
    # _bootstrap_counts without the difference required counts with _extreme_counts_only: the
    # same extreme and informative counts as the full path (the one that keeps every |t*| for the
    # difference required), degenerate resamples and exact ties included.
    from service.metrics.stats.pairwise import Differences, _bootstrap_counts, resampling_counts
    from tests.unit.test_significance_precision import NEIGHBOURS

    rng = np.random.default_rng(5)
    columns = [a - b for a, b in NEIGHBOURS.values()]
    columns += [rng.random(10) - rng.random(10) for _ in range(40)]
    columns += [np.round(rng.random(10) - 0.45, 1) for _ in range(40)]  # two decimals: many exact ties
    # edge cases of the squared comparison: no difference at all (t = 0: every resample extreme),
    # a constant difference (every resample degenerate), a mean of exactly zero (h <= 0), a
    # spread at round-off level (an enormous t), one topic apart from nine equal ones
    columns += [np.zeros(10), np.full(10, 0.1), np.array([0.1, -0.1] * 5), 0.1 + 1e-9 * rng.random(10),
                np.array([0.2] * 9 + [0.5])]
    z = np.column_stack(columns)
    counts = resampling_counts(10, 20_000, np.random.default_rng(2))
    full = (np.empty(z.shape[1]), np.zeros(z.shape[1]), np.zeros(z.shape[1]))
    _bootstrap_counts(Differences(z), counts, 1 << 26, full[0], full[1], full[2], (0.05, np.empty(z.shape[1])))
    lean = (np.zeros(z.shape[1]), np.zeros(z.shape[1]))
    _bootstrap_counts(Differences(z), counts, 1 << 26, None, lean[0], lean[1])
    assert np.array_equal(full[1], lean[0]) and np.array_equal(full[2], lean[1])
    # and the BootstrapBlock's counts (the textbook pass: t*, then |t*| >= |t| among the finite ones)
    from service.metrics.stats.pairwise import bootstrap_blocks

    (block,) = list(bootstrap_blocks(Differences(z), counts, 1 << 30))
    assert np.array_equal(block.extreme_counts(), lean[0]) and np.array_equal(block.informative_counts(), lean[1])
    assert (full[2] < 20_000).any() and (full[1] > 0).any()  # degenerate resamples and extreme ones were there


@pytest.mark.parametrize("n", [3, 10, 50, 200])
def test_the_single_precision_lean_counts_equal_the_double_ones(n: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # _extreme_counts_single (float32 products) against the double-precision lean count on the
    # same draws: the same extreme and informative counts, through every way out of it (certain
    # hits and misses, replicates near a bound or near zero spread settled in double; a block
    # outside float32's range, or with a pair whose observed t is round-off, never taken single).
    import service.metrics.stats.pairwise as pw
    from tests.unit.test_significance_precision import NEIGHBOURS

    rng = np.random.default_rng(n)
    columns = [rng.random(n) - rng.random(n) for _ in range(40)]
    columns += [np.round(rng.random(n) - 0.45, 1) for _ in range(40)]  # one decimal: exact ties
    columns += [np.zeros(n), np.full(n, 0.1), np.resize([0.1, -0.1], n), 0.1 + 1e-9 * rng.random(n),
                np.r_[np.full(n - 1, 0.2), 0.5], 1e-13 * rng.random(n), np.resize([1e-3, 0.0], n)]
    if n == 10:
        columns += [a - b for a, b in NEIGHBOURS.values()]
    z = np.column_stack(columns)
    t = pw._centred(z)[0]
    z = z[:, ~((np.abs(t) > 0) & (np.abs(t) < 1e-6))]  # (a mean that is zero but for round-off: below)
    huge = np.column_stack([1e20 * rng.random((n, 3)), rng.random((n, 3))])  # beyond float32's squares
    # a mean difference of zero but for its last bits (0.1 + 0.2 - 0.3): its pair's t is round-off,
    # so its block is counted in double throughout
    roundoff = np.column_stack([np.r_[np.tile([0.1, 0.2, -0.3], n // 3), np.zeros(n % 3)], *columns[:40]])
    seen = {"single": 0, "settled in double": 0}
    real = pw._extreme_counts_single

    def spy(*args):  # type: ignore[no-untyped-def]
        *head, exact = args

        def counted(at):  # type: ignore[no-untyped-def]
            seen["settled in double"] += len(at)
            return exact(at)

        seen["single"] += 1
        return real(*head, counted)

    monkeypatch.setattr(pw, "_extreme_counts_single", spy)
    for diffs in (pw.Differences(z), pw.Differences(huge), pw.Differences(roundoff)):
        for b, draws in ((7, np.int64), (5000, np.int32)):
            counts = pw.resampling_counts(n, b, np.random.default_rng(b), draws)
            out = {}
            for top in (pw.SINGLE_MAX_TOPICS, 0):  # 0: the double path throughout
                monkeypatch.setattr(pw, "SINGLE_MAX_TOPICS", top)
                got = (np.zeros(diffs.pairs), np.zeros(diffs.pairs))
                pw._bootstrap_counts(diffs, counts, 1 << 26, None, got[0], got[1])
                out[top] = got
            assert np.array_equal(out[0][0], out[pw.SINGLE_MAX_TOPICS][0])
            assert np.array_equal(out[0][1], out[pw.SINGLE_MAX_TOPICS][1])
    assert seen["single"] > 0 and seen["settled in double"] > 0


def test_the_futility_stop_gives_up_only_pairs_that_cannot_settle_by_the_cap() -> None:
    # futile(): a pair whose later estimate sits on alpha with half the cap drawn cannot settle
    # (the cap's interval is wider than where its estimate can still go); one a few standard
    # errors of the cap's estimate away, or with no later draw yet, goes on.
    level = np.full(3, 1e-6)
    count = np.array([0.05, 0.05 + 0.002, 0.05]) * 5e6
    trials = np.array([5e6, 5e6, 0.0])
    drawn = trials + 10_000
    out = seq.futile(count, trials, drawn, 10_000, 10_000_000, level, 0.05)
    assert out.tolist() == [True, False, False]
    # never before the first later checkpoint, and never below the threshold's own chance: a
    # pair whose estimate is just outside the band the cap can clear still goes on
    edge = seq.futile(np.array([0.0506 * 5e6]), np.array([5e6]), np.array([5e6 + 10_000]), 10_000, 10_000_000,
                      np.array([1e-6]), 0.05)
    assert not edge[0]


def test_the_futility_stop_changes_no_settled_verdict_and_leaves_undecided_what_the_cap_would() -> None:
    # Simulated pairs with p_inf around alpha: with and without the stop, the settled verdicts
    # agree (a stopped pair is undecided, never settled otherwise), the stop spends fewer draws,
    # and it leaves undecided no pair that the cap settles (over these seeds).
    ps = 0.05 + np.array([-3e-3, -1e-3, -4e-4, -2e-4, 0.0, 2e-4, 4e-4, 1e-3, 3e-3])
    b0, cap = 1000, 2_000_000

    def run(futility: float, seed: int) -> seq.MonteCarlo:
        def draw(stage: int, sub: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            rows = seq.stage_rows(stage, b0, cap)
            rng = np.random.default_rng([seed, stage])
            return rng.binomial(rows, ps)[sub].astype(float), np.full(len(sub), float(rows))

        first = np.random.default_rng([seed, 0]).binomial(b0, ps).astype(float)
        return seq.settle(first, np.full(len(ps), float(b0)), draw, b0=b0, alpha=0.05, correction="none",
                          max_resamples=cap, futility=futility)

    saved = 0.0
    for seed in range(5):
        full, stop = run(0.0, seed), run(seq.FUTILITY, seed)
        both = ~full.undecided & ~stop.undecided
        assert ((full.p[both] < 0.05) == (stop.p[both] < 0.05)).all()
        assert not (stop.undecided & ~full.undecided).any()
        saved += full.drawn.sum() - stop.drawn.sum()
    assert saved > 0
