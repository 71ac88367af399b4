"""Keeping stored results whole and current: the beat-scheduled sweeper and refresh.

:func:`sweep` re-queues work whose attempt died (its lease expired: nobody renews it) and
sends again work whose broker message was lost (the database says what is left; see
:mod:`service.evaluation.organising.planning`); :func:`refresh_stale` plans a job for every collection
whose stored results are not current.
"""

from __future__ import annotations

from datetime import timedelta
from itertools import groupby
from typing import Any

from sqlalchemy import func, or_, select, update
from sqlalchemy.orm import Session, sessionmaker

from service.evaluation.analysing import analyses
from service.evaluation.common.work import Followup
from service.evaluation.computing.evaluating import finish_item, gave_up, lease_expired, maybe_start_tests
from service.evaluation.computing.significance_tests import mark, pending_elsewhere, tests_gave_up
from service.evaluation.judging import judge_track
from service.evaluation.organising.planning import (
    ACTIVE,
    PENDING,
    item_followups,
    job_key,
    params_hash,
    plan_job,
    runs_hash,
    tests_followup,
)
from service.evaluation.organising.results import current_result, tested_under
from service.evaluation.reproducing import measuring
from service.store.db import as_utc, db_now, transaction
from service.store.models import (
    Analysis,
    Collection,
    CollectionConfig,
    Job,
    JobItem,
    JudgmentSet,
    Run,
    RunEvaluation,
    Significance,
)


def messages_missing(factory: sessionmaker[Session], backlog: int | None) -> bool:
    """Whether the broker's queue (``backlog`` messages; None: unknown) holds fewer messages
    than the database has queued work: then some were lost (a broker restart, a send that
    failed after its commit) and queued work that waited ``lost_after`` is sent again."""
    if backlog is None:
        return True
    with factory() as s:
        queued = (s.scalar(select(func.count()).select_from(JobItem).where(JobItem.status == "queued")) or 0) + \
            (s.scalar(select(func.count()).select_from(Analysis).where(Analysis.status == "queued")) or 0)
    return backlog < max(queued, 1)


def sweep(factory: sessionmaker[Session], max_attempts: int = 3, *, lost_after: float = 15.0,
          stuck_timeout: float = 600.0, backlog: int | None = None, tests_max_wait: float = 60.0) -> list[Followup]:
    """One round of the sweeper, each change a short conditional transaction of its own:

    - an item whose claim expired (its attempt stopped renewing the lease: a dead worker) is
      re-queued, or failed after ``max_attempts`` claims; a live attempt is never touched,
      however long it runs;
    - queued work (items, waiting tests, analyses) last sent ``lost_after`` seconds ago is
      sent again when the broker holds fewer messages than there is queued work
      (:func:`messages_missing`), and after ``stuck_timeout`` seconds in any case;
    - a job without pending items gets its tests queued; waiting tests whose rounds all died
      fail the job after ``max_attempts`` rounds.
    """
    with factory() as s:  # the database's clock, which every lease and mark was written on
        now = db_now(s)
    missing = messages_missing(factory, backlog)
    grace = timedelta(seconds=lost_after if missing else stuck_timeout)
    followups: list[Followup] = []
    with factory() as s:
        claimed = list(s.scalars(select(JobItem.id).where(JobItem.status == "evaluating", or_(
            JobItem.lease_expires_at < now, JobItem.lease_expires_at.is_(None)))))
    for item_id in claimed:  # dead attempts
        with transaction(factory) as s:
            item = s.get(JobItem, item_id)
            if item is None or item.status != "evaluating" or not lease_expired(item, now, stuck_timeout):
                continue
            if item.attempts >= max_attempts:
                followups += finish_item(s, item, ok=False, error=gave_up(item.attempts), attempt=item.attempts)
            elif s.execute(update(JobItem).where(JobItem.id == item.id, JobItem.status == "evaluating",
                                                 JobItem.attempts == item.attempts)
                           .values(status="queued", queued_at=now, lease_expires_at=None)
                           .execution_options(synchronize_session=False)).rowcount:
                followups += item_followups(s, [item.id])
    with transaction(factory) as s:  # lost messages of queued items
        lost = list(s.scalars(select(JobItem.id).where(JobItem.status == "queued", JobItem.queued_at < now - grace)))
        if lost:
            s.execute(update(JobItem).where(JobItem.id.in_(lost), JobItem.status == "queued")
                      .values(queued_at=now).execution_options(synchronize_session=False))
            followups += item_followups(s, lost)
    with factory() as s:  # every item finished, but the tests were never queued
        pending = select(JobItem.id).where(JobItem.job_id == Job.id, JobItem.status.in_(PENDING)).exists()
        running = list(s.scalars(select(Job.id).where(Job.status == "running", ~pending)))
    for job_id in running:
        with transaction(factory) as s:
            followups += maybe_start_tests(s, job_id)
    followups += _sweep_tests(factory, now, grace, max_attempts, tests_max_wait)
    followups += analyses.sweep(factory, stuck_timeout, lost_after=lost_after if missing else None)
    return followups


