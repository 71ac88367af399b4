"""Judging the judges, part two: do two judgment sets rank the runs (and the topics) alike?

Inputs are score vectors of the same runs (higher is better), typically each run's mean of one
metric under a reference judgment set (the official, human one) and under another set.

* Kendall's tau-b (Kendall 1945, "The treatment of ties in ranking problems"), by
  :func:`service.metrics.stats.meta.kendall_tau`.
* tau_AP, the AP rank correlation (Yilmaz, Aslam & Robertson, SIGIR 2008, "A new rank
  correlation coefficient for information retrieval"): asymmetric, the first vector is the
  reference (the "actual" ranking) and the second's ranking is walked from the top, so a swap at
  the top of the compared ranking costs more than one at the bottom. With ties in the compared
  ranking (but not in the reference) it is Urbano & Marrero's tau_AP_a, the expected tau_AP
  over the orders of the tied runs (ICTIR 2017, "The treatment of ties in AP correlation").
* tau_AP_b (Urbano & Marrero 2017): the symmetric, tie-aware AP correlation for two rankings
  of which neither is the truth.
* Spearman's rho (Pearson's r of mid-ranks) and Pearson's r.
* Kendall's tau-b over the reference's top k runs, the largest rank change, and the agreement
  of two sets' significance verdicts on every pair of runs.
* Per-topic score correlation between two sets and the topics where they disagree most.

Every coefficient is NaN (with the reason in the result's ``notes``) when the inputs leave it
undefined: fewer than two runs, or a vector that ranks every run equal. Differences and rank
changes are ``other - reference`` (positive: the compared set scores the run higher) and
``reference rank - other rank`` (positive: the run moves up in the compared ranking).
The definitions are in docs/statistics.md ("Judging the judges: agreement measures").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from service.formats.text import counted
from service.metrics.stats.common import pair_indices, paired_scores
from service.metrics.stats.meta import kendall_tau

#: Largest number of cells of a (rows, runs) comparison block built at once by tau_AP.
BLOCK_CELLS = 1 << 22

TOO_FEW = "fewer than two runs"
CONSTANT = "ranks every run equal"


# --------------------------------------------------------------------------- validation, ranks
def _vector(x: Sequence[float] | np.ndarray, name: str) -> np.ndarray:
    v = np.asarray(x, dtype=np.float64)
    if v.ndim != 1:
        raise ValueError(f"{name} must be a vector of scores, got shape {v.shape}")
    if not np.isfinite(v).all():
        raise ValueError(f"{name} contains NaN or infinite scores")
    return v


def _pair(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a, b = _vector(x, "the reference"), _vector(y, "the other vector")
    if a.shape != b.shape:
        raise ValueError(f"the two score vectors must have the same length (the same runs), got {a.shape[0]} "
                         f"and {b.shape[0]}")
    return a, b


def competition_ranks(scores: Sequence[float] | np.ndarray) -> np.ndarray:
    """Rank 1 = the highest score; tied runs share the best rank of their group (1, 2, 2, 4):
    1 + the number of runs scored strictly higher."""
    s = _vector(scores, "scores")
    return (s.shape[0] - np.searchsorted(np.sort(s), s, side="right") + 1).astype(np.int64)


def mid_ranks(scores: Sequence[float] | np.ndarray) -> np.ndarray:
    """Ascending ranks from 1, ties given the mean of their positions (Spearman's mid-ranks)."""
    s = _vector(scores, "scores")
    srt = np.sort(s)
    lo = np.searchsorted(srt, s, side="left")
    hi = np.searchsorted(srt, s, side="right")
    return (lo + hi + 1) / 2.0


def _constant(v: np.ndarray) -> bool:
    return v.shape[0] > 0 and bool(v.max() == v.min())


def _why(x: np.ndarray, y: np.ndarray, what: str = "") -> str | None:
    """Why a correlation of x and y is undefined (None if it is defined)."""
    if x.shape[0] < 2:
        return f"{what}{TOO_FEW}" if what else TOO_FEW
    names = [n for n, v in (("the reference", x), ("the other set", y)) if _constant(v)]
    if names:
        return f"{what}{' and '.join(names)} {CONSTANT}"
    return None


# --------------------------------------------------------------------------- coefficients
def tau_b(reference: Sequence[float] | np.ndarray, other: Sequence[float] | np.ndarray) -> float:
    """Kendall's tau-b: (concordant - discordant) / sqrt((n0 - n1)(n0 - n2)), n0 the pairs and
    n1, n2 those tied in either vector (:func:`meta.kendall_tau`). Symmetric; NaN when either
    vector is constant or there are fewer than two runs."""
    x, y = _pair(reference, other)
    if _why(x, y):
        return math.nan
    return kendall_tau(x, y, "b")


def pearson(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float:
    """Pearson's r (NaN when either vector is constant or there are fewer than two values)."""
    a, b = _pair(x, y)
    if _why(a, b):
        return math.nan
    ac, bc = a - a.mean(), b - b.mean()
    den = math.sqrt(float(ac @ ac) * float(bc @ bc))
    if den == 0.0:
        return math.nan
    return float(np.clip(float(ac @ bc) / den, -1.0, 1.0))


def spearman(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float:
    """Spearman's rho: Pearson's r of the two vectors' mid-ranks (ties share the mean rank)."""
    a, b = _pair(x, y)
    if _why(a, b):
        return math.nan
    return pearson(mid_ranks(a), mid_ranks(b))


def _above_counts(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per run i: c_i = #{j: y_j > y_i and x_j > x_i} (above i in both), and the numbers of runs
    strictly above i in y and in x. The first is built a block of rows at a time (O(n^2) time,
    O(BLOCK_CELLS) memory); the others by sorting."""
    n = x.shape[0]
    above_y = n - np.searchsorted(np.sort(y), y, side="right")
    above_x = n - np.searchsorted(np.sort(x), x, side="right")
    both = np.empty(n, dtype=np.int64)
    step = max(1, BLOCK_CELLS // max(n, 1))
    for lo in range(0, n, step):
        hi = min(n, lo + step)
        both[lo:hi] = ((y[None, :] > y[lo:hi, None]) & (x[None, :] > x[lo:hi, None])).sum(axis=1)
    return both, above_y, above_x


def _ap_directed(both: np.ndarray, above: np.ndarray) -> float:
    """2 * mean_i(c_i / p_i) - 1 over the runs with p_i > 0 runs above them in the walked ranking."""
    walked = above > 0
    if not walked.any():
        return math.nan
    return float(2.0 * np.mean(both[walked] / above[walked]) - 1.0)


def tau_ap(reference: Sequence[float] | np.ndarray, other: Sequence[float] | np.ndarray) -> float:
    """Yilmaz, Aslam & Robertson's tau_AP of ``other``'s ranking against the ``reference``.

    Walk ``other``'s ranking from the top: for the run at position i = 2..n, C(i) is the number
    of the i - 1 runs above it that the reference also ranks above it, and

        tau_AP = 2 / (n - 1) * sum_{i=2..n} C(i) / (i - 1) - 1.

    Identical rankings give 1, reversed ones -1. When ``other`` has ties, the value is Urbano &
    Marrero's tau_AP_a, the mean of tau_AP over every order of the tied runs (in closed form:
    a run of a tie group starting at position p of size t gets C_above * mean_{q=p..p+t-1}
    1/(q - 1), and each group adds sum_{k=1..t-1} k / (2 (p + k - 1)) for its own pairs). NaN
    when the reference ranks two runs equal (tau_AP needs a strict reference: see
    :func:`tau_ap_b`) or there are fewer than two runs.
    """
    x, y = _pair(reference, other)
    n = x.shape[0]
    if n < 2 or np.unique(x).shape[0] != n:
        return math.nan
    both, above_y, _ = _above_counts(x, y)
    if np.unique(y).shape[0] == n:
        return _ap_directed(both, above_y)
    # tau_AP_a: expectation over the tied runs' orders
    below_or_tied = n - np.searchsorted(np.sort(y), y, side="left")  # runs with y_j >= y_i
    p = above_y + 1  # first position of i's tie group (1-based)
    t = below_or_tied - above_y  # its size
    harmonic = np.concatenate([[0.0], np.cumsum(1.0 / np.arange(1, n + 1))])  # harmonic[m] = H_m
    last = p + t - 2  # q - 1 at the group's last position
    first = np.maximum(p - 2, 0)
    mean_inverse = np.where(p >= 2, (harmonic[last] - harmonic[first]) / t, 0.0)
    within = ((t - 1) - (p - 1) * (harmonic[last] - harmonic[p - 1])) / 2.0  # the group's own pairs
    total = float((both * mean_inverse).sum() + (within / t).sum())  # each group's `within` once
    return 2.0 / (n - 1) * total - 1.0


def tau_ap_symmetric(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float:
    """(tau_AP(x, y) + tau_AP(y, x)) / 2: tau_AP with no list taken as the truth. Without ties
    it equals :func:`tau_ap_b`; NaN when either vector has ties."""
    a, b = _pair(x, y)
    return (tau_ap(a, b) + tau_ap(b, a)) / 2.0


def tau_ap_b(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float:
    """Urbano & Marrero's tau_AP_b, the AP correlation of two rankings with ties when neither is
    the truth (the agreement scenario, like Kendall's tau-b).

    Walking y's ranking: every run i not in y's top tie group contributes c_i / p_i, p_i the
    number of runs strictly above i in y and c_i the number of those that x also ranks strictly
    above i; tau_AP_b(x -> y) = 2 * mean_i(c_i / p_i) - 1 over those runs. tau_AP_b is the mean
    of the two walks, (tau_AP_b(x -> y) + tau_AP_b(y -> x)) / 2: symmetric, 1 for rankings with
    the same order and ties, and tau_AP (symmetrised) when neither has ties. NaN when either
    vector ranks every run equal (a walk with no run below the top group) or fewer than two runs.
    """
    a, b = _pair(x, y)
    if _why(a, b):
        return math.nan
    both, above_b, above_a = _above_counts(a, b)
    return (_ap_directed(both, above_b) + _ap_directed(both, above_a)) / 2.0


def top_k_runs(reference: Sequence[float] | np.ndarray, k: int) -> np.ndarray:
    """Indices (increasing) of the reference's top k runs: every run whose reference score is at
    least the k-th highest, so runs tied with the k-th are all in (there may be more than k)."""
    x = _vector(reference, "the reference")
    if k < 1:
        raise ValueError("k must be at least 1")
    if k >= x.shape[0]:
        return np.arange(x.shape[0])
    kth = np.partition(x, x.shape[0] - k)[x.shape[0] - k]
    return np.flatnonzero(x >= kth)


def tau_top_k(reference: Sequence[float] | np.ndarray, other: Sequence[float] | np.ndarray, k: int) -> float:
    """Kendall's tau-b between the two vectors restricted to the reference's top k runs
    (:func:`top_k_runs`): do the two sets order the best runs alike?"""
    x, y = _pair(reference, other)
    keep = top_k_runs(x, k)
    return tau_b(x[keep], y[keep])


@dataclass(frozen=True)
class RankChange:
    """One run's move between the two rankings (competition ranks, 1 = best)."""

    run: int  # index in the input vectors
    name: str | None
    reference_rank: int
    other_rank: int

    @property
    def shift(self) -> int:
        """reference rank - other rank: positive when the run moves up in the compared ranking."""
        return self.reference_rank - self.other_rank


def largest_rank_change(reference: Sequence[float] | np.ndarray, other: Sequence[float] | np.ndarray,
                        runs: Sequence[str] | None = None) -> RankChange | None:
    """The run whose competition rank (:func:`competition_ranks`) changes most between the two
    vectors; among equal moves the one ranked best by the reference, then the first. None when
    there is no run."""
    x, y = _pair(reference, other)
    if runs is not None and len(runs) != x.shape[0]:
        raise ValueError(f"{len(runs)} run names for {x.shape[0]} scores")
    if not x.shape[0]:
        return None
    rx, ry = competition_ranks(x), competition_ranks(y)
    i = int(np.lexsort((np.arange(x.shape[0]), rx, -np.abs(rx - ry)))[0])
    return RankChange(i, None if runs is None else str(runs[i]), int(rx[i]), int(ry[i]))


# --------------------------------------------------------------------------- everything at once
@dataclass(frozen=True, eq=False)
class RankingAgreement:
    """How alike two judgment sets rank the same runs (see the module's conventions)."""

    runs: int  # runs compared (both scores present)
    dropped: int  # runs left out: a score missing (NaN) under either set
    kendall: float  # tau-b
    tau_ap: float  # reference first: the compared set's ranking walked, judged by the reference
    tau_ap_reverse: float  # the compared set as reference
    tau_ap_symmetric: float  # their mean
    tau_ap_b: float  # Urbano & Marrero's tie-aware, symmetric tau_AP_b
    spearman: float
    pearson: float
    top_k: int
    top_k_runs: int  # runs in the reference's top k (ties at the k-th included)
    tau_top_k: float  # tau-b over those runs
    largest_change: RankChange | None
    reference_ranks: np.ndarray  # competition ranks of the compared runs, 1 = best
    other_ranks: np.ndarray
    notes: tuple[str, ...] = field(default=())


def ranking_agreement(reference: Sequence[float] | np.ndarray, other: Sequence[float] | np.ndarray, *,
                      runs: Sequence[str] | None = None, top_k: int = 10) -> RankingAgreement:
    """Every system-ranking agreement figure of two score vectors of the same runs (the runs'
    means under the reference set and under the compared one). Runs with a NaN under either set
    are left out (``dropped``); the notes say why a NaN figure is undefined."""
    r, o = paired_scores(reference, other, 1)
    if runs is not None and len(runs) != r.shape[0]:
        raise ValueError(f"{len(runs)} run names for {r.shape[0]} scores")
    if top_k < 1:
        raise ValueError("top_k must be at least 1")
    keep = ~(np.isnan(r) | np.isnan(o))
    x, y = r[keep], o[keep]
    names = None if runs is None else [str(v) for v, k in zip(runs, keep.tolist()) if k]
    notes: list[str] = []
    why = _why(x, y)
    if why:
        notes.append(f"the correlations are undefined: {why}")
    n = x.shape[0]
    if n >= 2 and np.unique(x).shape[0] != n:
        notes.append("tau_AP is undefined: the reference ranks some runs equal (tau_AP_b handles ties)")
    if n >= 2 and np.unique(y).shape[0] != n:
        notes.append("reverse tau_AP is undefined: the compared set ranks some runs equal; tau_AP is the mean "
                     "over the orders of its tied runs (Urbano & Marrero's tau_AP_a)")
    top = top_k_runs(x, top_k) if n else np.zeros(0, dtype=np.int64)
    top_why = _why(x[top], y[top])
    if top_why and not why:
        notes.append(f"tau over the top {top_k} is undefined: {top_why}")
    return RankingAgreement(
        runs=n, dropped=int((~keep).sum()), kendall=tau_b(x, y), tau_ap=tau_ap(x, y), tau_ap_reverse=tau_ap(y, x),
        tau_ap_symmetric=tau_ap_symmetric(x, y), tau_ap_b=tau_ap_b(x, y), spearman=spearman(x, y),
        pearson=pearson(x, y), top_k=top_k, top_k_runs=int(top.shape[0]), tau_top_k=tau_b(x[top], y[top]),
        largest_change=largest_rank_change(x, y, names),
        reference_ranks=competition_ranks(x), other_ranks=competition_ranks(y), notes=tuple(notes))


# --------------------------------------------------------------------------- significance verdicts
@dataclass(frozen=True)
class SignificanceAgreement:
    """How many pairs of runs keep their significance verdict under the compared set.

    A verdict is "significant, a better than b", "significant, b better than a" or "not
    significant". Pairs left untested (a NaN p-value under either set) are not counted.
    """

    pairs: int  # pairs compared
    untested: int  # pairs left out
    kept_significant: int  # significant under both, same direction
    kept_not_significant: int  # significant under neither
    lost: int  # significant under the reference only
    gained: int  # significant under the compared set only
    flipped: int  # significant under both, in opposite directions

    @property
    def kept(self) -> int:
        return self.kept_significant + self.kept_not_significant

    def share(self, count: int) -> float:
        """count / pairs (NaN when no pair was compared)."""
        return count / self.pairs if self.pairs else math.nan

    @property
    def agreement(self) -> float:
        """Share of the pairs that keep their verdict."""
        return self.share(self.kept)

    @property
    def reference_significant(self) -> int:
        return self.kept_significant + self.lost + self.flipped

    @property
    def kept_of_significant(self) -> float:
        """Share of the pairs significant under the reference that stay significant in the same
        direction (NaN when the reference finds no significant pair)."""
        s = self.reference_significant
        return self.kept_significant / s if s else math.nan

    def shares(self) -> dict[str, float]:
        return {name: self.share(getattr(self, name)) for name in
                ("kept_significant", "kept_not_significant", "lost", "gained", "flipped")}


def _pairs_vector(values: np.ndarray, name: str) -> np.ndarray:
    """A (pairs,) vector in pair_indices order from itself or a (runs, runs) matrix (upper triangle)."""
    v = np.asarray(values)
    if v.ndim == 2:
        if v.shape[0] != v.shape[1]:
            raise ValueError(f"{name} must be a (runs, runs) matrix or a vector of pairs, got shape {v.shape}")
        a, b = pair_indices(v.shape[0])
        return v[a, b]
    if v.ndim != 1:
        raise ValueError(f"{name} must be a (runs, runs) matrix or a vector of pairs, got shape {v.shape}")
    return v


def significance_agreement(reference: np.ndarray, other: np.ndarray, reference_diff: np.ndarray,
                           other_diff: np.ndarray, *, alpha: float = 0.05) -> SignificanceAgreement:
    """Compare the significance verdicts of every pair of runs under two judgment sets.

    ``reference`` and ``other`` are the pairs' p-values (significant when p < ``alpha``; NaN:
    untested) or boolean "significant" flags; ``reference_diff`` and ``other_diff`` the pairs'
    mean differences (a - b, only their sign is used). Each is a vector over the pairs a < b in
    ``pair_indices`` order (``PairwiseResult.p_adjusted`` and ``.diff``) or a (runs, runs)
    matrix whose upper triangle is used.
    """
    flags = []
    tested = []
    for values, name in ((reference, "reference"), (other, "other")):
        v = _pairs_vector(values, name)
        if v.dtype == np.bool_:
            flags.append(v)
            tested.append(np.ones(v.shape, dtype=bool))
        else:
            p = v.astype(np.float64)
            flags.append(p < alpha)
            tested.append(~np.isnan(p))
    sign_r = np.sign(_pairs_vector(reference_diff, "reference_diff").astype(np.float64))
    sign_o = np.sign(_pairs_vector(other_diff, "other_diff").astype(np.float64))
    shapes = {flags[0].shape, flags[1].shape, sign_r.shape, sign_o.shape}
    if len(shapes) != 1:
        raise ValueError(f"the p-values and differences must cover the same pairs, got shapes {sorted(shapes)}")
    ok = tested[0] & tested[1]
    sr, so = flags[0][ok], flags[1][ok]
    opposite = (sign_r[ok] * sign_o[ok]) < 0
    both = sr & so
    return SignificanceAgreement(
        pairs=int(ok.sum()), untested=int((~ok).sum()), kept_significant=int((both & ~opposite).sum()),
        kept_not_significant=int((~sr & ~so).sum()), lost=int((sr & ~so).sum()), gained=int((~sr & so).sum()),
        flipped=int((both & opposite).sum()))


# --------------------------------------------------------------------------- topics
Disagreement = Literal["tau", "mean"]


@dataclass(frozen=True, eq=False)
class TopicCorrelation:
    """Per-topic scores under two judgment sets, (topics, runs) each: how they correlate and
    which topics disagree most (see :func:`topic_correlation`)."""

    topics: tuple[str, ...]
    runs: tuple[str, ...]
    run_kendall: np.ndarray  # (runs,) tau-b over topics of each run's per-topic scores, set against set
    run_pearson: np.ndarray  # (runs,) Pearson's r of the same
    mean_kendall: float  # tau-b over topics of the per-topic means over runs
    mean_pearson: float
    topic_tau: np.ndarray  # (topics,) tau-b between the two sets' orderings of the runs on each topic
    topic_mean_difference: np.ndarray  # (topics,) mean over runs of other - reference on each topic
    by: str  # the disagreement statistic: "tau" (1 - topic_tau) or "mean" (|topic_mean_difference|)
    disagreement: np.ndarray  # (topics,) that statistic
    order: np.ndarray  # topic indices, most disagreement first
    notes: tuple[str, ...] = field(default=())

    def most_disagreeing(self, k: int | None = None) -> list[tuple[str, float]]:
        """(topic, disagreement), most disagreement first (NaN ones last), the first ``k``."""
        idx = self.order if k is None else self.order[:k]
        return [(self.topics[i], float(self.disagreement[i])) for i in idx.tolist()]


def _correlate_columns(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """tau-b and Pearson's r per column of two (rows, columns) matrices, over the rows where both
    have a score."""
    tau = np.full(x.shape[1], math.nan)
    r = np.full(x.shape[1], math.nan)
    for j in range(x.shape[1]):
        ok = ~(np.isnan(x[:, j]) | np.isnan(y[:, j]))
        if ok.sum() >= 2:
            tau[j] = tau_b(x[ok, j], y[ok, j])
            r[j] = pearson(x[ok, j], y[ok, j])
    return tau, r


def topic_correlation(reference: np.ndarray, other: np.ndarray, *, topics: Sequence[str] | None = None,
                      runs: Sequence[str] | None = None, by: Disagreement = "tau") -> TopicCorrelation:
    """Per-topic score correlation of two judgment sets and the topics where they disagree most.

    ``reference`` and ``other`` are (topics, runs) per-topic scores of the same runs under the
    two sets (NaN: not scored; each figure uses the cells both sets scored). Per run, Kendall's
    tau-b and Pearson's r over the topics between its scores under the two sets; the same for
    the per-topic means over runs. Per topic, tau-b between the two sets' orderings of the runs
    (``topic_tau``) and the mean over runs of other - reference (``topic_mean_difference``).

    Topics are ranked by ``by``: ``"tau"`` (default) 1 - topic_tau, in [0, 2], the topics whose
    run orderings the sets disagree on; ``"mean"`` |topic_mean_difference|, the topics one set
    scores much higher or lower. Ties, and topics whose statistic is NaN (placed last), are
    ordered by |topic_mean_difference| (larger first), then by input order.
    """
    x, y = paired_scores(reference, other, 2)
    if by not in ("tau", "mean"):
        raise ValueError(f"by is 'tau' or 'mean', got {by!r}")
    t, m = x.shape
    topic_names = tuple(topics) if topics is not None else tuple(str(i + 1) for i in range(t))
    run_names = tuple(runs) if runs is not None else tuple(f"run{j + 1}" for j in range(m))
    if len(topic_names) != t or len(run_names) != m:
        raise ValueError(f"{len(topic_names)} topic names and {len(run_names)} run names for a {x.shape} matrix")
    run_tau, run_r = _correlate_columns(x, y)
    topic_tau, _ = _correlate_columns(x.T, y.T)
    both = ~(np.isnan(x) | np.isnan(y))
    with np.errstate(invalid="ignore"):
        mx = np.where(both, x, 0.0).sum(axis=1) / both.sum(axis=1)
        my = np.where(both, y, 0.0).sum(axis=1) / both.sum(axis=1)
    scored = ~np.isnan(mx)
    mean_tau, mean_r = (tau_b(mx[scored], my[scored]), pearson(mx[scored], my[scored])) if scored.sum() >= 2 \
        else (math.nan, math.nan)
    diff = my - mx
    stat = 1.0 - topic_tau if by == "tau" else np.abs(diff)
    absdiff = np.where(np.isnan(diff), -np.inf, np.abs(diff))
    order = np.lexsort((np.arange(t), -absdiff, np.where(np.isnan(stat), np.inf, -stat)))
    notes: list[str] = []
    undefined = int(np.isnan(topic_tau).sum())
    if undefined:
        notes.append(f"{counted(undefined, 'topic')} without a run-ordering tau: fewer than two runs scored by "
                     "both sets, "
                     f"or a set that scores every run the same on the topic")
    if np.isnan(run_tau).any():
        notes.append(f"{counted(int(np.isnan(run_tau).sum()), 'run')} without a topic-wise tau: fewer than two topics "
                     f"scored, or the same score on every topic under a set")
    return TopicCorrelation(topic_names, run_names, run_tau, run_r, mean_tau, mean_r, topic_tau, diff, by, stat,
                            order, tuple(notes))
