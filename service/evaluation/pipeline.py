"""The evaluation pipeline: plan a job, evaluate its runs, test all pairs, sweep, refresh.

These use cases are what the Celery tasks (workers/) and the CLI call; they take ids,
open their own transactions and return the follow-up work to send *after* their
transaction has committed (``Followup``); they never talk to the broker themselves.

Guarantees:
- Results of a run are written in one transaction (RunEvaluation + every Score), keyed
  by (run, qrels version, settings hash, evaluator version): a killed worker leaves
  nothing, a duplicate execution writes nothing twice.
- The database says what remains to be done: a job's items move queued -> evaluating ->
  done | failed, and the sweeper re-queues items that stay "evaluating" (or a stalled
  job's "queued" items) past the timeout, so a lost broker message or a killed worker
  delays an evaluation but never loses it.
- The pairwise tests of a job run once every item is done or failed (a counter updated
  in the items' own transactions plays the part of a Celery chord, without needing a
  result backend).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import numpy as np
from scipy import stats
from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from service.evaluation.setup import EVALUATOR_VERSION, eval_settings, load_qrels, load_run
from service.formats.types import Qrels
from service.metrics import evaluate
from service.metrics.stats.common import pair_indices
from service.metrics.stats.pairwise import pairwise
from service.store.arrays import pack, unpack
from service.store.db import as_utc, transaction
from service.store.models import (
    Collection,
    CollectionConfig,
    Job,
    JobItem,
    QrelsVersion,
    Run,
    RunEvaluation,
    Score,
    Significance,
    utcnow,
)

ACTIVE = ("queued", "running", "testing")


@dataclass(frozen=True)
class Followup:
    """Work to send to the workers once the current transaction has committed."""

    task: str  # "evaluate_item" | "run_tests"
    id: int


# ------------------------------------------------------------------------------ planning
def plan_job(session: Session, coll: Collection, kind: str, previous_qrels_id: int | None = None) -> tuple[Job, list[Followup]]:
    """A job evaluating every run of ``coll`` that lacks current results, then the tests.

    Deduplicated: an active job for the same (collection, qrels version, configuration)
    is returned instead of a new one.
    """
    if coll.current_qrels_id is None or coll.current_config_id is None:
        raise ValueError(f"collection {coll.name!r} has no qrels yet")
    config = session.get(CollectionConfig, coll.current_config_id)
    assert config is not None
    active = session.scalar(select(Job).where(
        Job.collection_id == coll.id, Job.qrels_version_id == coll.current_qrels_id,
        Job.config_id == config.id, Job.status.in_(ACTIVE)))
    if active is not None:
        return active, []
    evaluated = set(session.scalars(select(RunEvaluation.run_id).join(Run).where(
        Run.collection_id == coll.id, RunEvaluation.qrels_version_id == coll.current_qrels_id,
        RunEvaluation.settings_hash == config.settings_hash, RunEvaluation.evaluator_version == EVALUATOR_VERSION)))
    run_ids = [r for r in session.scalars(select(Run.id).where(Run.collection_id == coll.id).order_by(Run.id))
               if r not in evaluated]
    job = Job(collection_id=coll.id, kind=kind, qrels_version_id=coll.current_qrels_id,
              previous_qrels_id=previous_qrels_id, config_id=config.id, status="running" if run_ids else "testing",
              total=len(run_ids))
    session.add(job)
    session.flush()
    items = [JobItem(job_id=job.id, run_id=r) for r in run_ids]
    session.add_all(items)
    session.flush()
    if not run_ids:
        job.tests_queued_at = utcnow()
        return job, [Followup("run_tests", job.id)]
    return job, [Followup("evaluate_item", it.id) for it in items]


# ---------------------------------------------------------------------------- evaluating
_QRELS_CACHE: dict[tuple[str, int], Qrels] = {}


def _qrels_for(session: Session, version_id: int) -> Qrels:
    """Qrels versions are immutable: each worker process parses one at most once."""
    key = (str(session.get_bind().url), version_id)
    if key not in _QRELS_CACHE:
        version = session.get(QrelsVersion, version_id)
        assert version is not None
        if len(_QRELS_CACHE) >= 4:
            _QRELS_CACHE.pop(next(iter(_QRELS_CACHE)))
        _QRELS_CACHE[key] = load_qrels(version)
    return _QRELS_CACHE[key]


def evaluate_item(
    factory: sessionmaker[Session], item_id: int, max_attempts: int = 3, pause: float = 0.0
) -> list[Followup]:
    """Evaluate one job item's run on the job's qrels version and configuration.

    ``pause`` (tests only) waits between claiming the item and computing, so that a
    test can kill a worker while items are "evaluating".
    """
    with transaction(factory) as s:  # claim the item
        item = s.get(JobItem, item_id)
        if item is None or item.status in ("done", "failed"):
            return []
        if item.attempts >= max_attempts:
            return _finish_item(s, item, ok=False, error=f"gave up after {item.attempts} attempts")
        item.status, item.started_at, item.attempts = "evaluating", utcnow(), item.attempts + 1
        job = s.get(Job, item.job_id)
        run = s.get(Run, item.run_id)
        assert job is not None and run is not None
        run.status = "evaluating"
        config = s.get(CollectionConfig, job.config_id)
        assert config is not None
        key = dict(run_id=run.id, qrels_version_id=job.qrels_version_id, settings_hash=config.settings_hash,
                   evaluator_version=EVALUATOR_VERSION)
        already = s.scalar(select(RunEvaluation.id).filter_by(**key))
    if already is not None:  # computed before (a retry, or another job): nothing to redo
        with transaction(factory) as s:
            return _finish_item(s, s.get(JobItem, item_id), ok=True)

    if pause:
        time.sleep(pause)
    started = time.perf_counter()
    try:
        with factory() as s:
            config = s.get(CollectionConfig, job.config_id)
            run = s.get(Run, item.run_id)
            qrels = _qrels_for(s, job.qrels_version_id)
            core_run = load_run(run, config.evaluation.get("order", "score"))
            result = evaluate(qrels, [core_run], config.metrics, eval_settings(config))
    except Exception as exc:  # a run that cannot be evaluated fails alone; the others go on
        with transaction(factory) as s:
            return _finish_item(s, s.get(JobItem, item_id), ok=False, error=f"{type(exc).__name__}: {exc}")

    seconds = time.perf_counter() - started
    try:
        with transaction(factory) as s:
            fresh = s.get(JobItem, item_id)
            if fresh is None or fresh.status in ("done", "failed"):
                return []
            evaluation = RunEvaluation(config_id=config.id, topics=list(result.topics), seconds=seconds, **key)
            s.add(evaluation)
            s.flush()
            s.add_all(_score_rows(evaluation.id, result))
            return _finish_item(s, fresh, ok=True)
    except IntegrityError:  # another worker stored the same results first
        with transaction(factory) as s:
            return _finish_item(s, s.get(JobItem, item_id), ok=True)


def _score_rows(evaluation_id: int, result: Any) -> list[Score]:
    rows = []
    for m in result.measures:
        values = result.per_topic(m)[0]
        kept = values[~np.isnan(values)]
        n = int(kept.shape[0])
        mean = float(kept.mean()) if n else float("nan")
        if n > 1:  # the run's own 95% t interval: it does not move when runs are added
            half = float(stats.t.ppf(0.975, n - 1) * kept.std(ddof=1) / np.sqrt(n))
        else:
            half = float("nan")
        rows.append(Score(run_evaluation_id=evaluation_id, metric=str(m), mean=mean, ci_low=mean - half,
                          ci_high=mean + half, n_topics=n, values=pack(values)))
    return rows


def _finish_item(s: Session, item: JobItem | None, *, ok: bool, error: str = "") -> list[Followup]:
    """Mark an item done/failed (once) and count it on its job; start the tests when all are in."""
    if item is None:
        return []
    changed = s.execute(
        update(JobItem).where(JobItem.id == item.id, JobItem.status.not_in(("done", "failed")))
        .values(status="done" if ok else "failed", finished_at=utcnow(), error=error)
    ).rowcount
    if not changed:
        return []
    run = s.get(Run, item.run_id)
    if run is not None:
        run.status, run.status_reason = ("evaluated", "") if ok else ("failed", error)
    counter = Job.done if ok else Job.failed
    s.execute(update(Job).where(Job.id == item.job_id).values({counter: counter + 1}))
    return _maybe_start_tests(s, item.job_id)


def _maybe_start_tests(s: Session, job_id: int) -> list[Followup]:
    job = s.get(Job, job_id, populate_existing=True)
    if job is None or job.done + job.failed < job.total or job.tests_queued_at is not None:
        return []
    job.status, job.tests_queued_at = "testing", utcnow()
    return [Followup("run_tests", job.id)]


# ------------------------------------------------------------------------ pairwise tests
def run_tests(factory: sessionmaker[Session], job_id: int) -> list[Followup]:
    """The pairwise significance tests of the job's metrics, then the rank-change report."""
    with factory() as s:
        job = s.get(Job, job_id)
        if job is None or job.status in ("done", "failed"):
            return []
        config = s.get(CollectionConfig, job.config_id)
        assert config is not None
        sig = config.significance
        metrics = sig.get("metrics") or [config.official_metric]
        rows = _stored_scores(s, job.collection_id, job.qrels_version_id, config.settings_hash, metrics)
    results = []
    for metric, (run_ids, topics, matrix) in rows.items():
        if len(run_ids) < 2:
            continue
        res = pairwise(matrix, [str(r) for r in run_ids], sig["test"], resamples=int(sig["resamples"]),
                       alpha=float(sig["alpha"]), correction=sig["correction"], seed=int(sig["seed"]))
        results.append((metric, run_ids, res))
    with transaction(factory) as s:
        job = s.get(Job, job_id)
        if job is None or job.status in ("done", "failed"):
            return []
        for metric, run_ids, res in results:
            runs_hash = _runs_hash(run_ids)
            exists = s.scalar(select(Significance.id).where(
                Significance.qrels_version_id == job.qrels_version_id, Significance.metric == metric,
                Significance.test == res.test, Significance.settings_hash == config.settings_hash,
                Significance.evaluator_version == EVALUATOR_VERSION, Significance.runs_hash == runs_hash))
            if exists is None:
                s.add(Significance(
                    collection_id=job.collection_id, qrels_version_id=job.qrels_version_id, metric=metric,
                    test=res.test, settings_hash=config.settings_hash, evaluator_version=EVALUATOR_VERSION,
                    runs_hash=runs_hash, params={k: sig[k] for k in ("resamples", "alpha", "correction", "seed")},
                    run_ids=list(run_ids), n_topics=res.n_topics, diff=pack(res.diff), statistic=pack(res.statistic),
                    p=pack(res.p), p_adjusted=pack(res.p_adjusted)))
        job.report = rank_changes(s, job, config) if job.previous_qrels_id else {}
        job.status = "done"
        if job.failed:
            job.error = f"{job.failed} of {job.total} runs failed; see their status"
        job.finished_at = utcnow()
    return []


