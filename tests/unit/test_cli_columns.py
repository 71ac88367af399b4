"""Whole-column formatting (service.cli.columns) and the array shortcuts of the all-pairs tests
(issue 26, item 2) give exactly what they replace:

- ``fixed`` is f"{v:.{d}f}" and ``p_values`` is ``format_p_many``, value for value, with ties,
  near-ties, signs of zero, NaN, infinities and huge numbers;
- ``cranfield compare``'s TSV lines of the pairs are the text of the former per-pair formatting
  (kept below as the reference) as SafeOutput sent it, undecided pairs and names with
  non-ASCII, control and bidirectional characters included;
- ``sorted_percentiles`` of sorted rows is ``np.percentile``; ``t_sf`` and ``t_ppf`` are
  scipy.stats.t's floats.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from service.cli import columns
from service.cli.output import terminal_safe
from service.cli.stats import _pair_lines, _pair_rows
from service.metrics.stats.common import t_ppf, t_sf
from service.metrics.stats.pairwise import pair_effects, pair_t_intervals, pairwise, sorted_percentiles
from service.metrics.stats.presentation import format_p_many


def awkward_values(seed: int) -> np.ndarray:
    """Values of every kind: random at several scales, exact and near ties at 3, 4 and 6
    decimals, zeros of both signs, NaN, infinities, huge numbers."""
    rng = np.random.default_rng(seed)
    k = rng.integers(0, 10**6, size=2000)
    ties = np.concatenate([(k + 0.5) / 10**d for d in (3, 4, 6)])  # the nearest doubles to x.5 ulps
    near = np.concatenate([np.nextafter(ties, np.inf), np.nextafter(ties, -np.inf)])
    values = np.concatenate([
        rng.normal(size=3000), rng.normal(size=1000) * 1e-5, rng.normal(size=500) * 1e4, rng.random(2000),
        ties, -ties, near, -near, [0.0, -0.0, 1e-300, -1e-300, 5e-7, -5e-7, 0.0005, 0.00005, 2.5e-7],
        [np.nan, -np.nan, np.inf, -np.inf, 1e20, -3.3e15, 2.0**31 / 1e6, 2.0**31 / 1e6 + 1, 123456789.0],
    ])
    return values


def cells(column: np.ndarray) -> list[str]:
    """The texts of a column's cells (its NUL padding dropped)."""
    return [bytes(row).replace(b"\x00", b"").decode("utf-8") for row in column]


@pytest.mark.parametrize("decimals", [1, 3, 4, 6])
def test_fixed_is_pythons_fixed_point_text(decimals: int) -> None:
    values = awkward_values(decimals)
    assert cells(columns.fixed(values, decimals)) == [f"{v:.{decimals}f}" for v in values.tolist()]


@pytest.mark.parametrize("alpha", [0.05, 0.01, 0.001, 0.0001, 0.5])
@pytest.mark.parametrize("decimals", [3, 4])
def test_p_values_are_format_p_many(alpha: float, decimals: int) -> None:
    rng = np.random.default_rng(7)
    p = np.concatenate([
        rng.random(3000), rng.random(1000) * 0.02, alpha + rng.normal(size=1000) * 1e-4,
        10.0 ** -rng.uniform(0, 6, size=1000), np.abs(awkward_values(3)),
        [alpha, np.nextafter(alpha, 0), np.nextafter(alpha, 1), 0.0, 1.0, 0.001, 0.01, 0.0099999, np.nan],
    ])
    assert cells(columns.p_values(p, alpha, decimals)) == format_p_many(p.tolist(), alpha, decimals)


def test_lines_join_the_columns_and_drop_the_padding() -> None:
    names = columns.texts(["r1", "système-2", ""])
    out = columns.lines([names, columns.constant("m", 3), columns.fixed(np.array([1.0, -0.5, 2.25]), 2),
                         names[np.array([1, 0, 2])]])
    assert out == "r1\tm\t1.00\tsystème-2\nsystème-2\tm\t-0.50\tr1\n\tm\t2.25\t\n"
    verdict = columns.put(columns.texts(["yes", "no", "yes"]), np.array([1]), ["undecided at B = 400.0"])
    assert cells(verdict) == ["yes", "undecided at B = 400.0", "yes"]
    assert columns.lines([columns.texts([])]) == ""
    with pytest.raises(ValueError, match="NUL"):
        columns.texts(["a", "b\x00"])


