"""Analyses of a collection computed by the workers and stored: reusability (pool statistics
and Zobel's leave-one-team-out test) and the reduced-judgment experiment.

An organiser asks for an analysis of the current qrels (``request``, ``request_reduction``);
a worker computes it (``compute``) from the stored runs and judgments with the core
(:func:`service.metrics.pooling.reusability`,
:func:`service.metrics.stats.meta.reduced_judgments`) and stores the result in one
transaction. The API only reads it.

An ``Analysis`` row is also the record of other work done in the background (pool builds,
:mod:`service.evaluation.judging.pools`): :func:`claim`, :func:`renewal` and :func:`claimed` are its
protocol. Claiming is conditional (queued -> running, counting the attempt, with a lease its
heartbeat renews), and only the holder of the latest claim stores a result, so a retried or
duplicated task does nothing twice; a row whose lease expired (a dead attempt) is taken over
by a redelivered message or re-queued by the sweeper, never one that merely runs long.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from service.errors import InvalidMeasure, NotFound
from service.evaluation.common.work import Followup, Heartbeat, LeaseLost, Limits, Outcome, TaskName, patiently
from service.evaluation.organising.results import json_safe
from service.evaluation.organising.setup import audit, eval_settings, load_qrels, load_run
from service.evaluation.permissions import policy
from service.evaluation.permissions.access import Principal
from service.metrics import parse_measure, pooling
from service.metrics.stats.meta import reduced_judgments
from service.store.db import as_utc, db_now, transaction
from service.store.models import Analysis, Collection, CollectionConfig, Pool, QrelsVersion, Run, Team, utcnow

KIND = "reusability"
REDUCTION = "reduction"
POOL = "pool"  # a pool build (service.evaluation.judging.pools.request_pool)
DEFAULT_DEPTH = 100  # without a pool: the depth taken as pooled (TREC's usual)
DEFAULT_KEPT = (90, 70, 50, 30, 10)  # percent of the judgments kept (Buckley & Voorhees; Sakai)


JUDGE_BOARD = "judge_board"  # a judges track's board (service.evaluation.judging.judge_track)
REPRODUCIBILITY = "reproducibility"  # a collection's reproductions measured (service.evaluation.reproducing)


def task_of(kind: str) -> TaskName:
    """The task that does the work of an analysis row of this kind."""
    return {POOL: TaskName.BUILD_POOL, JUDGE_BOARD: TaskName.RANK_JUDGES,
            REPRODUCIBILITY: TaskName.MEASURE_REPRODUCTIONS}.get(kind, TaskName.RUN_ANALYSIS)


def followup(row: Analysis) -> Followup:
    """The follow-up doing a row's work; a judge board's in the background (no run waits for it)."""
    return Followup(task_of(row.kind), row.id, row.kind in (JUDGE_BOARD, REPRODUCIBILITY))


def queue(s: Session, coll: Collection, me: Principal, kind: str, params: dict[str, Any]) -> Outcome[Analysis]:
    """Record background work on the collection's current qrels and configuration, and the
    follow-up that does it once the transaction has committed."""
    row = Analysis(collection_id=coll.id, kind=kind, params=params, qrels_version_id=coll.current_qrels_id,
                   config_id=coll.current_config_id, created_by=me.name)
    s.add(row)
    s.flush()
    return Outcome(row, (followup(row),))


def request(s: Session, coll: Collection, me: Principal, metric: str | None = None, pool_id: int | None = None,
            depth: int | None = None) -> Outcome[Analysis]:
    """Queue the reusability analysis of the current qrels (organisers)."""
    policy.require(policy.may_manage_pools(me, coll), me, f"analyses of collection {coll.id}")
    if coll.current_qrels_id is None:
        raise InvalidMeasure("the collection has no qrels yet")
    config = coll.current_config
    name = str(parse_measure(metric)) if metric else config.official_metric
    pool = None
    if pool_id is not None:
        pool = s.get(Pool, pool_id)
        if pool is None or pool.collection_id != coll.id:
            raise NotFound(f"no pool {pool_id} in collection {coll.id}")
    else:
        pool = s.scalars(select(Pool).where(Pool.collection_id == coll.id).order_by(Pool.number.desc())).first()
    if depth is not None and (not isinstance(depth, int) or isinstance(depth, bool) or depth < 1):
        raise InvalidMeasure("depth is a positive integer")
    params = {"metric": name, "pool": pool.number if pool else None, "pool_id": pool.id if pool else None,
              "depth": depth or (pool.depth if pool else DEFAULT_DEPTH),
              "pooled_runs": list(pool.run_ids) if pool else None}
    outcome = queue(s, coll, me, KIND, params)
    audit(s, me.name, "analysis.request", coll.id, analysis=outcome.result.id, kind=KIND, metric=name)
    return outcome


def request_reduction(s: Session, coll: Collection, me: Principal,
                      kept: list[float] | None = None) -> Outcome[Analysis]:
    """Queue the reduced-judgment experiment on the collection's metrics (organisers)."""
    policy.require(policy.may_manage_pools(me, coll), me, f"analyses of collection {coll.id}")
    if coll.current_qrels_id is None:
        raise InvalidMeasure("the collection has no qrels yet")
    shares = list(kept) if kept else list(DEFAULT_KEPT)
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v < 100 for v in shares):
        raise InvalidMeasure("kept is a list of percentages between 0 and 100")
    sig = coll.current_config.significance
    params = {"kept": sorted({float(v) for v in shares}, reverse=True), "metrics": list(coll.current_config.metrics),
              "alpha": float(sig["alpha"]), "resamples": int(sig["resamples"]), "seed": int(sig["seed"])}
    outcome = queue(s, coll, me, REDUCTION, params)
    audit(s, me.name, "analysis.request", coll.id, analysis=outcome.result.id, kind=REDUCTION)
    return outcome


