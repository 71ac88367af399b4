"""Meta-evaluation: what the papers measure about metrics.

* Discriminative power (Sakai, SIGIR 2006, "Evaluating evaluation metrics based
  on the bootstrap"): the share of run pairs whose bootstrap ASL is below alpha,
  and the performance difference required for significance.
* Kendall's rank correlation between the system rankings of two metrics.
* Reduced qrels for the incompleteness experiments (Buckley & Voorhees 2004, as
  the bpref paper (Sakai 2007, section 5) applies it).

Procedures (the papers cite them without spelling them out):

Discriminative power at alpha, for every pair of runs: Sakai's bootstrap test
with B resamples of the topics (``pairwise.bootstrap``: one count matrix
shared by all pairs), ASL = (#{|t*| >= |t|} + 1)/(B + 1); the power is the
share of pairs with ASL < alpha. Difference required: for each pair, sort the B
replicates of the shifted differences by |t*| in decreasing order, take the
ceil(B * alpha)-th, and record |mean| of that replicate; the estimate is the
largest of these over all pairs (as the MATTERS toolkit's discriminativePower).
Both come from one pass over the replicates, a block of pairs at a time from the one count
matrix (``pairwise.bootstrap(..., required_alpha=alpha)``: memory linear in the pairs, the
same values whatever the block size). A caller that already ran that test
(``pairwise(..., "bootstrap", difference_required=True)`` with the same B and seed on the
same matrix, as the workers' test round does) passes its ``p`` and ``required``: nothing is
resampled again.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from service.formats.types import Qrels, Run
from service.metrics.stats.common import (
    BLOCK_BYTES,
    as_score_matrix,
    pair_indices,
)
from service.metrics.stats.pairwise import Differences, bootstrap

if TYPE_CHECKING:
    from service.metrics.scoring import EvalSettings


@dataclass(frozen=True)
class DiscriminativePower:
    alpha: float
    power: float  # share of pairs with ASL < alpha
    significant_pairs: int
    pairs: int
    difference_required: float
    asl: np.ndarray  # (pairs,) in pair_indices order
    resamples: int


def discriminative_power(
    scores: np.ndarray,
    *,
    alpha: float = 0.05,
    resamples: int = 1000,
    seed: int | np.random.Generator | None = None,
    asl: np.ndarray | None = None,
    required: np.ndarray | None = None,
    block_bytes: int = BLOCK_BYTES,
) -> DiscriminativePower:
    """Sakai's discriminative power and the difference required (see the module's notes).

    ``asl`` and ``required``: the pairs' bootstrap ASLs and differences required already computed
    by the same procedure (B = ``resamples``, the same seed, the complete topics of ``scores``,
    pairs in ``pair_indices`` order: ``pairwise(..., "bootstrap", difference_required=True)``'s
    ``p`` and ``required``); they are used as they are and not computed again. Otherwise one
    pass of ``pairwise.bootstrap`` over the replicates makes both.
    """
    x = as_score_matrix(scores).values
    a, b = pair_indices(x.shape[1])
    for name, given in (("ASLs", asl), ("differences required", required)):
        if given is not None and np.shape(given) != a.shape:
            raise ValueError(f"{np.shape(given)[0] if np.ndim(given) else 0} {name} given for {len(a)} pairs of runs")
    if asl is None or required is None:
        boot = bootstrap(Differences(x, a, b), resamples=resamples, seed=seed, block_bytes=block_bytes,
                         required_alpha=alpha)
        asl = boot.p if asl is None else asl  # over the informative resamples, as pairwise
        required = boot.required if required is None else required
    p = np.asarray(asl, dtype=np.float64)
    assert required is not None
    significant = int((p < alpha).sum())
    defined = required[~np.isnan(required)]
    return DiscriminativePower(
        alpha=alpha, power=significant / len(a), significant_pairs=significant, pairs=len(a),
        difference_required=float(defined.max()) if defined.size else math.nan, asl=p, resamples=resamples,
    )


def kendall_tau(x: np.ndarray, y: np.ndarray, variant: str = "b") -> float:
    """Kendall's tau between two score vectors of the same systems (tau-b handles ties)."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1 or x.shape[0] < 2:
        raise ValueError("kendall_tau needs two score vectors of the same length >= 2")
    i, j = np.triu_indices(x.shape[0], k=1)
    sx = np.sign(x[i] - x[j])
    sy = np.sign(y[i] - y[j])
    s = float((sx * sy).sum())
    n0 = len(i)
    if variant == "a":
        return s / n0
    if variant != "b":
        raise ValueError("variant is 'a' or 'b'")
    tx, ty = float((sx != 0).sum()), float((sy != 0).sum())
    if tx == 0 or ty == 0:
        return float("nan")
    return s / math.sqrt(tx * ty)


def kendall_matrix(means: np.ndarray, variant: str = "b") -> np.ndarray:
    """(metrics, metrics) Kendall's tau between the system rankings of every pair of metrics.

    ``means`` is (metrics, runs): each metric's mean score per run.
    """
    means = np.asarray(means, dtype=np.float64)
    k = means.shape[0]
    out = np.ones((k, k))
    for p in range(k):
        for q in range(p + 1, k):
            out[p, q] = out[q, p] = kendall_tau(means[p], means[q], variant)
    return out


