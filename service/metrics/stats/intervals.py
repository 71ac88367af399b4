"""The interval stored with every mean score: one run's mean over its scored topics.

Unlike :func:`service.metrics.stats.anova.run_intervals`, which works on a (topics, runs)
matrix and drops a topic that any run lacks, this is the interval of one run alone: topics
the run was not scored on (NaN) are left out of its own mean, and the interval never moves
when other runs are added.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from service.metrics.stats.common import t_ppf


@dataclass(frozen=True)
class MeanInterval:
    """A mean with its two-sided t interval; NaN where undefined (no topic, or one)."""

    n: int  # topics scored (values that are not NaN)
    mean: float  # NaN when n == 0
    margin: float  # half-width of the interval; NaN when n < 2
    level: float

    @property
    def low(self) -> float:
        return self.mean - self.margin

    @property
    def high(self) -> float:
        return self.mean + self.margin


def mean_interval(values: np.ndarray, level: float = 0.95) -> MeanInterval:
    """The mean of the scored topics and its Student t confidence interval.

    ``values`` are one run's per-topic scores, NaN for a topic not scored. With the n scored
    values x, the interval is mean(x) +- t_{(1+level)/2, n-1} * s / sqrt(n), s the sample
    standard deviation (ddof = 1): the one-sample Student t interval of a mean, the "t" method
    of ``run_intervals`` (docs/statistics.md) on this run's own topics. Its margin is NaN for
    n < 2 and the mean NaN for n = 0.
    """
    if not 0 < level < 1:
        raise ValueError("level must lie strictly between 0 and 1")
    x = np.asarray(values, dtype=np.float64)
    kept = x[~np.isnan(x)]
    n = int(kept.shape[0])
    mean = float(kept.mean()) if n else math.nan
    q = (1.0 + level) / 2.0
    margin = float(t_ppf(q, n - 1) * kept.std(ddof=1) / np.sqrt(n)) if n > 1 else math.nan
    return MeanInterval(n, mean, margin, level)


BOOTSTRAP_METHODS = ("percentile", "bca")


@dataclass(frozen=True)
class BootstrapInterval:
    """A bootstrap confidence interval of a mean (or of k column means at once).

    ``low`` and ``high`` are floats for a 1-D input and (k,) arrays for an (n, k) input; NaN
    where the interval is undefined (fewer than two values, or a BCa correction that cannot be
    computed). ``method``, ``level`` and ``resamples`` (B) are what was asked, so that the
    interval can be stored and described with its parameters.
    """

    low: float | np.ndarray
    high: float | np.ndarray
    method: str  # "percentile" or "bca"
    level: float
    resamples: int


# Elements of the (columns, B, n) resample array built at once; more columns are done in chunks.
_CHUNK_ELEMENTS = 1 << 23


def bootstrap_interval(
    values: np.ndarray,
    *,
    resamples: int = 1000,
    level: float = 0.95,
    method: str = "bca",
    seed: int | np.random.Generator = 0,
) -> BootstrapInterval:
    """The bootstrap percentile or BCa interval of the mean of ``values``.

    ``values`` is (n,) or (n, k): k columns (e.g. runs over the same n topics) resampled with one
    shared (B, n) draw of topic indices, ``rng.integers(0, n, size=(B, n))`` with
    ``rng = numpy.random.default_rng(seed)`` (or ``seed`` itself when it is a Generator). That is
    the draw of ``scipy.stats.bootstrap(..., n_resamples=B, rng=default_rng(seed),
    vectorized=True, axis=0)``, and the interval is the one scipy returns (method
    ``'percentile'`` or ``'BCa'``) up to round-off:

    - percentile: the (1 - level)/2 and (1 + level)/2 quantiles (linear interpolation, numpy's
      default) of the B resample means;
    - bca (Efron & Tibshirani 1993, 14.3): quantiles at Phi(z0 + (z0 + z)/(1 - a (z0 + z))) for
      z = -+ z_{(1+level)/2}; z0 = Phi^-1 of the share of resample means below the mean, ties
      counted half; a the jackknife acceleration, which for the mean is
      sum(d^3) / (6 (sum d^2)^(3/2)) with d the deviations from the mean.

    Columns are computed independently from the shared draw, so chunking over columns (done here
    above ~8M resample elements) or bootstrapping one column alone with the same seed gives
    identical figures. NaN is rejected (``ValueError``): callers drop the topics a run lacks. With
    n < 2 the interval is NaN; with all values of a column equal it is [value, value]; neither
    warns. Both ends are clipped to the column's [min, max] (only round-off can exceed it), so the
    interval of a mean of values in [lo, hi] never leaves [lo, hi].
    """
    if not 0 < level < 1:
        raise ValueError("level must lie strictly between 0 and 1")
    if method not in BOOTSTRAP_METHODS:
        raise ValueError(f"method must be one of {BOOTSTRAP_METHODS}, not {method!r}")
    if int(resamples) != resamples or resamples < 1:
        raise ValueError("resamples must be a positive integer")
    resamples = int(resamples)
    x = np.asarray(values, dtype=np.float64)
    if x.ndim not in (1, 2):
        raise ValueError("values must be (n,) or (n, k)")
    if np.isnan(x).any():
        raise ValueError("values contain NaN: leave out the topics that were not scored")
    one_d = x.ndim == 1
    n = x.shape[0]
    cols = x.reshape(n, 1).T if one_d else x.T  # (k, n): one row per column, as scipy's axis=-1
    k = cols.shape[0]
    low = np.full(k, math.nan)
    high = np.full(k, math.nan)
    if n >= 2 and k:
        rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        idx = rng.integers(0, n, size=(resamples, n))
        step = max(1, _CHUNK_ELEMENTS // (resamples * n))
        for start in range(0, k, step):
            part = np.ascontiguousarray(cols[start:start + step])
            low[start:start + step], high[start:start + step] = _bootstrap_columns(part, idx, level, method)
    if one_d:
        return BootstrapInterval(float(low[0]), float(high[0]), method, level, resamples)
    return BootstrapInterval(low, high, method, level, resamples)


def _bootstrap_columns(cols: np.ndarray, idx: np.ndarray, level: float, method: str) -> tuple[np.ndarray, np.ndarray]:
    """Interval ends for the rows of ``cols`` (c, n) from the shared draw ``idx`` (B, n)."""
    resamples = idx.shape[0]
    c = cols.shape[0]
    lo_x = cols.min(axis=-1)
    hi_x = cols.max(axis=-1)
    # (c, B) resample means, one column at a time: numpy's float summation order depends on the
    # array's shape, so a (B, n) reduction per column keeps the figures independent of chunking
    # (and equal to scipy's for that column alone, up to nothing).
    theta_b = np.stack([col[idx].mean(axis=-1) for col in cols])
    alpha = (1.0 - level) / 2.0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if method == "percentile":
            p = np.tile([alpha, 1.0 - alpha], (c, 1))
        else:
            theta = np.array([col.mean() for col in cols])
            below = (theta_b < theta[:, None]).sum(axis=-1) + (theta_b <= theta[:, None]).sum(axis=-1)
            z0 = special.ndtri(below / (2.0 * resamples))
            d = cols - theta[:, None]
            accel = (d**3).sum(axis=-1) / 6.0 / (d**2).sum(axis=-1) ** 1.5
            z = float(special.ndtri(alpha))
            ends = []
            for za in (z, -z):
                num = z0 + za
                ends.append(special.ndtr(z0 + num / (1.0 - accel * num)))
            p = np.stack(ends, axis=-1)
        out = _linear_quantiles(np.sort(theta_b, axis=-1), p)
    out = np.clip(out, lo_x[:, None], hi_x[:, None])  # NaN stays NaN
    flat = lo_x == hi_x  # every value equal: the mean is that value, the interval a point
    out[flat] = lo_x[flat, None]
    return out[:, 0], out[:, 1]


def _linear_quantiles(sorted_b: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Quantiles of each sorted row at that row's probabilities p (c, m): numpy's 'linear' method."""
    resamples = sorted_b.shape[-1]
    out = np.full(p.shape, math.nan)
    ok = np.isfinite(p)
    h = np.where(ok, p, 0.0) * (resamples - 1)
    j = np.clip(np.floor(h).astype(np.int64), 0, resamples - 1)
    j1 = np.minimum(j + 1, resamples - 1)
    g = h - j
    a = np.take_along_axis(sorted_b, j, axis=-1)
    b = np.take_along_axis(sorted_b, j1, axis=-1)
    val = np.where(g >= 0.5, b - (b - a) * (1.0 - g), a + (b - a) * g)
    out[ok] = val[ok]
    return out
