"""The evaluation pipeline: plan a job, evaluate its runs, test all pairs, sweep, refresh.

These use cases are what the Celery tasks (workers/) and the CLI call; they take ids,
open their own transactions and return the follow-up work to send *after* their
transaction has committed (``Followup``); they never talk to the broker themselves.

Guarantees:
- Results of a run are written in one transaction (RunEvaluation + every Score), keyed
  by (run, qrels version, settings hash, evaluator version): a killed worker leaves
  nothing, a duplicate execution writes nothing twice.
- Every state change of an item is a conditional UPDATE (``WHERE status = ...``): two
  deliveries of one message, a sweeper and a slow worker can race, and exactly one of
  them moves the item on; counters are incremented only by that one.
- The database says what remains to be done: a job's items move queued -> evaluating ->
  done | failed, and the sweeper re-queues items that stay "evaluating" (or a stalled
  job's "queued" items) past the timeout, so a lost broker message or a killed worker
  delays an evaluation but never loses it.
- The pairwise tests of a job run once no item is queued or evaluating any more (checked
  in the items' own transactions: a Celery chord without a result backend); a test that
  cannot run (too few topics, say) is reported on the job, which always finishes.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import numpy as np
from scipy import stats
from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from service.evaluation.setup import EVALUATOR_VERSION, eval_settings, load_qrels, load_run
from service.formats.types import Qrels
from service.metrics import evaluate
from service.metrics.pooling import competition_ranks
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
    RunCurve,
    RunEvaluation,
    Score,
    Significance,
    utcnow,
)

ACTIVE = ("running", "testing")
PENDING = ("queued", "evaluating")
TEST_PARAMS = ("test", "resamples", "alpha", "correction", "seed")


@dataclass(frozen=True)
class Followup:
    """Work to send to the workers once the current transaction has committed."""

    task: str  # "evaluate_item" | "run_tests" | "run_analysis"
    id: int


def params_hash(significance: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps({k: significance.get(k) for k in TEST_PARAMS}, sort_keys=True).encode()).hexdigest()


def runs_hash(run_ids: list[int]) -> str:
    return hashlib.sha256(",".join(map(str, sorted(run_ids))).encode()).hexdigest()


# ------------------------------------------------------------------------------ planning
def plan_job(
    s: Session, coll: Collection, kind: str, previous_qrels_id: int | None = None, *, retry_failed: bool = True
) -> tuple[Job, list[Followup]]:
    """A job evaluating every run of ``coll`` that lacks current results, then the tests.

    Runs already queued or evaluating in an active job with the same key are not queued
    again (the active job is returned when it covers everything). ``retry_failed=False``
    (the scheduled refresh) leaves out runs that already failed under the same key.
    """
    if coll.current_qrels_id is None or coll.current_config_id is None:
        raise ValueError(f"collection {coll.name!r} has no qrels yet")
    # Serialise planners of one collection (PostgreSQL row lock; SQLite's BEGIN IMMEDIATE).
    s.execute(select(Collection.id).where(Collection.id == coll.id).with_for_update())
    config = s.get(CollectionConfig, coll.current_config_id)
    assert config is not None
    same_key = (Job.collection_id == coll.id, Job.qrels_version_id == coll.current_qrels_id,
                Job.config_id == config.id, Job.evaluator_version == EVALUATOR_VERSION)
    evaluated = set(s.scalars(select(RunEvaluation.run_id).join(Run).where(
        Run.collection_id == coll.id, RunEvaluation.qrels_version_id == coll.current_qrels_id,
        RunEvaluation.settings_hash == config.settings_hash, RunEvaluation.evaluator_version == EVALUATOR_VERSION)))
    pending = set(s.scalars(select(JobItem.run_id).join(Job).where(
        *same_key, Job.status.in_(ACTIVE), JobItem.status.in_(PENDING))))
    failed = set() if retry_failed else set(s.scalars(select(JobItem.run_id).join(Job).where(
        *same_key, JobItem.status == "failed")))
    all_runs = list(s.scalars(select(Run.id).where(Run.collection_id == coll.id).order_by(Run.id)))
    run_ids = [r for r in all_runs if r not in evaluated and r not in pending and r not in failed]
    active = s.scalars(select(Job).where(*same_key, Job.status.in_(ACTIVE)).order_by(Job.id.desc())).first()
    if not run_ids and active is not None:
        return active, []
    job = Job(collection_id=coll.id, kind=kind, qrels_version_id=coll.current_qrels_id,
              previous_qrels_id=previous_qrels_id, config_id=config.id, evaluator_version=EVALUATOR_VERSION,
              status="running" if run_ids else "testing", total=len(run_ids))
    s.add(job)
    s.flush()
    items = [JobItem(job_id=job.id, run_id=r) for r in run_ids]
    s.add_all(items)
    s.flush()
    if not run_ids:
        job.tests_queued_at = utcnow()
        return job, [Followup("run_tests", job.id)]
    return job, [Followup("evaluate_item", it.id) for it in items]


# ---------------------------------------------------------------------------- evaluating
#: Stored for every run whatever the configuration: the share of the top 10 that is judged,
#: shown beside the leaderboard so that organisers see when condensed-list metrics fit better.
ALWAYS_EVALUATED = ("Judged@10",)
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
            return _finish_item(s, item, ok=False, error=f"gave up after {item.attempts} attempts")
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
            return _finish_item(s, s.get(JobItem, item_id), ok=True)
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
            return _finish_item(s, s.get(JobItem, item_id), ok=False, error=f"{type(exc).__name__}: {exc}")
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
            return _finish_item(s, fresh, ok=True)
    except IntegrityError as exc:
        with transaction(factory) as s:
            stored = s.scalar(select(RunEvaluation.id).filter_by(**key)) is not None
            # Stored by another worker first: done. Anything else is this run's failure.
            return _finish_item(s, s.get(JobItem, item_id), ok=stored,
                                error="" if stored else f"could not store the results: {exc.orig}")


CURVE_DEPTH = 1000  # ranks of the stored gain curves (J&K plot up to 200)


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


def _mean_interval(values: np.ndarray) -> tuple[int, float, float]:
    """(n, mean, half-width of the 95% t interval) of the scored topics (NaN = not scored)."""
    kept = values[~np.isnan(values)]
    n = int(kept.shape[0])
    mean = float(kept.mean()) if n else float("nan")
    # the run's own interval: it does not move when runs are added
    half = float(stats.t.ppf(0.975, n - 1) * kept.std(ddof=1) / np.sqrt(n)) if n > 1 else float("nan")
    return n, mean, half


def _score_rows(result: Any, hidden: set[str] = frozenset()) -> list[Score]:  # type: ignore[assignment]
    visible = np.array([t not in hidden for t in result.topics], dtype=bool)
    rows = []
    for m in result.measures:
        values = result.per_topic(m)[0]
        n, mean, half = _mean_interval(values)
        row = Score(metric=str(m), mean=_finite(mean), ci_low=_finite(mean - half), ci_high=_finite(mean + half),
                    n_topics=n, values=pack(values))
        if hidden:  # the public side of a public/private split: visible topics only
            pn, pmean, phalf = _mean_interval(values[visible])
            row.public_n, row.public_mean = pn, _finite(pmean)
            row.public_ci_low, row.public_ci_high = _finite(pmean - phalf), _finite(pmean + phalf)
        rows.append(row)
    return rows


def _finish_item(s: Session, item: JobItem | None, *, ok: bool, error: str = "") -> list[Followup]:
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
    return _maybe_start_tests(s, item.job_id)


def _maybe_start_tests(s: Session, job_id: int) -> list[Followup]:
    pending = s.scalar(select(func.count()).select_from(JobItem).where(
        JobItem.job_id == job_id, JobItem.status.in_(PENDING)))
    if pending:
        return []
    started = s.execute(
        update(Job).where(Job.id == job_id, Job.status == "running", Job.tests_queued_at.is_(None))
        .values(status="testing", tests_queued_at=utcnow()).execution_options(synchronize_session=False)
    ).rowcount
    return [Followup("run_tests", job_id)] if started else []


# ------------------------------------------------------------------------ pairwise tests
def run_tests(factory: sessionmaker[Session], job_id: int) -> list[Followup]:
    """The pairwise significance tests of the job's metrics, then the rank-change report.

    Always finishes the job: a metric whose test cannot run is reported in ``job.report``.
    """
    with factory() as s:
        job = s.get(Job, job_id)
        if job is None or job.status != "testing":
            return []
        config = s.get(CollectionConfig, job.config_id)
        assert config is not None
        sig = dict(config.significance)
        metrics = sig.get("metrics") or [config.official_metric]
        tables = _stored_scores(s, job.collection_id, job.qrels_version_id, config.settings_hash, metrics)
        all_tables = _stored_scores(s, job.collection_id, job.qrels_version_id, config.settings_hash,
                                    list(config.metrics))
        qrels_id, collection_id, settings = job.qrels_version_id, job.collection_id, config.settings_hash
    hidden = set(config.evaluation.get("hidden_topics") or [])
    results, errors = [], {}
    for metric in metrics:
        run_ids, topics, matrix = tables.get(metric, ([], [], np.zeros((0, 0))))
        if len(run_ids) < 2:
            errors[metric] = f"{len(run_ids)} evaluated run(s): nothing to compare"
            continue
        subsets = [("all", matrix)]
        if hidden:  # the public leaderboard's test, on the visible topics only
            subsets.append(("public", matrix[[t not in hidden for t in topics]]))
        for subset, x in subsets:
            try:
                res = pairwise(x, [str(r) for r in run_ids], sig["test"], resamples=int(sig["resamples"]),
                               alpha=float(sig["alpha"]), correction=sig["correction"], seed=int(sig["seed"]))
            except ValueError as exc:
                errors[metric if subset == "all" else f"{metric} (visible topics)"] = str(exc)
                continue
            results.append((metric, run_ids, res, subset))
    meta = _meta_evaluation(all_tables, sig)
    phash = params_hash(sig)
    try:
        with transaction(factory) as s:
            job = s.get(Job, job_id)
            if job is None or job.status != "testing":
                return []
            for metric, run_ids, res, subset in results:
                rhash = runs_hash(run_ids)
                exists = s.scalar(select(Significance.id).where(
                    Significance.qrels_version_id == qrels_id, Significance.metric == metric,
                    Significance.test == res.test, Significance.settings_hash == settings,
                    Significance.evaluator_version == EVALUATOR_VERSION, Significance.runs_hash == rhash,
                    Significance.params_hash == phash, Significance.subset == subset))
                if exists is None:
                    s.add(Significance(
                        collection_id=collection_id, qrels_version_id=qrels_id, metric=metric, test=res.test,
                        subset=subset, settings_hash=settings, evaluator_version=EVALUATOR_VERSION, runs_hash=rhash,
                        params_hash=phash, params={k: sig.get(k) for k in TEST_PARAMS}, run_ids=list(run_ids),
                        n_topics=res.n_topics, diff=pack(res.diff), statistic=pack(res.statistic), p=pack(res.p),
                        p_adjusted=pack(res.p_adjusted)))
            report = rank_changes(s, job, config) if job.previous_qrels_id else {}
            if errors:
                report = {**report, "test_errors": errors}
            report = {**report, "meta": meta}
            job.report = _json_safe(report)
            job.error = "; ".join(filter(None, [
                f"{job.failed} of {job.total} runs failed; see their status" if job.failed else "",
                "tests not run for " + ", ".join(errors) if errors else ""]))
            job.status, job.finished_at = "done", utcnow()
    except IntegrityError:
        return []  # a concurrent run_tests stored the same matrices and finished the job
    return []


def _json_safe(value: Any) -> Any:
    """NaN and infinities as null: PostgreSQL's JSON (rightly) refuses them."""
    if isinstance(value, float):
        return value if np.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


