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
    """The per-topic scores of the runs on the caller's board, for one metric."""

    metric: str
    runs: list[dict[str, Any]]  # board order: run, team, run_id, rank, own
    topics: list[str]  # the evaluated topics the caller may see, in stored order
    values: dict[str, dict[str, float | None]]  # run -> topic -> score (None: not scored)
    ranked_among: str  # "all" or "team": whose runs the figures are over
    public: bool  # visible topics only (an unrevealed split)
    qrels_version: int | None


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
    ids = {meta[r.run].id: r.run for r in visible}
    values: dict[str, dict[str, float | None]] = {}
    topics: dict[str, None] = {}
    for (run_id, _), got in stored_scores(s, coll, list(ids), [name]).items():
        per = values.setdefault(ids[run_id], {})
        for t, v in zip(got.topics, got.values.tolist()):
            if t not in hide:
                topics.setdefault(t)
                per[t] = None if math.isnan(v) else float(v)
    return TopicScores(name, runs, list(topics), values, "team" if among == "team" else "all", public,
                       visible[0].qrels_version if visible else None)


def topic_analysis(s: Session, coll: Collection, me: Principal, metric: str | None = None) -> dict[str, Any]:
    """Each topic's spread of scores over the runs on the caller's board, hardest first (by median):
    the number of runs scored on it, median, quartiles, least and best score, the runs that
    reach the best (ties: all of them) and the caller's own runs' scores."""
    data = topic_scores(s, coll, me, metric)
    own = [r["run"] for r in data.runs if r["own"]]
    gone = _missing_by_run(s, data)
    items = []
    for t in data.topics:
        scored = [(r["run"], data.values.get(r["run"], {}).get(t)) for r in data.runs]
        scored = [(run, v) for run, v in scored if v is not None]
        if not scored:
            continue
        v = np.array([x for _, x in scored])
        best = float(v.max())
        q1, median, q3 = (float(x) for x in np.percentile(v, [25, 50, 75]))
        submitted = [x for run, x in scored if t not in gone.get(run, ())]
        items.append({"topic": t, "runs": len(scored), "median": median, "q1": q1, "q3": q3,
                      "min": float(v.min()), "best": best, "best_runs": [run for run, x in scored if x == best],
                      "missing": len(scored) - len(submitted),
                      "min_submitted": float(min(submitted)) if submitted else None,
                      "own": {run: data.values.get(run, {}).get(t) for run in own},
                      "own_missing": [run for run in own if t in gone.get(run, ())]})
    items.sort(key=lambda i: (i["median"], i["topic"]))
    return {"collection": coll.name, "metric": data.metric, "released": coll.leaderboard_released,
            "topics": "visible only (public/private split)" if data.public else "all",
            "qrels_version": data.qrels_version, "runs_from": data.ranked_among,
            "runs": [{k: r[k] for k in ("run", "team", "run_id", "own")} for r in data.runs],
            "own_runs": own, "items": items}


def _missing_by_run(s: Session, data: TopicScores) -> dict[str, set[str]]:
    """Per run, the topics scored 0 that its file has no line for (``missing: zero`` scores them
    0, like a real 0; issue 25, item 6). Only a run with a 0 somewhere has its file read."""
    from service.evaluation.runs.run_results import missing_topics
    from service.store.models import Run

    out: dict[str, set[str]] = {}
    for r in data.runs:
        zeros = [t for t, v in data.values.get(r["run"], {}).items() if v == 0]
        row = s.get(Run, r["run_id"]) if zeros and r["run_id"] is not None else None
        if row is not None:
            out[r["run"]] = missing_topics(row, zeros)
    return out


def score_matrix(s: Session, coll: Collection, me: Principal, metric: str | None = None) -> dict[str, Any]:
    """The run x topic matrix of a metric: the runs on the caller's board (board order) by the
    topics the caller may see (stored order); null where a run was not scored on a topic."""
    data = topic_scores(s, coll, me, metric)
    return {"collection": coll.name, "metric": data.metric, "qrels_version": data.qrels_version,
            "topics": data.topics, "runs_from": data.ranked_among,
            "rows": [{"run": r["run"], "team": r["team"], "run_id": r["run_id"], "rank": r["rank"],
                      "scores": [data.values.get(r["run"], {}).get(t) for t in data.topics]} for r in data.runs]}
