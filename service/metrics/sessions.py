"""Session DCG (Järvelin et al. 2008; the survey's section D): multi-query sessions.

A session has one topic, judged once in the qrels, and several reformulated queries,
each with its own ranked list. In a run, a query's topic id is ``SESSION<sep>POSITION``
(``sep`` default ``:``). For a session whose queries the run lists at positions
p_1 < p_2 < ... < p_m (compared as numbers when they all are, else as strings), the
q-th of them (q = 1..m) is discounted by 1/(1 + log_bq(q)):

    sDCG@k  = sum_{q=1..m} DCG@k(q) / (1 + log_bq q)
    nsDCG@k = sDCG@k / sum_{q=1..m} DCG_I@k / (1 + log_bq q)

DCG@k is Järvelin & Kekäläinen's with log base ``base`` (no discount at ranks <= base).

The ideal session (documented choice): the same number of queries m as the run issued,
each returning the session topic's ideal ranked list cut at k. nsDCG is then the
discount-weighted mean of the queries' nDCG@k: it lies in [0, 1], equals 1 exactly when
every query is ideal, and does not reward or punish a run for issuing more queries.
(Normalising by one ideal query instead, the other variant found in the literature, lets
a long session exceed 1 by retrieving the same relevant documents again.)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from service.errors import InvalidMeasure
from service.formats.types import Qrels, Run
from service.metrics.lists import TopicStats, ideal_vectors
from service.metrics.measures.common import GAINS, at_least_check, gain_table
from service.metrics.measures.cumgain import jk_discount
from service.metrics.spec import Measure, MetricDef, Param, register

BQ = Param("bq", "float", 4, "log base of the query discount 1/(1 + log_bq q)", check=at_least_check(1, strict=True))
SESSION_BASE = Param("base", "float", 2, "log base of J&K's rank discount in each query's DCG",
                     check=at_least_check(1, strict=True))


def _not_per_topic(*_: object) -> np.ndarray:
    raise InvalidMeasure("session metrics are evaluated per session (service.metrics.sessions)")


register(MetricDef("sDCG", _not_per_topic, (GAINS, BQ, SESSION_BASE), "session DCG (Järvelin et al. 2008)",
                   cutoff="required", family="session"))
register(MetricDef("nsDCG", _not_per_topic, (GAINS, BQ, SESSION_BASE), "session DCG normalised by the ideal session",
                   cutoff="required", family="session", ideal_is_one=True))


def split_session_topics(run: Run, sep: str = ":") -> dict[str, list[tuple[str, int]]]:
    """{session: [(position, index of the run's topic), ...] in query order}."""
    sessions: dict[str, list[tuple[str, int]]] = {}
    for i, topic in enumerate(run.topics):
        session, found, position = topic.rpartition(sep)
        if not found or not session or not position:
            raise InvalidMeasure(f"run {run.tag!r}: topic {topic!r} is not SESSION{sep}POSITION")
        sessions.setdefault(session, []).append((position, i))
    for queries in sessions.values():
        numeric = all(p.isascii() and p.isdigit() for p, _ in queries)
        queries.sort(key=lambda pq: (int(pq[0]), pq[0]) if numeric else (0, pq[0]))
    return sessions


def session_scores(
    qrels: Qrels,
    runs: Sequence[Run],
    measure: Measure,
    scale,  # type: ignore[no-untyped-def]
    session_index: Sequence[int],
    *,
    depth: int | None = None,
    sep: str = ":",
) -> tuple[np.ndarray, np.ndarray]:
    """(runs, sessions) sDCG or nsDCG values and (runs, sessions) presence."""
    k = measure.cutoff
    assert k is not None
    table = gain_table(measure, scale)
    bq, base = float(measure.get("bq")), float(measure.get("base"))
    col_of = {qrels.topics[qi]: c for c, qi in enumerate(session_index)}
    stats = TopicStats(qrels.level_counts(scale.max_level)[list(session_index)], scale.max_level)
    disc = jk_discount(k, base)
    ideal = ideal_vectors(stats, table)
    width = min(k, ideal.shape[1])
    gain_of = np.asarray(table, dtype=np.float64)
    ideal_dcg = np.zeros(len(session_index))
    ideal_dcg[:] = np.cumsum(ideal[:, :width] / disc[None, :width], axis=1)[:, -1]
    out = np.zeros((len(runs), len(session_index)))
    present = np.zeros((len(runs), len(session_index)), dtype=bool)
    for ri, run in enumerate(runs):
        for session, queries in split_session_topics(run, sep).items():
            c = col_of.get(session)
            if c is None:
                continue
            qi = session_index[c]
            total = ideal_total = 0.0
            for q, (_, ti) in enumerate(queries, start=1):
                lo, hi = int(run.offsets[ti]), int(run.offsets[ti + 1])
                hi = min(hi, lo + k, lo + depth if depth is not None else hi)
                levels = qrels.lookup(qi, run.docnos[lo:hi])
                gains = np.where(levels >= 0, gain_of[np.maximum(levels, 0)], 0.0)
                weight = 1.0 / (1.0 + np.log(q) / np.log(bq))
                total += weight * float(np.cumsum(gains / disc[: gains.shape[0]])[-1]) if gains.shape[0] else 0.0
                ideal_total += weight * ideal_dcg[c]
            present[ri, c] = True
            if measure.name == "nsDCG":
                out[ri, c] = total / ideal_total if ideal_total > 0 else 0.0
            else:
                out[ri, c] = total
    return out, present