def _meta_evaluation(tables: dict[str, tuple[list[int], list[str], np.ndarray]], sig: dict[str, Any]) -> dict[str, Any]:
    """Discriminative power of every metric and Kendall's tau between their system rankings,
    on the stored per-topic scores (what the API's meta-evaluation view reads)."""
    from service.metrics.stats.meta import discriminative_power, kendall_tau, kendall_threshold

    out: dict[str, Any] = {"alpha": float(sig["alpha"]), "resamples": int(sig["resamples"]), "power": {}, "tau": {}}
    means: dict[str, dict[int, float]] = {}
    for metric, (run_ids, _topics, matrix) in tables.items():
        if len(run_ids) < 2:
            continue
        try:
            dp = discriminative_power(matrix, alpha=float(sig["alpha"]), resamples=int(sig["resamples"]),
                                      seed=int(sig["seed"]))
        except ValueError as exc:
            out["power"][metric] = {"error": str(exc)}
            continue
        # The ASL curve (Sakai's figures: every pair's ASL, sorted), thinned to at most 200 points.
        asl = np.sort(dp.asl[np.isfinite(dp.asl)])
        at = np.unique(np.linspace(0, len(asl) - 1, min(len(asl), 200)).round().astype(int)) if len(asl) else asl
        out["power"][metric] = {"power": dp.power, "significant_pairs": dp.significant_pairs, "pairs": dp.pairs,
                                "difference_required": dp.difference_required,
                                "asl_curve": [[int(i) + 1, float(asl[i])] for i in at]}
        means[metric] = dict(zip(run_ids, np.nanmean(matrix, axis=0).tolist()))
    names = sorted(means)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            common = sorted(set(means[a]) & set(means[b]))
            if len(common) >= 2:
                out["tau"][f"{a} | {b}"] = kendall_tau(np.array([means[a][r] for r in common]),
                                                       np.array([means[b][r] for r in common]))
    if means:
        out["tau_significant_above"] = kendall_threshold(max(2, len(next(iter(means.values())))), 0.01)
    return out


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

    def ranking(qrels_id: int, current: bool) -> dict[int, float]:
        q = (select(RunEvaluation.run_id, Score.mean).join(Score).join(Run, Run.id == RunEvaluation.run_id)
             .where(Run.collection_id == job.collection_id, RunEvaluation.qrels_version_id == qrels_id,
                    Score.metric == metric, Score.mean.is_not(None)).order_by(RunEvaluation.computed_at))
        if current:
            q = q.where(RunEvaluation.settings_hash == config.settings_hash,
                        RunEvaluation.evaluator_version == EVALUATOR_VERSION)
        return {run_id: mean for run_id, mean in s.execute(q)}  # the latest evaluation wins

    assert job.previous_qrels_id is not None
    old, new = ranking(job.previous_qrels_id, False), ranking(job.qrels_version_id, True)
    old_rank, new_rank = competition_ranks(old), competition_ranks(new)  # 1, 2, 2, 4
    tags = dict(s.execute(select(Run.id, Run.tag).where(Run.id.in_(set(old) | set(new)))).all())
    rows = [{"run": tags[r], "old_rank": old_rank.get(r), "new_rank": new_rank.get(r),
             "old_mean": old.get(r), "new_mean": new.get(r)}
            for r in sorted(set(old) | set(new), key=lambda r: (new_rank.get(r, 10**9), tags[r]))]
    old_v = s.get(QrelsVersion, job.previous_qrels_id)
    new_v = s.get(QrelsVersion, job.qrels_version_id)
    return {"metric": metric, "old_qrels_version": old_v.version if old_v else None,
            "new_qrels_version": new_v.version if new_v else None, "runs": rows}



