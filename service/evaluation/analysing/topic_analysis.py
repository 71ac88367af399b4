"""Per-topic figures over many runs: each topic's difficulty (the spread of the runs' scores on
it, sorted by median), its median and best run, and the run x topic matrix of a metric.

The runs are the rows of the caller's board (:func:`boards.board_rows`), so the secrecy rules
are the board's: before the release a participant's figures are over its own team's runs only
(never a figure of another team's unreleased run, not even in an aggregate); organisers see
every run; once the board is released everyone who may read it compares with every released
run. Under an unrevealed topic split, the hidden topics are left out for everyone but the
organisers. Everything is read from the stored per-topic scores; the medians and quartiles are
order statistics of a few hundred stored numbers, no metric is computed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy.orm import Session

from service.evaluation.organising.teams import team_name
from service.evaluation.permissions import policy
from service.evaluation.permissions.access import Principal
from service.evaluation.publishing.boards import RunFilter, board_rows, run_meta
from service.evaluation.publishing.reading import leaderboard as read_leaderboard
from service.evaluation.publishing.reading import stored_scores
from service.store.models import Collection


@dataclass(frozen=True)
class TopicScores:
    """The per-topic scores of the runs on the caller's board, for one metric, as one matrix."""

    metric: str
    runs: list[dict[str, Any]]  # board order: run, team, run_id, rank, own
    topics: list[str]  # the evaluated topics the caller may see, in stored order
    matrix: np.ndarray  # runs x topics (the orders above); NaN where a run was not scored on a topic
    ranked_among: str  # "all" or "team": whose runs the figures are over
    public: bool  # visible topics only (an unrevealed split)
    qrels_version: int | None

    def value(self, row: int, col: int) -> float | None:
        v = float(self.matrix[row, col])
        return None if math.isnan(v) else v


def topic_scores(s: Session, coll: Collection, me: Principal, metric: str | None = None) -> TopicScores:
    """The stored per-topic scores of ``metric`` (default: the official one) of every run on the
    caller's board, without the topics the caller may not see."""
    policy.require(policy.may_see_board(me, coll), me, f"the per-topic figures of collection {coll.id}")
    public = policy.sees_visible_topics_only(me, coll)
    hide = policy.hidden_topics(coll) if public else frozenset()
    name, rows = read_leaderboard(s, coll.name, metric, None, public)
    meta = run_meta(s, coll)
    visible, among = board_rows(s, coll, me, rows, RunFilter(), meta)
    mine = team_name(s, me)
    runs = [{"run": r.run, "team": r.team, "run_id": meta[r.run].id, "rank": r.rank,
             "own": mine is not None and r.team == mine} for r in visible]
    row_of = {meta[r.run].id: i for i, r in enumerate(visible)}
    got = stored_scores(s, coll, list(row_of), [name])
    # Columns in the order topics are first met; the runs of one evaluation share one topic list,
    # so each distinct list is mapped to columns once (not once per run).
    column: dict[str, int] = {}
    placed: dict[tuple[str, ...], tuple[np.ndarray, np.ndarray]] = {}
    for stored in got.values():
        key = tuple(stored.topics)
        if key not in placed:
            kept = np.array([t not in hide for t in key], dtype=bool)
            placed[key] = (kept, np.array([column.setdefault(t, len(column)) if t not in hide else -1 for t in key],
                                          dtype=np.intp)[kept])
    matrix = np.full((len(runs), len(column)), np.nan)
    for (run_id, _), stored in got.items():
        kept, cols = placed[tuple(stored.topics)]
        matrix[row_of[run_id], cols] = np.asarray(stored.values, dtype=float)[kept]
    return TopicScores(name, runs, list(column), matrix, "team" if among == "team" else "all", public,
                       visible[0].qrels_version if visible else None)


