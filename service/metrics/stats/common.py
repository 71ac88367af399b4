"""Input validation and small shared pieces of the statistical tests.

Score matrices are (topics, runs): one row per topic, one column per run, as in
Sakai's textbook and the tools that read a topic-by-run matrix. Every test of
all pairs works on the (topics, pairs) matrix of per-topic differences
``x[:, a] - x[:, b]`` for a < b, in ``pair_indices`` order (or the pairs with a
baseline run, ``baseline_pairs``), made a block of pairs at a time
(``column_blocks``) so that memory stays bounded however many pairs there are.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

#: Relative tolerance for "statistic >= observed" in resampling tests. Scores with
#: few decimals give many permutations whose statistic equals the observed one;
#: float sums of the same numbers in another order differ in the last bits, so a
#: bare ``>=`` would count those ties at random.
TIE_RTOL = 1e-9

#: The largest float64 block a test over many pairs holds at once, in bytes: a resampling
#: test's (B, pairs in the block) replicates, or a classic test's (topics, pairs in the block)
#: differences. Temporaries of the same shape come on top (a few of them).
BLOCK_BYTES = 64 * 2**20

#: The narrowest block (unless there is a single pair). A block of one column would make
#: numpy take other code paths (a matrix-vector product, a pairwise summation) whose last
#: bits differ from those of the same column in a wider block; blocks of 2 columns or more
#: give every pair exactly the same values as one block of all pairs.
MIN_BLOCK = 3


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


def as_score_matrix(
    scores: np.ndarray, runs: tuple[str, ...] | list[str] | None = None, *, min_runs: int = 2
) -> ScoreMatrix:
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


def paired_scores(reference: object, other: object, ndim: int,
                  names: tuple[str, str] = ("reference", "other")) -> tuple[np.ndarray, np.ndarray]:
    """The agreement measures' one check of their two inputs: float64 arrays of the same shape,
    ``ndim`` 1 (two score vectors, e.g. the runs' means under two judgment sets) or 2 (two
    (topics, runs) matrices); NaN allowed (left out by the caller), infinities refused."""
    x = np.asarray(reference, dtype=np.float64)
    y = np.asarray(other, dtype=np.float64)
    if x.ndim != ndim or x.shape != y.shape:
        what = "score vectors of the same length" if ndim == 1 else "(topics, runs) matrices of the same shape"
        raise ValueError(f"{names[0]} and {names[1]} must be two {what}, got {x.shape} and {y.shape}")
    if np.isinf(x).any() or np.isinf(y).any():
        raise ValueError("scores contain infinite values")
    return x, y


def condensed_index(n_runs: int, i: Any, j: Any) -> Any:
    """The position of the pair (i, j), in either order, among :func:`pair_indices`' pairs of
    ``n_runs`` runs (ints or arrays of them; i != j)."""
    lo, hi = np.minimum(i, j), np.maximum(i, j)
    return lo * (2 * n_runs - lo - 1) // 2 + hi - lo - 1


def pair_indices(n_runs: int) -> tuple[np.ndarray, np.ndarray]:
    """(a, b) for every pair a < b, in row-major order."""
    a, b = np.triu_indices(n_runs, k=1)
    return a.astype(np.int64), b.astype(np.int64)


def baseline_pairs(n_runs: int, baselines: list[int] | tuple[int, ...] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(a, b), a < b, for every pair with at least one baseline run (indices ``baselines``):
    the pairs of ``pair_indices`` that involve a baseline, in the same order and orientation
    (so every test gives them the values of the all-pairs result). Memory is linear in the
    number of pairs returned (about baselines x runs)."""
    base = np.unique(np.asarray(baselines, dtype=np.int64))
    if not len(base):
        raise ValueError("no baseline run given")
    if base[0] < 0 or base[-1] >= n_runs:
        raise ValueError(f"baseline index out of range for {n_runs} runs")
    everyone = np.arange(n_runs, dtype=np.int64)
    keys = []
    for s in base.tolist():  # one vector per baseline run: (s, j > s) and (i < s, s)
        keys.append(s * n_runs + everyone[s + 1:])
        keys.append(everyone[:s] * n_runs + s)
    key = np.unique(np.concatenate(keys))  # sorted: row-major (pair_indices) order, pairs of two baselines once
    return key // n_runs, key % n_runs


