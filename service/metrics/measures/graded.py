"""Graded-relevance metrics built on the blended ratio and on preferences.

Notation (Sakai 2006, 2007): g(r) the gain at rank r, cg(r) its cumulative sum,
count(r) the relevant documents (level >= 1) in the top r, cg_I(r) the
cumulative gain of the ideal list (all relevant documents by decreasing gain),
R the number of relevant documents, and the blended ratio

    BR(r) = (beta * cg(r) + count(r)) / (beta * cg_I(r) + r).
"""

from __future__ import annotations

import numpy as np

from service.metrics.lists import RankedLists, Scale
from service.metrics.measures.common import (
    rowsum,
    BETA,
    GAINS,
    GRADED,
    NORM,
    at_rank,
    first_true,
    gain_table,
    rows_num_nonrel,
    rows_num_rel,
    safe_div,
)
from service.metrics.spec import UNIT, Measure, MetricDef, register


def _blended_ratio(top: RankedLists, m: Measure, scale: Scale) -> np.ndarray:
    table = gain_table(m, scale)
    beta = float(m.get("beta"))
    return (beta * top.cum_gains(table) + top.count(1)) / (beta * top.ideal_cum_rows(table) + top.ranks())


def q_measure(lists: RankedLists, m: Measure, scale: Scale) -> np.ndarray:
    """Q = (1/R) sum_r isrel(r) BR(r)  (Sakai 2007, Eq. 21); Q(beta=0) = AP.

    @k sums over the top k; ``norm=minRk`` divides by min(R, k) as NTCIREVAL does.
    """
    k = m.cutoff
    top = lists.top(k)
    num = rowsum(top.is_rel(1) * _blended_ratio(top, m, scale))
    r = rows_num_rel(lists)
    den = np.minimum(r, k) if (k is not None and m.get("norm") == "minRk") else r
    return safe_div(num, den)


def r_measure(lists: RankedLists, m: Measure, scale: Scale) -> np.ndarray:
    """R-measure = BR(R) = (beta cg(R) + count(R)) / (beta cg_I(R) + R)  (Sakai; the survey's R-measure)."""
    table = gain_table(m, scale)
    beta = float(m.get("beta"))
    top = lists.top(m.cutoff)
    r = rows_num_rel(lists)
    num = beta * at_rank(top.cum_gains(table), r) + at_rank(top.count(1), r)
    den = beta * top.ideal_cum_at(table, r) + r
    return safe_div(num, den)


def gen_ap(lists: RankedLists, m: Measure, scale: Scale) -> np.ndarray:
    """genAveP = sum_r isrel(r) cg(r)/r / sum_{r<=R} cg_I(r)/r  (Kishida; Sakai 2007 late-arrival, Eq. 5).

    @k sums the numerator over the top k; ``norm=minRk`` also stops the
    denominator at min(R, k).
    """
    table = gain_table(m, scale)
    k = m.cutoff
    top = lists.top(k)
    num = rowsum(top.is_rel(1) * top.cum_gains(table) / top.ranks())
    r = rows_num_rel(lists).astype(np.int64)
    upto = np.minimum(r, k) if (k is not None and m.get("norm") == "minRk") else r

    def ideal_sums() -> np.ndarray:
        cum = lists.ideal_cum_topic(table)
        return np.cumsum(cum / np.arange(1, cum.shape[1] + 1), axis=1)

    sums = lists.stats_cache(("genap_ideal", table), ideal_sums)
    den = np.where(upto > 0, sums[lists.row_topic, np.maximum(upto, 1) - 1], 0.0)
    return safe_div(num, den)


def o_measure(lists: RankedLists, m: Measure, scale: Scale) -> np.ndarray:
    """O-measure = BR(r1), r1 the rank of the first relevant document  (Sakai 2006)."""
    top = lists.top(m.cutoff)
    r1 = first_true(top.is_rel(1))
    return at_rank(_blended_ratio(top, m, scale), r1)


def _preferred_rank(top: RankedLists) -> np.ndarray:
    """rp: the first document of the highest relevance level in the list (0 if none is relevant)."""
    lv = top.levels
    best = lv.max(axis=1, initial=0) if lv.shape[1] else np.zeros(lv.shape[0], dtype=lv.dtype)
    return np.where(best >= 1, first_true(lv == best[:, None]), 0)


def p_measure(lists: RankedLists, m: Measure, scale: Scale) -> np.ndarray:
    """P-measure = BR(rp)  (Sakai 2006): rp sorts the output by level, then by rank."""
    top = lists.top(m.cutoff)
    return at_rank(_blended_ratio(top, m, scale), _preferred_rank(top))