def topic_analysis(s: Session, coll: Collection, me: Principal, metric: str | None = None) -> dict[str, Any]:
    """Each topic's spread of scores over the runs on the caller's board, hardest first (by median):
    the number of runs scored on it, median, quartiles, least and best score, the runs that
    reach the best (ties: all of them) and the caller's own runs' scores."""
    data = topic_scores(s, coll, me, metric)
    x = data.matrix
    scored = ~np.isnan(x)
    counts = scored.sum(axis=0)
    gone = _missing_by_run(s, data) & scored
    submitted = scored & ~gone
    # (``initial``: a board with no run yet, e.g. before any qrels, is a 0 x 0 matrix)
    best = np.max(np.where(scored, x, -np.inf), axis=0, initial=-np.inf)
    least = np.min(np.where(scored, x, np.inf), axis=0, initial=np.inf)
    least_submitted = np.min(np.where(submitted, x, np.inf), axis=0, initial=np.inf)
    quartiles = _quartiles(x, counts)
    own_rows = [i for i, r in enumerate(data.runs) if r["own"]]
    names = [r["run"] for r in data.runs]
    items = []
    for j in np.flatnonzero(counts > 0).tolist():
        q1, median, q3 = quartiles[:, j].tolist()
        items.append({"topic": data.topics[j], "runs": int(counts[j]), "median": median, "q1": q1, "q3": q3,
                      "min": float(least[j]), "best": float(best[j]),
                      "best_runs": [names[i] for i in np.flatnonzero(scored[:, j] & (x[:, j] == best[j])).tolist()],
                      "missing": int(gone[:, j].sum()),
                      "min_submitted": float(least_submitted[j]) if submitted[:, j].any() else None,
                      "own": {names[i]: data.value(i, j) for i in own_rows},
                      "own_missing": [names[i] for i in own_rows if gone[i, j]]})
    items.sort(key=lambda i: (i["median"], i["topic"]))
    return {"collection": coll.name, "metric": data.metric, "released": coll.leaderboard_released,
            "topics": "visible only (public/private split)" if data.public else "all",
            "qrels_version": data.qrels_version, "runs_from": data.ranked_among,
            "runs": [{k: r[k] for k in ("run", "team", "run_id", "own")} for r in data.runs],
            "own_runs": [names[i] for i in own_rows], "items": items}


def _quartiles(filled: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The 25th, 50th and 75th percentiles of each column's scored values (NaN: not scored), a
    (3, topics) array. Columns with the same number of scored runs are taken together: sorted,
    their scored values are the first ``n`` rows, and numpy's percentile of those rows along
    the axis is, value for value, its percentile of each column alone."""
    out = np.full((3, filled.shape[1]), np.nan)
    ordered = np.sort(filled, axis=0)  # NaN sorts last
    for n in np.unique(counts[counts > 0]).tolist():
        cols = np.flatnonzero(counts == n)
        out[:, cols] = np.percentile(ordered[:n, cols], [25, 50, 75], axis=0)
    return out


def _missing_by_run(s: Session, data: TopicScores) -> np.ndarray:
    """Runs x topics: True where a run scored 0 on a topic its file has no line for (``missing:
    zero`` scores such a topic 0, like a real 0; issue 25, item 6). Only a run with a 0
    somewhere is looked up."""
    from service.evaluation.runs.run_results import missing_topics
    from service.store.models import Run

    gone = np.zeros(data.matrix.shape, dtype=bool)
    column = {t: j for j, t in enumerate(data.topics)}
    for i, r in enumerate(data.runs):
        zeros = [data.topics[j] for j in np.flatnonzero(data.matrix[i] == 0).tolist()]
        row = s.get(Run, r["run_id"]) if zeros and r["run_id"] is not None else None
        if row is not None:
            for t in missing_topics(row, zeros):
                gone[i, column[t]] = True
    return gone


def score_matrix(s: Session, coll: Collection, me: Principal, metric: str | None = None) -> dict[str, Any]:
    """The run x topic matrix of a metric: the runs on the caller's board (board order) by the
    topics the caller may see (stored order); null where a run was not scored on a topic."""
    data = topic_scores(s, coll, me, metric)
    cells = data.matrix.tolist()
    return {"collection": coll.name, "metric": data.metric, "qrels_version": data.qrels_version,
            "topics": data.topics, "runs_from": data.ranked_among,
            "rows": [{"run": r["run"], "team": r["team"], "run_id": r["run_id"], "rank": r["rank"],
                      "scores": [None if math.isnan(v) else v for v in row]}
                     for r, row in zip(data.runs, cells)]}
