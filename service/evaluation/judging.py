"""The judgment workflow: pools from submitted runs, blind assessment, judgments into qrels versions.

Organisers build a depth-k pool (all runs, each team's primary runs, or the runs within a
judging priority), leaving out documents the current qrels already judge (incremental
pooling when late runs arrive), or a stratified-sampling pool (strata by rank range, each
sampled at its rate with a seed: :mod:`service.metrics.sampling`), of which only the drawn
documents are judged. A pool is stored once and never changes. Assessors download the
documents of their assigned topics in a seeded random order and upload judgments, which are
checked against the pool line by line; accepted judgments, laid over the current qrels,
become a new qrels version, which starts the re-evaluation of every run. A stratified
pool's version is NIST's sampled qrels (format ``sampled``: every pooled document with its
stratum, the unsampled ones at -1), which the inferred measures (xinfAP, infNDCG) read.
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

from service.errors import BadRequest, Conflict, Forbidden, InvalidInput, InvalidMeasure, NotFound
from service.evaluation import analyses, idempotency, labels, policy
from service.evaluation.access import Principal
from service.evaluation.lookup import existing
from service.evaluation.memory import guarded
from service.evaluation.planning import plan_job
from service.evaluation.setup import (
    ParsedQrels,
    add_qrels,
    audit,
    load_qrels,
    load_run,
    load_sampled_qrels,
    max_level,
    official_set,
)
from service.evaluation.work import Followup, Heartbeat, LeaseLost, Limits, Outcome, patiently
from service.formats.readers import qrels_records
from service.formats.sampled import SampledQrels
from service.formats.types import Qrels
from service.formats.types import Run as CoreRun
from service.metrics import pooling, sampling
from service.metrics.judgment_rules import derive
from service.store.db import as_utc, transaction
from service.store.models import (
    Analysis,
    AssessorAssignment,
    Collection,
    JudgmentSet,
    Pool,
    PoolDocument,
    QrelsVersion,
    Run,
    Team,
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


def _unsampled(s: Session, pool: Pool, topics: list[str]) -> dict[str, set[str]]:
    """A stratified pool's documents that were not drawn (pooled, never judged), per topic."""
    out: dict[str, set[str]] = {t: set() for t in topics}
    if pool.kind != "stratified":
        return out
    for t, d in s.execute(select(PoolDocument.topic, PoolDocument.docno).where(
            PoolDocument.pool_id == pool.id, PoolDocument.topic.in_(topics), PoolDocument.sampled.is_(False))):
        out[t].add(d)
    return out


def assessment_file(s: Session, pool_id: int, me: Principal, topic: str) -> str:
    """The plain per-topic format an assessor judges: ``topic docno`` lines in a seeded random
    order (never rank order), to be returned with a level appended (``L2`` or ``2``)."""
    pool = get_pool(s, pool_id, me)
    if not policy.may_assess(me, pool.collection_id, topic):
        raise Forbidden(f"topic {topic} is not assigned to you")
    docs = pool_documents(s, pool, topic)
    if not docs and topic not in pool.counts:
        raise NotFound(f"topic {topic} is not in pool {pool_id}")
    return document_lines(topic, pooling.assessment_order(docs, pooling.topic_seed(pool.seed, topic)))


def document_lines(topic: str, docs: Sequence[str]) -> str:
    """Documents to judge as the assessors' files and the judges track's pool give them: a
    ``topic docno`` line each, returned judged with the level appended (``topic docno L2``)."""
    return "".join(f"{topic} {d}\n" for d in docs)


