"""Evaluating a job's items: one run on the job's qrels version and configuration.

An item is claimed with a conditional UPDATE (queued -> evaluating), computed with no
transaction open, and its results (RunEvaluation, every Score, the gain curves) stored in
one transaction keyed by (run, qrels version, settings hash, evaluator version); the item's
transaction counts it on its job and, when none is pending, starts the job's tests. The
protocol is described in :mod:`service.evaluation.planning`.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from service.evaluation.planning import PENDING
from service.evaluation.setup import EVALUATOR_VERSION, eval_settings, load_qrels, load_run
from service.evaluation.work import Followup, TaskName
from service.formats.types import Qrels
from service.metrics import evaluate
from service.metrics.stats.intervals import mean_interval
from service.store.arrays import pack
from service.store.db import transaction
from service.store.models import (
    CollectionConfig,
    Job,
    JobItem,
    QrelsVersion,
    Run,
    RunCurve,
    RunEvaluation,
    Score,
    utcnow,
)

#: Stored for every run whatever the configuration: the share of the top 10 that is judged,
#: shown beside the leaderboard so that organisers see when condensed-list metrics fit better.
ALWAYS_EVALUATED = ("Judged@10",)
CURVE_DEPTH = 1000  # ranks of the stored gain curves (J&K plot up to 200)
_QRELS_CACHE: dict[tuple[str, int, str], Qrels] = {}


def _qrels_for(s: Session, version: QrelsVersion) -> Qrels:
    """Qrels versions are immutable: each worker process parses one at most once."""
    key = (str(s.get_bind().url), version.id, version.checksum)
    if key not in _QRELS_CACHE:
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
    with transaction(factory) as s:  # claim the item: only a queued item can be claimed
        item = s.get(JobItem, item_id)
        if item is None or item.status != "queued":
            return []  # a duplicate delivery, or the item was already handled
        if item.attempts >= max_attempts:
            return finish_item(s, item, ok=False, error=f"gave up after {item.attempts} attempts")
        claimed = s.execute(
            update(JobItem).where(JobItem.id == item_id, JobItem.status == "queued")
            .values(status="evaluating", started_at=utcnow(), attempts=JobItem.attempts + 1)
            .execution_options(synchronize_session=False)
        ).rowcount
        if claimed != 1:
            return []
        job = s.get(Job, item.job_id)
        run = s.get(Run, item.run_id)
        assert job is not None and run is not None
        run.status = "evaluating"
        config = s.get(CollectionConfig, job.config_id)
        assert config is not None
        key = dict(run_id=run.id, qrels_version_id=job.qrels_version_id, settings_hash=config.settings_hash,
                   evaluator_version=EVALUATOR_VERSION)
        already = s.scalar(select(RunEvaluation.id).filter_by(**key))
        config_id, order, settings, metrics = config.id, config.evaluation.get("order", "score"), \
            eval_settings(config), list(config.metrics) + [m for m in ALWAYS_EVALUATED if m not in config.metrics]
        hidden = list(config.evaluation.get("hidden_topics") or [])
    if already is not None:  # computed before (a retry, or another job): nothing to redo
        with transaction(factory) as s:
            return finish_item(s, s.get(JobItem, item_id), ok=True)
    if pause:
        time.sleep(pause)

    started = time.perf_counter()
    with factory() as s:  # read the inputs, then compute with no transaction open
        version = s.get(QrelsVersion, key["qrels_version_id"])
        qrels = _qrels_for(s, version)
        run = s.get(Run, key["run_id"])
        blob, source, tag = run.file, run.source_name, run.tag
    try:
        core_run = load_run(blob, source or tag, order)
        result = evaluate(qrels, [core_run], metrics, settings)
        rows = _score_rows(result, set(hidden))
        curve = _curve(qrels, core_run, settings)
    except SQLAlchemyError:
        raise
    except Exception as exc:  # a run that cannot be evaluated fails alone; the others go on
        with transaction(factory) as s:
            return finish_item(s, s.get(JobItem, item_id), ok=False, error=f"{type(exc).__name__}: {exc}")
    seconds = time.perf_counter() - started

    try:
        with transaction(factory) as s:
            fresh = s.get(JobItem, item_id)
            if fresh is None or fresh.status != "evaluating":
                return []  # the sweeper handed it to another worker, which will finish it
            evaluation = RunEvaluation(config_id=config_id, topics=list(result.topics), seconds=seconds, **key)
            s.add(evaluation)
            s.flush()
            for row in rows:
                row.run_evaluation_id = evaluation.id
            s.add_all(rows)
            if curve is not None:
                curve.run_evaluation_id = evaluation.id
                s.add(curve)
            return finish_item(s, fresh, ok=True)
    except IntegrityError as exc:
        with transaction(factory) as s:
            stored = s.scalar(select(RunEvaluation.id).filter_by(**key)) is not None
            # Stored by another worker first: done. Anything else is this run's failure.
            return finish_item(s, s.get(JobItem, item_id), ok=stored,
                               error="" if stored else f"could not store the results: {exc.orig}")


def _curve(qrels: Qrels, run: Any, settings: Any) -> RunCurve | None:
    """J&K's average CG/DCG/nCG/nDCG curves of the run (log base 2), for the API's plots."""
    from service.metrics.curves import gain_curves

    depth = min(CURVE_DEPTH, int(np.diff(run.offsets).max(initial=0)))
    if depth < 1:
        return None
    (c,) = gain_curves(qrels, [run], depth, settings=settings)
    return RunCurve(depth=depth, cg=pack(c.cg), dcg=pack(c.dcg), ncg=pack(c.ncg), ndcg=pack(c.ndcg),
                    ideal_cg=pack(c.ideal_cg), ideal_dcg=pack(c.ideal_dcg))


def _finite(v: float) -> float | None:
    return v if np.isfinite(v) else None


def _score_rows(result: Any, hidden: set[str] = frozenset()) -> list[Score]:  # type: ignore[assignment]
    """A Score per measure: the mean with its 95% t interval (:func:`mean_interval`, the run's
    own, so it does not move when runs are added) and, with hidden topics, the same on the
    visible topics (the public side of a public/private split)."""
    visible = np.array([t not in hidden for t in result.topics], dtype=bool)
    rows = []
    for m in result.measures:
        values = result.per_topic(m)[0]
        every = mean_interval(values)
        row = Score(metric=str(m), mean=_finite(every.mean), ci_low=_finite(every.low), ci_high=_finite(every.high),
                    n_topics=every.n, values=pack(values))
        if hidden:
            public = mean_interval(values[visible])
            row.public_n, row.public_mean = public.n, _finite(public.mean)
            row.public_ci_low, row.public_ci_high = _finite(public.low), _finite(public.high)
        rows.append(row)
    return rows


def finish_item(s: Session, item: JobItem | None, *, ok: bool, error: str = "") -> list[Followup]:
    """Mark an item done/failed (once) and count it on its job; start the tests when none is pending."""
    if item is None:
        return []
    changed = s.execute(
        update(JobItem).where(JobItem.id == item.id, JobItem.status.in_(PENDING))
        .values(status="done" if ok else "failed", finished_at=utcnow(), error=error)
        .execution_options(synchronize_session=False)
    ).rowcount
    if not changed:
        return []
    run = s.get(Run, item.run_id)
    if run is not None:
        run.status, run.status_reason = ("evaluated", "") if ok else ("failed", error)
    counter = Job.done if ok else Job.failed
    s.execute(update(Job).where(Job.id == item.job_id).values({counter: counter + 1})
              .execution_options(synchronize_session=False))
    return maybe_start_tests(s, item.job_id)


def maybe_start_tests(s: Session, job_id: int) -> list[Followup]:
    """Queue the job's tests (once) if none of its items is pending any more."""
    pending = s.scalar(select(func.count()).select_from(JobItem).where(
        JobItem.job_id == job_id, JobItem.status.in_(PENDING)))
    if pending:
        return []
    started = s.execute(
        update(Job).where(Job.id == job_id, Job.status == "running", Job.tests_queued_at.is_(None))
        .values(status="testing", tests_queued_at=utcnow()).execution_options(synchronize_session=False)
    ).rowcount
    return [Followup(TaskName.RUN_TESTS, job_id)] if started else []