def block_width(rows: int, block_bytes: int = BLOCK_BYTES) -> int:
    """Columns per block so that a (rows, width) float64 block stays within ``block_bytes``
    (never below ``MIN_BLOCK``: with a huge ``rows`` one block of 3 columns may exceed it)."""
    if block_bytes <= 0:
        raise ValueError("block_bytes must be positive")
    return max(MIN_BLOCK, block_bytes // (8 * max(int(rows), 1)))


def column_blocks(total: int, width: int) -> list[tuple[int, int]]:
    """[lo, hi) ranges covering range(total) in order, each at most ``width`` columns wide and,
    unless ``total`` is 1, at least 2 wide (see ``MIN_BLOCK``): a last block of a single
    column is merged with the one before, and the two split in halves."""
    width = max(MIN_BLOCK, int(width))
    bounds = [(lo, min(lo + width, total)) for lo in range(0, total, width)]
    if len(bounds) >= 2 and bounds[-1][1] - bounds[-1][0] == 1:
        lo = bounds[-2][0]
        mid = lo + (total - lo) // 2
        bounds[-2:] = [(lo, mid), (mid, total)]
    return bounds


def as_rng(seed: int | np.random.Generator | None) -> np.random.Generator:
    """A Generator from a seed (or the Generator itself); never the global state."""
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(seed)


def tie_threshold(observed: np.ndarray) -> np.ndarray:
    """The smallest value counted as "at least ``observed``": observed minus the tie tolerance."""
    observed = np.asarray(observed, dtype=np.float64)
    finite = np.isfinite(observed)
    tol = np.where(finite, TIE_RTOL * np.maximum(np.abs(np.where(finite, observed, 0.0)), 1e-12), 0.0)
    return observed - tol


def at_least(stat: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """stat >= observed, counting values equal up to float round-off as ties."""
    return stat >= tie_threshold(observed)


def count_at_least(sorted_stat: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """``at_least(stat, observed).sum()`` for each observed value, from the statistics sorted
    in increasing order (no NaN): how many lie at or above the tie threshold, by binary search."""
    idx = np.searchsorted(sorted_stat, tie_threshold(observed), side="left")
    return sorted_stat.shape[0] - idx


def monte_carlo_p(count: np.ndarray, b: int | np.ndarray) -> np.ndarray:
    """(count + 1) / (B + 1): the observed arrangement counts as one of the resamples (B may
    differ per pair: a sequential test's, or the bootstrap's informative resamples)."""
    return (count + 1.0) / (np.asarray(b, dtype=np.float64) + 1.0)


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


# Student's t through scipy.special's ufuncs, the floats of scipy.stats.t (whose rv_continuous
# wrapper calls the same ufuncs for arguments in the support): importing scipy.stats costs most
# of a second, a large share of a short ``cranfield compare`` (issue 26, item 2).
def t_sf(x: Any, df: Any) -> Any:
    """``scipy.stats.t.sf(x, df)`` for df > 0 (the same floats)."""
    from scipy import special

    return special.stdtr(df, -np.asarray(x, dtype=np.float64))


def t_ppf(q: float, df: float) -> Any:
    """``scipy.stats.t.ppf(q, df)`` (the same float; scipy.stats itself outside 0 < q < 1)."""
    if not (0.0 < q < 1.0 and df > 0):
        from scipy import stats

        return stats.t.ppf(q, df)
    from scipy import special

    return special.stdtrit(df, np.float64(q)) * 1.0 + 0.0  # rv_continuous.ppf's "* scale + loc"


#: The element-wise passes over a block of pairs' (B, block) replicates run on slices of about
#: this many bytes per array: a dozen passes over a slice then run from the core's cache rather
#: than from memory, and the slices of a block run side by side on the CPUs.
CACHE_BYTES = 1 << 20


def column_slices(columns: int, rows: int) -> list[tuple[int, int]]:
    """[c0, c1) slices of a block's ``columns`` for element-wise work on (rows, columns) arrays."""
    return column_blocks(columns, block_width(rows, CACHE_BYTES))


_BLAS_LOCAL: Any = False  # openblas_set_num_threads_local once found; None when there is none


def _blas_local_threads() -> Any:
    """OpenBLAS's ``openblas_set_num_threads_local`` (0.3.27 and later: the threads of the calling
    thread's products, returning the former number) from the library numpy loaded, or None."""
    global _BLAS_LOCAL
    if _BLAS_LOCAL is False:
        _BLAS_LOCAL = None
        try:
            import ctypes

            with open("/proc/self/maps", encoding="utf-8") as maps:
                paths = {line.split()[-1] for line in maps if "openblas" in line.lower() and "/" in line}
            for path in sorted(paths):
                function = getattr(ctypes.CDLL(path), "openblas_set_num_threads_local", None)
                if function is not None:
                    function.argtypes, function.restype = [ctypes.c_int], ctypes.c_int
                    _BLAS_LOCAL = function
                    break
        except OSError:  # not Linux, or no such library: products keep OpenBLAS's threads
            pass
    return _BLAS_LOCAL


@contextmanager
def single_threaded_products() -> Iterator[None]:
    """Within it, this thread's matrix products run on this thread alone: many small products on
    several threads at once, each also waking OpenBLAS's threads, are many times slower (more so
    on a loaded machine). A product's floats do not depend on it at the widths of
    ``CACHE_BYTES`` blocks (OpenBLAS splits those by rows among its threads, which the row padding
    of ``pairwise.ROW_PAD`` makes change no float)."""
    function = _blas_local_threads()
    before = function(1) if function is not None else None
    try:
        yield
    finally:
        if before is not None:
            function(before)


def worker_count() -> int:
    """Threads for the blocks of pairs: the CPUs this process may use (numpy's array operations
    and OpenBLAS release the GIL, so blocks run side by side)."""
    try:
        return max(1, min(len(os.sched_getaffinity(0)), 8))
    except AttributeError:  # not Linux
        return max(1, min(os.cpu_count() or 1, 8))


def block_pool(workers: int | None = None) -> ThreadPoolExecutor:
    """A pool of :func:`worker_count` threads for :func:`run_slices` (a context manager)."""
    return ThreadPoolExecutor(max_workers=worker_count() if workers is None else workers)


def run_slices(pool: ThreadPoolExecutor, work: Callable[[int, int], None], bounds: Sequence[tuple[int, int]]) -> None:
    """``work(lo, hi)`` for each slice on the pool's threads, back when all are done. Each slice
    writes its own part of the outputs, so the results are those of a loop in order."""
    if len(bounds) <= 1 or pool._max_workers <= 1:
        for lo, hi in bounds:
            work(lo, hi)
        return
    for done in [pool.submit(work, lo, hi) for lo, hi in bounds]:
        done.result()  # re-raises a slice's error


def for_each_block(work: Callable[[int, int], None], bounds: Sequence[tuple[int, int]],
                   workers: int | None = None) -> None:
    """:func:`run_slices` on a pool of its own."""
    with block_pool(workers) as pool:
        run_slices(pool, work, bounds)
