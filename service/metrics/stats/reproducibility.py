"""How well a run reproduces another: the measures of Breuer, Ferro, Fuhr, Maistro, Sakai,
Schaer and Soboroff, "How to Measure the Reproducibility of System-Oriented IR Experiments"
(SIGIR 2020), as their ``repro_eval`` package (PyPI ``repro-eval`` 0.5.0) computes them.

The inputs are what any evaluation gives: per-topic scores (``{topic: score}``, one mapping
per run and metric, from Cranfield's metric registry or anything else) and, for the document
order measures, the ranked lists (``{topic: [docno, ...]}``, best first). Nothing here reads a
file or knows a metric.

* Document order (same collection only): Kendall's tau Union (:func:`ktu`) and rank-biased
  overlap (:func:`rbo`) per topic, averaged by :func:`document_order`.
* Effectiveness: :func:`rmse` and :func:`nrmse` of the per-topic scores (same topics).
* Overall effect of a baseline/advanced pair: :func:`effect_ratio` (ER) and
  :func:`delta_ri` (DeltaRI), on the same topics or on another collection.
* Statistics: :func:`t_test` (paired on the same topics, unpaired across collections), and
  Cranfield's own :func:`bootstrap_effects`, percentile intervals of ER and DeltaRI.

Where repro_eval is wrong or surprising Cranfield follows it by default, since its figures
are the ones published and compared with, and says so in the function (and in
docs/reproducibility.md); tests/unit/test_reproducibility.py shows each difference and
tests/peers/test_repro_peers.py compares every measure with the package on TREC DL runs.

Naming: the paper (ACM's 2016 terms) calls a re-run on the same collection *replicability*
and one on another collection *reproducibility*; repro_eval (ACM's 2020 terms) swaps them
(``RpdEvaluator`` is the same collection, ``RplEvaluator`` another one). Here the two cases
are named by what they are: ``same_collection`` True or False.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from service.formats.text import counted

#: repro_eval's defaults: lists compared to their first 1000 documents (KTU; its runs are
#: trimmed to 1000 before anything), and RBO with p = 0.95 to depth 1000.
KTU_DEPTH = 1000
RBO_P = 0.95
RBO_DEPTH = 1000

KTU_VARIANTS = ("repro_eval", "ranks")

Ranking = Sequence[str]
Scores = Mapping[str, float]


# --- document order ---------------------------------------------------------------------


def ktu(original: Ranking, reproduction: Ranking, *, depth: int = KTU_DEPTH, variant: str = "repro_eval") -> float:
    """Kendall's tau Union of two rankings of one topic (best first), cut at ``depth``.

    ``variant="repro_eval"`` (the default) is what repro_eval computes: each list's documents
    are replaced by their index in the alphabetically sorted union of the two lists, and
    Kendall's tau-b is taken between the two index sequences *position by position* (rank i of
    the original against rank i of the reproduction). Since no list holds a document twice,
    that is tau = (C - D) / (n (n - 1) / 2) over pairs of ranks i < j, a pair concordant when
    the docnos at ranks i and j compare (as strings) the same way in both lists. It is 1 for
    identical lists, but between two different lists it depends on the documents' names, not
    only on their order: renaming documents changes it (tests/unit/test_reproducibility.py).
    repro_eval needs lists of equal length (scipy refuses sequences of different sizes, so a
    truncated reproduction stops it with an error); here both lists are cut to the shorter
    one's length, the natural extension of a position-by-position comparison.

    ``variant="ranks"`` is Kendall's tau-b between the two rankings over the union of their
    documents: each document's rank in each list, a document missing from a list tied with
    the others missing at the rank after that list's end. It depends on the order only.

    NaN when fewer than two positions (``repro_eval``) or documents (``ranks``) are compared.
    """
    from scipy import stats  # here: importing scipy.stats is most of a second of every process that imports this module

    if depth < 1:
        raise ValueError("depth must be a positive integer")
    orig = list(original[:depth])
    rep = list(reproduction[:depth])
    if variant == "repro_eval":
        n = min(len(orig), len(rep))
        orig, rep = orig[:n], rep[:n]
        if n < 2:
            return math.nan
        index = {doc: i for i, doc in enumerate(sorted(set(orig) | set(rep)))}
        x = np.fromiter((index[d] for d in orig), dtype=np.int64, count=n)
        y = np.fromiter((index[d] for d in rep), dtype=np.int64, count=n)
        return float(stats.kendalltau(x, y).statistic)
    if variant == "ranks":
        rank_o = _positions(orig)
        rank_r = _positions(rep)
        union = list(rank_o) + [d for d in rank_r if d not in rank_o]
        if len(union) < 2:
            return math.nan
        x = np.array([rank_o.get(d, len(rank_o)) for d in union])
        y = np.array([rank_r.get(d, len(rank_r)) for d in union])
        return float(stats.kendalltau(x, y).statistic)
    raise ValueError(f"variant must be one of {KTU_VARIANTS}, not {variant!r}")


def rbo(original: Ranking, reproduction: Ranking, *, p: float = RBO_P, depth: int = RBO_DEPTH) -> float:
    """Rank-biased overlap of two rankings of one topic, as repro_eval computes it.

    repro_eval's RBO is the truncated, normalised form (Clarke et al.'s, from the TREC Health
    Misinformation track's compatibility code): with A_d = |O_{:d} & R_{:d}| the overlap of the
    two top-d prefixes,

        RBO = sum_{d=1..depth} p^(d-1) A_d / d  /  sum_{d=1..depth} p^(d-1),

    not Webber et al.'s extrapolated RBO_ext. Past the end of a list its prefix stops growing,
    so the agreement A_d / d falls: two identical lists of 5 documents score well below 1 at
    depth 1000 (0.476 at p = 0.95; test in tests/unit/test_reproducibility.py). Set ``depth`` to
    the lists' length to compare short lists. The value lies in [0, 1]; 1 for identical lists
    at least ``depth`` long.
    """
    if depth < 1:
        raise ValueError("depth must be a positive integer")
    if not 0 < p < 1:
        raise ValueError("p must lie strictly between 0 and 1")
    rank_o = _positions(original[:depth])
    rank_r = _positions(reproduction[:depth])
    # A document is in both prefixes from depth max(rank in O, rank in R) + 1 on.
    joins = np.array([max(i, rank_r[d]) for d, i in rank_o.items() if d in rank_r], dtype=np.int64)
    overlap = np.cumsum(np.bincount(joins, minlength=depth)[:depth])
    weights = np.cumprod(np.concatenate(([1.0], np.full(depth - 1, p))))
    return float(np.sum(weights * overlap / np.arange(1, depth + 1)) / np.sum(weights))


def _positions(ranking: Ranking) -> dict[str, int]:
    """Each document's first rank (0-based)."""
    out: dict[str, int] = {}
    for i, doc in enumerate(ranking):
        out.setdefault(doc, i)
    return out


