"""Cumulated-gain metrics of Järvelin & Kekäläinen (TOIS 2002) and the MS variant.

J&K's discounted gain divides the gain at rank r by log_a(r) only from rank a
on: DCG[i] = CG[i] for i < a, DCG[i-1] + G[i]/log_a(i) for i >= a (their
Eq. 2). Since log_a(r) <= 1 for r <= a, the discount is max(1, log_a r).
``MSnDCG`` (Burges et al.; trec_eval's ndcg, NTCIREVAL's MSnDCG) divides every
rank's gain by log2(r + 1). Both use the gains as given (linear); exponential
gains are only a gain mapping.
"""

from __future__ import annotations

import numpy as np

from service.metrics.lists import GainTable, RankedLists, Scale
from service.metrics.measures.common import BASE, GRADED, extend_cum, gain_table, rowsum, safe_div
from service.metrics.spec import NON_NEGATIVE, UNIT, Measure, MetricDef, register


def jk_discount(depth: int, base: float) -> np.ndarray:
    """J&K's discount max(1, log_base r) for r = 1..depth."""
    r = np.arange(1, depth + 1, dtype=np.float64)
    return np.maximum(1.0, np.log(r) / np.log(base))


def ms_discount(depth: int) -> np.ndarray:
    return np.log2(np.arange(2, depth + 2, dtype=np.float64))


def _discount(m: Measure, depth: int) -> np.ndarray:
    if m.name.startswith("MS"):
        return ms_discount(depth)
    return jk_discount(depth, float(m.get("base")))


def _dcg_rows(lists: RankedLists, table: GainTable, disc_key: tuple, m: Measure) -> np.ndarray:
    """Cumulative DCG vector per row at full depth (cached per discount)."""

    def compute(full: RankedLists) -> np.ndarray:
        disc = _discount(m, max(full.depth, 1))
        return np.cumsum(full.gains(table) / disc[None, : full.depth], axis=1)

    return lists.prefix(("dcg", table, disc_key), compute)


def _ideal_dcg_topic(lists: RankedLists, table: GainTable, disc_key: tuple, m: Measure) -> np.ndarray:
    """Cumulative ideal DCG per topic, (T, W)."""

    def compute() -> np.ndarray:
        ideal = lists.ideal_gains(table)
        return np.cumsum(ideal / _discount(m, ideal.shape[1])[None, :], axis=1)

    return lists.stats_cache(("idcg", table, disc_key), compute)


def _disc_key(m: Measure) -> tuple:
    return ("ms",) if m.name.startswith("MS") else ("jk", float(m.get("base")))


def ndcg(lists: RankedLists, m: Measure, scale: Scale) -> np.ndarray:
    """nDCG_l = sum_{r<=l} dg(r) / sum_{r<=l} dg_I(r)  (Sakai 2007, Eq. 22); both lists cut at l.

    Without a cutoff, the whole run list against the whole ideal list.
    """
    table = gain_table(m, scale)
    k = m.cutoff
    top = lists.top(k)
    key = _disc_key(m)
    dcg = _dcg_rows(lists, table, key, m)[:, : top.depth]
    actual = dcg[:, -1] if dcg.shape[1] else np.zeros(lists.n_rows)
    ideal_cum = _ideal_dcg_topic(lists, table, key, m)
    col = ideal_cum.shape[1] - 1 if k is None else min(k, ideal_cum.shape[1]) - 1
    ideal = ideal_cum[lists.row_topic, col]
    return safe_div(actual, ideal)


def _vectors(lists: RankedLists, m: Measure, scale: Scale, discounted: bool) -> tuple[np.ndarray, np.ndarray]:
    """(actual, ideal) cumulative vectors per row over min(k, w) ranks, w the longer of the
    lists and the ideal list: past w both are constant, so nothing is materialised there."""
    table = gain_table(m, scale)
    k = m.cutoff
    assert k is not None
    if discounted:
        key = _disc_key(m)
        actual = _dcg_rows(lists, table, key, m)
        ideal_topic = _ideal_dcg_topic(lists, table, key, m)
    else:
        actual = lists.cum_gains(table)
        ideal_topic = lists.ideal_cum_topic(table)
    width = min(k, max(actual.shape[1], ideal_topic.shape[1]))
    return extend_cum(actual, width), extend_cum(ideal_topic, width)[lists.row_topic]


def _mean_over_k(ratio: np.ndarray, k: int) -> np.ndarray:
    """(1/k) sum_{i<=k} ratio[i], the ranks past the materialised ones repeating the last value."""
    return (rowsum(ratio) + (k - ratio.shape[1]) * ratio[:, -1]) / k


def cg(lists: RankedLists, m: Measure, scale: Scale) -> np.ndarray:
    """CG@k = sum_{r<=k} g(r)  (J&K Eq. 1)."""
    return _vectors(lists, m, scale, discounted=False)[0][:, -1]


def dcg(lists: RankedLists, m: Measure, scale: Scale) -> np.ndarray:
    """DCG@k with J&K's discount (Eq. 2)."""
    return _vectors(lists, m, scale, discounted=True)[0][:, -1]


def ncg(lists: RankedLists, m: Measure, scale: Scale) -> np.ndarray:
    """nCG@k = CG[k] / CG_I[k]  (J&K Eq. 5 at rank k)."""
    actual, ideal = _vectors(lists, m, scale, discounted=False)
    return safe_div(actual[:, -1], ideal[:, -1])


def ncg_avg(lists: RankedLists, m: Measure, scale: Scale) -> np.ndarray:
    """nCGavg@k = (1/k) sum_{i<=k} CG[i]/CG_I[i]  (J&K Eq. 6 over the nCG vector)."""
    actual, ideal = _vectors(lists, m, scale, discounted=False)
    return _mean_over_k(safe_div(actual, ideal), m.cutoff)  # type: ignore[arg-type]


def ndcg_avg(lists: RankedLists, m: Measure, scale: Scale) -> np.ndarray:
    """nDCGavg@k = (1/k) sum_{i<=k} DCG[i]/DCG_I[i]  (J&K Eq. 6 over the nDCG vector)."""
    actual, ideal = _vectors(lists, m, scale, discounted=True)
    return _mean_over_k(safe_div(actual, ideal), m.cutoff)  # type: ignore[arg-type]


register(MetricDef("nDCG", ndcg, (*GRADED, BASE), "normalised DCG, Järvelin & Kekäläinen's discount", ideal_is_one=True,
                   bounds=UNIT),
         "NDCG", ("nDCG'", {"judged_only": True}))
register(MetricDef("MSnDCG", ndcg, GRADED, "normalised DCG with the log2(r+1) discount (trec_eval ndcg_cut)",
                   ideal_is_one=True, bounds=UNIT), "ndcg_cut")
register(MetricDef("CG", cg, GRADED, "cumulated gain at k", cutoff="required", bounds=NON_NEGATIVE))
register(MetricDef("DCG", dcg, (*GRADED, BASE), "discounted cumulated gain at k (J&K)", cutoff="required",
                   bounds=NON_NEGATIVE))
register(MetricDef("nCG", ncg, GRADED, "normalised cumulated gain at k", cutoff="required", ideal_is_one=True,
                   bounds=UNIT))
register(MetricDef("nCGavg", ncg_avg, GRADED, "average of the nCG vector up to k (J&K Eq. 6)", cutoff="required",
                   ideal_is_one=True, bounds=UNIT))
register(MetricDef("nDCGavg", ndcg_avg, (*GRADED, BASE), "average of the nDCG vector up to k (J&K Eq. 6)",
                   cutoff="required", ideal_is_one=True, bounds=UNIT))
