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
from scipy import stats


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
    margin = float(stats.t.ppf(q, n - 1) * kept.std(ddof=1) / np.sqrt(n)) if n > 1 else math.nan
    return MeanInterval(n, mean, margin, level)