# -------------------------------------------------------------------- sweeping, refreshing
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
                followups += _finish_item(s, item, ok=False,
                                          error=f"no result after {item.attempts} attempts (worker lost or too slow)")
                continue
            same_claim = (JobItem.started_at.is_(None) if item.started_at is None
                          else JobItem.started_at == item.started_at)  # not re-claimed meanwhile
            if s.execute(update(JobItem).where(JobItem.id == item.id, JobItem.status == "evaluating", same_claim)
                         .values(status="queued", queued_at=now)
                         .execution_options(synchronize_session=False)).rowcount:
                followups.append(Followup("evaluate_item", item.id))
        for job in s.scalars(select(Job).where(Job.status == "running")):
            items = list(s.scalars(select(JobItem).where(JobItem.job_id == job.id)))
            marks = [as_utc(t) for it in items for t in (it.queued_at, it.started_at, it.finished_at) if t]
            if marks and max(marks) < limit:  # no progress for `timeout`: the messages were lost
                for it in items:
                    if it.status == "queued" and s.execute(
                            update(JobItem).where(JobItem.id == it.id, JobItem.status == "queued")
                            .values(queued_at=now).execution_options(synchronize_session=False)).rowcount:
                        followups.append(Followup("evaluate_item", it.id))
            followups += _maybe_start_tests(s, job.id)
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
                followups.append(Followup("run_tests", job.id))
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
            key = (Job.collection_id == coll.id, Job.qrels_version_id == coll.current_qrels_id,
                   Job.config_id == config.id, Job.evaluator_version == EVALUATOR_VERSION)
            if s.scalar(select(Job.id).where(*key, Job.status.in_(ACTIVE))) is not None:
                continue  # being brought up to date already
            failed = set(s.scalars(select(JobItem.run_id).join(Job).where(*key, JobItem.status == "failed")))
            runs = [r for r in s.scalars(select(Run.id).where(Run.collection_id == coll.id)) if r not in failed]
            fresh = set(s.scalars(select(RunEvaluation.run_id).join(Run).where(
                Run.collection_id == coll.id, RunEvaluation.qrels_version_id == coll.current_qrels_id,
                RunEvaluation.settings_hash == config.settings_hash,
                RunEvaluation.evaluator_version == EVALUATOR_VERSION)))
            stale = any(r not in fresh for r in runs) or (
                len(fresh) > 1 and not _tests_current(s, coll, config, sorted(fresh))
                and not _tests_attempted_since_last_result(s, coll, key))
            if stale:
                _, more = plan_job(s, coll, "scheduled", retry_failed=False)
                followups += more
    return followups


def _tests_attempted_since_last_result(s: Session, coll: Collection, key: tuple) -> bool:  # type: ignore[type-arg]
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
                Significance.qrels_version_id == coll.current_qrels_id, Significance.metric == metric,
                Significance.settings_hash == config.settings_hash,
                Significance.evaluator_version == EVALUATOR_VERSION,
                Significance.runs_hash == runs_hash(run_ids), Significance.params_hash == params_hash(sig),
                Significance.subset == "all")) is None:
            return False
    return True
