"""The classic reliability methods for metrics: stability, swap rates, top-heaviness.

None is defined in the papers here (they cite Buckley & Voorhees 2000, Voorhees &
Buckley 2002 and Sakai 2006); the exact procedures implemented are in
docs/statistics.md and repeated in each docstring. Score matrices are (topics, runs).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from service.metrics.stats.common import as_rng, as_score_matrix, pair_indices
from service.metrics.stats.pairwise import resampling_counts


@dataclass(frozen=True)
class Stability:
    minority_rate: float  # sum over pairs of min(#A>B, #B>A) / observations
    tie_rate: float  # share of observations whose difference is within the fuzziness
    observations: int  # B x pairs
    fuzziness: float
    samples: int


def stability(
    scores: np.ndarray,
    *,
    samples: int = 1000,
    fuzziness: float = 0.05,
    seed: int | np.random.Generator | None = None,
    chunk: int = 200,
) -> Stability:
    """Buckley & Voorhees' stability method on bootstrap samples of topics (as Sakai 2006).

    For each of B samples of the n topics drawn with replacement and each pair (a, b) of
    runs, compare the mean scores on the sample: a tie when |M_a - M_b| <= f * max(M_a, M_b)
    (f = 5% by default: B&V's fuzziness as a relative difference), otherwise a win for the
    higher one. Per pair, the minority count is min(#a wins, #b wins). The minority rate is
    the sum of minority counts over all pairs divided by B * pairs, and the tie rate the
    number of ties divided by the same: with 50 runs and B = 1000, 1,225,000 observations.
    """
    x = as_score_matrix(scores).values
    n, m = x.shape
    rng = as_rng(seed)
    a, b = pair_indices(m)
    wins_a = np.zeros(len(a))
    wins_b = np.zeros(len(a))
    ties = 0.0
    for lo in range(0, samples, chunk):
        k = min(chunk, samples - lo)
        means = resampling_counts(n, k, rng) @ x / n  # (k, runs)
        ma, mb = means[:, a], means[:, b]
        tie = np.abs(ma - mb) <= fuzziness * np.maximum(ma, mb)
        wins_a += ((ma > mb) & ~tie).sum(axis=0)
        wins_b += ((mb > ma) & ~tie).sum(axis=0)
        ties += float(tie.sum())
    obs = samples * len(a)
    return Stability(float(np.minimum(wins_a, wins_b).sum() / obs), ties / obs, obs, fuzziness, samples)


@dataclass(frozen=True)
class SwapRates:
    sizes: tuple[int, ...]  # topic set sizes c
    bin_width: float
    bin_low: np.ndarray  # lower edge of each difference bin
    counts: np.ndarray  # (sizes, bins) comparisons observed
    swaps: np.ndarray  # (sizes, bins) of which swapped
    extrapolated: np.ndarray  # (bins,) swap rate extrapolated to the full topic set size
    full_size: int
    difference_required: float  # smallest bin edge whose extrapolated swap rate is below `threshold`
    sensitivity: float  # share of run pairs whose full-set |difference| >= difference_required
    threshold: float
    sampling: str

    @property
    def rates(self) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.counts > 0, self.swaps / np.maximum(self.counts, 1), np.nan)


def swap_rates(
    scores: np.ndarray,
    *,
    sizes: Sequence[int] | None = None,
    trials: int = 1000,
    bin_width: float = 0.01,
    threshold: float = 0.05,
    sampling: str = "disjoint",
    seed: int | np.random.Generator | None = None,
    min_comparisons: int = 30,
) -> SwapRates:
    """Voorhees & Buckley's swap method (SIGIR 2002), as Sakai (2006) reports it.

    For each topic set size c (default 5, 10, ..., up to n/2) and each of ``trials``
    trials, draw two disjoint topic sets Q1, Q2 of size c (``sampling="bootstrap"``: two
    independent samples of size c with replacement). For every pair of runs, d1 and d2
    are the mean differences on Q1 and Q2; the comparison falls in the bin of |d1|
    (width 0.01) and is a swap when d1 and d2 have opposite signs. Per bin, the swap rate
    is swaps / comparisons. As V&B do, log(swap rate) is fitted by least squares as a
    straight line in c for each bin (over the sizes with a non-zero rate) and extrapolated
    to the full set size n. The difference required is the lower edge of the first bin
    from which every extrapolated rate is below ``threshold`` (5%); the sensitivity is the
    share of run pairs whose difference on all n topics is at least that large. Bins with
    fewer than ``min_comparisons`` comparisons at some size are too thin to estimate a rate
    and are left out of the fit (a single swapped comparison would otherwise decide).
    """
    x = as_score_matrix(scores).values
    n, m = x.shape
    if sampling not in ("disjoint", "bootstrap"):
        raise ValueError("sampling is 'disjoint' or 'bootstrap'")
    if sizes is None:
        sizes = [c for c in range(5, n // 2 + 1, 5)] or [max(1, n // 2)]
    sizes = tuple(int(c) for c in sizes)
    if sampling == "disjoint" and any(c < 1 or 2 * c > n for c in sizes):
        raise ValueError(f"disjoint topic sets need 1 <= c <= n/2 = {n // 2}")
    rng = as_rng(seed)
    a, b = pair_indices(m)
    full = np.abs(x.mean(axis=0)[a] - x.mean(axis=0)[b])
    n_bins = int(np.ceil(1.0 / bin_width)) + 1
    counts = np.zeros((len(sizes), n_bins))
    swaps = np.zeros((len(sizes), n_bins))
    for si, c in enumerate(sizes):
        if sampling == "disjoint":
            order = np.argsort(rng.random((trials, n)), axis=1)  # a random permutation per trial
            q1, q2 = order[:, :c], order[:, c : 2 * c]
        else:
            q1, q2 = rng.integers(0, n, size=(trials, c)), rng.integers(0, n, size=(trials, c))
        m1, m2 = x[q1].mean(axis=1), x[q2].mean(axis=1)  # (trials, runs)
        d1, d2 = m1[:, a] - m1[:, b], m2[:, a] - m2[:, b]
        # floor with a hair of slack: 0.03/0.01 is 2.9999999999999996 in floats, yet belongs in bin 3
        bins = np.minimum(np.floor(np.abs(d1) / bin_width + 1e-9).astype(np.int64), n_bins - 1)
        swapped = (d1 * d2) < 0
        counts[si] = np.bincount(bins.ravel(), minlength=n_bins)
        swaps[si] = np.bincount(bins.ravel(), weights=swapped.ravel().astype(np.float64), minlength=n_bins)
    extrapolated = _extrapolate(np.asarray(sizes, dtype=np.float64), counts, swaps, n)
    extrapolated[counts.min(axis=0) < min_comparisons] = np.nan
    bin_low = np.arange(n_bins) * bin_width
    required = _difference_required(extrapolated, bin_low, threshold)
    sensitivity = float((full >= required - 1e-12).mean()) if np.isfinite(required) else 0.0
    return SwapRates(sizes, bin_width, bin_low, counts, swaps, extrapolated, n, required, sensitivity, threshold,
                     sampling)


def _extrapolate(sizes: np.ndarray, counts: np.ndarray, swaps: np.ndarray, full: int) -> np.ndarray:
    out = np.full(counts.shape[1], np.nan)
    for j in range(counts.shape[1]):
        ok = (counts[:, j] > 0) & (swaps[:, j] > 0)
        if not counts[:, j].any():
            continue
        if ok.sum() >= 2:
            slope, intercept = np.polyfit(sizes[ok], np.log(swaps[ok, j] / counts[ok, j]), 1)
            out[j] = float(np.exp(intercept + slope * full))
        elif ok.sum() == 1:
            out[j] = float(swaps[ok, j][0] / counts[ok, j][0])  # one point: no trend to follow
        else:
            out[j] = 0.0  # comparisons observed, never a swap
    return np.minimum(out, 1.0)


def _difference_required(rates: np.ndarray, bin_low: np.ndarray, threshold: float) -> float:
    observed = ~np.isnan(rates)
    below = np.where(observed, rates < threshold, True)
    # the first bin from which every observed bin is below the threshold
    for j in range(len(rates)):
        if observed[j] and below[j:].all():
            return float(bin_low[j])
    return float("inf")


def top_heaviness(metrics: Sequence[str], num_rel: int, depth: int = 20) -> dict[str, np.ndarray]:
    """Each metric's value for a list holding a single relevant document at rank r = 1..depth,
    with ``num_rel`` relevant documents judged (binary relevance), as the survey's figure
    comparing AP, nDCG, Q and RBP draws it. The other ranks hold judged non-relevant ones."""
    from service.formats.types import Qrels, Run
    from service.metrics import evaluate

    if num_rel < 1 or depth < 1:
        raise ValueError("need at least one relevant document and a depth of at least 1")
    judgments = {f"R{i}": 1 for i in range(num_rel)}
    judgments.update({f"N{i}": 0 for i in range(depth)})
    rankings = {f"r{rank:04d}": [f"N{i}" for i in range(rank - 1)] + ["R0"] + [f"N{i}" for i in range(rank - 1, depth - 1)]
                for rank in range(1, depth + 1)}
    qrels = Qrels.from_mapping({t: judgments for t in rankings})
    run = Run.from_rankings("top", rankings)
    ev = evaluate(qrels, [run], list(metrics))
    return {str(m): ev.per_topic(m)[0] for m in ev.measures}
