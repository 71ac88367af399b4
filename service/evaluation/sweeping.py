"""Keeping stored results whole and current: the beat-scheduled sweeper and refresh.

:func:`sweep` re-queues work whose broker message was lost or whose worker died (the
database says what is left; see :mod:`service.evaluation.planning`); :func:`refresh_stale`
plans a job for every collection whose stored results are not current.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session, sessionmaker

from service.evaluation.evaluating import finish_item, maybe_start_tests
from service.evaluation.planning import ACTIVE, job_key, params_hash, plan_job, runs_hash
from service.evaluation.results import current_result, tested_under
from service.evaluation.work import Followup, TaskName
from service.store.db import as_utc, transaction
from service.store.models import Collection, CollectionConfig, Job, JobItem, Run, RunEvaluation, Significance, utcnow


def sweep(factory: sessionmaker[Session], timeout: float, max_attempts: int = 3) -> list[Followup]:
    """Re-queue work that is stuck: items evaluating past ``timeout`` seconds, queued items
    of jobs without progress for that long, and tests queued that long ago (given up, with
    the job failed, after ``max_attempts``)."""
    now = utcnow()
    limit = now - timedelta(seconds=timeout)
    followups: list[Followup] = []
    with transaction(factory) as s:
        for item in s.scalars(select(JobItem).where(JobItem.status == "evaluating")):
            started = as_utc(item.started_at)
            if started is not None and started >= limit:
                continue
            if item.attempts >= max_attempts:
                followups += finish_item(s, item, ok=False,
                                         error=f"no result after {item.attempts} attempts (worker lost or too slow)")
                continue
            same_claim = (JobItem.started_at.is_(None) if item.started_at is None
                          else JobItem.started_at == item.started_at)  # not re-claimed meanwhile
            if s.execute(update(JobItem).where(JobItem.id == item.id, JobItem.status == "evaluating", same_claim)
                         .values(status="queued", queued_at=now)
                         .execution_options(synchronize_session=False)).rowcount:
                followups.append(Followup(TaskName.EVALUATE_ITEM, item.id))
        for job in s.scalars(select(Job).where(Job.status == "running")):
            items = list(s.scalars(select(JobItem).where(JobItem.job_id == job.id)))
            marks = [as_utc(t) for it in items for t in (it.queued_at, it.started_at, it.finished_at) if t]
            if marks and max(marks) < limit:  # no progress for `timeout`: the messages were lost
                for it in items:
                    if it.status == "queued" and s.execute(
                            update(JobItem).where(JobItem.id == it.id, JobItem.status == "queued")
                            .values(queued_at=now).execution_options(synchronize_session=False)).rowcount:
                        followups.append(Followup(TaskName.EVALUATE_ITEM, it.id))
            followups += maybe_start_tests(s, job.id)
        for job in s.scalars(select(Job).where(Job.status == "testing")):
            queued = as_utc(job.tests_queued_at)
            if queued is not None and queued >= limit:
                continue
            if job.tests_attempts >= max_attempts:
                job.status, job.finished_at = "failed", now
                job.error = f"the significance tests did not complete after {job.tests_attempts} attempts"
            else:
                job.tests_attempts += 1
                job.tests_queued_at = now
                followups.append(Followup(TaskName.RUN_TESTS, job.id))
    return followups


def refresh_stale(factory: sessionmaker[Session]) -> list[Followup]:
    """Plan a job for every collection whose stored results are stale: an older qrels
    version, another metric set or settings, another test configuration, or an older
    evaluator version. Runs that already failed under the current key are not retried
    (`cranfield reevaluate` does that)."""
    followups: list[Followup] = []
    with transaction(factory) as s:
        for coll in s.scalars(select(Collection).where(Collection.current_qrels_id.is_not(None))):
            config = s.get(CollectionConfig, coll.current_config_id)
            assert config is not None
            key = job_key(coll, config)
            if s.scalar(select(Job.id).where(*key, Job.status.in_(ACTIVE))) is not None:
                continue  # being brought up to date already
            failed = set(s.scalars(select(JobItem.run_id).join(Job).where(*key, JobItem.status == "failed")))
            runs = [r for r in s.scalars(select(Run.id).where(Run.collection_id == coll.id)) if r not in failed]
            fresh = set(s.scalars(select(RunEvaluation.run_id).join(Run).where(
                Run.collection_id == coll.id, current_result(coll, coll.current_qrels_id))))
            stale = any(r not in fresh for r in runs) or (
                len(fresh) > 1 and not _tests_current(s, coll, config, sorted(fresh))
                and not _tests_attempted_since_last_result(s, coll, key))
            if stale:
                _, more = plan_job(s, coll, "scheduled", retry_failed=False)
                followups += more
    return followups


def _tests_attempted_since_last_result(s: Session, coll: Collection, key: tuple[Any, ...]) -> bool:
    """A job with this key finished after the newest stored result: its tests ran (or could
    not run, as its report says); planning them again would only repeat that."""
    last_result = s.scalar(select(func.max(RunEvaluation.computed_at)).join(Run).where(
        Run.collection_id == coll.id, RunEvaluation.qrels_version_id == coll.current_qrels_id))
    last_job = s.scalar(select(func.max(Job.finished_at)).where(*key, Job.status == "done"))
    return last_result is not None and last_job is not None and as_utc(last_job) >= as_utc(last_result)


def _tests_current(s: Session, coll: Collection, config: CollectionConfig, run_ids: list[int]) -> bool:
    """Whether every configured test matrix exists for these runs and test settings."""
    sig = config.significance
    for metric in sig.get("metrics") or [config.official_metric]:
        if s.scalar(select(Significance.id).where(
                tested_under(coll.current_qrels_id, config.settings_hash), Significance.metric == metric,
                Significance.runs_hash == runs_hash(run_ids), Significance.params_hash == params_hash(sig),
                Significance.subset == "all")) is None:
            return False
    return True