def p_plus(lists: RankedLists, m: Measure, scale: Scale) -> np.ndarray:
    """P+ = sum_{r <= rp} isrel(r) BR(r) / count(rp)  (Sakai 2006)."""
    top = lists.top(m.cutoff)
    rp = _preferred_rank(top)
    upto = top.ranks() <= rp[:, None]
    num = rowsum(top.is_rel(1) * upto * _blended_ratio(top, m, scale))
    return safe_div(num, at_rank(top.count(1), rp))


# --------------------------------------------------------------------- rpref family
# Condensed-list forms of De Beer & Moens' rpref (Sakai 2007, Eqs. 15-19), with
# penalty(r') = sum over judged i' < r' with g(i') < g(r') of (g(r') - g(i'))/g(r').


def _rpref_parts(lists: RankedLists, m: Measure, scale: Scale) -> tuple[RankedLists, np.ndarray, np.ndarray, np.ndarray]:
    table = gain_table(m, scale)
    cond = lists.condensed().top(m.cutoff)
    g = cond.gains(table)
    penalty = np.zeros_like(g)
    for level in range(scale.max_level + 1):
        at_level = cond.levels == level
        if not at_level.any():
            continue
        above = np.cumsum(at_level, axis=1) - at_level  # documents of this level strictly above
        lower = g > table[level]
        penalty += np.where(lower, above * safe_div(g - table[level], g), 0.0)
    ideal_total = cond.ideal_cum_at(table, rows_num_rel(lists))
    return cond, g, penalty, ideal_total


def rpref_n(lists: RankedLists, m: Measure, scale: Scale) -> np.ndarray:
    """rpref_N = (1/cg_I(R)) sum g(r') (1 - penalty(r') / (R + N - cg_I(R)/gain(H)))  (Eq. 16)."""
    table = gain_table(m, scale)
    cond, g, penalty, ideal_total = _rpref_parts(lists, m, scale)
    n_prime = rows_num_rel(lists) + rows_num_nonrel(lists) - safe_div(ideal_total, max(table))
    terms = g * (1.0 - safe_div(penalty, n_prime[:, None]))
    return safe_div(rowsum(terms), ideal_total)


def rpref_relative(lists: RankedLists, m: Measure, scale: Scale) -> np.ndarray:
    """rpref_relative = (1/cg_I(R)) sum_{r' != 1} g(r') (1 - penalty(r')/(r' - 1))  (Eq. 17)."""
    cond, g, penalty, ideal_total = _rpref_parts(lists, m, scale)
    terms = g * (1.0 - safe_div(penalty, cond.ranks() - 1.0))
    terms[:, :1] = 0.0
    return safe_div(rowsum(terms), ideal_total)


def rpref_relative2(lists: RankedLists, m: Measure, scale: Scale) -> np.ndarray:
    """rpref_relative2 = (1/cg_I(R)) sum g(r') (1 - penalty(r')/r')  (Eq. 19)."""
    cond, g, penalty, ideal_total = _rpref_parts(lists, m, scale)
    terms = g * (1.0 - penalty / cond.ranks())
    return safe_div(rowsum(terms), ideal_total)


register(MetricDef("Q", q_measure, (*GRADED, BETA, NORM), "Q-measure (Sakai)", ideal_is_one=True, bounds=UNIT),
         "Q-measure", "Qmeasure", ("Q'", {"judged_only": True}))
register(MetricDef("Rmeasure", r_measure, (*GRADED, BETA), "R-measure: the blended ratio at rank R", ideal_is_one=True,
                   bounds=UNIT),
         "R-measure")
register(MetricDef("genAP", gen_ap, (*GRADED, NORM), "Kishida's generalised average precision", ideal_is_one=True,
                   bounds=UNIT),
         "genAveP", "GAP")
register(MetricDef("Omeasure", o_measure, (*GRADED, BETA), "O-measure: the blended ratio at the first relevant document",
                   ideal_is_one=True, bounds=UNIT), "O-measure")
register(MetricDef("Pmeasure", p_measure, (*GRADED, BETA), "P-measure: the blended ratio at the preferred rank",
                   ideal_is_one=True, bounds=UNIT), "P-measure")
register(MetricDef("Pplus", p_plus, (*GRADED, BETA), "P+-measure", ideal_is_one=True, bounds=UNIT), "P+-measure", "P+")
register(MetricDef("rpref_N", rpref_n, (GAINS,), "graded bpref_N (De Beer & Moens), condensed-list form", bounds=UNIT))
register(MetricDef("rpref_relative", rpref_relative, (GAINS,), "rpref with relative normalisation", bounds=UNIT))
register(MetricDef("rpref_relative2", rpref_relative2, (GAINS,), "Sakai's corrected rpref_relative",
                   ideal_is_one=True, bounds=UNIT))
