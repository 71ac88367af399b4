"""Binary-relevance metrics: a document is relevant when its level is >= ``rel``.

Definitions follow trec_eval (the papers use these without redefining them),
except where docs/definitions.md says otherwise.
"""

from __future__ import annotations

import numpy as np

from service.metrics.lists import RankedLists, Scale
from service.metrics.measures.common import (
    BINARY,
    NORM,
    REL,
    at_rank,
    first_true,
    last,
    rows_num_nonrel,
    rows_num_rel,
    rowsum,
    safe_div,
)
from service.metrics.spec import NON_NEGATIVE, UNIT, Measure, MetricDef, Param, register


def average_precision(lists: RankedLists, m: Measure, scale: Scale) -> np.ndarray:
    """AP = (1/R) sum_r isrel(r) count(r)/r  (Sakai 2007, Eq. 1).

    @k sums over the top k; ``norm=R`` keeps 1/R (trec_eval map_cut),
    ``norm=minRk`` divides by min(R, k) (NTCIREVAL).
    """
    rel, k = m.get("rel"), m.cutoff
    top = lists.top(k)
    num = rowsum(top.is_rel(rel) * top.count(rel) / top.ranks())
    r = rows_num_rel(lists, rel)
    den = np.minimum(r, k) if (k is not None and m.get("norm") == "minRk") else r
    return safe_div(num, den)


def reciprocal_rank(lists: RankedLists, m: Measure, scale: Scale) -> np.ndarray:
    """RR = 1/r1, r1 the rank of the first relevant document; 0 when none is retrieved."""
    top = lists.top(m.cutoff)
    r1 = first_true(top.is_rel(m.get("rel")))
    return safe_div(np.ones(r1.shape[0]), r1.astype(np.float64))


def precision(lists: RankedLists, m: Measure, scale: Scale) -> np.ndarray:
    """P@k = count(k)/k (a list shorter than k is not padded out of the denominator)."""
    k = m.cutoff
    assert k is not None
    return last(lists.top(k).count(m.get("rel"))) / k


def recall(lists: RankedLists, m: Measure, scale: Scale) -> np.ndarray:
    """Recall@k = count(k)/R; without a cutoff, over the whole list."""
    rel = m.get("rel")
    return safe_div(last(lists.top(m.cutoff).count(rel)), rows_num_rel(lists, rel))


def r_precision(lists: RankedLists, m: Measure, scale: Scale) -> np.ndarray:
    """Rprec = count(R)/R."""
    rel = m.get("rel")
    r = rows_num_rel(lists, rel)
    return safe_div(at_rank(lists.count(rel), r), r)


def hit(lists: RankedLists, m: Measure, scale: Scale) -> np.ndarray:
    """Hit@k = 1 when a relevant document is in the top k."""
    return (last(lists.top(m.cutoff).count(m.get("rel"))) > 0).astype(np.float64)


def num_rel(lists: RankedLists, m: Measure, scale: Scale) -> np.ndarray:
    """NumRel = R, the judged documents at level >= rel."""
    return rows_num_rel(lists, m.get("rel"))


def num_ret(lists: RankedLists, m: Measure, scale: Scale) -> np.ndarray:
    """NumRet = the number of documents retrieved (in the top k)."""
    return lists.top(m.cutoff).lengths.astype(np.float64)


def num_rel_ret(lists: RankedLists, m: Measure, scale: Scale) -> np.ndarray:
    """NumRelRet = relevant documents retrieved (in the top k)."""
    return last(lists.top(m.cutoff).count(m.get("rel")))


def judged(lists: RankedLists, m: Measure, scale: Scale) -> np.ndarray:
    """Judged@k = judged documents in the top k / k; without a cutoff, / the list length.

    ``norm=retrieved`` divides by min(k, list length), the documents actually in the top k
    (ir_measures' ``Judged@k``): a short list is then not penalised for the ranks it lacks.
    """
    top = lists.top(m.cutoff)
    n_judged = top.is_judged().sum(axis=1).astype(np.float64)
    if m.cutoff is None or m.get("norm") == "retrieved":
        den: float | np.ndarray = top.lengths.astype(np.float64)
    else:
        den = float(m.cutoff)
    return safe_div(n_judged, den)


# --------------------------------------------------------------------- bpref family
# All of them read the condensed list (judged documents only), where the number
# of judged non-relevant documents above rank r' is r' - count(r') (Sakai 2007, Eq. 9).