@dataclass(frozen=True)
class DocumentOrder:
    """KTU and RBO per topic and their means, for one original/reproduction pair of runs.

    ``topics``: the topics of both runs (in the original's order), which the means are over;
    ``left_out``: topics of only one of them. A topic whose KTU is undefined (NaN: a list of
    one document) is left out of the KTU mean (repro_eval's mean would be NaN).
    """

    topics: tuple[str, ...]
    ktu: dict[str, float]
    rbo: dict[str, float]
    left_out: tuple[str, ...]

    @property
    def ktu_mean(self) -> float:
        return _mean_defined(self.ktu.values())

    @property
    def rbo_mean(self) -> float:
        return _mean_defined(self.rbo.values())


def document_order(
    original: Mapping[str, Ranking],
    reproduction: Mapping[str, Ranking],
    *,
    ktu_depth: int = KTU_DEPTH,
    ktu_variant: str = "repro_eval",
    rbo_p: float = RBO_P,
    rbo_depth: int = RBO_DEPTH,
) -> DocumentOrder:
    """KTU and RBO of every topic the two runs share (``{topic: [docno, ...]}``, best first).

    repro_eval walks the reproduction's topics and fails on one the original lacks; here a
    topic of only one run is left out and listed in ``left_out``.
    """
    topics = tuple(t for t in original if t in reproduction)
    left_out = tuple(sorted(set(original).symmetric_difference(reproduction)))
    return DocumentOrder(
        topics=topics,
        ktu={t: ktu(original[t], reproduction[t], depth=ktu_depth, variant=ktu_variant) for t in topics},
        rbo={t: rbo(original[t], reproduction[t], p=rbo_p, depth=rbo_depth) for t in topics},
        left_out=left_out,
    )