def assessments(s: Session, me: Principal) -> list[dict[str, Any]]:
    """What an assessor (or organiser) has to judge: per pool and assigned topic, the pool's
    documents and how many the current qrels already judge. No runs, scores or teams."""
    from urllib.parse import quote  # a topic id may hold "/", "?", "#" or "%" (its link is a path)

    policy.require(policy.is_assessor(me), me, "the assessors' list (organisers read their pools)")
    out = []
    collections = sorted({c for c, _ in me.assigned})
    for cid in collections:
        coll = s.get(Collection, cid)
        judged = _judged_pairs(s, coll.current_qrels_id) if coll.current_qrels_id else set()
        for pool in s.scalars(select(Pool).where(Pool.collection_id == cid).order_by(Pool.number)):
            for topic in sorted(t for c, t in me.assigned if c == cid):
                docs = pool_documents(s, pool, topic)
                if not docs:
                    continue
                done = sum(1 for d in docs if (topic, d) in judged)
                out.append({"pool": pool.id, "collection_id": cid, "collection": coll.name, "topic": topic,
                            "documents": len(docs), "judged": done, "max_level": pool.max_level,
                            "download": f"/api/pools/{pool.id}/topics/{quote(topic, safe='/')}"})
    return out


def _judged_pairs(s: Session, qrels_version_id: int) -> set[tuple[str, str]]:
    from service.store.models import Judgment

    return set(s.execute(select(Judgment.topic, Judgment.docno).where(
        Judgment.qrels_version_id == qrels_version_id, Judgment.level >= 0)).all())


# -------------------------------------------------------------------------- judgments
@dataclass(frozen=True)
class JudgmentLine:
    line: int
    topic: str
    docno: str
    level: int


def judgment_lines(body: bytes, source: str) -> list[JudgmentLine]:
    """The judgments of an upload with their line numbers, read by the qrels reader itself
    (TREC ``topic iter docno level`` or NTCIR ``topic docno Lk``; its errors come first)."""
    return [JudgmentLine(line, topic, docno, level) for line, topic, docno, level in qrels_records(body, source)]