def _sweep_tests(factory: sessionmaker[Session], now: Any, grace: timedelta, max_attempts: int,
                 tests_max_wait: float) -> list[Followup]:
    """Waiting tests (jobs "testing"), per key: nothing while a round is alive; jobs whose
    rounds all died fail; otherwise, once the newest was sent ``grace`` ago and nothing of
    the key is pending any more, the round is sent again (for the newest job: it covers all)."""
    followups: list[Followup] = []
    with factory() as s:
        waiting = list(s.scalars(select(Job).where(Job.status == "testing")))
    key = lambda j: (j.collection_id, j.qrels_version_id, j.config_id, j.evaluator_version)  # noqa: E731
    for _, group in groupby(sorted(waiting, key=key), key=key):
        jobs = list(group)
        if any(mark(j) > now for j in jobs):
            continue  # a round is alive
        with transaction(factory) as s:
            for j in jobs:
                if j.tests_attempts >= max_attempts:
                    s.execute(update(Job).where(Job.id == j.id, Job.status == "testing",
                                                Job.tests_attempts == j.tests_attempts)
                              .values(status="failed", finished_at=now, error=tests_gave_up(j.tests_attempts))
                              .execution_options(synchronize_session=False))
            rest = [j for j in jobs if j.tests_attempts < max_attempts]
            if not rest:
                continue
            newest = max(rest, key=lambda j: (mark(j), j.id))
            if mark(newest) > now - grace:
                continue  # its message may still come
            if min(mark(j) for j in rest) > now - timedelta(seconds=tests_max_wait) and pending_elsewhere(s, newest):
                continue  # the last job to finish its items sends the round
            if s.execute(update(Job).where(Job.id == newest.id, Job.status == "testing",
                                           Job.tests_attempts == newest.tests_attempts)
                         .values(tests_queued_at=now).execution_options(synchronize_session=False)).rowcount:
                followups.append(tests_followup(s, newest.id))
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
            followups += _refresh_other_sets(s, coll, config)
            followups += judge_track.queue_if_stale(s, coll)
            followups += measuring.queue_if_stale(s, coll)
    return followups


def _refresh_other_sets(s: Session, coll: Collection, config: CollectionConfig) -> list[Followup]:
    """Evaluate the newest version of every other judgment set that evaluates automatically and
    lacks a run's current results (after a configuration change, say); runs that failed under
    the same key are not retried."""
    followups: list[Followup] = []
    for js in s.scalars(select(JudgmentSet).where(JudgmentSet.collection_id == coll.id,
                                                  JudgmentSet.id != coll.official_set_id,
                                                  JudgmentSet.auto_evaluate.is_(True),
                                                  JudgmentSet.current_version_id.is_not(None))):
        key = job_key(coll, config, js.current_version_id)
        if s.scalar(select(Job.id).where(*key, Job.status.in_(ACTIVE))) is not None:
            continue
        failed = set(s.scalars(select(JobItem.run_id).join(Job).where(*key, JobItem.status == "failed")))
        fresh = set(s.scalars(select(RunEvaluation.run_id).join(Run).where(
            Run.collection_id == coll.id, current_result(coll, js.current_version_id))))
        if any(r not in fresh and r not in failed for r in s.scalars(select(Run.id).where(Run.collection_id == coll.id))):
            _, more = plan_job(s, coll, "scheduled", retry_failed=False, qrels_version_id=js.current_version_id)
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
