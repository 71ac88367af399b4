"""Planning a job: which runs of a collection lack current results, as one job of items.

A job evaluates every run of a collection that has no result under the collection's current
key (qrels version, settings hash, evaluator version), one item per run, and then runs the
pairwise tests. The use cases of a job's life are in :mod:`~service.evaluation.computing.evaluating`
(its items), :mod:`~service.evaluation.computing.significance_tests` (its tests) and
:mod:`~service.evaluation.computing.sweeping` (stuck work, stale results).

Guarantees (the whole protocol):
- Results of a run are written in one transaction (RunEvaluation + every Score), keyed
  by (run, qrels version, settings hash, evaluator version): a killed worker leaves
  nothing, a duplicate execution writes nothing twice.
- Every state change of an item is a conditional UPDATE (``WHERE status = ... AND attempts
  = ...``): two deliveries of one message, a sweeper and a slow worker can race, and exactly
  one of them moves the item on; counters are incremented only by that one.
- A claim is a lease: claiming (queued -> evaluating) counts an attempt (``attempts``, the
  claim's token) and sets ``lease_expires_at``; while it computes, the attempt renews the
  lease from a heartbeat thread (a short transaction of its own every third of the lease,
  conditional on the token). Only an expired lease (a dead attempt) is taken over, by a
  redelivered message or by the sweeper's re-queue; an attempt that runs long but renews is
  never disturbed, and a taken-over attempt stores nothing (its result transaction is
  conditional on the token, under the item's row lock) and is interrupted.
- Budgets: a run longer than ``CRANFIELD_EVAL_MAX_LINES`` lines, or whose computation passes
  ``CRANFIELD_EVAL_TIME_BUDGET`` seconds (the heartbeat interrupts it), fails with that
  reason and is not retried; an item is claimed at most ``CRANFIELD_MAX_ATTEMPTS`` times.
- The database says what remains to be done: a job's items move queued -> evaluating ->
  done | failed. The sweeper (every ``CRANFIELD_SWEEP_INTERVAL`` s) re-queues items whose
  lease expired and sends again queued work last sent ``CRANFIELD_LOST_AFTER`` s ago when the
  broker holds fewer messages than there is queued work (``CRANFIELD_STUCK_TIMEOUT`` s in any
  case), so a lost broker message or a killed worker delays an evaluation by well under a
  minute but never loses it. A database that is briefly away is waited for: in-process
  while holding a claim, by the task's retries (backing off over ten minutes) before.
- The pairwise tests of a job run once no item is queued or evaluating any more (checked
  in the items' own transactions: a Celery chord without a result backend), in rounds that
  serve every waiting job of the same collection and key (debounced: a burst of submissions
  costs one round; see :mod:`~service.evaluation.computing.significance_tests`); a round is leased as
  an item is. A test that cannot run (too few topics, say) is reported on the job, which
  always finishes.
- The use cases take ids, open their own transactions and return the follow-up work to
  send *after* their transaction has committed (:class:`~service.evaluation.common.work.Followup`);
  they never talk to the broker themselves.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from service.evaluation.common.locks import is_locked
from service.evaluation.common.work import Followup, TaskName
from service.evaluation.organising.results import current_result
from service.evaluation.organising.setup import EVALUATOR_VERSION
from service.metrics.stats.sequential import RULE
from service.store.db import db_now
from service.store.models import (
    Collection,
    CollectionConfig,
    Job,
    JobItem,
    QrelsVersion,
    Run,
    RunCurve,
    RunEvaluation,
    Score,
)

ACTIVE = ("running", "testing")
PENDING = ("queued", "evaluating")
#: What a stored test was run with (its params_hash). ``max_resamples``: the sequential rule's cap per
#: pair (issue 25, item 1); a configuration made before it has None, which means the default cap.
TEST_PARAMS = ("test", "resamples", "alpha", "correction", "seed", "max_resamples")


def test_params(significance: dict[str, Any]) -> dict[str, Any]:
    """What identifies a stored test: its configured parameters and the settling rule's version
    (``sequential.RULE``: tests settled under a former rule are recomputed)."""
    return {**{k: significance.get(k) for k in TEST_PARAMS}, "rule": RULE}


def params_hash(significance: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(test_params(significance), sort_keys=True).encode()).hexdigest()


def runs_hash(run_ids: list[int]) -> str:
    return hashlib.sha256(",".join(map(str, sorted(run_ids))).encode()).hexdigest()


def plan_job(
    s: Session, coll: Collection, kind: str, previous_qrels_id: int | None = None, *, retry_failed: bool = True,
    qrels_version_id: int | None = None,
) -> tuple[Job, list[Followup]]:
    """A job evaluating every run of ``coll`` that lacks current results, then the tests.

    The results are on ``qrels_version_id`` (default: the collection's current qrels, the
    official set's newest version; another set's version is evaluated the same way). Runs
    already queued or evaluating in an active job with the same key are not queued again (the
    active job is returned when it covers everything). ``retry_failed=False`` (the scheduled
    refresh) leaves out runs that already failed under the same key.
    """
    version_id = qrels_version_id if qrels_version_id is not None else coll.current_qrels_id
    if version_id is None or coll.current_config_id is None:
        raise ValueError(f"collection {coll.name!r} has no qrels yet")
    # Serialise planners of one collection (PostgreSQL row lock; SQLite's BEGIN IMMEDIATE), unless
    # the caller's transaction already holds it (an upload locks the collection first).
    if not is_locked(s, coll.id):
        s.execute(select(Collection.id).where(Collection.id == coll.id).with_for_update())
    config = s.get(CollectionConfig, coll.current_config_id)
    assert config is not None
    same_key = job_key(coll, config, version_id)
    evaluated = set(s.scalars(select(RunEvaluation.run_id).join(Run).where(
        Run.collection_id == coll.id, current_result(coll, version_id))))
    pending = set(s.scalars(select(JobItem.run_id).join(Job).where(
        *same_key, Job.status.in_(ACTIVE), JobItem.status.in_(PENDING))))
    failed = set() if retry_failed else set(s.scalars(select(JobItem.run_id).join(Job).where(
        *same_key, JobItem.status == "failed")))
    all_runs = list(s.scalars(select(Run.id).where(Run.collection_id == coll.id).order_by(Run.id)))
    run_ids = [r for r in all_runs if r not in evaluated and r not in pending and r not in failed]
    carried = carry_unchanged(s, config, version_id, run_ids)
    run_ids = [r for r in run_ids if r not in carried]
    active = s.scalars(select(Job).where(*same_key, Job.status.in_(ACTIVE)).order_by(Job.id.desc())).first()
    if not run_ids and active is not None:
        return active, []
    job = Job(collection_id=coll.id, kind=kind, qrels_version_id=version_id,
              previous_qrels_id=previous_qrels_id, config_id=config.id, evaluator_version=EVALUATOR_VERSION,
              status="running" if run_ids else "testing", total=len(run_ids),
              report={"carried_runs": len(carried)} if carried else {})
    s.add(job)
    s.flush()
    items = [JobItem(job_id=job.id, run_id=r) for r in run_ids]
    s.add_all(items)
    s.flush()
    behind = background(coll, version_id)
    if not run_ids:
        job.tests_queued_at = db_now(s)
        return job, [Followup(TaskName.RUN_TESTS, job.id, behind, kind in BURSTY)]
    return job, [Followup(TaskName.EVALUATE_ITEM, it.id, behind) for it in items]


def carry_unchanged(s: Session, config: CollectionConfig, version_id: int, run_ids: list[int]) -> set[int]:
    """Copy to ``version_id`` the results of the runs (of ``run_ids``) whose inputs it did not
    change, and return their ids: "a new version re-scores only what changed" (issue 35).

    A version that stores each run's input digest (``QrelsVersion.run_inputs``: the ``rag``
    versions of collections of answers, :meth:`AnswerJudgments.run_inputs`) is compared with
    the earlier versions the run was evaluated on under the same settings and evaluator; the
    newest with the same digest gives its RunEvaluation, copied row for row with
    ``carried_from_id`` naming it, in the planner's transaction. Other formats store no digest:
    every run is evaluated."""
    inputs = s.scalar(select(QrelsVersion.run_inputs).where(QrelsVersion.id == version_id))
    if not inputs or not run_ids:
        return set()
    tags = dict(s.execute(select(Run.id, Run.tag).where(Run.id.in_(run_ids))).all())
    earlier = s.execute(
        select(RunEvaluation.id, RunEvaluation.run_id, RunEvaluation.qrels_version_id)
        .where(RunEvaluation.run_id.in_(run_ids), RunEvaluation.qrels_version_id != version_id,
               RunEvaluation.settings_hash == config.settings_hash,
               RunEvaluation.evaluator_version == EVALUATOR_VERSION)
        .order_by(RunEvaluation.id.desc())).all()
    digests = dict(s.execute(select(QrelsVersion.id, QrelsVersion.run_inputs).where(
        QrelsVersion.id.in_({v for _, _, v in earlier}), QrelsVersion.run_inputs.is_not(None))).all())

    def digest(of: dict[str, Any], tag: str) -> str:
        return str(of["runs"].get(tag, of["unjudged"]))

    source: dict[int, int] = {}
    for evaluation_id, run_id, earlier_version in earlier:  # newest first
        if run_id not in source and earlier_version in digests \
                and digest(digests[earlier_version], tags[run_id]) == digest(inputs, tags[run_id]):
            source[run_id] = evaluation_id
    for run_id, evaluation_id in source.items():
        old = s.get(RunEvaluation, evaluation_id)
        assert old is not None
        new = RunEvaluation(run_id=run_id, qrels_version_id=version_id, config_id=config.id,
                            settings_hash=config.settings_hash, evaluator_version=EVALUATOR_VERSION,
                            topics=list(old.topics), seconds=0.0, carried_from_id=old.id)
        s.add(new)
        s.flush()
        for table in (Score, RunCurve):
            rows = s.execute(select(table.__table__).where(table.run_evaluation_id == old.id)).mappings().all()
            if rows:
                s.execute(insert(table), [{**row, "run_evaluation_id": new.id} for row in rows])
    return set(source)


def background(coll: Collection, qrels_version_id: int | None) -> bool:
    """Whether work on this qrels version is background work (``Followup.background``): no
    board ranks by it (another judgment set's version, or an official one since replaced)."""
    return qrels_version_id != coll.current_qrels_id


def item_followups(s: Session, item_ids: list[int]) -> list[Followup]:
    """The follow-ups evaluating these items again (the sweeper's), in the background when
    their job is."""
    behind = set(s.scalars(select(JobItem.id).join(Job, Job.id == JobItem.job_id).join(
        Collection, Collection.id == Job.collection_id).where(
        JobItem.id.in_(item_ids), Job.qrels_version_id != Collection.current_qrels_id))) if item_ids else set()
    return [Followup(TaskName.EVALUATE_ITEM, i, i in behind) for i in item_ids]


#: The jobs whose tests round waits for the debounce (``CRANFIELD_TESTS_DEBOUNCE``): a participant's
#: submission, which comes in bursts before a deadline (one round for the burst). A job that
#: re-evaluates the whole collection (a load, a qrels correction, a configuration change, a manual
#: or scheduled re-evaluation) is a burst of its own: its round starts as soon as its last run is
#: stored (issue 38: the organiser waits for it), and still waits for any other job of the key
#: that has runs pending (``significance_tests``).
BURSTY = frozenset({"submission"})


def tests_followup(s: Session, job_id: int) -> Followup:
    """The follow-up running a job's tests, in the background when the job is, after the
    debounce when the job is a submission (:data:`BURSTY`)."""
    behind, kind = s.execute(select(Job.qrels_version_id != Collection.current_qrels_id, Job.kind)
                             .join(Collection, Collection.id == Job.collection_id).where(Job.id == job_id)).one()
    return Followup(TaskName.RUN_TESTS, job_id, bool(behind), kind in BURSTY)


def job_key(coll: Collection, config: CollectionConfig, qrels_version_id: int | None = None) -> tuple[Any, ...]:
    """WHERE conditions on ``Job``: the jobs of the collection's current qrels (or of
    ``qrels_version_id``), configuration and evaluator version (what a new job would be
    planned under)."""
    version_id = qrels_version_id if qrels_version_id is not None else coll.current_qrels_id
    return (Job.collection_id == coll.id, Job.qrels_version_id == version_id,
            Job.config_id == config.id, Job.evaluator_version == EVALUATOR_VERSION)
