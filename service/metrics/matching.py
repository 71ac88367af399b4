"""Matching runs against judgments: the relevance level of every ranked document.

The one place where a run's lines meet the qrels. The metric families (``measures``) and
the evaluator (``scoring``) both call it, and it imports neither, so the registry of
measures and the evaluator do not import each other through it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np

from service.formats.keys import topic_keys
from service.formats.types import ABSENT, UNJUDGED, Qrels, Run

__all__ = ["level_matrix", "matches_reused"]

#: The matchings made within :func:`matches_reused` (None outside it).
_REUSED: ContextVar[dict[tuple[Any, ...], tuple[Any, ...]] | None] = ContextVar("reused_matches", default=None)


@contextmanager
def matches_reused() -> Iterator[None]:
    """Within it, :func:`level_matrix` called again with the same qrels and run objects, topics and
    depth returns the arrays it made the first time instead of matching again (an evaluation item's
    metrics and its gain curves match the run once, issue 38). The arrays are shared, so they are
    made read-only: a caller that wrote into them would fail loudly rather than change the other's."""
    token = _REUSED.set({})
    try:
        yield
    finally:
        _REUSED.reset(token)


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
    matrix; string equality confirms every hash match. Within :func:`matches_reused`, made once
    per (qrels, runs, topics, depth); ``col_of`` follows from the qrels and topics.
    """
    reused = _REUSED.get()
    if reused is None:
        return _level_matrix(qrels, runs, topic_idx, col_of, depth)
    key = (id(qrels), tuple(map(id, runs)), tuple(int(i) for i in topic_idx), depth)
    found = reused.get(key)
    # the objects themselves are kept with the arrays: an id is never taken for another object's
    if found is not None and found[0] is qrels and all(a is b for a, b in zip(found[1], runs)):
        return found[2]
    matrix, present = _level_matrix(qrels, runs, topic_idx, col_of, depth)
    matrix.setflags(write=False)
    present.setflags(write=False)
    reused[key] = (qrels, tuple(runs), (matrix, present))
    return matrix, present


def _level_matrix(
    qrels: Qrels,
    runs: Sequence[Run],
    topic_idx: Sequence[int],
    col_of: dict[str, int],
    depth: int | None,
) -> tuple[np.ndarray, np.ndarray]:
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