@guarded
def submit_judgments(factory: sessionmaker[Session], me_of: Any, pool_id: int, body: bytes,
                     source: str = "judgments upload", idempotency_key: str | None = None) -> Outcome[dict[str, Any]]:
    """Check an upload against the pool; accepted, it becomes a new qrels version (the current
    judgments with these laid over them) and the collection is re-evaluated.

    Every judged document must be in the pool of its topic, every topic assigned to the
    caller, every level within 0..H, and every pool document of an uploaded topic judged. Of
    a stratified pool, the sampled documents only are judged (an unsampled one is refused),
    and the version is its sampled qrels (:func:`sampled_version`). With ``idempotency_key``, a retried upload (the same body) is answered as the first one
    was, without a second qrels version (:func:`idempotency.store_once`).
    """
    idempotency.check_key(idempotency_key)
    with factory() as s:  # authorise, then validate, before taking any write lock
        me = me_of(s)
        pool = get_pool(s, pool_id, me)
        lines = judgment_lines(body, source)
        if not lines:
            raise InvalidInput(source, None, "no judgments in the upload")
        topics = sorted({ln.topic for ln in lines})
        pool_docs = {t: set(pool_documents(s, pool, t)) for t in topics}
        unsampled = _unsampled(s, pool, topics)
        seen: set[tuple[str, str]] = set()
        for ln in lines:
            if not policy.may_assess(me, pool.collection_id, ln.topic):
                raise InvalidInput(source, ln.line, f"topic {ln.topic} is not assigned to you")
            if ln.topic not in pool.counts:
                raise InvalidInput(source, ln.line, f"topic {ln.topic} is not in pool {pool.number}")
            if ln.docno in unsampled[ln.topic]:
                raise InvalidInput(source, ln.line, f"document {ln.docno} of topic {ln.topic} is in the pool but was "
                                                    "not sampled: only the sampled documents of a stratified pool "
                                                    "are judged")
            if ln.docno not in pool_docs[ln.topic]:
                raise InvalidInput(source, ln.line, f"document {ln.docno} is not in the pool of topic {ln.topic}")
            if not 0 <= ln.level <= pool.max_level:
                raise InvalidInput(source, ln.line, f"unknown level {ln.level}: levels are 0 to {pool.max_level} "
                                                    f"(L0 to L{pool.max_level})")
            if (ln.topic, ln.docno) in seen:
                raise InvalidInput(source, ln.line, f"document {ln.docno} of topic {ln.topic} is judged twice")
            seen.add((ln.topic, ln.docno))
        for topic in topics:
            missing = sorted(pool_docs[topic] - {d for t, d in seen if t == topic})
            if missing:
                raise InvalidInput(source, None, f"topic {topic}: {len(missing)} pool document(s) not judged, e.g. "
                                                 f"{', '.join(missing[:5])}")
    digest = idempotency.request_hash(body)

    def store(s: Session, coll: Collection) -> Outcome[dict[str, Any]]:
        # The current version is read under the collection's lock (PostgreSQL row lock;
        # SQLite's BEGIN IMMEDIATE), so two uploads in flight cannot drop each other's judgments.
        # Each assessor's labels are kept in the official set; its level for a document judged
        # by several is the set's rule over their labels ("latest": the newest, as always).
        previous = coll.current_qrels_id
        official = official_set(s, coll)
        touched = labels.store(s, official, ((ln.topic, ln.docno, me.name, ln.level) for ln in lines))
        if pool.kind == "stratified":
            version = sampled_version(s, coll, official, pool, me, f"{source} (pool {pool.number})")
        else:
            version = labels.derived_version(s, coll, official, me, f"{source} (pool {pool.number})", touched)
        audit(s, me.name, "judgments.accept", coll.id, pool=pool.number, topics=topics, judgments=len(lines))
        followups: list[Followup] = []
        job_id = None
        if s.scalar(select(func.count()).select_from(Run).where(Run.collection_id == coll.id)):
            job, followups = plan_job(s, coll, "qrels", previous_qrels_id=previous)
            job_id = job.id
        doc = {"qrels_version": version.version, "judgments": len(lines), "topics": topics, "job": job_id}
        return Outcome(doc, tuple(followups))

    return idempotency.store_once(factory, pool.collection_id, me, f"judgments:{pool_id}", idempotency_key, digest,
                                  store, what=f"a judgments upload to pool {pool_id}")


# ------------------------------------------------------ judgments of a stratified pool
SAMPLED = "sampled"  # the qrels format of NIST's five-column sampled qrels (service.formats.sampled)


def sampled_judgments(s: Session, pool: Pool, js: JudgmentSet) -> SampledQrels:
    """The stratified pool's sampled qrels as far as ``js`` judges it: each topic whose sampled
    documents all have a level (the set's labels under its rule), with every pooled document of
    the topic in its stratum (labelled 1, 2, ... in rank order), the sampled ones at their level
    and the others at -1 (:meth:`service.metrics.sampling.StratifiedSample.to_sampled_qrels`).
    Topics with a sampled document still unjudged, or none sampled, are left out."""
    sample = pool_sample(s, pool)
    wanted = {(t, d.docno) for t, ts in sample.topics.items() for d in ts.sampled}
    levels = derive({k: v for k, v in labels.labels_of_set(s, js).items() if k in wanted}, js.rule)
    judged: dict[str, dict[str, int]] = {}
    complete: dict[str, sampling.TopicSample] = {}
    for t, ts in sample.topics.items():
        got = {d.docno: levels.get((t, d.docno), -1) for d in ts.sampled}
        if got and min(got.values()) >= 0:
            judged[t], complete[t] = got, ts
    partial = sampling.StratifiedSample(sample.strata, sample.seed, complete)
    return partial.to_sampled_qrels(judged, f"pool {pool.number}")


