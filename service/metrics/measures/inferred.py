"""Inferred AP for a randomly sampled judgment pool, as trec_eval computes it.

Yilmaz & Aslam, "Estimating average precision with incomplete and imperfect judgments",
CIKM 2006; the estimator is trec_eval 9's ``infAP`` (``m_infAP.c``, with the relevance
values of ``form_res_rels.c``), whose choices this module follows:

* a retrieved document is *judged* (level >= 0), *pooled but not judged* (a negative
  qrels label: it was in the pool and sampled out) or *not pooled* (absent from the qrels);
* at a relevant document of 0-based position j (rank j + 1), with ``rel``, ``nonrel`` and
  ``unj`` the relevant, judged non-relevant and pooled-unjudged documents above it::

      j = 0:  1
      j > 0:  1/(j+1) + (j/(j+1)) * ((rel + nonrel + unj)/j) * ((rel + eps)/(rel + nonrel + 2 eps))

  with eps = INFAP_EPSILON = 1e-5 (trec_eval.h): the share of pooled documents above,
  times the smoothed precision among the judged ones; documents not pooled count as
  non-relevant, pooled-unjudged ones as relevant in the judged proportion;
* infAP = the sum over the retrieved relevant documents / R (R: judged documents at level
  >= ``rel`` in the qrels); 0 when R = 0. No cutoff (trec_eval has none for infAP).

When every pooled document is judged and nothing unpooled is retrieved above a relevant
document, the estimate is AP but for eps (each term's precision (rel + eps)/(rel + nonrel +
2 eps) instead of rel/(rel + nonrel)).

Which retrieved documents were pooled
    The level matrix of :class:`~service.metrics.lists.RankedLists` gives both kinds of
    unjudged document the one code ``UNJUDGED``. The kernel reads which of them are pooled
    from the prefix quantity :data:`POOLED_UNJUDGED` of the lists, which the caller attaches
    with :func:`with_pool_status` (its values: :func:`pool_status`). Without it every
    unjudged document is taken as not pooled: exact for qrels without negative labels,
    and trec_eval's value whenever no pooled-but-unjudged document is retrieved above a
    relevant one.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from service.formats.types import Qrels, Run
from service.metrics.lists import RankedLists, Scale
from service.metrics.matching import level_matrix
from service.metrics.measures.common import REL, rows_num_rel, rowsum, safe_div
from service.metrics.spec import UNIT, Measure, MetricDef, register

#: trec_eval's INFAP_EPSILON (trec_eval.h).
INFAP_EPSILON = 0.00001

#: The :meth:`RankedLists.prefix` key of the (rows, D) bool matrix "retrieved, pooled, not judged".
POOLED_UNJUDGED = "pooled_unjudged"


def inferred_average_precision(lists: RankedLists, m: Measure, scale: Scale) -> np.ndarray:
    """infAP (Yilmaz & Aslam 2006) exactly as trec_eval 9's ``m_infAP.c``; see the module docstring."""
    rel = m.get("rel")
    levels = lists.levels
    is_rel = levels >= rel
    is_nonrel = (levels >= 0) & ~is_rel
    unjudged = lists.prefix(POOLED_UNJUDGED, _nothing_pooled) & (levels < 0)
    # Counts above each position (exclusive prefix sums), as float64 integers (exact).
    rel_above = np.cumsum(is_rel, axis=1, dtype=np.float64) - is_rel
    nonrel_above = np.cumsum(is_nonrel, axis=1, dtype=np.float64) - is_nonrel
    unj_above = np.cumsum(unjudged, axis=1, dtype=np.float64) - unjudged
    j = np.arange(lists.depth, dtype=np.float64)[None, :]  # 0-based position, trec_eval's j
    with np.errstate(divide="ignore", invalid="ignore"):
        # Evaluated in m_infAP.c's order: 1/(j+1) + ((j/(j+1)) * (pooled/j)) * smoothed precision.
        term = 1.0 / (j + 1.0) + (j / (j + 1.0)) * ((rel_above + nonrel_above + unj_above) / j) * (
            (rel_above + INFAP_EPSILON) / (rel_above + nonrel_above + 2 * INFAP_EPSILON)
        )
    term[:, :1] = 1.0  # j == 0: a relevant document at rank 1 adds 1
    return safe_div(rowsum(np.where(is_rel, term, 0.0)), rows_num_rel(lists, rel))


def _nothing_pooled(lists: RankedLists) -> np.ndarray:
    return np.zeros(lists.levels.shape, dtype=bool)


def with_pool_status(lists: RankedLists, pooled_unjudged: np.ndarray) -> RankedLists:
    """Attach to full-depth ``lists`` (not a cutoff view), before any kernel runs on them, which
    retrieved documents are pooled but not judged ((rows, D) bool, aligned with ``lists.levels``);
    their cutoff views share it. Returns ``lists``."""
    mask = np.asarray(pooled_unjudged, dtype=bool)

    def attach(root: RankedLists) -> np.ndarray:
        if mask.shape != root.levels.shape:
            raise ValueError(f"pooled_unjudged has shape {mask.shape}; the lists are {root.levels.shape}")
        return mask

    lists.prefix(POOLED_UNJUDGED, attach)
    return lists


def pool_status(qrels: Qrels, runs: Sequence[Run], topic_idx: Sequence[int], col_of: dict[str, int],
                depth: int | None) -> np.ndarray:
    """Which cells of :func:`service.metrics.matching.level_matrix` ``(qrels, runs, ...)`` hold a
    document with a negative qrels label (pooled but not judged): the same rows and columns.

    Computed by matching the runs against a copy of the qrels whose labels say only "negative"
    (1) or not (0), with the matcher the level matrix itself uses.
    """
    marks = Qrels(topics=qrels.topics, docnos=qrels.docnos,
                  levels=tuple((lv < 0).astype(np.int64) for lv in qrels.levels), source=qrels.source)
    matrix, _ = level_matrix(marks, runs, topic_idx, col_of, depth)
    return matrix == 1


register(MetricDef("infAP", inferred_average_precision, (REL,),
                   "inferred AP for a sampled pool (Yilmaz & Aslam 2006; trec_eval's infAP: negative labels = "
                   "pooled but not judged, absent = not pooled)",
                   cutoff="none", family="binary", bounds=UNIT))
