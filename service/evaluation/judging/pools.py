"""Pools: the documents assessors judge, built from the submitted runs.

Organisers build a depth-k pool (all runs, each team's primary runs, or the runs within a
judging priority), leaving out documents the current qrels already judge (incremental
pooling when late runs arrive), or a stratified-sampling pool (strata by rank range, each
sampled at its rate with a seed: :mod:`service.metrics.sampling`), of which only the drawn
documents are judged. A pool is stored once and never changes; a large one is built by the
workers (:func:`request_pool`, :func:`build_pool`). Assessors' topics and files are in
:mod:`.assessments`; their judgments, checked against the pool, in :mod:`.judgments`.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, insert, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from service.errors import BadRequest, Conflict, InvalidMeasure, NotFound
from service.evaluation.analysing import analyses
from service.evaluation.common.lookup import existing
from service.evaluation.common.work import Followup, Heartbeat, LeaseLost, Limits, Outcome, patiently
from service.evaluation.organising.setup import (
    audit,
    load_qrels,
    load_run,
    max_level,
)
from service.evaluation.permissions import policy
from service.evaluation.permissions.access import Principal
from service.formats.types import Qrels
from service.formats.types import Run as CoreRun
from service.metrics import pooling, sampling
from service.store.db import as_utc, transaction
from service.store.models import (
    Analysis,
    Collection,
    Pool,
    PoolDocument,
    QrelsVersion,
    Run,
    Topic,
)

SELECTIONS = ("all", "primary", "priority")
KINDS = ("depth", "stratified")
MAX_STRATA = 20  # strata of a stratified pool
MAX_STRATIFIED_DEPTH = 10_000  # the last rank a stratified pool reaches
MAX_SEED = 2**31 - 1


# ------------------------------------------------------------------------------ pools
def pooled_runs(s: Session, coll: Collection, selection: str, max_priority: int | None) -> list[Run]:
    """The runs a pool is made of: all, each team's primary runs, or each team's first
    ``max_priority`` runs in judging order (the priorities the team set, lowest first, then
    runs without one in submission order): never more than N runs of a team."""
    if selection not in SELECTIONS:
        raise InvalidMeasure(f"selection is one of {', '.join(SELECTIONS)}")
    runs = list(s.scalars(select(Run).where(Run.collection_id == coll.id).order_by(Run.submitted_at, Run.id)))
    if selection == "primary":
        return [r for r in runs if r.is_primary]
    if selection == "priority":
        if not isinstance(max_priority, int) or isinstance(max_priority, bool) or max_priority < 1:
            raise InvalidMeasure("a priority pool needs max_priority >= 1")
        by_team: dict[int, list[Run]] = {}
        for r in runs:  # submission order
            by_team.setdefault(r.team_id, []).append(r)
        chosen: set[int] = set()
        for team_runs in by_team.values():
            ordered = sorted(team_runs, key=lambda r: (r.judging_priority is None, r.judging_priority or 0))
            chosen.update(r.id for r in ordered[:max_priority])  # a stable sort keeps submission order
        return [r for r in runs if r.id in chosen]
    return runs


QRELS_CHANGED = "the qrels changed while the pool was built; build it again"


def _check_depth(depth: Any) -> None:
    if not isinstance(depth, int) or isinstance(depth, bool) or depth < 1:
        raise InvalidMeasure("depth is a positive integer")


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_strata(strata: Any) -> tuple[sampling.Stratum, ...]:
    """A stratified pool's strata, ``[[first_rank, last_rank, rate], ...]``, checked: contiguous
    rank ranges from rank 1, rates in (0, 1], at most :data:`MAX_STRATA` strata, the last rank at
    most :data:`MAX_STRATIFIED_DEPTH`. Each refusal (400) names the stratum and what is wrong."""
    if not isinstance(strata, Sequence) or isinstance(strata, str | bytes) or not strata:
        raise BadRequest("strata: a stratified pool needs its strata, [[first_rank, last_rank, rate], ...], "
                         "e.g. [[1, 10, 1.0], [11, 100, 0.1]]")
    if len(strata) > MAX_STRATA:
        raise BadRequest(f"strata: {len(strata)} strata; a stratified pool has at most {MAX_STRATA}")
    for k, s in enumerate(strata, start=1):
        if (not isinstance(s, Sequence) or isinstance(s, str | bytes) or len(s) != 3 or not _whole(s[0])
                or not _whole(s[1]) or isinstance(s[2], bool) or not isinstance(s[2], int | float)):
            raise BadRequest(f"strata: stratum {k} is {s!r}; a stratum is [first_rank, last_rank, rate], two whole "
                             "numbers and a rate")
    try:
        layers = sampling.make_strata((int(a), int(b), float(r)) for a, b, r in strata)
    except ValueError as exc:
        raise BadRequest(str(exc)) from None
    if layers[-1].last > MAX_STRATIFIED_DEPTH:
        raise BadRequest(f"strata: the last stratum ends at rank {layers[-1].last}; a stratified pool reaches rank "
                         f"{MAX_STRATIFIED_DEPTH} at most")
    return layers


def parse_strata(text: str) -> list[list[int | float]]:
    """The strata of a form or the command line, ``1-10:1, 11-100:0.1`` (``first-last:rate``,
    separated by commas or spaces), as the API takes them; checked by :func:`check_strata`."""
    out: list[list[int | float]] = []
    for k, item in enumerate(text.replace(",", " ").split(), start=1):
        ranks, sep, rate = item.partition(":")
        first, dash, last = ranks.partition("-")
        try:
            if not sep or not dash:
                raise ValueError
            out.append([int(first), int(last), float(rate)])
        except ValueError:
            raise BadRequest(f"strata: stratum {k} is {item!r}; write each stratum first-last:rate, e.g. "
                             "1-10:1, 11-100:0.1") from None
    check_strata(out)
    return out


@dataclass(frozen=True)
class PoolPlan:
    """What a pool request asks for, checked: its kind, depth and, stratified, strata and seed."""

    kind: str
    depth: int
    strata: tuple[sampling.Stratum, ...] = ()
    seed: int | None = None

    @property
    def strata_json(self) -> list[list[int | float]] | None:
        return [[s.first, s.last, s.rate] for s in self.strata] if self.kind == "stratified" else None


def plan_pool(kind: str, depth: Any, strata: Any = None, seed: Any = None) -> PoolPlan:
    """Check a pool request's shape (400 with the reason): a depth pool takes a depth and no
    strata or seed; a stratified pool takes strata (its depth is their last rank: a depth
    given too must equal it) and a seed (0 to 2^31 - 1; drawn at random when left out, and
    stored, so the pool can be drawn again)."""
    if kind not in KINDS:
        raise BadRequest(f"kind is one of {', '.join(KINDS)}")
    if kind == "depth":
        if strata is not None or seed is not None:
            raise BadRequest("strata and seed are for a stratified pool (kind: stratified)")
        _check_depth(depth)
        return PoolPlan("depth", depth)
    layers = check_strata(strata)
    last = layers[-1].last
    if depth is not None and depth != last:
        raise BadRequest(f"depth: a stratified pool's depth is its last stratum's last rank ({last}); leave depth out")
    if seed is None:
        seed = secrets.randbelow(MAX_SEED + 1)
    if not _whole(seed) or not 0 <= seed <= MAX_SEED:
        raise BadRequest(f"seed is a whole number from 0 to {MAX_SEED}")
    return PoolPlan("stratified", last, layers, seed)


def order_seed(sample_seed: int) -> int:
    """The assessors' order of a stratified pool, derived from its draw's seed (so the same
    seed gives the same pool, order included) by a hash (so the order says nothing of the draw)."""
    return int.from_bytes(hashlib.sha256(f"assessment order:{sample_seed}".encode()).digest()[:4], "big") >> 1


@dataclass(frozen=True)
class _PoolInputs:
    """What a pool is built from, read in one session before any write lock is taken."""

    run_ids: list[int]
    runs: list[CoreRun]
    judged: Qrels | None  # the current qrels: their judged documents are left out
    topics: list[str]
    top_level: int


def _pool_inputs(s: Session, coll: Collection, runs: list[Run]) -> _PoolInputs:
    order = coll.current_config.evaluation.get("order", "score") if coll.current_config else "score"
    return _PoolInputs(run_ids=[r.id for r in runs],
                       runs=[load_run(r.file, r.source_name or r.tag, order) for r in runs],
                       judged=load_qrels(coll.current_qrels) if coll.current_qrels is not None else None,
                       topics=list(s.scalars(select(Topic.topic_id).where(Topic.collection_id == coll.id))),
                       top_level=max_level(s, coll))


def _qrels_changed(s: Session, collection_id: int, base: int | None) -> bool:
    """Whether the collection's current qrels are no longer ``base``, read under the
    collection's lock (PostgreSQL row lock; SQLite's BEGIN IMMEDIATE) held until the pool is stored."""
    s.execute(select(Collection.id).where(Collection.id == collection_id).with_for_update())
    coll = s.get(Collection, collection_id)
    if coll is None:
        raise NotFound(f"no collection {collection_id}")
    s.refresh(coll)
    return coll.current_qrels_id != base


def _pooled(inputs: _PoolInputs, plan: PoolPlan) -> pooling.Pool | sampling.StratifiedSample:
    """The pool itself (pure computation, no session): the depth-k pool less what is judged, or
    the stratified sample of the runs' top ranks (the collection's topics only, as depth pools)."""
    if plan.kind == "depth":
        return pooling.build_pool(inputs.runs, plan.depth, inputs.judged, inputs.topics)
    wanted = set(inputs.topics)
    rankings = {t: r for t, r in sampling.rankings_of(inputs.runs, plan.depth).items() if t in wanted}
    return sampling.stratified_sample(rankings, plan.strata, int(plan.seed or 0))


def stratified_counts(sample: sampling.StratifiedSample) -> dict[str, dict[str, Any]]:
    """Per topic: ``new`` (documents to judge: the sampled ones), ``union`` (the pool) and, per
    stratum in rank order, ``pooled`` (its size, the population sample_eval needs) and ``sampled``."""
    out: dict[str, dict[str, Any]] = {}
    for topic in sorted(sample.topics):
        pooled, drawn = sample.topics[topic].stratum_sizes(len(sample.strata))
        out[topic] = {"new": sum(drawn), "union": sum(pooled), "pooled": pooled, "sampled": drawn}
    return out


def _store_pool(s: Session, collection_id: int, base: int | None, plan: PoolPlan, selection: str,
                max_priority: int | None, inputs: _PoolInputs, built: pooling.Pool | sampling.StratifiedSample,
                actor: str) -> Pool:
    """Write the pool and its documents (in the caller's transaction, after :func:`_qrels_changed`).
    A stratified pool writes every pooled document (its stratum, best rank, inclusion
    probability, and whether it was drawn); its size is the documents to judge."""
    number = (s.scalar(select(func.max(Pool.number)).where(Pool.collection_id == collection_id)) or 0) + 1
    if isinstance(built, sampling.StratifiedSample):
        counts, size, seed = stratified_counts(built), built.size, order_seed(int(plan.seed or 0))
        docs = [{"pool_id": 0, "topic": t, "docno": d.docno, "stratum": d.stratum, "best_rank": d.best_rank,
                 "inclusion_probability": d.probability, "sampled": d.sampled}
                for t, ts in built.topics.items() for d in ts.pool]
    else:
        counts, size, seed = built.counts(), built.size, secrets.randbelow(2**31)
        docs = [{"pool_id": 0, "topic": t, "docno": d} for t, ds in built.documents.items() for d in ds]
    row = Pool(collection_id=collection_id, number=number, depth=plan.depth, selection=selection,
               max_priority=max_priority, max_level=inputs.top_level,
               base_qrels_version_id=base if plan.kind == "depth" else None,
               run_ids=inputs.run_ids, counts=counts, size=size, seed=seed, created_by=actor, kind=plan.kind,
               strata=plan.strata_json, sample_seed=plan.seed if plan.kind == "stratified" else None)
    s.add(row)
    s.flush()
    for doc in docs:
        doc["pool_id"] = row.id
    for start in range(0, len(docs), 5000):
        s.execute(insert(PoolDocument), docs[start:start + 5000])
    extra = {"strata": plan.strata_json, "seed": plan.seed} if plan.kind == "stratified" else {}
    audit(s, actor, "pool.create", collection_id, pool=number, depth=plan.depth, selection=selection, size=size,
          kind=plan.kind, **extra)
    return row


def create_pool(factory: sessionmaker[Session], me_of: Any, collection_id: int, depth: int | None,
                selection: str = "all", max_priority: int | None = None, *, kind: str = "depth",
                strata: Any = None, seed: int | None = None) -> int:
    """Build and store a pool (immutable) from the collection's runs, here and now (the CLI;
    requests ask the workers with :func:`request_pool`); returns its id. A depth pool leaves
    out what is judged; a stratified pool (``kind="stratified"``, ``strata``, ``seed``) is
    drawn from the runs' top ranks (see :func:`plan_pool`). The runs are read and pooled with
    no write lock held; the pool is then written in one short transaction; a depth pool is
    refused (409) if the qrels changed meanwhile. ``me_of(session)`` gives the caller."""
    with factory() as s:
        me = me_of(s)
        coll = s.get(Collection, collection_id)
        if coll is None:
            raise NotFound(f"no collection {collection_id}")
        plan, runs = _checked_runs(s, coll, me, depth, selection, max_priority, kind, strata, seed)
        base = coll.current_qrels_id
        inputs = _pool_inputs(s, coll, runs)
    built = _pooled(inputs, plan)
    with transaction(factory) as s:
        if _qrels_changed(s, collection_id, base) and plan.kind == "depth":
            raise Conflict(QRELS_CHANGED)
        return _store_pool(s, collection_id, base, plan, selection, max_priority, inputs, built, me.name).id


def _checked_runs(s: Session, coll: Collection, me: Principal, depth: Any, selection: str,
                  max_priority: int | None, kind: str = "depth", strata: Any = None,
                  seed: Any = None) -> tuple[PoolPlan, list[Run]]:
    """The plan and the runs of the pool asked for, once the caller and the parameters are checked."""
    policy.require(policy.may_manage_pools(me, coll), me, f"pools of collection {coll.id}")
    plan = plan_pool(kind, depth, strata, seed)
    runs = pooled_runs(s, coll, selection, max_priority)
    if not runs:
        raise Conflict("no run matches the pool's selection")
    return plan, runs


# ---------------------------------------------------------------- pools built by the workers
def request_pool(s: Session, coll: Collection, me: Principal, depth: int | None, selection: str = "all",
                 max_priority: int | None = None, *, kind: str = "depth", strata: Any = None,
                 seed: int | None = None) -> Outcome[dict[str, Any]]:
    """Ask the workers for a pool (organisers): the parameters are checked as
    :func:`create_pool` checks them (a stratified pool: ``kind="stratified"``, ``strata``,
    ``seed``, see :func:`plan_pool`), the runs chosen now, and the build recorded (an
    ``Analysis`` row of kind "pool", claimed, retried and swept as the analyses are); the
    result is its :func:`pool_request_doc`, the follow-up the build (:func:`build_pool`)."""
    plan, runs = _checked_runs(s, coll, me, depth, selection, max_priority, kind, strata, seed)
    params: dict[str, Any] = {"depth": plan.depth, "selection": selection, "max_priority": max_priority,
                              "run_ids": [r.id for r in runs], "base_qrels_version_id": coll.current_qrels_id}
    extra: dict[str, Any] = {}
    if plan.kind == "stratified":
        extra = {"kind": plan.kind, "strata": plan.strata_json, "seed": plan.seed}
        params.update(extra)
    outcome = analyses.queue(s, coll, me, analyses.POOL, params)
    audit(s, me.name, "pool.request", coll.id, build=outcome.result.id, depth=plan.depth, selection=selection,
          **extra)
    return Outcome(_build_doc(outcome.result), outcome.followups)


def _plan_of(params: dict[str, Any]) -> PoolPlan:
    """The plan a recorded build asked for (checked when it was asked)."""
    if params.get("kind", "depth") == "stratified":
        return PoolPlan("stratified", int(params["depth"]), sampling.make_strata(params["strata"]),
                        int(params["seed"]))
    return PoolPlan("depth", int(params["depth"]))


def build_pool(factory: sessionmaker[Session], build_id: int, max_attempts: int = 3,
               lease: float = Limits.lease) -> list[Followup]:
    """The worker's part of :func:`request_pool`: claim the build, read the runs chosen and
    pool them with no transaction open (a heartbeat renewing the claim's lease), then store
    the pool and finish the build in one transaction. The build fails, with the reason, if
    the qrels changed since it was asked for (:data:`QRELS_CHANGED`: the pool would ask for
    judgments made meanwhile), if its runs are gone, or if a run cannot be read. Only the
    latest claim stores, so a retried or duplicated task, or a second worker, adds no second
    pool; a claim whose lease expired (a dead worker) is taken over."""
    attempt = analyses.claim(factory, build_id, max_attempts, (analyses.POOL,), lease)
    if attempt is None:
        return []
    try:
        with Heartbeat(analyses.renewal(factory, build_id, attempt, lease), lease) as heartbeat:
            return _build_claimed(factory, build_id, attempt, heartbeat)
    except LeaseLost:
        return []  # taken over by a later attempt, which stores the pool


def _build_claimed(factory: sessionmaker[Session], build_id: int, attempt: int, heartbeat: Heartbeat) -> list[Followup]:
    with factory() as s:
        row = s.get(Analysis, build_id)
        if row is None:
            return []  # its collection was deleted meanwhile
        params, collection_id, actor = dict(row.params), row.collection_id, row.created_by
    plan = _plan_of(params)
    inputs: _PoolInputs | None = None
    try:
        def read() -> _PoolInputs | None:
            with factory() as s:
                coll = s.get(Collection, collection_id)
                wanted = list(params["run_ids"])
                found = {r.id: r for r in s.scalars(select(Run).where(Run.id.in_(wanted)))}
                runs = [found[r] for r in wanted if r in found]
                return _pool_inputs(s, coll, runs) if runs else None

        inputs = patiently(read, heartbeat)
        with heartbeat.guarded():
            built = _pooled(inputs, plan) if inputs else None
        error = "" if built is not None else "no run of the pool's selection is left"
    except (SQLAlchemyError, LeaseLost):
        raise  # the database away too long: the task is retried, the sweeper re-sends the build
    except Exception as exc:  # noqa: BLE001  (recorded on the build; the worker goes on)
        built, error = None, f"{type(exc).__name__}: {exc}"

    def store() -> list[Followup]:
        with transaction(factory) as s:
            changed = _qrels_changed(s, collection_id, params["base_qrels_version_id"])
            fresh = analyses.claimed(s, build_id, attempt)
            if fresh is None:
                return []  # re-queued by the sweeper meanwhile and claimed again: that attempt stores it
            changed = changed and plan.kind == "depth"  # a stratified pool leaves nothing judged out
            if changed or built is None:
                analyses.finish(fresh, {}, QRELS_CHANGED if changed else error)
                return []
            pool = _store_pool(s, collection_id, params["base_qrels_version_id"], plan,
                               params["selection"], params["max_priority"], inputs, built, actor)
            analyses.finish(fresh, {"pool_id": pool.id, "pool": pool.number, "size": pool.size})
        return []

    return patiently(store, heartbeat)


BUILD_STATUS = {"queued": "pending", "running": "running", "done": "done", "failed": "failed"}


def _build_doc(row: Analysis) -> dict[str, Any]:
    """A pool build's status document: pending, running, done (with the pool's id) or failed
    (with the reason)."""
    return {"id": row.id, "collection_id": row.collection_id, "status": BUILD_STATUS.get(row.status, row.status),
            "error": row.error or "", "pool": (row.result or {}).get("pool_id"),
            "params": {**{k: row.params.get(k) for k in ("depth", "selection", "max_priority")},
                       **{k: row.params[k] for k in ("kind", "strata", "seed") if k in row.params}},
            "created_at": as_utc(row.created_at).isoformat(),
            "finished_at": as_utc(row.finished_at).isoformat() if row.finished_at else None}


def pool_request_doc(s: Session, build_id: int, me: Principal) -> dict[str, Any]:
    """The status of a pool build (organisers of its collection)."""
    row = s.get(Analysis, build_id)
    if row is None or row.kind != analyses.POOL:
        raise NotFound(f"no pool build {build_id}")
    coll = s.get(Collection, row.collection_id)
    policy.require(policy.may_manage_pools(me, coll), me, f"pool build {build_id}")
    return _build_doc(row)


def pool_builds(s: Session, coll: Collection, me: Principal) -> list[dict[str, Any]]:
    """The collection's pool builds, newest first, with their status (organisers)."""
    policy.require(policy.may_manage_pools(me, coll), me, f"pool builds of collection {coll.id}")
    rows = s.scalars(select(Analysis).where(Analysis.collection_id == coll.id, Analysis.kind == analyses.POOL)
                     .order_by(Analysis.id.desc()))
    return [_build_doc(row) for row in rows]


