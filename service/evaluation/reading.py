"""Reading stored results: leaderboards and jobs. Nothing here computes a metric."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.errors import InvalidMeasure
from service.evaluation.setup import EVALUATOR_VERSION, get_collection
from service.metrics import parse_measure
from service.store.db import as_utc
from service.store.models import CollectionConfig, Job, QrelsVersion, Run, RunEvaluation, Score, Team


@dataclass(frozen=True)
class LeaderboardRow:
    rank: int
    run: str
    team: str
    mean: float
    ci_low: float | None  # None when fewer than two topics were scored
    ci_high: float | None
    n_topics: int
    qrels_version: int
    baseline: bool


def leaderboard(s: Session, collection: str, metric: str | None = None) -> tuple[str, list[LeaderboardRow]]:
    """Runs ranked by ``metric`` (default: the official one) on the current qrels version."""
    coll = get_collection(s, collection)
    if coll.current_qrels_id is None:
        return metric or "", []
    config = s.get(CollectionConfig, coll.current_config_id)
    assert config is not None
    name = str(parse_measure(metric)) if metric else config.official_metric
    if name not in config.metrics:
        raise InvalidMeasure(f"{name} is not among the collection's metrics: {', '.join(config.metrics)}")
    version = s.get(QrelsVersion, coll.current_qrels_id)
    q = (select(Run.tag, Team.name, Run.is_baseline, Score.mean, Score.ci_low, Score.ci_high, Score.n_topics)
         .join(RunEvaluation, RunEvaluation.id == Score.run_evaluation_id)
         .join(Run, Run.id == RunEvaluation.run_id).join(Team, Team.id == Run.team_id)
         .where(Run.collection_id == coll.id, RunEvaluation.qrels_version_id == coll.current_qrels_id,
                RunEvaluation.settings_hash == config.settings_hash,
                RunEvaluation.evaluator_version == EVALUATOR_VERSION, Score.metric == name)
         .order_by(Score.mean.desc(), Run.tag))
    rows: list[LeaderboardRow] = []
    for i, (tag, team, base, mean, lo, hi, n) in enumerate(s.execute(q.where(Score.mean.is_not(None)))):
        rank = i + 1 if not rows or mean != rows[-1].mean else rows[-1].rank  # ties share a rank
        rows.append(LeaderboardRow(rank, tag, team, mean, lo, hi, n, version.version if version else 0, base))
    return name, rows


def jobs(s: Session, collection: str | None = None) -> list[dict[str, Any]]:
    q = select(Job).order_by(Job.id)
    if collection:
        q = q.where(Job.collection_id == get_collection(s, collection).id)
    out = []
    for job in s.scalars(q):
        qv = s.get(QrelsVersion, job.qrels_version_id)
        out.append({"id": job.id, "collection_id": job.collection_id, "kind": job.kind, "status": job.status,
                    "done": job.done, "failed": job.failed, "total": job.total,
                    "qrels_version": qv.version if qv else None, "created_at": as_utc(job.created_at).isoformat(),
                    "finished_at": as_utc(job.finished_at).isoformat() if job.finished_at else None,
                    "error": job.error, "report": job.report})
    return out
