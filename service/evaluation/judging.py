"""The judgment workflow: pools from submitted runs, blind assessment, judgments into qrels versions.

Organisers build a depth-k pool (all runs, each team's primary runs, or the runs within a
judging priority), leaving out documents the current qrels already judge (incremental
pooling when late runs arrive). A pool is stored once and never changes. Assessors download
the documents of their assigned topics in a seeded random order and upload judgments, which
are checked against the pool line by line; accepted judgments, laid over the current qrels,
become a new qrels version, which starts the re-evaluation of every run.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, insert, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from service.errors import Conflict, Forbidden, InvalidInput, InvalidMeasure, NotFound
from service.evaluation import analyses, idempotency, labels, policy
from service.evaluation.access import Principal
from service.evaluation.lookup import existing
from service.evaluation.planning import plan_job
from service.evaluation.setup import audit, judged_top_level, load_qrels, load_run, official_set
from service.evaluation.work import Followup, Heartbeat, LeaseLost, Limits, Outcome, patiently
from service.formats.readers import qrels_records
from service.formats.types import Qrels
from service.formats.types import Run as CoreRun
from service.metrics import pooling
from service.store.db import as_utc, transaction
from service.store.models import (
    Analysis,
    AssessorAssignment,
    Collection,
    Pool,
    PoolDocument,
    QrelsVersion,
    Run,
    Team,
    Topic,
)

SELECTIONS = ("all", "primary", "priority")


# ------------------------------------------------------------------------------ pools
def max_level(s: Session, coll: Collection) -> int:
    """The top judgment level H of the collection: declared (evaluation.max_level, or the
    configured levels), else the current qrels' top level, else 3."""
    cfg = coll.current_config
    if cfg is not None and cfg.evaluation.get("max_level") is not None:
        return int(cfg.evaluation["max_level"])
    if cfg is not None and cfg.levels:
        return max(int(level["level"]) for level in cfg.levels)
    if coll.current_qrels is not None:
        return max(3, judged_top_level(coll.current_qrels))
    return 3


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


def _store_pool(s: Session, collection_id: int, base: int | None, depth: int, selection: str,
                max_priority: int | None, inputs: _PoolInputs, built: pooling.Pool, actor: str) -> Pool:
    """Write the pool and its documents (in the caller's transaction, after :func:`_qrels_changed`)."""
    number = (s.scalar(select(func.max(Pool.number)).where(Pool.collection_id == collection_id)) or 0) + 1
    row = Pool(collection_id=collection_id, number=number, depth=depth, selection=selection,
               max_priority=max_priority, max_level=inputs.top_level, base_qrels_version_id=base,
               run_ids=inputs.run_ids, counts=built.counts(), size=built.size, seed=secrets.randbelow(2**31),
               created_by=actor)
    s.add(row)
    s.flush()
    docs = [{"pool_id": row.id, "topic": t, "docno": d} for t, ds in built.documents.items() for d in ds]
    for start in range(0, len(docs), 5000):
        s.execute(insert(PoolDocument), docs[start:start + 5000])
    audit(s, actor, "pool.create", collection_id, pool=number, depth=depth, selection=selection, size=built.size)
    return row


def create_pool(factory: sessionmaker[Session], me_of: Any, collection_id: int, depth: int,
                selection: str = "all", max_priority: int | None = None) -> int:
    """Build and store a pool (immutable) from the collection's runs, less what is judged,
    here and now (the CLI; requests ask the workers with :func:`request_pool`); returns its
    id. The runs are read and pooled with no write lock held; the pool is then written in
    one short transaction, refused (409) if the qrels changed meanwhile.
    ``me_of(session)`` gives the caller."""
    with factory() as s:
        me = me_of(s)
        coll = s.get(Collection, collection_id)
        if coll is None:
            raise NotFound(f"no collection {collection_id}")
        runs = _checked_runs(s, coll, me, depth, selection, max_priority)
        base = coll.current_qrels_id
        inputs = _pool_inputs(s, coll, runs)
    built = pooling.build_pool(inputs.runs, depth, inputs.judged, inputs.topics)
    with transaction(factory) as s:
        if _qrels_changed(s, collection_id, base):
            raise Conflict(QRELS_CHANGED)
        return _store_pool(s, collection_id, base, depth, selection, max_priority, inputs, built, me.name).id