def _runs_hash(run_ids: list[int]) -> str:
    import hashlib

    return hashlib.sha256(",".join(map(str, run_ids)).encode()).hexdigest()


def _stored_scores(
    s: Session, collection_id: int, qrels_id: int, settings: str, metrics: list[str]
) -> dict[str, tuple[list[int], list[str], np.ndarray]]:
    """(run ids, topics, (topics, runs) matrix) of each metric, from the stored results."""
    q = (select(RunEvaluation.run_id, RunEvaluation.topics, Score.metric, Score.values)
         .join(Score).join(Run, Run.id == RunEvaluation.run_id)
         .where(Run.collection_id == collection_id, RunEvaluation.qrels_version_id == qrels_id,
                RunEvaluation.settings_hash == settings, RunEvaluation.evaluator_version == EVALUATOR_VERSION,
                Score.metric.in_(metrics))
         .order_by(RunEvaluation.run_id))
    out: dict[str, tuple[list[int], list[str], list[np.ndarray]]] = {}
    for run_id, topics, metric, blob in s.execute(q):
        ids, tops, cols = out.setdefault(metric, ([], list(topics), []))
        ids.append(run_id)
        cols.append(unpack(blob))
    return {m: (ids, tops, np.column_stack(cols)) for m, (ids, tops, cols) in out.items()}


