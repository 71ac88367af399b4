"""Input validation and small shared pieces of the statistical tests.

Score matrices are (topics, runs): one row per topic, one column per run, as in
Sakai's textbook and the tools that read a topic-by-run matrix. Every test of
all pairs works on the (topics, pairs) matrix of per-topic differences
``x[:, a] - x[:, b]`` for a < b, in ``pair_indices`` order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Relative tolerance for "statistic >= observed" in resampling tests. Scores with
#: few decimals give many permutations whose statistic equals the observed one;
#: float sums of the same numbers in another order differ in the last bits, so a
#: bare ``>=`` would count those ties at random.
TIE_RTOL = 1e-9


@dataclass(frozen=True)
class ScoreMatrix:
    """A validated (topics, runs) matrix; topics with a NaN in any run are dropped."""

    values: np.ndarray
    runs: tuple[str, ...]
    dropped_topics: int

    @property
    def n_topics(self) -> int:
        return int(self.values.shape[0])

    @property
    def n_runs(self) -> int:
        return int(self.values.shape[1])


def as_score_matrix(scores: np.ndarray, runs: tuple[str, ...] | list[str] | None = None, *, min_runs: int = 2) -> ScoreMatrix:
    x = np.asarray(scores, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"scores must be a (topics, runs) matrix, got shape {x.shape}")
    names = tuple(runs) if runs is not None else tuple(f"run{i + 1}" for i in range(x.shape[1]))
    if len(names) != x.shape[1]:
        raise ValueError(f"{len(names)} run names for {x.shape[1]} columns")
    if x.shape[1] < min_runs:
        raise ValueError(f"need at least {min_runs} runs, got {x.shape[1]}")
    if np.isinf(x).any():
        raise ValueError("scores contain infinite values")
    complete = ~np.isnan(x).any(axis=1)
    x = x[complete]
    if x.shape[0] < 2:
        raise ValueError(
            f"need at least 2 topics scored for every run, got {x.shape[0]} "
            f"({int((~complete).sum())} dropped for missing values)"
        )
    return ScoreMatrix(x, names, int((~complete).sum()))


def pair_indices(n_runs: int) -> tuple[np.ndarray, np.ndarray]:
    """(a, b) for every pair a < b, in row-major order."""
    a, b = np.triu_indices(n_runs, k=1)
    return a.astype(np.int64), b.astype(np.int64)


def as_rng(seed: int | np.random.Generator | None) -> np.random.Generator:
    """A Generator from a seed (or the Generator itself); never the global state."""
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(seed)


def at_least(stat: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """stat >= observed, counting values equal up to float round-off as ties."""
    observed = np.asarray(observed, dtype=np.float64)
    finite = np.isfinite(observed)
    tol = np.where(finite, TIE_RTOL * np.maximum(np.abs(np.where(finite, observed, 0.0)), 1e-12), 0.0)
    return stat >= observed - tol


def monte_carlo_p(count: np.ndarray, b: int) -> np.ndarray:
    """(count + 1) / (B + 1): the observed arrangement counts as one of the resamples."""
    return (count + 1.0) / (b + 1.0)


def t_statistic(mean: np.ndarray, sd: np.ndarray, n: int) -> np.ndarray:
    """mean / (sd / sqrt(n)) with 0/0 = 0 (no difference) and x/0 = +-inf.

    A standard deviation below 1e-12 of the mean is round-off (0.3-0.2 and 0.4-0.3 differ in
    their last bits), not variation: it counts as zero, so a constant difference is a
    certain one rather than a ratio of noise to noise.
    """
    sd = np.where(sd <= 1e-12 * np.abs(mean), 0.0, sd)
    se = sd / np.sqrt(n)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = mean / se
    return np.where((se == 0) & (mean == 0), 0.0, t)
