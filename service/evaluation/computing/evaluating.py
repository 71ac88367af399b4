"""Evaluating a job's items: one run on the job's qrels version and configuration.

An item is claimed with a conditional UPDATE (queued -> evaluating, or the take-over of an
attempt whose lease expired), computed with no transaction open while a heartbeat renews
the claim's lease, and its results (RunEvaluation, every Score, the gain curves) stored in
one transaction keyed by (run, qrels version, settings hash, evaluator version), conditional
on the claim still being this attempt's; the item's transaction counts it on its job and,
when none is pending, starts the job's tests. A run beyond the time or size budget fails
with that reason. The protocol is described in :mod:`service.evaluation.organising.planning`.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import timedelta
from functools import partial
from typing import Any

import numpy as np
from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from service.evaluation.common.work import BudgetExceeded, Followup, Heartbeat, LeaseLost, Limits, patiently
from service.evaluation.computing import answers
from service.evaluation.judging import judge_track
from service.evaluation.organising.planning import PENDING, tests_followup
from service.evaluation.organising.setup import (
    EVALUATOR_VERSION,
    Judgments,
    cached_judgments,
    eval_settings,
    keep_parsed_run,
    load_run,
    parsed_run,
    run_cache_key,
    unavailable_metrics,
)
from service.evaluation.reproducing import measuring
from service.formats.types import Qrels
from service.formats.types import Run as CoreRun
from service.metrics import evaluate
from service.metrics.matching import matches_reused
from service.metrics.stats.intervals import bootstrap_interval, mean_interval
from service.store.arrays import pack
from service.store.db import as_utc, db_now, transaction
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

log = logging.getLogger("cranfield.evaluating")

#: Stored for every run whatever the configuration: the share of the top 10 that is judged,
#: shown beside the leaderboard so that organisers see when condensed-list metrics fit better.
ALWAYS_EVALUATED = ("Judged@10",)
CURVE_DEPTH = 1000  # ranks of the stored gain curves (J&K plot up to 200)
def gave_up(attempts: int) -> str:
    return (f"no result after {attempts} attempts (each attempt's worker was lost: killed, out of memory or "
            "stopped by the time limit)")


def over_time_budget(budget: float) -> str:
    return (f"the evaluation took longer than its time budget of {budget:g} s (CRANFIELD_EVAL_TIME_BUDGET); "
            "it is not retried")


def lease_expired(item: JobItem, now: Any, legacy_timeout: float | None = None) -> bool:
    """Whether the claim on an "evaluating" item is dead: its lease ran out. A claim made
    before leases existed (none recorded) counts as dead after ``legacy_timeout`` seconds
    (the sweeper's stuck timeout), and never for a redelivered message (``None``)."""
    expires = as_utc(item.lease_expires_at)
    if expires is not None:
        return expires < now
    started = as_utc(item.started_at)
    return legacy_timeout is not None and started is not None and started < now - timedelta(seconds=legacy_timeout)


@dataclass(frozen=True)
class _Claim:
    item_id: int
    attempt: int  # the item's attempts counter after this claim: the claim's token
    key: dict[str, Any]  # of the RunEvaluation
    config_id: int
    order: str
    settings: Any
    metrics: list[str]
    hidden: list[str]
    already: bool  # results stored before (a retry, or another job): nothing to compute


def evaluate_item(factory: sessionmaker[Session], item_id: int, limits: Limits = Limits()) -> list[Followup]:
    """Evaluate one job item's run on the job's qrels version and configuration.

    ``limits.pause`` (tests only) makes the computation that much longer, so that a test can
    kill a worker while items are "evaluating".
    """
    claim = _claim(factory, item_id, limits)
    if not isinstance(claim, _Claim):
        return claim
    if claim.already:  # computed before (a retry, or another job): nothing to redo
        return patiently(lambda: _finish_claimed(factory, claim, ok=True))
    heartbeat = Heartbeat(_renewal(factory, item_id, claim.attempt, limits.lease), limits.lease, limits.time_budget)
    try:
        with heartbeat:
            return _compute_and_store(factory, claim, heartbeat, limits)
    except LeaseLost:
        log.info("item %d was taken over from attempt %d; its results are not stored", item_id, claim.attempt)
        return []
    except BaseException:
        _release(factory, claim)  # a redelivery or the sweeper takes it over at once
        raise


def _claim(factory: sessionmaker[Session], item_id: int, limits: Limits) -> _Claim | list[Followup]:
    """Claim a queued item, or take over one whose attempt is dead (its lease expired: a
    redelivered message, a retried task); the claim counts an attempt and sets the lease."""
    with transaction(factory) as s:
        item = s.get(JobItem, item_id)
        if item is None:
            return []
        now = db_now(s)  # the database's clock: a worker's own may be wrong
        if not (item.status == "queued" or (item.status == "evaluating" and lease_expired(item, now))):
            return []  # a duplicate delivery, an attempt that is alive, or the item was already handled
        if item.attempts >= limits.max_attempts:
            return finish_item(s, item, ok=False, attempt=item.attempts, error=gave_up(item.attempts))
        run = s.get(Run, item.run_id)
        assert run is not None
        if (run.n_lines or 0) > limits.max_lines:
            return finish_item(s, item, ok=False, attempt=item.attempts, error=(
                f"the run has {run.n_lines} lines, more than the evaluation budget of {limits.max_lines} "
                "(CRANFIELD_EVAL_MAX_LINES)"))
        claimed = s.execute(
            update(JobItem).where(JobItem.id == item_id, JobItem.status == item.status,
                                  JobItem.attempts == item.attempts)
            .values(status="evaluating", started_at=now, attempts=item.attempts + 1,
                    lease_expires_at=now + timedelta(seconds=limits.lease))
            .execution_options(synchronize_session=False)
        ).rowcount
        if claimed != 1:
            return []
        job = s.get(Job, item.job_id)
        assert job is not None
        run.status = "evaluating"
        config = s.get(CollectionConfig, job.config_id)
        assert config is not None
        key = dict(run_id=run.id, qrels_version_id=job.qrels_version_id, settings_hash=config.settings_hash,
                   evaluator_version=EVALUATOR_VERSION)
        already = s.scalar(select(RunEvaluation.id).filter_by(**key)) is not None
        return _Claim(item_id, item.attempts + 1, key, config.id, config.evaluation.get("order", "score"),
                      eval_settings(config),
                      list(config.metrics) + [m for m in ALWAYS_EVALUATED if m not in config.metrics],
                      list(config.evaluation.get("hidden_topics") or []), already)


def _renewal(factory: sessionmaker[Session], item_id: int, attempt: int, lease: float):  # type: ignore[no-untyped-def]
    def renew() -> bool:
        with transaction(factory) as s:
            return s.execute(
                update(JobItem).where(JobItem.id == item_id, JobItem.status == "evaluating",
                                      JobItem.attempts == attempt)
                .values(lease_expires_at=db_now(s) + timedelta(seconds=lease))
                .execution_options(synchronize_session=False)).rowcount == 1
    return renew


def _release(factory: sessionmaker[Session], claim: _Claim) -> None:
    """Best effort, after an unexpected error: end this attempt's lease now."""
    try:
        with transaction(factory) as s:
            s.execute(update(JobItem).where(JobItem.id == claim.item_id, JobItem.status == "evaluating",
                                            JobItem.attempts == claim.attempt)
                      .values(lease_expires_at=db_now(s)).execution_options(synchronize_session=False))
    except SQLAlchemyError:
        pass  # the lease runs out by itself


def _pause(seconds: float) -> None:
    """Tests only: "compute" this long (short sleeps, so that the heartbeat can interrupt)."""
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        time.sleep(min(left, 0.05))


def _compute_and_store(factory: sessionmaker[Session], claim: _Claim, heartbeat: Heartbeat,
                       limits: Limits) -> list[Followup]:
    def read() -> tuple[Judgments, CoreRun | bytes, str, str, str, Any]:
        with factory() as s:  # read the inputs, then compute with no transaction open
            version = s.get(QrelsVersion, claim.key["qrels_version_id"])
            judgments = cached_judgments(s, version)
            run = s.get(Run, claim.key["run_id"])
            fmt = version.format or "adhoc"
            key = run_cache_key(s, run, claim.order)
            parsed = None if fmt == "rag" else parsed_run(key)
            # the file itself only when this process has not parsed it before
            keep = partial(keep_parsed_run, key, limit_mb=limits.run_cache_mb)
            return judgments, run.file if parsed is None else parsed, run.source_name, run.tag, fmt, keep

    (qrels, extra), stored, source, tag, fmt, keep = patiently(read, heartbeat)
    unavailable = unavailable_metrics(claim.metrics, fmt)
    if unavailable:  # NaN on every topic; the job's report says why (significance_tests)
        log.info("item %d: %s", claim.item_id, "; ".join(unavailable.values()))
    started = time.perf_counter()
    try:
        with heartbeat.guarded():
            if limits.pause:
                _pause(limits.pause)
            if fmt == "rag":  # a collection of answers (issue 35): service.evaluation.computing.answers
                assert isinstance(stored, bytes)
                result = answers.evaluate_answers(extra, stored, source or tag, tag, claim.metrics, claim.settings)
                curve = None
            else:
                if isinstance(stored, bytes):
                    core_run = load_run(stored, source or tag, claim.order)
                    keep(parsed=core_run)
                else:
                    core_run = stored
                with matches_reused():  # the metrics and the curves match the run once
                    result = evaluate(qrels, [core_run], claim.metrics, claim.settings, extra=extra)
                    curve = _curve(qrels, core_run, claim.settings)
            rows = _score_rows(result, set(claim.hidden))
    except (LeaseLost, SQLAlchemyError):
        raise
    except BudgetExceeded:
        error = over_time_budget(limits.time_budget)
        return patiently(lambda: _finish_claimed(factory, claim, ok=False, error=error), heartbeat)
    except Exception as exc:  # a run that cannot be evaluated fails alone; the others go on
        error = f"{type(exc).__name__}: {exc}"
        return patiently(lambda: _finish_claimed(factory, claim, ok=False, error=error), heartbeat)
    seconds = time.perf_counter() - started
    topics = list(result.topics)
    return patiently(lambda: _store(factory, claim, topics, rows, curve, seconds), heartbeat)


def _holds(s: Session, claim: _Claim) -> JobItem | None:
    """The item, locked, if this claim still holds it (in the storing transaction)."""
    item = s.get(JobItem, claim.item_id, with_for_update=True, populate_existing=True)
    if item is None or item.status != "evaluating" or item.attempts != claim.attempt:
        return None
    return item


def _finish_claimed(factory: sessionmaker[Session], claim: _Claim, *, ok: bool, error: str = "") -> list[Followup]:
    with transaction(factory) as s:
        item = _holds(s, claim)
        return [] if item is None else finish_item(s, item, ok=ok, error=error, attempt=claim.attempt)


def _store(factory: sessionmaker[Session], claim: _Claim, topics: list[str], rows: list[dict[str, Any]],
           curve: dict[str, Any] | None, seconds: float) -> list[Followup]:
    try:
        with transaction(factory) as s:
            item = _holds(s, claim)
            if item is None:
                return []  # taken over by another attempt, which stores instead
            evaluation = RunEvaluation(config_id=claim.config_id, topics=topics, seconds=seconds, **claim.key)
            s.add(evaluation)
            s.flush()
            s.add_all(Score(run_evaluation_id=evaluation.id, **row) for row in rows)
            if curve is not None:
                s.add(RunCurve(run_evaluation_id=evaluation.id, **curve))
            return finish_item(s, item, ok=True, attempt=claim.attempt)
    except IntegrityError as exc:
        with transaction(factory) as s:
            stored = s.scalar(select(RunEvaluation.id).filter_by(**claim.key)) is not None
            item = _holds(s, claim)
            # Stored by another worker first: done. Anything else is this run's failure.
            return [] if item is None else finish_item(
                s, item, ok=stored, attempt=claim.attempt,
                error="" if stored else f"could not store the results: {exc.orig}")


def _curve(qrels: Qrels, run: Any, settings: Any) -> dict[str, Any] | None:
    """J&K's average CG/DCG/nCG/nDCG curves of the run (log base 2), for the API's plots."""
    from service.metrics.curves import gain_curves

    depth = min(CURVE_DEPTH, int(np.diff(run.offsets).max(initial=0)))
    if depth < 1:
        return None
    (c,) = gain_curves(qrels, [run], depth, settings=settings)
    return dict(depth=depth, cg=pack(c.cg), dcg=pack(c.dcg), ncg=pack(c.ncg), ndcg=pack(c.ndcg),
                ideal_cg=pack(c.ideal_cg), ideal_dcg=pack(c.ideal_dcg))


def _finite(v: float) -> float | None:
    return v if np.isfinite(v) else None


#: The bootstrap interval stored beside the t interval (docs/statistics.md, "Intervals of a run's
#: mean"): BCa, B = 1000 resamples of the run's scored topics, a fixed seed so that evaluating
#: the same run again stores the same figures. Method and B are stored with each row, so changing
#: them here changes new rows only and every row still says how its interval was drawn.
BOOT_METHOD = "bca"
BOOT_RESAMPLES = 1000
BOOT_SEED = 0


def _boots(columns: list[np.ndarray]) -> list[tuple[float | None, float | None]]:
    """The stored bootstrap interval of the mean of each column's scored (non-NaN) values; None
    when undefined. Columns scored on the same topics are resampled in one call (one draw of
    ``bootstrap_interval``, whose columns are computed independently: the figures of one call per
    column, issue 38)."""
    out: list[tuple[float | None, float | None]] = [(None, None)] * len(columns)
    groups: dict[bytes, list[int]] = {}
    for i, values in enumerate(columns):
        groups.setdefault(np.packbits(~np.isnan(values)).tobytes() + bytes([len(values) % 8]), []).append(i)
    for members in groups.values():
        scored = ~np.isnan(columns[members[0]])
        b = bootstrap_interval(np.column_stack([columns[i][scored] for i in members]), resamples=BOOT_RESAMPLES,
                               method=BOOT_METHOD, seed=BOOT_SEED)
        for j, i in enumerate(members):
            out[i] = (_finite(float(b.low[j])), _finite(float(b.high[j])))
    return out


def _score_rows(result: Any, hidden: set[str] = frozenset()) -> list[dict[str, Any]]:  # type: ignore[assignment]
    """The columns of a Score per measure: the mean with its 95% t interval (:func:`mean_interval`, the run's
    own, so it does not move when runs are added), its 95% bootstrap interval (:func:`bootstrap_interval`
    over the same topics, which never leaves the metric's range) and, with hidden topics, the same on the
    visible topics (the public side of a public/private split)."""
    visible = np.array([t not in hidden for t in result.topics], dtype=bool)
    columns = [result.per_topic(m)[0] for m in result.measures]
    boots = _boots(columns)
    public_boots = _boots([values[visible] for values in columns]) if hidden else []
    rows = []
    for k, (m, values) in enumerate(zip(result.measures, columns)):
        every = mean_interval(values)
        boot_low, boot_high = boots[k]
        row = dict(metric=str(m), mean=_finite(every.mean), ci_low=_finite(every.low), ci_high=_finite(every.high),
                   n_topics=every.n, values=pack(values), boot_low=boot_low, boot_high=boot_high,
                   boot_method=BOOT_METHOD, boot_resamples=BOOT_RESAMPLES)
        if hidden:
            public = mean_interval(values[visible])
            public_boot_low, public_boot_high = public_boots[k]
            row.update(public_n=public.n, public_mean=_finite(public.mean), public_ci_low=_finite(public.low),
                       public_ci_high=_finite(public.high), public_boot_low=public_boot_low,
                       public_boot_high=public_boot_high)
        rows.append(row)
    return rows


def finish_item(s: Session, item: JobItem | None, *, ok: bool, error: str = "",
                attempt: int | None = None) -> list[Followup]:
    """Mark an item done/failed (once; with ``attempt``, only while that claim holds it) and
    count it on its job; start the tests when none is pending."""
    if item is None:
        return []
    same_claim = () if attempt is None else (JobItem.attempts == attempt,)
    changed = s.execute(
        update(JobItem).where(JobItem.id == item.id, JobItem.status.in_(PENDING), *same_claim)
        .values(status="done" if ok else "failed", finished_at=utcnow(), error=error, lease_expires_at=None)
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
    """Queue the job's tests (once) if none of its items is pending any more. The message is
    sent with the tests' debounce delay (``workers.tasks.send``), and the round waits for the
    collection's other jobs (:func:`service.evaluation.computing.significance_tests.run_tests`). With
    them, a judges track's board when the job evaluated a set's current version
    (:func:`service.evaluation.judging.judge_track.after_evaluations`), and the measures of the
    reproductions that read the job's runs (:func:`service.evaluation.reproducing.measuring.after_evaluations`)."""
    pending = s.scalar(select(func.count()).select_from(JobItem).where(
        JobItem.job_id == job_id, JobItem.status.in_(PENDING)))
    if pending:
        return []
    started = s.execute(
        update(Job).where(Job.id == job_id, Job.status == "running", Job.tests_queued_at.is_(None))
        .values(status="testing", tests_queued_at=db_now(s)).execution_options(synchronize_session=False)
    ).rowcount
    if not started:
        return []
    job = s.get(Job, job_id)
    # the last item of an evaluation of a judgment set's (or the official set's) current version:
    # the judges track's board, computed by the workers (issue 25, item 10)
    if job is None:
        return [tests_followup(s, job_id)]
    return [tests_followup(s, job_id), *judge_track.after_evaluations(s, job), *measuring.after_evaluations(s, job)]