# ------------------------------------------------------------------- the workers' protocol
def claim(factory: sessionmaker[Session], analysis_id: int, max_attempts: int, kinds: tuple[str, ...],
          lease: float | None = None) -> int | None:
    """Claim a queued row of one of ``kinds`` (queued -> running), or take over a running one
    whose lease expired (its attempt died): this claim's attempt number, or None when the row
    is not this caller's to do (gone, of another kind, held by a live attempt or done; given
    up after ``max_attempts``, which fails it). With ``lease`` (seconds) the claim expires
    unless renewed (:func:`renewal`); without, it is swept after the stuck timeout."""
    with transaction(factory) as s:
        row = s.get(Analysis, analysis_id)
        if row is None or row.kind not in kinds:
            return None
        now = db_now(s)  # the database's clock, as every lease
        expires = as_utc(row.lease_expires_at)
        if not (row.status == "queued" or (row.status == "running" and expires is not None and expires < now)):
            return None
        if row.attempts >= max_attempts:
            row.status, row.error, row.finished_at = "failed", f"gave up after {row.attempts} attempts", now
            row.lease_expires_at = None
            return None
        attempt = row.attempts + 1  # this claim's number: only its holder stores the result
        claimed_now = s.execute(update(Analysis).where(Analysis.id == analysis_id, Analysis.status == row.status,
                                                       Analysis.attempts == row.attempts)
                                .values(status="running", started_at=now, attempts=attempt,
                                        lease_expires_at=None if lease is None else now + timedelta(seconds=lease))
                                .execution_options(synchronize_session=False)).rowcount
        return attempt if claimed_now == 1 else None


def renewal(factory: sessionmaker[Session], analysis_id: int, attempt: int, lease: float) -> Callable[[], bool]:
    """The heartbeat's renewal of claim ``attempt`` (False once another attempt holds the row)."""
    def renew() -> bool:
        with transaction(factory) as s:
            return s.execute(update(Analysis).where(Analysis.id == analysis_id, Analysis.status == "running",
                                                    Analysis.attempts == attempt)
                             .values(lease_expires_at=db_now(s) + timedelta(seconds=lease))
                             .execution_options(synchronize_session=False)).rowcount == 1
    return renew


def claimed(s: Session, analysis_id: int, attempt: int) -> Analysis | None:
    """The row, if the claim numbered ``attempt`` still holds it (in the storing transaction):
    re-queued by the sweeper and claimed again meanwhile, the later attempt stores instead."""
    fresh = s.get(Analysis, analysis_id, with_for_update=True, populate_existing=True)
    if fresh is None or fresh.status != "running" or fresh.attempts != attempt:
        return None
    return fresh


def finish(row: Analysis, result: dict[str, Any], error: str = "") -> None:
    """Store the outcome on a claimed row: done with ``result``, or failed with ``error``."""
    row.result, row.status, row.error, row.finished_at = json_safe(result), "failed" if error else "done", error, \
        utcnow()
    row.lease_expires_at = None