def kendall_threshold(n_runs: int, alpha: float = 0.01) -> float:
    """Smallest |tau| significant at alpha (two-sided normal approximation):
    z_(1-alpha/2) * sqrt(2(2n + 5) / (9n(n - 1)))."""
    if n_runs < 2:
        raise ValueError("need at least 2 runs")
    from scipy import stats  # here: importing scipy.stats is most of a second of every process that imports this module

    z = stats.norm.ppf(1 - alpha / 2)
    return float(z * math.sqrt(2 * (2 * n_runs + 5) / (9 * n_runs * (n_runs - 1))))


def _share(count: int, percent: float) -> int:
    """trunc(count * percent / 100) in exact integer arithmetic (micro-percent resolution)."""
    return (count * round(percent * 1_000_000)) // 100_000_000


def reduce_qrels(qrels: Qrels, percent: float, seed: int = 0) -> Qrels:
    """Buckley & Voorhees' reduced judgments, as the bpref paper (section 5) makes them.

    Per topic, one seeded shuffle of its relevant (level >= 1) and one of its
    judged non-relevant documents, the same for every ``percent``, so reduced
    sets are nested. Keep the first max(1, trunc(R * j/100)) relevant and
    max(10, trunc(N * j/100)) non-relevant documents (all of them when N < 10).
    Pooled-but-unjudged labels are dropped (they are unjudged either way).
    """
    if not 0 < percent <= 100:
        raise ValueError("the percentage kept must lie in (0, 100]")
    docs_out, levels_out = [], []
    for i, topic in enumerate(qrels.topics):
        rng = np.random.default_rng(np.random.SeedSequence([seed, zlib.crc32(topic.encode("utf-8"))]))
        docs, levels = qrels.docnos[i], qrels.levels[i]
        rel = np.flatnonzero(levels >= 1)
        non = np.flatnonzero(levels == 0)
        rel = rel[rng.permutation(rel.shape[0])]
        non = non[rng.permutation(non.shape[0])]
        keep_rel = rel[: max(1, _share(rel.shape[0], percent))] if rel.shape[0] else rel
        keep_non = non if non.shape[0] < 10 else non[: max(10, _share(non.shape[0], percent))]
        keep = np.sort(np.concatenate([keep_rel, keep_non]))
        docs_out.append(docs[keep])
        levels_out.append(levels[keep])
    return Qrels(topics=qrels.topics, docnos=tuple(docs_out), levels=tuple(levels_out),
                 source=f"{qrels.source}@{percent}%")


def reduction_experiment(qrels: Qrels, runs: Sequence[Run], measures: Sequence[object], settings: object,
                         kept: Sequence[float] = (90, 70, 50, 30, 10), alpha: float = 0.05, resamples: int = 1000,
                         seed: int = 0) -> tuple[list[dict[str, object]], object]:
    """Buckley & Voorhees' reduced-judgment experiment as Sakai reports it: for the full
    judgments and each share ``kept`` (percent) of them (:func:`reduce_qrels`), every measure's
    discriminative power and Kendall's tau between its system ranking and the full one.

    ``settings`` should fix ``max_level`` to the full judgments' top level, so that gain
    scales do not move with the reduction. Returns (rows, the full judgments' Evaluation).
    """
    from service.metrics.scoring import evaluate

    rows: list[dict[str, object]] = []
    full_means = full = None
    for j in [100.0, *[float(v) for v in kept if float(v) != 100.0]]:
        q = qrels if j == 100.0 else reduce_qrels(qrels, j, seed=seed)
        ev = evaluate(q, list(runs), measures, settings)  # type: ignore[arg-type]
        means = np.vstack([ev.means(m) for m in ev.measures])
        if full_means is None:
            full_means, full = means, ev
        for k, m in enumerate(ev.measures):
            dp = discriminative_power(ev.per_topic(m).T, alpha=alpha, resamples=resamples, seed=seed)
            rows.append({"kept": j, "metric": str(m), "power": dp.power, "significant_pairs": dp.significant_pairs,
                         "pairs": dp.pairs, "difference_required": dp.difference_required,
                         "tau_vs_full": kendall_tau(full_means[k], means[k]) if j != 100.0 else 1.0})
    return rows, full


# ------------------------------------------------------------- a collection's stored scores
def asl_curve(asl: np.ndarray, points: int = 200) -> list[tuple[int, float]]:
    """Sakai's ASL curve (SIGIR 2006, figures 1-4): every pair's ASL in increasing order,
    as (position from 1, ASL), thinned to at most ``points`` evenly spaced positions (the
    first and last kept). Pairs whose ASL is not finite are left out."""
    finite = np.sort(np.asarray(asl, dtype=np.float64)[np.isfinite(asl)])
    if not len(finite):
        return []
    at = np.unique(np.linspace(0, len(finite) - 1, min(len(finite), points)).round().astype(int))
    return [(int(i) + 1, float(finite[i])) for i in at]