def rank_changes(s: Session, job: Job, config: CollectionConfig) -> dict[str, Any]:
    """Each run's old and new rank and mean on the official metric, between two qrels versions."""
    metric = config.official_metric

    def ranking(qrels_id: int) -> dict[int, float]:
        q = (select(RunEvaluation.run_id, Score.mean, RunEvaluation.computed_at).join(Score)
             .join(Run, Run.id == RunEvaluation.run_id)
             .where(Run.collection_id == job.collection_id, RunEvaluation.qrels_version_id == qrels_id,
                    Score.metric == metric).order_by(RunEvaluation.computed_at))
        return {run_id: mean for run_id, mean, _ in s.execute(q)}  # the latest evaluation wins

    old, new = ranking(job.previous_qrels_id), ranking(job.qrels_version_id)
    old_rank, new_rank = _ranks(old), _ranks(new)
    tags = dict(s.execute(select(Run.id, Run.tag).where(Run.id.in_(set(old) | set(new)))).all())
    rows = [{"run": tags[r], "old_rank": old_rank.get(r), "new_rank": new_rank.get(r),
             "old_mean": old.get(r), "new_mean": new.get(r)} for r in sorted(set(old) | set(new), key=lambda r: new_rank.get(r, 10**9))]
    old_v = s.get(QrelsVersion, job.previous_qrels_id)
    new_v = s.get(QrelsVersion, job.qrels_version_id)
    return {"metric": metric, "old_qrels_version": old_v.version if old_v else None,
            "new_qrels_version": new_v.version if new_v else None, "runs": rows}