def _as_sampled(version: QrelsVersion | None) -> dict[str, dict[str, tuple[str, int]]]:
    """A stored version's judgments in the sampled form ``{topic: {docno: (stratum, level)}}``:
    a sampled version as stored; an ad hoc one with each topic one stratum "1" (its judged
    documents all sampled: xinfAP is then AP but for the smoothing, and its pooled-unjudged
    documents, -1, stay pooled and unsampled)."""
    if version is None:
        return {}
    fmt = version.format or "adhoc"
    if fmt == SAMPLED:
        return load_sampled_qrels(version).to_mapping()
    if fmt != "adhoc":
        raise Conflict(f"the current qrels (version {version.version}) are {fmt} qrels; the judgments of a "
                       "stratified pool make sampled qrels and cannot be laid over them")
    return {t: {d: ("1", lv) for d, lv in js.items()} for t, js in load_qrels(version).to_mapping().items()}


def sampled_version(s: Session, coll: Collection, js: JudgmentSet, pool: Pool, me: Principal,
                    source: str) -> QrelsVersion:
    """A new version of ``js`` in the sampled format: its current version's topics (carried as
    they are, see :func:`_as_sampled`) with each topic the stratified pool now fully judges
    replaced by the pool's sample of it (:func:`sampled_judgments`)."""
    current = s.get(QrelsVersion, js.current_version_id) if js.current_version_id else None
    merged = _as_sampled(current)
    merged.update(sampled_judgments(s, pool, js).to_mapping())
    return store_sampled_version(s, coll, js, SampledQrels.from_mapping(merged, source), source, me.name)


def store_sampled_version(s: Session, coll: Collection, js: JudgmentSet, qrels: SampledQrels, source: str,
                          actor: str) -> QrelsVersion:
    """Store sampled qrels as a new version of ``js``: the one call into the qrels format
    ``sampled`` (NIST's five columns ``topic 0 docno stratum rel``, read by
    :func:`service.formats.sampled.parse_sampled_qrels`, evaluated with xinfAP and infNDCG)."""
    parsed = ParsedQrels(SAMPLED, qrels.to_qrels(), qrels)  # what parse_upload(text, source, "sampled") gives
    return add_qrels(s, coll, qrels.to_text().encode("utf-8"), source, actor, parsed=parsed, judgment_set=js,
                     fmt=SAMPLED)


def team_of(s: Session, run_ids: list[int]) -> dict[int, str]:
    return dict(s.execute(select(Run.id, Team.name).join(Team, Team.id == Run.team_id).where(Run.id.in_(run_ids))))


def set_assignment(s: Session, coll: Collection, me: Principal, token_id: int, topics: list[str]) -> list[str]:
    """Replace an assessor token's topics in this collection (organisers)."""
    from service.evaluation.access import assign_topics
    from service.store.models import ApiToken

    policy.require(policy.may_manage_pools(me, coll), me, f"assigning topics of collection {coll.id}")
    token = s.get(ApiToken, token_id)
    if token is None or token.role != "assessor":
        raise NotFound(f"no assessor token {token_id}")
    assign_topics(s, token_id, coll.id, topics)
    audit(s, me.name, "assessor.assign", coll.id, token=token.prefix, topics=sorted(set(topics)))
    return sorted(set(topics))


def assignments(s: Session, coll: Collection, me: Principal) -> list[dict[str, Any]]:
    from service.store.models import ApiToken

    policy.require(policy.may_manage_pools(me, coll), me, f"the assessors of collection {coll.id}")
    rows = s.execute(select(ApiToken.id, ApiToken.name, ApiToken.prefix, AssessorAssignment.topic)
                     .join(AssessorAssignment, AssessorAssignment.token_id == ApiToken.id)
                     .where(AssessorAssignment.collection_id == coll.id).order_by(ApiToken.id, AssessorAssignment.topic))
    out: dict[int, dict[str, Any]] = {}
    for tid, name, prefix, topic in rows:
        out.setdefault(tid, {"token_id": tid, "name": name, "prefix": prefix, "topics": []})["topics"].append(topic)
    return list(out.values())