def pools_of(s: Session, coll: Collection, me: Principal) -> list[dict[str, Any]]:
    """The collection's pools in order, as :func:`pool_doc` gives them (organisers)."""
    policy.require(policy.may_manage_pools(me, coll), me, f"pools of collection {coll.id}")
    return [pool_doc(s, p, me) for p in s.scalars(select(Pool).where(Pool.collection_id == coll.id)
                                                  .order_by(Pool.number))]


def pool_doc(s: Session, pool: Pool, me: Principal) -> dict[str, Any]:
    """A pool as organisers see it (runs and counts); assessors get :func:`assessments`."""
    policy.require(policy.may_organise(me, pool.collection_id), me, f"pool {pool.id}")
    tags = dict(s.execute(select(Run.id, Run.tag).where(Run.id.in_(pool.run_ids))).all())
    base = s.get(QrelsVersion, pool.base_qrels_version_id) if pool.base_qrels_version_id else None
    return {"id": pool.id, "collection_id": pool.collection_id, "number": pool.number, "kind": pool.kind,
            "depth": pool.depth, "selection": pool.selection, "max_priority": pool.max_priority,
            "max_level": pool.max_level, "excludes_judged_in_qrels_version": base.version if base else None,
            "strata": _strata_doc(pool), "seed": pool.sample_seed,
            "runs": [tags.get(r, str(r)) for r in pool.run_ids], "size": pool.size, "counts": pool.counts,
            "created_at": pool.created_at.isoformat() if pool.created_at else None, "created_by": pool.created_by}