def _mean_defined(values) -> float:  # type: ignore[no-untyped-def]
    x = np.fromiter(values, dtype=np.float64)
    x = x[~np.isnan(x)]
    return float(x.mean()) if x.size else math.nan


# --- effectiveness ----------------------------------------------------------------------


def _paired(original: Scores, reproduction: Scores) -> tuple[tuple[str, ...], np.ndarray, np.ndarray]:
    """The original's topics and both runs' scores on them; every topic of the original must
    have a score in the reproduction (an evaluation that scores a missing topic 0, as
    ``cranfield eval`` does by default, gives it one)."""
    topics = tuple(original)
    missing = [t for t in topics if t not in reproduction]
    if missing:
        raise ValueError(f"the reproduction has no score for {counted(len(missing), 'topic')} of the original, "
                         f"e.g. {missing[0]!r}")
    x = np.array([original[t] for t in topics], dtype=np.float64)
    y = np.array([reproduction[t] for t in topics], dtype=np.float64)
    if np.isnan(x).any() or np.isnan(y).any():
        raise ValueError("scores contain NaN: leave out the topics that were not scored")
    return topics, x, y


def _values(scores: Scores) -> np.ndarray:
    x = np.array(list(scores.values()), dtype=np.float64)
    if np.isnan(x).any():
        raise ValueError("scores contain NaN: leave out the topics that were not scored")
    return x


def rmse(original: Scores, reproduction: Scores) -> float:
    """Root mean square error of the per-topic scores over the original's topics:
    sqrt(mean_j (o_j - r_j)^2). 0 when every topic scores the same."""
    _, x, y = _paired(original, reproduction)
    return float(math.sqrt(np.mean((x - y) ** 2))) if x.size else math.nan


def nrmse(original: Scores, reproduction: Scores) -> float:
    """RMSE divided by the largest RMSE any reproduction could reach, as repro_eval
    normalises it: sqrt(mean_j max(o_j, 1 - o_j)^2), the RMSE of a reproduction that scores
    every topic at the far end of [0, 1] from the original. In [0, 1] for metrics in [0, 1];
    meaningless for a metric that can exceed 1."""
    _, x, y = _paired(original, reproduction)
    if not x.size:
        return math.nan
    worst = math.sqrt(np.mean(np.maximum(x, 1.0 - x) ** 2))
    return float(math.sqrt(np.mean((x - y) ** 2)) / worst)


# --- overall effect -----------------------------------------------------------------------


def mean_improvement(baseline: Scores, advanced: Scores) -> float:
    """mean_j (a_j - b_j) over the advanced run's topics (repro_eval's choice; every one must
    be scored for the baseline too)."""
    topics = tuple(advanced)
    missing = [t for t in topics if t not in baseline]
    if missing:
        raise ValueError(f"the baseline has no score for {counted(len(missing), 'topic')} of the advanced run, "
                         f"e.g. {missing[0]!r}")
    a = np.array([advanced[t] for t in topics], dtype=np.float64)
    b = np.array([baseline[t] for t in topics], dtype=np.float64)
    if np.isnan(a).any() or np.isnan(b).any():
        raise ValueError("scores contain NaN: leave out the topics that were not scored")
    return float(np.mean(a - b)) if a.size else math.nan


def relative_improvement(baseline: Scores, advanced: Scores) -> float:
    """(mean(a) - mean(b)) / mean(b), each mean over that run's own topics."""
    mb = float(np.mean(_values(baseline)))
    ma = float(np.mean(_values(advanced)))
    return _divide(ma - mb, mb)


def effect_ratio(orig_baseline: Scores, orig_advanced: Scores, rep_baseline: Scores, rep_advanced: Scores) -> float:
    """ER = mean improvement of the reproduction / mean improvement of the original.

    1: the effect is reproduced at its size; between 0 and 1: a smaller effect; above 1: a
    larger one; 0 or below: no improvement, or a loss. On another collection each mean is over
    that collection's topics. +-inf (or NaN) when the original shows no improvement at all.
    """
    return _divide(mean_improvement(rep_baseline, rep_advanced), mean_improvement(orig_baseline, orig_advanced))