def _ranks(means: dict[int, float]) -> dict[int, int]:
    """Competition ranking (1, 2, 2, 4) by decreasing mean."""
    ordered = sorted(means.items(), key=lambda kv: -kv[1])
    out: dict[int, int] = {}
    for i, (run_id, mean) in enumerate(ordered):
        out[run_id] = i + 1 if i == 0 or mean != ordered[i - 1][1] else out[ordered[i - 1][0]]
    return out


# -------------------------------------------------------------------- sweeping, refreshing
def sweep(factory: sessionmaker[Session], timeout: float, max_attempts: int = 3) -> list[Followup]:
    """Re-queue work that is stuck: items evaluating past ``timeout`` seconds, queued items
    of jobs without progress for that long, and tests queued that long ago."""
    now = utcnow()
    limit = now - timedelta(seconds=timeout)
    followups: list[Followup] = []
    with transaction(factory) as s:
        for item in s.scalars(select(JobItem).where(JobItem.status == "evaluating")):
            if as_utc(item.started_at) and as_utc(item.started_at) < limit:
                if item.attempts >= max_attempts:
                    followups += _finish_item(s, item, ok=False,
                                              error=f"no result after {item.attempts} attempts (worker lost or too slow)")
                else:
                    item.status, item.queued_at = "queued", now
                    followups.append(Followup("evaluate_item", item.id))
        for job in s.scalars(select(Job).where(Job.status.in_(("queued", "running")))):
            items = list(s.scalars(select(JobItem).where(JobItem.job_id == job.id)))
            marks = [as_utc(t) for it in items for t in (it.queued_at, it.started_at, it.finished_at) if t]
            if marks and max(marks) < limit:  # no progress for `timeout`: the messages were lost
                for it in items:
                    if it.status == "queued":
                        it.queued_at = now
                        followups.append(Followup("evaluate_item", it.id))
            if job.done + job.failed >= job.total and job.tests_queued_at is None:
                followups += _maybe_start_tests(s, job.id)
        for job in s.scalars(select(Job).where(Job.status == "testing")):
            if job.tests_queued_at is None or as_utc(job.tests_queued_at) < limit:
                job.tests_queued_at = now
                followups.append(Followup("run_tests", job.id))
    return followups


def refresh_stale(factory: sessionmaker[Session]) -> list[Followup]:
    """Plan a job for every collection whose stored results are stale: an older qrels
    version, another metric set or settings, or an older evaluator version."""
    followups: list[Followup] = []
    with transaction(factory) as s:
        for coll in s.scalars(select(Collection).where(Collection.current_qrels_id.is_not(None))):
            config = s.get(CollectionConfig, coll.current_config_id)
            n_runs = len(s.scalars(select(Run.id).where(Run.collection_id == coll.id)).all())
            fresh = len(s.scalars(select(RunEvaluation.id).join(Run).where(
                Run.collection_id == coll.id, RunEvaluation.qrels_version_id == coll.current_qrels_id,
                RunEvaluation.settings_hash == config.settings_hash,
                RunEvaluation.evaluator_version == EVALUATOR_VERSION)).all())
            tested = s.scalar(select(Significance.id).where(
                Significance.qrels_version_id == coll.current_qrels_id,
                Significance.settings_hash == config.settings_hash,
                Significance.evaluator_version == EVALUATOR_VERSION))
            if n_runs and (fresh < n_runs or (n_runs > 1 and tested is None)):
                _, more = plan_job(s, coll, "scheduled")
                followups += more
    return followups