def _checked_runs(s: Session, coll: Collection, me: Principal, depth: Any, selection: str,
                  max_priority: int | None) -> list[Run]:
    """The runs of the pool asked for, once the caller and the parameters are checked."""
    policy.require(policy.may_manage_pools(me, coll), me, f"pools of collection {coll.id}")
    _check_depth(depth)
    runs = pooled_runs(s, coll, selection, max_priority)
    if not runs:
        raise Conflict("no run matches the pool's selection")
    return runs


# ---------------------------------------------------------------- pools built by the workers
def request_pool(s: Session, coll: Collection, me: Principal, depth: int, selection: str = "all",
                 max_priority: int | None = None) -> Outcome[dict[str, Any]]:
    """Ask the workers for a pool (organisers): the parameters are checked as
    :func:`create_pool` checks them, the runs chosen now, and the build recorded (an
    ``Analysis`` row of kind "pool", claimed, retried and swept as the analyses are); the
    result is its :func:`pool_request_doc`, the follow-up the build (:func:`build_pool`)."""
    runs = _checked_runs(s, coll, me, depth, selection, max_priority)
    params = {"depth": depth, "selection": selection, "max_priority": max_priority,
              "run_ids": [r.id for r in runs], "base_qrels_version_id": coll.current_qrels_id}
    outcome = analyses.queue(s, coll, me, analyses.POOL, params)
    audit(s, me.name, "pool.request", coll.id, build=outcome.result.id, depth=depth, selection=selection)
    return Outcome(_build_doc(outcome.result), outcome.followups)


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
            built = pooling.build_pool(inputs.runs, int(params["depth"]), inputs.judged,
                                       inputs.topics) if inputs else None
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
            if changed or built is None:
                analyses.finish(fresh, {}, QRELS_CHANGED if changed else error)
                return []
            pool = _store_pool(s, collection_id, params["base_qrels_version_id"], int(params["depth"]),
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
            "params": {k: row.params.get(k) for k in ("depth", "selection", "max_priority")},
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
    return {"id": pool.id, "collection_id": pool.collection_id, "number": pool.number, "depth": pool.depth,
            "selection": pool.selection, "max_priority": pool.max_priority, "max_level": pool.max_level,
            "excludes_judged_in_qrels_version": base.version if base else None,
            "runs": [tags.get(r, str(r)) for r in pool.run_ids], "size": pool.size, "counts": pool.counts,
            "created_at": pool.created_at.isoformat() if pool.created_at else None, "created_by": pool.created_by}


def get_pool(s: Session, pool_id: int, me: Principal) -> Pool:
    pool = existing(s, Pool, pool_id, "pool")
    policy.require(policy.may_read_pool(me, pool), me, f"pool {pool_id} (not yours to judge)")
    return pool


def pool_documents(s: Session, pool: Pool, topic: str) -> list[str]:
    return list(s.scalars(select(PoolDocument.docno).where(PoolDocument.pool_id == pool.id,
                                                           PoolDocument.topic == topic).order_by(PoolDocument.docno)))


def assessment_file(s: Session, pool_id: int, me: Principal, topic: str) -> str:
    """The plain per-topic format an assessor judges: ``topic docno`` lines in a seeded random
    order (never rank order), to be returned with a level appended (``L2`` or ``2``)."""
    pool = get_pool(s, pool_id, me)
    if not policy.may_assess(me, pool.collection_id, topic):
        raise Forbidden(f"topic {topic} is not assigned to you")
    docs = pool_documents(s, pool, topic)
    if not docs and topic not in pool.counts:
        raise NotFound(f"topic {topic} is not in pool {pool_id}")
    ordered = pooling.assessment_order(docs, pooling.topic_seed(pool.seed, topic))
    return "".join(f"{topic} {d}\n" for d in ordered)


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


def submit_judgments(factory: sessionmaker[Session], me_of: Any, pool_id: int, body: bytes,
                     source: str = "judgments upload", idempotency_key: str | None = None) -> Outcome[dict[str, Any]]:
    """Check an upload against the pool; accepted, it becomes a new qrels version (the current
    judgments with these laid over them) and the collection is re-evaluated.

    Every judged document must be in the pool of its topic, every topic assigned to the
    caller, every level within 0..H, and every pool document of an uploaded topic judged.
    With ``idempotency_key``, a retried upload (the same body) is answered as the first one
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
        seen: set[tuple[str, str]] = set()
        for ln in lines:
            if not policy.may_assess(me, pool.collection_id, ln.topic):
                raise InvalidInput(source, ln.line, f"topic {ln.topic} is not assigned to you")
            if ln.topic not in pool.counts:
                raise InvalidInput(source, ln.line, f"topic {ln.topic} is not in pool {pool.number}")
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