def _bpref_parts(lists: RankedLists, m: Measure) -> tuple[RankedLists, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rel = m.get("rel")
    cond = lists.condensed().top(m.cutoff)
    is_rel = cond.is_rel(rel)
    nonrel_above = cond.ranks() - cond.count(rel)
    return cond, is_rel, nonrel_above, rows_num_rel(lists, rel), rows_num_nonrel(lists, rel)


def bpref(lists: RankedLists, m: Measure, scale: Scale) -> np.ndarray:
    """bpref = (1/R) sum isrel(r') (1 - min(R, r' - count(r')) / min(R, N))  (Eq. 9; trec_eval's bpref).

    This is bpref_R when R <= N and bpref_N when R >= N (Sakai 2007, Eqs. 10-11).
    """
    _, is_rel, above, r, n = _bpref_parts(lists, m)
    min_rn = np.minimum(r, n)[:, None]
    penalty = safe_div(np.minimum(r[:, None], above), min_rn)
    return safe_div(rowsum(is_rel * (1.0 - penalty)), r)


def bpref_r(lists: RankedLists, m: Measure, scale: Scale) -> np.ndarray:
    """bpref_R = (1/R) sum isrel(r') (1 - min(R, r' - count(r'))/R)  (Eq. 10); = bpref when R <= N."""
    _, is_rel, above, r, _ = _bpref_parts(lists, m)
    penalty = safe_div(np.minimum(r[:, None], above), r[:, None])
    return safe_div(rowsum(is_rel * (1.0 - penalty)), r)


def bpref_n(lists: RankedLists, m: Measure, scale: Scale) -> np.ndarray:
    """bpref_N = (1/R) sum isrel(r') (1 - (r' - count(r'))/N)  (Eq. 11; trec_eval 8's bpref_allnonrel)."""
    _, is_rel, above, r, n = _bpref_parts(lists, m)
    penalty = safe_div(above, n[:, None])
    return safe_div(rowsum(is_rel * (1.0 - penalty)), r)


def bpref_relative(lists: RankedLists, m: Measure, scale: Scale) -> np.ndarray:
    """bpref_relative = (1/R) sum_{r' != 1} isrel(r') (1 - (r' - count(r'))/(r' - 1))  (Eq. 18)."""
    cond, is_rel, above, r, _ = _bpref_parts(lists, m)
    penalty = safe_div(above, cond.ranks() - 1.0)
    terms = is_rel * (1.0 - penalty)
    terms[:, :1] = 0.0  # the document at rank 1 is ignored by definition
    return safe_div(rowsum(terms), r)


register(MetricDef("AP", average_precision, (*BINARY, NORM), "average precision", ideal_is_one=True, family="binary",
                   bounds=UNIT),
         "AveP", "MAP", ("AveP'", {"judged_only": True}), ("bpref_relative2", {"judged_only": True}))
register(MetricDef("RR", reciprocal_rank, BINARY, "reciprocal rank of the first relevant document", ideal_is_one=True,
                   family="binary", bounds=UNIT), "MRR", "recip_rank")
register(MetricDef("P", precision, BINARY, "precision at k", cutoff="required", family="binary", bounds=UNIT),
         "Precision")
register(MetricDef("Recall", recall, BINARY, "recall (at k)", family="binary", bounds=UNIT))
register(MetricDef("Rprec", r_precision, BINARY, "precision at rank R", cutoff="none", ideal_is_one=True,
                   family="binary", bounds=UNIT), "R-precision", "RPrec")
register(MetricDef("Hit", hit, BINARY, "1 if a relevant document is retrieved (in the top k)", family="binary",
                   bounds=UNIT),
         "Success")
register(MetricDef("NumRel", num_rel, (REL,), "number of relevant documents R", cutoff="none", family="binary",
                   bounds=NON_NEGATIVE),
         "num_rel")
register(MetricDef("NumRet", num_ret, (), "number of documents retrieved", family="binary", bounds=NON_NEGATIVE),
         "num_ret")
register(MetricDef("NumRelRet", num_rel_ret, BINARY, "number of relevant documents retrieved", family="binary",
                   bounds=NON_NEGATIVE),
         "num_rel_ret")
JUDGED_NORM = Param("norm", "choice", "k", "Judged@k denominator: k, or retrieved = min(k, list length) (ir_measures)",
                    choices=("k", "retrieved"))
register(MetricDef("Judged", judged, (JUDGED_NORM,), "share of the top k that is judged", family="binary", bounds=UNIT))
register(MetricDef("bpref", bpref, (REL,), "binary preference (trec_eval; bpref_R if R<=N, bpref_N if R>=N)",
                   ideal_is_one=True, family="binary", bounds=UNIT))
register(MetricDef("bpref_R", bpref_r, (REL,), "bpref normalised by R (Sakai 2007, Eq. 10)", ideal_is_one=True,
                   family="binary", bounds=UNIT))
register(MetricDef("bpref_N", bpref_n, (REL,), "bpref normalised by N (bpref_allnonrel)", ideal_is_one=True,
                   family="binary", bounds=UNIT),
         "bpref_allnonrel")
register(MetricDef("bpref_relative", bpref_relative, (REL,), "bpref with relative normalisation (De Beer & Moens)",
                   family="binary", bounds=UNIT))