def delta_ri(orig_baseline: Scores, orig_advanced: Scores, rep_baseline: Scores, rep_advanced: Scores) -> float:
    """DeltaRI = RI_original - RI_reproduction, RI the relative improvement of the advanced
    run's mean over the baseline's. 0: the same relative improvement; positive: the
    reproduction improves less; negative: more."""
    return relative_improvement(orig_baseline, orig_advanced) - relative_improvement(rep_baseline, rep_advanced)


def _divide(num: float, den: float) -> float:
    """num / den with IEEE semantics (repro_eval divides numpy floats): +-inf or NaN at 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.float64(num) / np.float64(den))


# --- statistics ---------------------------------------------------------------------------


def t_test(original: Scores, reproduction: Scores, *, paired: bool, welch: bool = False) -> float:
    """Two-sided p-value of the t-test between the original's and the reproduction's scores.

    ``paired`` (same collection): Student's paired test over the original's topics, every one
    scored in the reproduction. When the two runs score every topic alike the statistic is 0/0
    and the p-value is reported as 1.0: repro_eval does so only when the two runs are equal on
    every trec_eval measure at once (it leaves NaN for one measure alone), so a metric's
    p-value here never depends on the other metrics computed.

    Unpaired (another collection): Student's two-sample test with pooled variance, as
    repro_eval calls ``scipy.stats.ttest_ind`` (its default ``equal_var=True``); the paper
    only says "unpaired". ``welch=True`` gives Welch's test, which does not assume equal
    variances on the two collections.
    """
    from scipy import stats  # here: importing scipy.stats is most of a second of every process that imports this module

    if paired:
        _, x, y = _paired(original, reproduction)
        if x.size and np.all(x == y):
            return 1.0
        return float(stats.ttest_rel(x, y).pvalue)
    return float(stats.ttest_ind(_values(original), _values(reproduction), equal_var=not welch).pvalue)


# --- bootstrap intervals of the effect (Cranfield's) --------------------------------------


@dataclass(frozen=True)
class EffectIntervals:
    """Bootstrap percentile intervals of ER and DeltaRI (see :func:`bootstrap_effects`).

    ``er_undefined`` / ``dri_undefined``: resamples left out because the statistic was
    undefined there (the original's mean improvement, or a baseline's mean, is 0 in them).
    """

    er_low: float
    er_high: float
    dri_low: float
    dri_high: float
    level: float
    resamples: int
    seed: int
    paired: bool
    er_undefined: int
    dri_undefined: int


def bootstrap_effects(
    orig_baseline: Scores,
    orig_advanced: Scores,
    rep_baseline: Scores,
    rep_advanced: Scores,
    *,
    paired: bool,
    resamples: int = 10_000,
    level: float = 0.95,
    seed: int = 0,
) -> EffectIntervals:
    """Percentile bootstrap intervals of ER and DeltaRI over topics.

    Resampling scheme. ``paired`` (same collection): the topics common to the four runs are
    resampled with replacement, one draw of n topic indices per resample
    (``default_rng(seed).integers(0, n, size=(B, n))``), and that draw is applied to all four
    runs, which keeps each topic's four scores together (the dependence between original and
    reproduction on a topic is what a paired design has). Unpaired (another collection): the
    original collection's topics and the reproduction's are resampled independently, the
    original's draw first (B, n_o), then the reproduction's (B, n_r), from the same generator;
    each collection's baseline and advanced scores stay paired by topic. Each resample gives
    ER* and DeltaRI* computed as :func:`effect_ratio` and :func:`delta_ri` are; the interval is
    the (1 - level)/2 and (1 + level)/2 quantiles of the defined ones (numpy's linear method),
    resamples where a denominator is 0 being left out and counted.
    """
    if not 0 < level < 1:
        raise ValueError("level must lie strictly between 0 and 1")
    if int(resamples) != resamples or resamples < 1:
        raise ValueError("resamples must be a positive integer")
    resamples = int(resamples)
    rng = np.random.default_rng(seed)
    if paired:
        topics = [t for t in orig_advanced if t in orig_baseline and t in rep_baseline and t in rep_advanced]
        ob, oa, rb, ra = (np.array([s[t] for t in topics], dtype=np.float64)
                          for s in (orig_baseline, orig_advanced, rep_baseline, rep_advanced))
        idx = rng.integers(0, len(topics), size=(resamples, len(topics))) if topics else None
        idx_o = idx_r = idx
    else:
        o_topics = [t for t in orig_advanced if t in orig_baseline]
        r_topics = [t for t in rep_advanced if t in rep_baseline]
        ob, oa = (np.array([s[t] for t in o_topics], dtype=np.float64) for s in (orig_baseline, orig_advanced))
        rb, ra = (np.array([s[t] for t in r_topics], dtype=np.float64) for s in (rep_baseline, rep_advanced))
        idx_o = rng.integers(0, len(o_topics), size=(resamples, len(o_topics))) if o_topics else None
        idx_r = rng.integers(0, len(r_topics), size=(resamples, len(r_topics))) if r_topics else None
    for x in (ob, oa, rb, ra):
        if np.isnan(x).any():
            raise ValueError("scores contain NaN: leave out the topics that were not scored")
    if idx_o is None or idx_r is None:
        return EffectIntervals(math.nan, math.nan, math.nan, math.nan, level, resamples, seed, paired,
                               resamples, resamples)
    m_ob, m_oa = ob[idx_o].mean(axis=1), oa[idx_o].mean(axis=1)
    m_rb, m_ra = rb[idx_r].mean(axis=1), ra[idx_r].mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        er = (ra - rb)[idx_r].mean(axis=1) / (oa - ob)[idx_o].mean(axis=1)
        dri = (m_oa - m_ob) / m_ob - (m_ra - m_rb) / m_rb
    er_low, er_high, er_bad = _percentile(er, level)
    dri_low, dri_high, dri_bad = _percentile(dri, level)
    return EffectIntervals(er_low, er_high, dri_low, dri_high, level, resamples, seed, paired, er_bad, dri_bad)


def _percentile(values: np.ndarray, level: float) -> tuple[float, float, int]:
    ok = np.isfinite(values)
    kept = values[ok]
    bad = int(values.size - kept.size)
    if not kept.size:
        return math.nan, math.nan, bad
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(kept, [alpha, 1.0 - alpha])
    return float(low), float(high), bad


# --- one metric, all measures --------------------------------------------------------------


@dataclass(frozen=True)
class RunComparison:
    """An original run against its reproduction on one metric (the baseline or the advanced
    run). ``rmse``/``nrmse`` are None on another collection (no common topics)."""

    original_mean: float
    reproduction_mean: float
    rmse: float | None
    nrmse: float | None
    p_value: float
    test: str  # "paired t", "Student t" or "Welch t"


@dataclass(frozen=True)
class EffectComparison:
    """The effect of the advanced run over the baseline, original against reproduction."""

    er: float
    delta_ri: float
    ri_original: float
    ri_reproduction: float
    intervals: EffectIntervals


def compare_run(original: Scores, reproduction: Scores, *, same_collection: bool, welch: bool = False) -> RunComparison:
    """Every per-run measure of one metric: means, RMSE and nRMSE (same collection), t-test."""
    paired = same_collection
    return RunComparison(
        original_mean=float(np.mean(_values(original))) if original else math.nan,
        reproduction_mean=float(np.mean(_values(reproduction))) if reproduction else math.nan,
        rmse=rmse(original, reproduction) if same_collection else None,
        nrmse=nrmse(original, reproduction) if same_collection else None,
        p_value=t_test(original, reproduction, paired=paired, welch=welch),
        test="paired t" if paired else ("Welch t" if welch else "Student t"),
    )


def compare_effect(
    orig_baseline: Scores,
    orig_advanced: Scores,
    rep_baseline: Scores,
    rep_advanced: Scores,
    *,
    same_collection: bool,
    resamples: int = 10_000,
    level: float = 0.95,
    seed: int = 0,
) -> EffectComparison:
    """ER, DeltaRI (with both relative improvements) and their bootstrap intervals."""
    return EffectComparison(
        er=effect_ratio(orig_baseline, orig_advanced, rep_baseline, rep_advanced),
        delta_ri=delta_ri(orig_baseline, orig_advanced, rep_baseline, rep_advanced),
        ri_original=relative_improvement(orig_baseline, orig_advanced),
        ri_reproduction=relative_improvement(rep_baseline, rep_advanced),
        intervals=bootstrap_effects(orig_baseline, orig_advanced, rep_baseline, rep_advanced,
                                    paired=same_collection, resamples=resamples, level=level, seed=seed),
    )
