"""The all-pairs significance engine at scale (issue 14): blocks of pairs, versus-baseline mode.

What is asserted:
- a test's p-values do not depend on the block size (tiny blocks against one block) and are
  those of the former whole-matrix code, kept below as reference implementations (so stored
  results do not change for the same seed);
- the randomised Tukey HSD's binary search counts exactly what the former (pairs x B)
  comparison counted, exact ties and ties within the float tolerance included;
- the versus-baseline mode gives the all-pairs result's values on its pairs;
- memory: every block stays within the cap, and the traced peak of a test over many pairs
  stays far below one B x pairs matrix (tracemalloc sees numpy's arrays; no timing).
"""

from __future__ import annotations

import json
import math
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from service.cli import main
from service.metrics.stats.anova import effect_sizes
from service.metrics.stats.common import (
    MIN_BLOCK,
    as_rng,
    at_least,
    baseline_pairs,
    block_width,
    column_blocks,
    count_at_least,
    monte_carlo_p,
    pair_indices,
    t_statistic,
)
from service.metrics.stats.correction import adjust
from service.metrics.stats.meta import discriminative_power, meta_evaluation
from service.metrics.stats.pairwise import (
    ROW_PAD,
    TESTS,
    Differences,
    bootstrap,
    bootstrap_blocks,
    pair_effects,
    pairwise,
    randomisation,
    resampling_counts,
)
from service.metrics.stats.tukey import friedman, randomised_tukey_hsd, tukey_p, tukey_ranges


def scores(topics: int, runs: int, seed: int, decimals: int = 2) -> np.ndarray:
    """Scores with few decimals (many exactly tied statistics), two identical runs and a run
    that differs from another by a constant (t = inf)."""
    x = np.random.default_rng(seed).random((topics, runs)).round(decimals)
    x[:, 1] = x[:, 0]
    x[:, -1] = np.clip(x[:, 2] + 0.1, None, 1.1)
    return x