def compute(factory: sessionmaker[Session], analysis_id: int, max_attempts: int = 3,
            lease: float = Limits.lease) -> list[Followup]:
    """The worker's part: claim, compute with no transaction open while a heartbeat renews
    the claim, store in one transaction (if the claim still holds)."""
    return run_claimed(factory, analysis_id, (KIND, REDUCTION), max_attempts, lease, _compute)


def run_claimed(factory: sessionmaker[Session], analysis_id: int, kinds: tuple[str, ...], max_attempts: int,
                lease: float, work: Callable[[sessionmaker[Session], int, int, Heartbeat], list[Followup]]
                ) -> list[Followup]:
    """Claim a row of one of ``kinds`` and do ``work(factory, id, attempt, heartbeat)`` while a
    heartbeat renews the claim; nothing when the row is not this caller's or the lease is lost."""
    attempt = claim(factory, analysis_id, max_attempts, kinds, lease)
    if attempt is None:
        return []
    try:
        with Heartbeat(renewal(factory, analysis_id, attempt, lease), lease) as heartbeat:
            return work(factory, analysis_id, attempt, heartbeat)
    except LeaseLost:
        return []


def store_outcome(factory: sessionmaker[Session], analysis_id: int, attempt: int, result: dict[str, Any],
                  error: str, heartbeat: Heartbeat) -> list[Followup]:
    """Store a computed result (or its error) in one transaction, if this attempt still holds
    the claim (a taken-over attempt stores nothing)."""
    def store() -> list[Followup]:
        with transaction(factory) as s:
            fresh = claimed(s, analysis_id, attempt)
            if fresh is not None:
                finish(fresh, result, error)
        return []

    return patiently(store, heartbeat)


def _compute(factory: sessionmaker[Session], analysis_id: int, attempt: int, heartbeat: Heartbeat) -> list[Followup]:
    def read() -> tuple[dict[str, Any], str, Any, Any, str, list[Any]]:
        with factory() as s:
            row = s.get(Analysis, analysis_id)
            qrels = load_qrels(s.get(QrelsVersion, row.qrels_version_id))
            config = s.get(CollectionConfig, row.config_id)
            runs = list(s.execute(select(Run.id, Run.tag, Run.file, Run.source_name, Team.name)
                                  .join(Team, Team.id == Run.team_id).where(Run.collection_id == row.collection_id)
                                  .order_by(Run.id)))
            return dict(row.params), row.kind, qrels, eval_settings(config), config.evaluation.get("order", "score"), \
                runs

    params, kind, qrels, settings, order, runs = patiently(read, heartbeat)
    try:
        with heartbeat.guarded():
            loaded = [(tag, load_run(blob, source or tag, order), team, rid) for rid, tag, blob, source, team in runs]
            if kind == REDUCTION:
                result = reduction(qrels, [r for _, r, _, _ in loaded], params, settings)
            else:
                result = reusability(qrels, loaded, params, settings)
        error = ""
    except LeaseLost:
        raise
    except Exception as exc:  # noqa: BLE001  (recorded on the analysis; the worker goes on)
        result, error = {}, f"{type(exc).__name__}: {exc}"
    return store_outcome(factory, analysis_id, attempt, result, error, heartbeat)


def reusability(qrels: Any, runs: list[tuple[str, Any, str, int]], params: dict[str, Any],
                settings: Any) -> dict[str, Any]:
    """The stored document of :func:`service.metrics.pooling.reusability` on ``runs`` (tag,
    core run, team, run id), the pool being made of the runs ``params["pooled_runs"]`` names."""
    pooled_ids = params.get("pooled_runs")
    pooled = None if pooled_ids is None else [t for t, _, _, rid in runs if rid in set(pooled_ids)]
    r = pooling.reusability(qrels, [run for _, run, _, _ in runs], {t: team for t, _, team, _ in runs},
                            params["metric"], int(params["depth"]), settings, pooled=pooled)
    loto = r.leave_one_team_out
    return {"metric": r.metric, "depth": r.depth, "pool": params.get("pool"),
            "topics": [{"topic": t.topic, "pool_size": t.pool_size, "judged": t.judged,
                        "judged_share": t.judged_share, "relevant_in_pool": t.relevant_in_pool} for t in r.topics],
            "runs": [{"run": x.run, "team": x.team, "pooled": x.pooled, "judged_at_10": x.judged_at_10,
                      f"judged_at_{r.depth}": x.judged_at_depth, "unique_relevant": x.unique_relevant}
                     for x in r.runs],
            "teams": [{"team": x.team, "unique_relevant": x.unique_relevant, "runs": x.runs} for x in r.teams],
            "leave_one_team_out": {"runs": loto.runs, "max_drop": loto.max_drop, "mean_change": loto.mean_change,
                                   "max_rank_drop": loto.max_rank_drop, "kendall_tau": loto.tau},
            "mean_judged_share": r.mean_judged_share}