@dataclass(frozen=True)
class MetricPower:
    """One metric's discriminative power over the stored runs (see :func:`discriminative_power`)."""

    power: float
    significant_pairs: int
    pairs: int
    difference_required: float
    asl_curve: list[tuple[int, float]]  # (position, ASL), see :func:`asl_curve`


@dataclass(frozen=True)
class MetaEvaluation:
    """Discriminative power of each metric and Kendall's tau between their system rankings."""

    alpha: float
    resamples: int
    power: dict[str, MetricPower]  # metrics with at least two runs whose power could be computed
    errors: dict[str, str]  # metric -> why its power could not be computed (too few topics, say)
    tau: dict[tuple[str, str], float]  # (metric a, metric b), a < b by name, on the runs both scored
    tau_significant_above: float | None  # |tau| significant at 0.01 for that many runs (None: no metric)


def meta_evaluation(scores: Mapping[str, tuple[Sequence[Hashable], np.ndarray]], *, alpha: float = 0.05,
                    resamples: int = 1000, seed: int = 0,
                    asl: Mapping[str, np.ndarray] | None = None,
                    required: Mapping[str, np.ndarray] | None = None,
                    power: Mapping[str, MetricPower] | None = None) -> MetaEvaluation:
    """The meta-evaluation of a collection's metrics on their per-topic scores.

    ``scores`` maps each metric to (run keys, (topics, runs) matrix). For every metric with
    two runs or more: :func:`discriminative_power` (Sakai's bootstrap, seeded with ``seed``)
    and its :func:`asl_curve`. Then, for every pair of those metrics, Kendall's tau-b between
    their rankings of the runs both scored (means over the scored topics, NaN ignored), where
    at least two such runs exist; and the |tau| significant at 0.01 (:func:`kendall_threshold`)
    for the runs of the first metric (at least 2).

    ``asl`` maps a metric to its pairs' bootstrap ASLs when the caller already has them
    (``pairwise(matrix, runs, "bootstrap")`` with this ``resamples`` and ``seed``; p in pair
    order): they are used instead of counting again (see :func:`discriminative_power`);
    ``required`` likewise maps a metric to its pairs' differences required
    (``difference_required=True``). Without them (or for the metrics they leave out), the same
    values are computed here. ``power`` maps a metric to its whole discriminative power when the
    caller has it (a service's earlier computation on the same scores and settings).
    """
    known = dict(power or {})
    power = {}
    errors: dict[str, str] = {}
    means: dict[str, dict[Hashable, float]] = {}
    for metric, (runs, matrix) in scores.items():
        if len(runs) < 2:
            continue
        if metric in known:
            power[metric] = known[metric]
            means[metric] = dict(zip(runs, np.nanmean(matrix, axis=0).tolist()))
            continue
        try:
            dp = discriminative_power(matrix, alpha=alpha, resamples=resamples, seed=seed,
                                      asl=None if asl is None else asl.get(metric),
                                      required=None if required is None else required.get(metric))
        except ValueError as exc:
            errors[metric] = str(exc)
            continue
        power[metric] = MetricPower(dp.power, dp.significant_pairs, dp.pairs, dp.difference_required,
                                    asl_curve(dp.asl))
        means[metric] = dict(zip(runs, np.nanmean(matrix, axis=0).tolist()))
    tau: dict[tuple[str, str], float] = {}
    names = sorted(means)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            common = sorted(set(means[a]) & set(means[b]))  # type: ignore[type-var]
            if len(common) >= 2:
                tau[(a, b)] = kendall_tau(np.array([means[a][r] for r in common]),
                                          np.array([means[b][r] for r in common]))
    threshold = kendall_threshold(max(2, len(next(iter(means.values())))), 0.01) if means else None
    return MetaEvaluation(alpha, resamples, power, errors, tau, threshold)


# ------------------------------------------------------------------ reduced judgments, stored
@dataclass(frozen=True)
class ReducedJudgments:
    """:func:`reduction_experiment` on a collection, with the share kept of each row."""

    kept: list[float]  # 100 (the full judgments) first, then each reduced share
    runs: int
    rows: list[dict[str, object]]  # kept, metric, power, significant_pairs, pairs, difference_required, tau_vs_full


def reduced_judgments(qrels: Qrels, runs: Sequence[Run], measures: Sequence[object], settings: EvalSettings,
                      kept: Sequence[float], alpha: float = 0.05, resamples: int = 1000,
                      seed: int = 0) -> ReducedJudgments:
    """Buckley & Voorhees' reduced-judgment experiment (:func:`reduction_experiment`) on the
    gain scale of the full judgments: ``settings``' declared top level, else the full qrels'
    (the reduced qrels may lack the top level; the gains must not move with them)."""
    shares = [float(v) for v in kept if float(v) != 100.0]
    rows, _ = reduction_experiment(qrels, runs, measures, settings.with_max_level_of(qrels), shares, alpha,
                                   resamples, seed)
    return ReducedJudgments([100.0, *shares], len(runs), rows)