def padded(resamples: int) -> int:
    """B rounded up to the resampling matrix's padded rows (pairwise.ROW_PAD)."""
    return -(-resamples // ROW_PAD) * ROW_PAD


def tiny(resamples: int, topics: int) -> int:
    """block_bytes that make blocks of MIN_BLOCK pairs (the narrowest there is)."""
    return 8 * max(padded(resamples), topics) * MIN_BLOCK


# ----------------------------------------------------------- the former code, for reference
def old_bootstrap(z: np.ndarray, resamples: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """pairwise.bootstrap before blocks: (ASL, t_star, mean_star) from whole (B, pairs) matrices."""
    n = z.shape[0]
    counts = resampling_counts(n, resamples, as_rng(seed))
    mean = z.mean(axis=0)
    t_obs = t_statistic(mean, z.std(axis=0, ddof=1), n)
    w = z - mean
    w = np.where(np.abs(w) <= 1e-12 * np.max(np.abs(z), axis=0), 0.0, w)
    mean_star = counts @ w / n
    sq_star = counts @ (w * w)
    var_star = np.maximum(sq_star - n * mean_star**2, 0.0) / (n - 1)
    t_star = t_statistic(mean_star, np.sqrt(var_star), n)
    count = at_least(np.abs(t_star), np.abs(t_obs)[None, :]).sum(axis=0)
    return monte_carlo_p(count, resamples), t_star, mean_star


def old_randomisation(z: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    signs = as_rng(seed).choice(np.array([-1.0, 1.0]), size=(resamples, z.shape[0]))
    count = at_least(np.abs(signs @ z), np.abs(z.sum(axis=0))[None, :]).sum(axis=0)
    return monte_carlo_p(count, resamples)


def old_tukey(x: np.ndarray, resamples: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """randomised_tukey_hsd before the binary search: (p (runs, runs), ranges) with the
    (runs, runs, B) comparison and its former trial chunks (20,000,000 cells)."""
    n, m = x.shape
    rng = as_rng(seed)
    ranges = np.empty(resamples)
    chunk = max(1, 20_000_000 // (n * m))
    for lo in range(0, resamples, chunk):
        k = min(chunk, resamples - lo)
        perm = np.argsort(rng.random((k, n, m)), axis=2)
        means = np.take_along_axis(np.broadcast_to(x, (k, n, m)), perm, axis=2).mean(axis=1)
        ranges[lo : lo + k] = means.max(axis=1) - means.min(axis=1)
    obs = np.abs(x.mean(axis=0)[:, None] - x.mean(axis=0)[None, :])
    p = monte_carlo_p(at_least(ranges[None, None, :], obs[:, :, None]).sum(axis=2), resamples)
    np.fill_diagonal(p, 1.0)
    return p, ranges


def old_discriminative_power(x: np.ndarray, alpha: float, resamples: int, seed: int) -> tuple[np.ndarray, float]:
    a, b = pair_indices(x.shape[1])
    asl, t_star, mean_star = old_bootstrap(x[:, a] - x[:, b], resamples, seed)
    k = max(1, math.ceil(resamples * alpha))
    chosen = np.argsort(-np.abs(t_star), axis=0, kind="stable")[k - 1]
    return asl, float(np.abs(mean_star[chosen, np.arange(chosen.shape[0])]).max())


# ------------------------------------------------------------------------------- blocks
@pytest.mark.parametrize("total", [0, 1, 2, 3, 4, 5, 7, 10, 11, 64, 65, 1000, 1001])
@pytest.mark.parametrize("width", [1, 2, 3, 4, 5, 8, 64])
def test_blocks_cover_the_pairs_in_order_and_never_exceed_the_width(total: int, width: int) -> None:
    bounds = column_blocks(total, width)
    assert [lo for lo, _ in bounds] == [0, *[hi for _, hi in bounds[:-1]]][: len(bounds)]
    assert (bounds[-1][1] if bounds else 0) == total
    for lo, hi in bounds:
        assert hi - lo <= max(width, MIN_BLOCK)
        assert hi - lo >= (1 if total == 1 else 2)  # no single-column block (other numpy code paths)


@pytest.mark.parametrize("rows", [1, 20, 1000, 10_000])
@pytest.mark.parametrize("cap", [8 * 3 * 10_000, 1 << 20, 64 << 20])
def test_a_block_of_the_computed_width_stays_within_the_cap(rows: int, cap: int) -> None:
    width = block_width(rows, cap)
    assert 8 * rows * width <= cap < 8 * rows * (width + 1)
    for lo, hi in column_blocks(499_500, width):
        assert 8 * rows * (hi - lo) <= cap


def test_the_bootstrap_blocks_hold_at_most_the_cap() -> None:
    x = scores(12, 30, seed=1)
    a, b = pair_indices(30)
    counts = resampling_counts(12, 200, as_rng(0))
    cap = 8 * padded(200) * 7  # 7 pairs per block (of the padded rows)
    seen = []
    for blk in bootstrap_blocks(Differences(x, a, b), counts, cap, reuse=True):
        assert blk.t_star.shape == blk.mean_star.shape == (200, blk.hi - blk.lo)
        assert blk.t_star.nbytes <= cap
        seen.append((blk.lo, blk.hi))
    assert seen == column_blocks(len(a), 7)


def traced_peak(fn) -> int:  # type: ignore[no-untyped-def]
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_of_the_resampling_tests_is_bounded_by_the_block_not_by_b_x_pairs() -> None:
    x = scores(20, 80, seed=2)  # 3160 pairs
    pairs, resamples = 80 * 79 // 2, 1000
    whole = 8 * resamples * pairs  # one (B, pairs) float64 matrix: 25 MB
    cap = 8 * resamples * 40  # blocks of 40 pairs: 320 kB
    # Per test: a few blocks, the (topics, pairs) differences of a block, and the per-pair outputs.
    assert traced_peak(lambda: pairwise(x, test="bootstrap", resamples=resamples, seed=1, block_bytes=cap)) < whole / 8
    assert traced_peak(lambda: pairwise(x, test="randomisation", resamples=resamples, seed=1,
                                        block_bytes=cap)) < whole / 8
    assert traced_peak(lambda: discriminative_power(x, resamples=resamples, seed=1, block_bytes=cap)) < whole / 8
    assert traced_peak(lambda: pair_effects(x, *pair_indices(80), resamples=resamples, seed=1,
                                            block_bytes=cap)) < whole / 8
    # Tukey: the draws a chunk of trials at a time, then per pair a binary search among the
    # sorted ranges: never the former (runs, runs, B) comparison (here 300 x 300 x 200 = 18 MB).
    x = scores(5, 300, seed=3)
    comparison = 300 * 300 * 200
    assert traced_peak(lambda: tukey_ranges(x, resamples=200, seed=1, max_cells=20_000)) < 8 * 20_000 * 6
    ranges = np.sort(tukey_ranges(x, resamples=200, seed=1))
    assert traced_peak(lambda: tukey_p(ranges, x.mean(axis=0), *pair_indices(300))) < comparison / 8
    assert traced_peak(lambda: pairwise(x, test="tukey", resamples=200, seed=1)) < comparison / 2


# ------------------------------------------------------------ same p-values, any block size
@pytest.mark.parametrize("test", ["bootstrap", "randomisation", "t", "sign", "wilcoxon", "tukey", "friedman"])
def test_tiny_blocks_give_exactly_the_p_values_of_one_block(test: str) -> None:
    for seed, (topics, runs, resamples) in enumerate([(15, 9, 500), (6, 12, 301), (30, 5, 999), (3, 4, 64)]):
        x = scores(topics, runs, seed)
        one = pairwise(x, test=test, resamples=resamples, seed=seed, block_bytes=1 << 40)
        for cap in (tiny(resamples, topics), tiny(resamples, topics) + 8 * max(resamples, topics)):
            small = pairwise(x, test=test, resamples=resamples, seed=seed, block_bytes=cap)
            assert np.array_equal(small.p, one.p), (test, seed, cap)
            assert np.array_equal(small.statistic, one.statistic, equal_nan=True)


def test_the_tukey_draws_do_not_depend_on_the_trials_per_chunk() -> None:
    x = scores(10, 7, seed=3)
    whole = tukey_ranges(x, resamples=257, seed=4, max_cells=10**9)
    for cells in (1, 70, 71, 700, 7001):
        assert np.array_equal(tukey_ranges(x, resamples=257, seed=4, max_cells=cells), whole)
    assert np.array_equal(randomised_tukey_hsd(x, resamples=257, seed=4, max_cells=1).p,
                          randomised_tukey_hsd(x, resamples=257, seed=4).p)


@pytest.mark.parametrize("seed", range(6))
def test_results_are_those_of_the_former_whole_matrix_code(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    # B a multiple of 4: the former product's floats did not depend on the threads (see ROW_PAD).
    topics, runs, resamples = int(rng.integers(3, 25)), int(rng.integers(2, 14)), 4 * int(rng.integers(5, 150))
    x = scores(topics, runs, seed, decimals=int(rng.integers(1, 3))) if runs >= 3 else rng.random((topics, runs))
    a, b = pair_indices(runs)
    z = x[:, a] - x[:, b]  # the former layout (numpy makes it Fortran-ordered)
    cap = tiny(resamples, topics)
    asl, t_star, mean_star = old_bootstrap(z, resamples, seed)
    assert np.array_equal(pairwise(x, test="bootstrap", resamples=resamples, seed=seed, block_bytes=cap).p, asl)
    draws = bootstrap(z, resamples=resamples, seed=seed, block_bytes=cap)
    assert np.array_equal(draws.p, asl)
    assert np.array_equal(draws.t_star, t_star) and np.array_equal(draws.mean_star, mean_star)
    counts = resampling_counts(topics, resamples, as_rng(seed))
    assert np.array_equal(draws.diff_star, counts @ z / topics)
    assert np.array_equal(draws.diff_percentiles([2.5, 97.5]), np.percentile(counts @ z / topics, [2.5, 97.5], axis=0))
    assert np.array_equal(pairwise(x, test="randomisation", resamples=resamples, seed=seed, block_bytes=cap).p,
                          old_randomisation(z, resamples, seed))
    assert np.array_equal(randomisation(z, resamples=resamples, seed=seed, block_bytes=cap)[1],
                          old_randomisation(z, resamples, seed))
    p, ranges = old_tukey(x, resamples, seed)
    hsd = randomised_tukey_hsd(x, resamples=resamples, seed=seed, max_cells=2 * topics * runs)
    assert np.array_equal(hsd.ranges, ranges) and np.array_equal(hsd.p, p)
    assert np.array_equal(pairwise(x, test="tukey", resamples=resamples, seed=seed).p, p[a, b])
    power_asl, required = old_discriminative_power(x, 0.05, resamples, seed)
    dp = discriminative_power(x, alpha=0.05, resamples=resamples, seed=seed, block_bytes=cap)
    assert np.array_equal(dp.asl, power_asl) and dp.difference_required == required


def test_the_tukey_binary_search_counts_what_the_comparison_counted_ties_included() -> None:
    obs = np.array([0.0, 0.1, 0.25, 0.3, 0.3 + 1e-12, 0.5, 0.7, 1.0, 2.0])
    # Ranges equal to an observed value, within the tie tolerance below it (counted), just
    # outside it (not counted), and the same float sum in another order (0.1 + 0.2 vs 0.3).
    ranges = np.array([0.0, 0.1, 0.1 * (1 - 1e-10), 0.1 * (1 - 1e-8), 0.25, 0.25, 0.25, 0.1 + 0.2, 0.3,
                       0.5 * (1 - 5e-10), 0.5 * (1 - 2e-9), 0.7, 0.7, 1.0 - 1e-16, 0.05, 3.0])
    assert 0.1 + 0.2 != 0.3
    expected = at_least(ranges[None, :], obs[:, None]).sum(axis=1)
    assert np.array_equal(count_at_least(np.sort(ranges), obs), expected)
    assert expected.tolist() == [16, 13, 11, 8, 8, 5, 4, 2, 1]  # worked out by hand from the list
    # And on the permutation test itself, with many exact ties (scores with one decimal).
    for seed in range(4):
        x = np.random.default_rng(seed).integers(0, 4, size=(5, 8)) / 10
        p, ranges = old_tukey(x, 400, seed)
        means = x.mean(axis=0)
        a, b = pair_indices(8)
        assert np.array_equal(tukey_p(np.sort(ranges), means, a, b), p[a, b])
        assert np.isin(np.abs(means[a] - means[b]), ranges).any()  # exact ties occurred


def test_the_difference_required_is_the_stable_sort_choice_among_the_informative_resamples() -> None:
    """``required_from_lanes`` against a plain sort per lane: the resamples with a finite |t*|, by
    decreasing |t*| with ties in resample order, the k-th of them (k = max(1, ceil(B_inf alpha)));
    many ties (few distinct values), degenerate resamples (inf) and lanes without any."""
    import math

    from service.metrics.stats.pairwise import required_from_lanes

    rng = np.random.default_rng(7)
    for _ in range(300):
        pairs, rows = int(rng.integers(1, 7)), int(rng.integers(1, 40))
        key = rng.integers(0, 4, size=(pairs, rows)).astype(float)
        key[rng.random(key.shape) < rng.choice([0.0, 0.1, 0.5, 1.0])] = np.inf
        magnitude = rng.random((pairs, rows))
        alpha = float(rng.choice([0.01, 0.05, 0.3, 1.0]))
        expected = []
        for lane, mags in zip(key.tolist(), magnitude.tolist()):
            found = sorted((-v, row) for row, v in enumerate(lane) if math.isfinite(v))
            k = max(1, math.ceil(len(found) * alpha))
            expected.append(mags[found[k - 1][1]] if found else math.nan)
        got = required_from_lanes(key.copy(), magnitude, alpha)
        assert np.array_equal(got, np.array(expected), equal_nan=True)


@pytest.mark.parametrize("layout", ["pairs of runs", "differences given whole"])
def test_the_difference_required_from_r_is_the_choice_among_every_replicates_t(layout: str, monkeypatch) -> None:
    """``_bootstrap_counts``' difference required from each replicate's r (``_required_from_r``,
    issue 38) against the plain form that keeps every replicate's |t*| and |mean*| (``lanes``), on
    the same blocks and draws: the same floats, and the same counts, on tied scores (replicates
    tied in r), pairs of identical runs (r = 0/0), a pair whose observed t is round-off, near zero
    spread (every |t*| kept) and alphas up to 1."""
    import service.metrics.stats.pairwise as pw

    taken = {"from r": 0, "every |t*|": 0}
    real = pw._required_from_r

    def spy(*args):  # type: ignore[no-untyped-def]
        out = real(*args)
        taken["from r" if out is not None else "every |t*|"] += 1
        return out

    monkeypatch.setattr(pw, "_required_from_r", spy)
    rng = np.random.default_rng(11)
    for trial in range(24):
        n, b = int(rng.integers(3, 60)), int(rng.choice([7, 50, 1000, 5000]))
        alpha = float(rng.choice([0.01, 0.05, 0.3, 1.0]))
        if layout == "pairs of runs":
            x = np.round(rng.random((n, 30)), int(rng.integers(1, 4)))  # few decimals: ties
            x[:, 5] = x[:, 6]  # identical runs
            x[:, 7] = np.round(x[:, 8] + 0.1, 6)  # a constant difference: zero spread
            a, bb = np.triu_indices(30, 1)
            diffs = pw.Differences(x, a, bb)
        else:
            columns = [rng.random(n) - rng.random(n) for _ in range(20)]
            columns += [np.round(rng.random(n) - 0.45, 1) for _ in range(20)]
            columns += [np.zeros(n), np.resize([0.1, -0.1], n), np.r_[np.full(n - 1, 0.2), 0.5]]
            diffs = pw.Differences(np.column_stack(columns))
        counts = pw.resampling_counts(n, b, np.random.default_rng(trial))
        out = {}
        for lanes in (False, True):
            got = (np.empty(diffs.pairs), np.zeros(diffs.pairs), np.zeros(diffs.pairs), np.empty(diffs.pairs))
            pw._bootstrap_counts(diffs, counts, 1 << 30, got[0], got[1], got[2], (alpha, got[3]), lanes=lanes)
            out[lanes] = got
        for field in range(4):
            assert np.array_equal(out[False][field], out[True][field], equal_nan=True), (trial, field)
    assert taken["from r"] > 0 and taken["every |t*|"] > 0


# ------------------------------------------------------------------------- versus baseline
def test_baseline_pairs_are_the_all_pairs_with_a_baseline_in_order() -> None:
    for runs, base in [(2, [0]), (5, [4]), (6, [0, 3]), (7, [2, 2, 5, 0]), (9, list(range(9)))]:
        a, b = pair_indices(runs)
        keep = np.isin(a, base) | np.isin(b, base)
        ba, bb = baseline_pairs(runs, base)
        assert np.array_equal(ba, a[keep]) and np.array_equal(bb, b[keep])
    with pytest.raises(ValueError, match="out of range"):
        baseline_pairs(3, [3])


@pytest.mark.parametrize("test", TESTS)
def test_versus_baseline_gives_the_all_pairs_values_of_its_pairs(test: str) -> None:
    x = scores(12, 10, seed=5, decimals=4)  # (scipy's Wilcoxon is slow on many tied differences)
    runs = [f"r{i}" for i in range(10)]
    full = pairwise(x, runs, test, resamples=300, seed=3, correction="holm")
    base = pairwise(x, runs, test, resamples=300, seed=3, correction="holm", baselines=["r6", "r2", "r6"],
                    block_bytes=tiny(300, 12))
    keep = np.isin(full.a, [2, 6]) | np.isin(full.b, [2, 6])
    assert keep.sum() == 9 + 8 == len(base.p)
    for f in ("a", "b", "mean_a", "mean_b", "statistic", "p"):
        assert np.array_equal(getattr(base, f), getattr(full, f)[keep], equal_nan=True), f
    assert np.array_equal(base.p_adjusted, adjust(full.p[keep], "holm"))  # the family is the pairs tested
    assert base.baselines == ("r6", "r2")
    assert base.p[base.pair("r2", "r9")] == full.p[full.pair("r9", "r2")]
    with pytest.raises(KeyError, match="not tested"):
        base.pair("r0", "r1")
    pm = base.p_matrix(adjusted=False)
    assert np.isnan(pm[0, 1]) and pm[6, 6] == 1.0 and pm[9, 2] == pm[2, 9] == full.p_matrix(adjusted=False)[2, 9]
    with pytest.raises(ValueError, match="not among the runs"):
        pairwise(x, runs, test, baselines=["r10"])


# ---------------------------------------------------------------------- callers of the core
def test_discriminative_power_reuses_given_asls_and_meta_evaluation_agrees() -> None:
    x = scores(10, 8, seed=6)
    runs = [f"r{i}" for i in range(8)]
    own = discriminative_power(x, resamples=400, seed=0)
    boot = pairwise(x, runs, "bootstrap", resamples=400, seed=0)
    assert np.array_equal(own.asl, boot.p)  # the test's p-values are the ASLs
    given = discriminative_power(x, resamples=400, seed=0, asl=boot.p, block_bytes=tiny(400, 10))
    assert (given.power, given.difference_required) == (own.power, own.difference_required)
    assert np.array_equal(given.asl, own.asl)
    # Given values are used as they are (not recounted): all-significant ASLs give power 1.
    assert discriminative_power(x, resamples=400, seed=0, asl=np.full(28, 1e-3)).power == 1.0
    with pytest.raises(ValueError, match="3 ASLs given for 28 pairs"):
        discriminative_power(x, resamples=400, seed=0, asl=np.ones(3))
    table = {"M": (runs, x), "N": (runs, x[:, ::-1])}
    plain = meta_evaluation(table, resamples=400, seed=0)
    reused = meta_evaluation(table, resamples=400, seed=0, asl={"M": boot.p})
    assert plain == reused or (plain.power["M"].power == reused.power["M"].power
                               and plain.power["M"].asl_curve == reused.power["M"].asl_curve
                               and plain.power["N"] == reused.power["N"] and plain.tau == reused.tau)


def test_pair_effects_are_the_effect_sizes_of_the_pairs_asked() -> None:
    x = scores(9, 7, seed=8)
    e = effect_sizes(x, resamples=300, seed=2)
    a, b = baseline_pairs(7, [3])
    keep = np.isin(e.a, [3]) | np.isin(e.b, [3])
    p = pair_effects(x, a, b, resamples=300, seed=2, block_bytes=tiny(300, 9))
    assert np.array_equal(p.ci_low, e.ci_low[keep]) and np.array_equal(p.ci_high, e.ci_high[keep])
    assert np.array_equal(p.standardised, e.standardised[keep], equal_nan=True)
    whole = pair_effects(x, *pair_indices(7), resamples=300, seed=2)
    assert np.array_equal(whole.ci_low, e.ci_low) and np.array_equal(whole.ci_high, e.ci_high)


def test_friedman_posthoc_from_distinct_values_is_unchanged() -> None:
    from scipy import stats

    x = scores(8, 6, seed=9, decimals=1)
    fr = friedman(x)
    n, k = x.shape
    q = np.abs(fr.mean_ranks[:, None] - fr.mean_ranks[None, :]) / np.sqrt(k * (k + 1) / (6.0 * n)) * np.sqrt(2.0)
    a, b = pair_indices(k)
    assert np.array_equal(fr.posthoc_p[a, b], stats.studentized_range.sf(q[a, b], k, np.inf))


# ------------------------------------------------------------------------------------ CLI
def write_scores(folder: Path, x: np.ndarray) -> list[str]:
    paths = []
    for j in range(x.shape[1]):
        path = folder / f"sys{j}.csv"
        path.write_text("topic,value\n" + "".join(f"q{i},{float(x[i, j])!r}\n" for i in range(x.shape[0])))
        paths.append(str(path))
    return paths


def test_compare_versus_baselines_prints_the_all_pairs_rows_of_its_pairs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    paths = write_scores(tmp_path, scores(10, 6, seed=10))
    assert main(["compare", "--scores", *paths, "--B", "200"]) == 0
    every = capsys.readouterr().out.strip().split("\n\n")[1].splitlines()
    assert main(["compare", "--scores", *paths, "--B", "200", "--baseline", "sys4", "--baseline", "sys1"]) == 0
    runs_table, pairs_table = capsys.readouterr().out.strip().split("\n\n")
    header, *rows = pairs_table.splitlines()
    assert header == every[0]
    notes = [r for r in rows if r.startswith("#")]  # what p, p_adjusted and the intervals are
    rows = [r for r in rows if not r.startswith("#")]
    assert rows == [r for r in every[1:] if {"sys4", "sys1"} & set(r.split("\t")[:2])]
    assert notes == [r for r in every[1:] if r.startswith("#")]
    assert len(rows) == 5 + 4 and len(runs_table.splitlines()) == 1 + 6
    assert main(["compare", "--scores", *paths, "--baseline", "sys9"]) == 2
    assert "--baseline sys9: not among the runs compared" in capsys.readouterr().err


def test_compare_json_written_pair_by_pair_is_the_whole_document(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    paths = write_scores(tmp_path, scores(10, 5, seed=11))
    assert main(["compare", "--scores", *paths, "--B", "100", "--test", "t", "--format", "json",
                 "--baseline", "sys0"]) == 0
    text = capsys.readouterr().out
    doc = json.loads(text)
    assert text == json.dumps(doc, indent=1) + "\n"  # the text json.dump(doc, indent=1) gives
    pairs = doc["metrics"]["score"]["pairs"]
    assert [(p["run_a"], p["run_b"]) for p in pairs] == [("sys0", f"sys{j}") for j in range(1, 5)]
    assert doc["baselines"] == ["sys0"]
    x = np.array([[float(line.split(",")[1]) for line in Path(p).read_text().splitlines()[1:]] for p in paths]).T
    t = pairwise(x, [f"sys{j}" for j in range(5)], "t")
    assert [p["p"] for p in pairs] == t.p[:4].tolist()
