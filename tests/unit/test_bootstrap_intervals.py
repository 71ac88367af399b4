"""Bootstrap intervals of a run's mean (service.metrics.stats.intervals.bootstrap_interval).

The peer is ``scipy.stats.bootstrap``: it draws its resample indices as
``rng.integers(0, n, (n_resamples, n))`` (scipy/stats/_resampling.py, ``_bootstrap_resample``
via ``rng_integers``), the draw ``bootstrap_interval`` makes, so with the same Generator seed
the two intervals agree to round-off (1e-12 asserted).
"""

from __future__ import annotations

import inspect
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from service.metrics.stats.intervals import bootstrap_interval

SCIPY_METHOD = {"percentile": "percentile", "bca": "BCa"}


def scipy_interval(x: np.ndarray, method: str, resamples: int, seed: int, level: float = 0.95):
    """scipy's interval of the mean along axis 0, the Generator passed as ``rng`` (or the
    older ``random_state``)."""
    params = inspect.signature(stats.bootstrap).parameters
    key = "rng" if "rng" in params else "random_state"
    res = stats.bootstrap((x,), np.mean, method=SCIPY_METHOD[method], n_resamples=resamples,
                          confidence_level=level, vectorized=True, axis=0,
                          **{key: np.random.default_rng(seed)})
    return res.confidence_interval.low, res.confidence_interval.high


@pytest.mark.peer
@pytest.mark.parametrize("method", ["percentile", "bca"])
@pytest.mark.parametrize("n", [2, 5, 30, 120])
def test_one_column_equals_scipy_bootstrap(method: str, n: int) -> None:
    # Scores with two decimals, as metric values often are: ties between resample means and the
    # mean are frequent, and the per-column result is still scipy's to round-off.
    rng = np.random.default_rng(n)
    x = np.round(rng.beta(0.6, 2.0, size=n), 2)
    for seed, level, resamples in ((0, 0.95, 1000), (11, 0.9, 500)):
        ours = bootstrap_interval(x, method=method, seed=seed, level=level, resamples=resamples)
        low, high = scipy_interval(x, method, resamples, seed, level)
        assert ours.low == pytest.approx(low, abs=1e-12) and ours.high == pytest.approx(high, abs=1e-12)
        assert (ours.method, ours.level, ours.resamples) == (method, level, resamples)
        assert ours.low <= x.mean() <= ours.high


@pytest.mark.peer
@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_columns_share_one_draw_like_scipy_along_axis_0(method: str) -> None:
    # Continuous values (no tie between a resample mean and the mean): scipy's (n, k) call with
    # axis=0 resamples every column with the same indices, as bootstrap_interval does.
    x = np.random.default_rng(4).lognormal(size=(40, 6))
    ours = bootstrap_interval(x, method=method, seed=3)
    low, high = scipy_interval(x, method, 1000, 3)
    assert ours.low.shape == (6,) and ours.high.shape == (6,)
    np.testing.assert_allclose(ours.low, low, rtol=0, atol=1e-12)
    np.testing.assert_allclose(ours.high, high, rtol=0, atol=1e-12)


def test_columns_are_independent_of_chunking(monkeypatch: pytest.MonkeyPatch) -> None:
    from service.metrics.stats import intervals

    x = np.round(np.random.default_rng(8).uniform(size=(25, 7)), 2)
    whole = bootstrap_interval(x, seed=5)
    monkeypatch.setattr(intervals, "_CHUNK_ELEMENTS", 1)  # one column per chunk
    chunked = bootstrap_interval(x, seed=5)
    np.testing.assert_array_equal(whole.low, chunked.low)
    np.testing.assert_array_equal(whole.high, chunked.high)
    for j in range(7):  # and one column alone with the same seed gives the same figures, bit for bit
        alone = bootstrap_interval(x[:, j], seed=5)
        assert (alone.low, alone.high) == (whole.low[j], whole.high[j])


def test_bca_corrects_towards_the_skew_and_percentile_does_not() -> None:
    # Right-skewed values: BCa moves both ends up relative to the percentile interval (a > 0).
    x = np.array([0.0] * 15 + [0.05, 0.1, 0.1, 0.2, 0.9, 1.0, 1.0])
    pct = bootstrap_interval(x, method="percentile")
    bca = bootstrap_interval(x, method="bca")
    assert bca.low > pct.low and bca.high > pct.high
    assert 0 <= bca.low < x.mean() < bca.high <= 1


def test_degenerate_cases_are_quiet() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for method in ("percentile", "bca"):
            flat = bootstrap_interval([0.3] * 6, method=method)
            assert (flat.low, flat.high) == (0.3, 0.3)
            one = bootstrap_interval([0.3], method=method)
            assert math.isnan(one.low) and math.isnan(one.high)
            none = bootstrap_interval(np.array([]), method=method)
            assert math.isnan(none.low) and math.isnan(none.high)
            cols = bootstrap_interval(np.array([[0.2, 0.1], [0.2, 0.5], [0.2, 0.7]]), method=method)
            assert (cols.low[0], cols.high[0]) == (0.2, 0.2) and cols.low[1] < cols.high[1]


def test_input_is_checked() -> None:
    with pytest.raises(ValueError, match="NaN"):
        bootstrap_interval(np.array([0.1, np.nan, 0.3]))
    with pytest.raises(ValueError, match="method"):
        bootstrap_interval([0.1, 0.2], method="basic")
    with pytest.raises(ValueError, match="level"):
        bootstrap_interval([0.1, 0.2], level=1.0)
    with pytest.raises(ValueError, match="resamples"):
        bootstrap_interval([0.1, 0.2], resamples=0)
    with pytest.raises(ValueError, match=r"\(n,\)"):
        bootstrap_interval(np.zeros((2, 2, 2)))


def test_the_seed_fixes_the_interval() -> None:
    x = np.random.default_rng(2).uniform(size=30)
    assert bootstrap_interval(x, seed=9) == bootstrap_interval(x, seed=9)
    assert bootstrap_interval(x, seed=9) != bootstrap_interval(x, seed=10)


@settings(max_examples=200, deadline=None)
@given(
    bounds=st.tuples(st.floats(-1e3, 1e3), st.floats(0, 1e3)).map(lambda t: (t[0], t[0] + t[1])),
    fractions=st.lists(st.floats(0, 1), min_size=1, max_size=40),
    method=st.sampled_from(["percentile", "bca"]),
    level=st.floats(0.5, 0.999),
    seed=st.integers(0, 2**32 - 1),
)
def test_the_interval_of_a_mean_of_bounded_values_stays_within_the_bounds(bounds, fractions, method, level,
                                                                          seed) -> None:
    lo, hi = bounds
    x = np.clip(lo + (hi - lo) * np.array(fractions), lo, hi)  # every value in [lo, hi]
    r = bootstrap_interval(x, method=method, level=level, seed=seed, resamples=200)
    if len(x) < 2:
        assert math.isnan(r.low) and math.isnan(r.high)
        return
    for end in (r.low, r.high):  # NaN only where BCa's correction is undefined, never outside
        assert math.isnan(end) or lo <= end <= hi
    if not math.isnan(r.low) and not math.isnan(r.high):
        assert r.low <= r.high