def _strata_doc(pool: Pool) -> list[dict[str, Any]] | None:
    """A stratified pool's strata with their pooled and sampled documents over all topics."""
    if pool.kind != "stratified" or not pool.strata:
        return None
    out = []
    for k, (first, last, rate) in enumerate(pool.strata):
        pooled = sum(int(c["pooled"][k]) for c in pool.counts.values())
        drawn = sum(int(c["sampled"][k]) for c in pool.counts.values())
        out.append({"stratum": k + 1, "first_rank": first, "last_rank": last, "rate": rate, "pooled": pooled,
                    "sampled": drawn})
    return out


def get_pool(s: Session, pool_id: int, me: Principal) -> Pool:
    pool = existing(s, Pool, pool_id, "pool")
    policy.require(policy.may_read_pool(me, pool), me, f"pool {pool_id} (not yours to judge)")
    return pool


def pool_documents(s: Session, pool: Pool, topic: str) -> list[str]:
    """The topic's documents to judge, sorted: a depth pool's all, a stratified pool's sampled ones."""
    return list(s.scalars(select(PoolDocument.docno).where(PoolDocument.pool_id == pool.id,
                                                           PoolDocument.topic == topic,
                                                           PoolDocument.sampled.is_(True))
                          .order_by(PoolDocument.docno)))


