"""User-model metrics: ERR (Chapelle et al. 2009) and RBP (Moffat & Zobel 2008).

ERR = sum_r (1/r) R_r prod_{i<r} (1 - R_i), with the stop probability R_r of
the document at rank r either ``stop=exp``: (2^g - 1)/2^gmax from its gain g, the
grade (Chapelle's; with the default gains g = level l this is the survey's
(2^l - 1)/2^H), or ``stop=linear``: g/(gmax + 1) (NTCIREVAL's); gmax is the largest
gain of the profile. nERR divides by the ERR of the ideal list (documents by
decreasing stop probability), both cut at k.

RBP(p) = (1 - p) sum_r p^(r-1) g(r)/gmax, gmax the largest gain (that of the top
level H with the default, increasing gains).
RBPresidual(p) = p^d + (1 - p) sum over unjudged ranks r <= d of p^(r-1): the
most RBP could still grow if every unjudged document and everything past the
list's depth d were fully relevant.
"""

from __future__ import annotations

import numpy as np

from service.formats.types import UNJUDGED
from service.metrics.lists import RankedLists, Scale
from service.metrics.measures.common import GRADED, PERSISTENCE, STOP, gain_table, rowsum, safe_div
from service.metrics.spec import UNIT, Measure, MetricDef, Param, register


def _stop_table(m: Measure, scale: Scale) -> tuple[float, ...]:
    """Stop probability of each level 0..H, from its gain g and gmax, the largest gain.

    exp: (2^g - 1)/2^gmax, written 2^(g - gmax) - 2^-gmax so that large grades underflow to
    0 instead of overflowing; with the default gains (g = level) this is (2^l - 1)/2^H.
    """
    table = gain_table(m, scale)
    gmax = max(table)
    if m.get("stop") == "exp":
        return tuple(float(np.exp2(g - gmax) - np.exp2(-gmax)) for g in table)
    return tuple(g / (gmax + 1.0) for g in table)


def _err_of(stop: np.ndarray) -> np.ndarray:
    """ERR of rows of stop probabilities (rows, D)."""
    if stop.shape[1] == 0:
        return np.zeros(stop.shape[0])
    reach = np.ones_like(stop)
    reach[:, 1:] = np.cumprod(1.0 - stop[:, :-1], axis=1)  # P(user reaches rank r)
    ranks = np.arange(1, stop.shape[1] + 1, dtype=np.float64)[None, :]
    return rowsum(stop * reach / ranks)


def _err_rows(lists: RankedLists, m: Measure, scale: Scale) -> tuple[np.ndarray, tuple[float, ...]]:
    table = _stop_table(m, scale)
    top = lists.top(m.cutoff)
    return _err_of(top.gains(table)), table


def err(lists: RankedLists, m: Measure, scale: Scale) -> np.ndarray:
    """Expected reciprocal rank (at k)."""
    return _err_rows(lists, m, scale)[0]


def nerr(lists: RankedLists, m: Measure, scale: Scale) -> np.ndarray:
    """nERR@k = ERR@k / ideal ERR@k."""
    actual, table = _err_rows(lists, m, scale)
    k = m.cutoff

    def ideal() -> np.ndarray:
        vec = lists.ideal_gains(table)  # stop probabilities sorted decreasingly
        if k is not None:
            vec = vec[:, :k]
        return _err_of(vec)

    ideal_topic = lists.stats_cache(("ideal_err", table, k), ideal)
    return safe_div(actual, ideal_topic[lists.row_topic])


def rbp(lists: RankedLists, m: Measure, scale: Scale) -> np.ndarray:
    """Rank-biased precision with graded gains g(r)/gmax.

    gmax is the largest gain of the profile (``scale=collection``; the gain of the top
    level H for increasing gains), or the largest gain among the levels judged for the
    topic (``scale=topic``: trec_eval 10's rbp).
    """
    table = gain_table(m, scale)
    p = float(m.get("p"))
    top = lists.top(m.cutoff)
    weights = (1.0 - p) * p ** np.arange(top.depth, dtype=np.float64)
    if m.get("scale") == "topic":
        # the largest gain among the levels judged for the topic (0 excluded)
        counts = lists.stats.counts
        gains_of = np.asarray(table, dtype=np.float64)[None, :]
        gmax = np.where(counts > 0, gains_of, 0.0).max(axis=1)[lists.row_topic]
    else:
        gmax = np.full(lists.n_rows, max(table))
    return safe_div(rowsum(top.gains(table) * weights), gmax)


def rbp_residual(lists: RankedLists, m: Measure, scale: Scale) -> np.ndarray:
    """Moffat & Zobel's RBP residual: p^d + (1 - p) sum_{unjudged r <= d} p^(r-1)."""
    p = float(m.get("p"))
    top = lists.top(m.cutoff)
    weights = (1.0 - p) * p ** np.arange(top.depth, dtype=np.float64)
    unjudged = (top.levels == UNJUDGED).astype(np.float64)
    return p ** top.lengths.astype(np.float64) + rowsum(unjudged * weights)


register(MetricDef("ERR", err, (*GRADED, STOP), "expected reciprocal rank", bounds=UNIT))
register(MetricDef("nERR", nerr, (*GRADED, STOP), "ERR normalised by the ideal list's ERR", ideal_is_one=True,
                   bounds=UNIT))
RBP_SCALE = Param(
    "scale", "choice", "collection",
    "gmax: the gain of the collection's top level H, or of the topic's highest judged level (trec_eval 10)",
    choices=("collection", "topic"),
)
register(MetricDef("RBP", rbp, (*GRADED, PERSISTENCE, RBP_SCALE), "rank-biased precision", bounds=UNIT))
register(MetricDef("RBPresidual", rbp_residual, (PERSISTENCE,), "RBP's residual (unjudged and unseen mass)",
                   bounds=UNIT),
         "RBP_resid", "rbp_residual")