def reduction(qrels: Any, runs: list[Any], params: dict[str, Any], settings: Any) -> dict[str, Any]:
    """The stored document of :func:`service.metrics.stats.meta.reduced_judgments`: each
    metric's discriminative power and tau against the full ranking, on the full judgments
    and on each reduced share."""
    r = reduced_judgments(qrels, runs, params["metrics"], settings, params["kept"], params["alpha"],
                          params["resamples"], params["seed"])
    return {"rows": r.rows, "runs": r.runs, "kept": r.kept}


# --------------------------------------------------------------------------- reading
def get(s: Session, analysis_id: int, me: Principal) -> Analysis:
    """An analysis row (:func:`doc` decides who may read it)."""
    row = s.get(Analysis, analysis_id)
    if row is None or row.kind in (POOL, JUDGE_BOARD, REPRODUCIBILITY):  # read as such (pool_request_doc, judge_track.board)
        raise NotFound(f"no analysis {analysis_id}")
    return row


def doc(s: Session, row: Analysis, me: Principal) -> dict[str, Any]:
    """An analysis with its status and result: the reduced-judgment experiment for whoever
    may see the meta-evaluation, the reusability analysis for organisers."""
    coll = s.get(Collection, row.collection_id)
    if row.kind == REDUCTION:
        policy.require(policy.may_see_analyses(me, coll), me, f"analysis {row.id}")
    else:
        policy.require(policy.may_manage_pools(me, coll), me, f"analysis {row.id}")
    version = s.get(QrelsVersion, row.qrels_version_id) if row.qrels_version_id is not None else None
    return {"id": row.id, "collection_id": row.collection_id, "kind": row.kind, "params": {
        k: v for k, v in row.params.items() if k != "pooled_runs"}, "qrels_version": version.version if version else None,
        "status": row.status, "error": row.error, "created_at": as_utc(row.created_at).isoformat(),
        "finished_at": as_utc(row.finished_at).isoformat() if row.finished_at else None, "result": row.result}


def latest(s: Session, coll: Collection, me: Principal, kind: str = KIND) -> Analysis | None:
    """The newest analysis of a kind (reusability: organisers; reduction: as the meta-evaluation)."""
    if kind == KIND:
        policy.require(policy.may_manage_pools(me, coll), me, f"analyses of collection {coll.id}")
    return s.scalars(select(Analysis).where(Analysis.collection_id == coll.id, Analysis.kind == kind)
                     .order_by(Analysis.id.desc())).first()


def sweep(factory: sessionmaker[Session], timeout: float, *, lost_after: float | None = None) -> list[Followup]:
    """Re-queue analyses (and pool builds) whose claim expired (their attempt died; a claim
    without a lease: after three times ``timeout`` seconds) and send queued ones again once
    they were last sent ``lost_after`` seconds ago (when the sweeper found messages missing;
    otherwise ``timeout``). Each change is conditional on the state read, so a concurrent
    claim wins."""
    grace = timedelta(seconds=timeout if lost_after is None else lost_after)
    out = []
    with transaction(factory) as s:
        now = db_now(s)  # the database's clock, as every lease
        for row in s.scalars(select(Analysis).where(Analysis.status.in_(("running", "queued")))):
            if row.status == "running":
                expires = as_utc(row.lease_expires_at)
                dead = expires < now if expires is not None else (
                    as_utc(row.started_at) < now - timedelta(seconds=3 * timeout))
                if dead and s.execute(update(Analysis).where(Analysis.id == row.id, Analysis.status == "running",
                                                             Analysis.attempts == row.attempts)
                                      .values(status="queued", queued_at=now, lease_expires_at=None)
                                      .execution_options(synchronize_session=False)).rowcount:
                    out.append(followup(row))
            elif as_utc(row.queued_at or row.created_at) <= now - grace and s.execute(
                    update(Analysis).where(Analysis.id == row.id, Analysis.status == "queued")
                    .values(queued_at=now).execution_options(synchronize_session=False)).rowcount:
                out.append(followup(row))  # lost on the way: sending twice is harmless
    return out