def pool_sample(s: Session, pool: Pool) -> sampling.StratifiedSample:
    """A stratified pool as :func:`service.metrics.sampling.stratified_sample` drew it: every
    pooled document with its stratum, best rank, inclusion probability and whether it was drawn."""
    if pool.kind != "stratified":
        raise Conflict(f"pool {pool.number} is a {pool.kind} pool, not a stratified one")
    docs: dict[str, list[sampling.PooledDocument]] = {}
    for t, d, k, rank, p, drawn in s.execute(
            select(PoolDocument.topic, PoolDocument.docno, PoolDocument.stratum, PoolDocument.best_rank,
                   PoolDocument.inclusion_probability, PoolDocument.sampled).where(PoolDocument.pool_id == pool.id)):
        docs.setdefault(t, []).append(sampling.PooledDocument(d, int(rank), int(k), bool(drawn), float(p)))
    topics = {t: sampling.TopicSample(t, tuple(sorted(ds, key=lambda x: (x.best_rank, x.docno.encode()))))
              for t, ds in sorted(docs.items())}
    for t in pool.counts:  # a topic the runs retrieved nothing for within the strata has no document
        topics.setdefault(t, sampling.TopicSample(t, ()))
    return sampling.StratifiedSample(sampling.make_strata(pool.strata or ()), int(pool.sample_seed or 0), topics)


def unsampled_documents(s: Session, pool: Pool, topics: list[str]) -> dict[str, set[str]]:
    """A stratified pool's documents that were not drawn (pooled, never judged), per topic."""
    out: dict[str, set[str]] = {t: set() for t in topics}
    if pool.kind != "stratified":
        return out
    for t, d in s.execute(select(PoolDocument.topic, PoolDocument.docno).where(
            PoolDocument.pool_id == pool.id, PoolDocument.topic.in_(topics), PoolDocument.sampled.is_(False))):
        out[t].add(d)
    return out