def statistic_text(test: str, st: float) -> str:
    """The statistic as text: the Wilcoxon and sign tests' whole numbers as integers (issue 37, item 7)."""
    return str(int(st)) if test in ("wilcoxon", "sign") and np.isfinite(st) and st == round(st) else f"{st:.6f}"


def old_pair_lines(res, eff, metric: str, alpha: float) -> str:  # type: ignore[no-untyped-def]
    """cranfield compare's pair lines as one f-string per pair of the JSON's fields (issue 26's
    reference; issue 37: p exact, booleans true/false, the verdict and B as the JSON has them)."""
    return "".join(
        f"{ra}\t{rb}\t{metric}\t{res.test}\t{ma:.6f}\t{mb:.6f}\t{d:.6f}\t{statistic_text(res.test, st)}\t"
        f"{p!r}\t{pa!r}\t"
        f"{'true' if significant else 'false'}\t{verdict}\t{lo:.6f}\t{hi:.6f}\t{es:.6f}\t"
        f"{'' if b is None else int(b)}\n"
        for (ra, rb, ma, mb, d, st, p, pa, significant, verdict, lo, hi, es, b) in _pair_rows(res, eff))


@pytest.mark.parametrize("test", ["t", "bootstrap", "tukey", "wilcoxon", "sign", "friedman"])
def test_the_pair_lines_are_the_former_per_pair_text(test: str) -> None:
    rng = np.random.default_rng(11)
    x = (rng.random((12, 9)) + np.linspace(0, 0.4, 9)).round(3)
    x[:, 1] = x[:, 0]  # identical runs: t = 0, p = 1
    x[:, 8] = x[:, 7] + 0.25  # a constant difference: t = inf
    # names as stored text may be: accents, a NUL, an escape sequence, a bidirectional override
    runs = [f"sys\u00e9{i}" for i in range(6)] + ["nul\x00run", "\x1b[31mred", "\u202eevil"]
    res = pairwise(x, runs, test, resamples=200, seed=5, correction="holm", alpha=0.05)
    eff = pair_t_intervals(x, res.a, res.b, t=res) if test == "t" else pair_effects(x, res.a, res.b, resamples=200,
                                                                                  seed=5)
    # What SafeOutput.write sent of the former lines: the same text, made safe for a terminal.
    expected = terminal_safe(old_pair_lines(res, eff, "nDCG@10", 0.05))
    assert _pair_lines(res, eff, "nDCG@10", slice(0, len(res.a))) == expected
    part = terminal_safe(old_pair_lines(res, eff, "m\x07", 0.05))
    assert _pair_lines(res, eff, "m\x07", slice(5, 17)) == "".join(part.splitlines(True)[5:17])


def test_the_pair_lines_of_undecided_pairs() -> None:
    rng = np.random.default_rng(3)
    x = rng.random((10, 8)) + np.linspace(0, 0.3, 8)
    res = pairwise(x, None, "bootstrap", resamples=50, seed=2, correction="holm", sequential=True, max_resamples=100)
    assert res.undecided is not None and res.undecided.any() and not res.undecided.all()
    eff = pair_effects(x, res.a, res.b, resamples=50, seed=2)
    assert _pair_lines(res, eff, "AP", slice(0, len(res.a))) == old_pair_lines(res, eff, "AP", 0.05)


@pytest.mark.parametrize("resamples", [1, 2, 3, 10, 40, 999, 1000, 1001])
@pytest.mark.parametrize("level", [0.95, 0.9, 0.99, 0.5])
def test_sorted_percentiles_are_numpys(resamples: int, level: float) -> None:
    rng = np.random.default_rng(resamples)
    d = rng.normal(size=(resamples, 30)).round(2)  # ties
    d[:, 0] = 0.25
    if resamples > 1:
        d[0, 1] = np.nan
    tail = (1 - level) / 2 * 100
    lanes = np.sort(d.T, axis=1)
    assert np.array_equal(sorted_percentiles(lanes, [tail, 100 - tail]), np.percentile(d, [tail, 100 - tail], axis=0),
                          equal_nan=True)


def test_t_sf_and_t_ppf_are_scipy_stats_floats() -> None:
    x = np.concatenate([np.abs(np.random.default_rng(1).normal(size=5000)) * 4, [0.0, np.inf, 1e-300, 40.0, np.nan]])
    for df in (1, 2, 9, 49, 999):
        assert np.array_equal(t_sf(x, df), stats.t.sf(x, df), equal_nan=True)
        for q in (0.975, 0.995, 0.95, 0.5, 0.025, 1e-9, 0.0, 1.0):
            assert np.array_equal(t_ppf(q, df), stats.t.ppf(q, df))
