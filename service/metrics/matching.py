"""Matching runs against judgments: the relevance level of every ranked document.

The one place where a run's lines meet the qrels. The metric families (``measures``) and
the evaluator (``scoring``) both call it, and it imports neither, so the registry of
measures and the evaluator do not import each other through it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from service.formats.keys import topic_keys
from service.formats.types import ABSENT, UNJUDGED, Qrels, Run

__all__ = ["level_matrix"]


def level_matrix(
    qrels: Qrels,
    runs: Sequence[Run],
    topic_idx: Sequence[int],
    col_of: dict[str, int],
    depth: int | None,
) -> tuple[np.ndarray, np.ndarray]:
    """(runs*topics, D) relevance levels in rank order, and (runs, topics) presence.

    Each run's lines are matched against every judgment at once through 64-bit
    (topic, docno) keys (one integer ``searchsorted``), then scattered into the
    matrix; string equality confirms every hash match.
    """
    n_topics = len(topic_idx)
    col_of_qrels_topic = np.full(len(qrels.topics), -1, dtype=np.int64)
    col_of_qrels_topic[list(topic_idx)] = np.arange(n_topics)
    table = qrels.key_table()
    present = np.zeros((len(runs), n_topics), dtype=bool)
    per_run: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (rows, ranks, levels)
    width = 1
    for ri, run in enumerate(runs):
        # Evaluation column and qrels index of each of the run's topics (-1: not evaluated).
        run_cols = np.array([col_of.get(t, -1) for t in run.topics], dtype=np.int64)
        run_qidx = np.array([_qidx(qrels, t) for t in run.topics], dtype=np.int64)
        sizes = np.diff(run.offsets)
        line_topic = np.repeat(np.arange(len(run.topics)), sizes)
        rank = np.arange(run.docnos.shape[0], dtype=np.int64) - np.repeat(run.offsets[:-1], sizes)
        keep = run_cols[line_topic] >= 0
        if depth is not None:
            keep &= rank < depth
        present[ri, run_cols[run_cols >= 0]] = True
        idx = np.flatnonzero(keep)
        qi = run_qidx[line_topic[idx]]
        levels = _match_levels(qrels, table, run, idx, qi)
        rows = ri * n_topics + run_cols[line_topic[idx]]
        ranks = rank[idx]
        if ranks.shape[0]:
            width = max(width, int(ranks.max()) + 1)
        per_run.append((rows, ranks, levels))
    matrix = np.full((len(runs) * n_topics, width), ABSENT, dtype=np.int32)
    for rows, ranks, levels in per_run:
        matrix[rows, ranks] = levels
    return matrix, present


def _qidx(qrels: Qrels, topic: str) -> int:
    i = qrels.topic_index(topic)
    return -1 if i is None else i


def _match_levels(qrels: Qrels, table, run: Run, idx: np.ndarray, qi: np.ndarray) -> np.ndarray:  # type: ignore[no-untyped-def]
    """Levels of the run lines ``idx`` (whose qrels topic indices are ``qi``); UNJUDGED if absent."""
    out = np.full(idx.shape[0], UNJUDGED, dtype=np.int64)
    if idx.shape[0] == 0:
        return out
    if table is None:  # no judgments, or a 64-bit key collision: compare strings per topic
        for t in np.unique(qi).tolist():
            sel = np.flatnonzero(qi == t)
            out[sel] = qrels.lookup(t, run.docnos[idx[sel]])
        return out
    keys, levels, docs, topics = table
    pos = keys.find(topic_keys(run.hashes()[idx], qi))
    hit = pos >= 0
    # Confirm every hash match on the topic and the bytes of the id.
    hit[hit] = (topics[pos[hit]] == qi[hit]) & (docs[pos[hit]] == run.docnos[idx[hit]])
    out[hit] = np.maximum(levels[pos[hit]], UNJUDGED)
    return out
