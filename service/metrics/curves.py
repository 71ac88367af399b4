"""Järvelin & Kekäläinen's gain curves: CG, DCG, nCG and nDCG rank by rank.

For each run the per-topic vectors are averaged component by component
(J&K Eq. 3, avg-vect). The normalised average curve divides the average
vector by the average ideal vector (J&K section 2.3/3.3: norm-vect of the
averages); ``normalise="per_topic"`` instead averages the per-topic ratios.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from service.errors import InvalidMeasure
from service.formats.types import Qrels, Run
from service.metrics.scoring import EvalSettings, level_matrix, evaluation_topics
from service.metrics.lists import RankedLists, TopicStats
from service.metrics.measures.common import safe_div
from service.metrics.measures.cumgain import jk_discount


@dataclass(frozen=True)
class GainCurves:
    """Average curves of one run over ranks 1..depth (arrays of shape (depth,))."""

    run: str
    cg: np.ndarray
    dcg: np.ndarray
    ncg: np.ndarray
    ndcg: np.ndarray
    ideal_cg: np.ndarray
    ideal_dcg: np.ndarray


def topic_vectors(lists: RankedLists, table: tuple[float, ...], base: float, depth: int) -> dict[str, np.ndarray]:
    """Per-row CG, DCG and their ideal vectors over exactly ``depth`` ranks."""
    g = np.zeros((lists.n_rows, depth))
    w = min(depth, lists.depth)
    g[:, :w] = lists.gains(table)[:, :w]
    ideal = np.zeros((lists.stats.n_topics, depth))
    iv = lists.ideal_gains(table)
    iw = min(depth, iv.shape[1])
    ideal[:, :iw] = iv[:, :iw]
    ideal = ideal[lists.row_topic]
    disc = jk_discount(depth, base)[None, :]
    return {
        "cg": np.cumsum(g, axis=1),
        "dcg": np.cumsum(g / disc, axis=1),
        "ideal_cg": np.cumsum(ideal, axis=1),
        "ideal_dcg": np.cumsum(ideal / disc, axis=1),
    }


def gain_curves(
    qrels: Qrels,
    runs: Sequence[Run],
    depth: int,
    *,
    base: float = 2.0,
    settings: EvalSettings | None = None,
    normalise: Literal["average", "per_topic"] = "average",
) -> list[GainCurves]:
    """The average CG/DCG/nCG/nDCG curves of every run, ranks 1..depth."""
    if depth < 1:
        raise InvalidMeasure("curves need a depth >= 1")
    if base <= 1:
        raise InvalidMeasure("the log base must be > 1")
    settings = settings or EvalSettings()
    try:
        scale = settings.scale(qrels)
    except ValueError as exc:
        raise InvalidMeasure(str(exc)) from None
    topic_idx = evaluation_topics(qrels, settings)
    stats = TopicStats(qrels.level_counts(scale.max_level)[list(topic_idx)], scale.max_level)
    col_of = {qrels.topics[qi]: c for c, qi in enumerate(topic_idx)}
    out = []
    n_topics = len(topic_idx)
    for run in runs:
        levels, present = level_matrix(qrels, [run], topic_idx, col_of, settings.depth)
        lists = RankedLists(levels, np.arange(n_topics), stats)
        vec = topic_vectors(lists, scale.default_gains, base, depth)
        keep = present[0] if settings.missing == "skip" else np.ones(n_topics, dtype=bool)
        avg = {k: v[keep].mean(axis=0) if keep.any() else np.zeros(depth) for k, v in vec.items()}
        if normalise == "average":
            ncg = safe_div(avg["cg"], avg["ideal_cg"])
            ndcg = safe_div(avg["dcg"], avg["ideal_dcg"])
        else:
            ncg = safe_div(vec["cg"], vec["ideal_cg"])[keep].mean(axis=0)
            ndcg = safe_div(vec["dcg"], vec["ideal_dcg"])[keep].mean(axis=0)
        out.append(GainCurves(run.tag, avg["cg"], avg["dcg"], ncg, ndcg, avg["ideal_cg"], avg["ideal_dcg"]))
    return out
