"""Judgments into qrels versions: an assessor's upload, checked against the pool line by line.

Accepted judgments, laid over the current qrels, become a new qrels version, which starts the
re-evaluation of every run. A stratified pool's version is NIST's sampled qrels (format
``sampled``: every pooled document with its stratum, the unsampled ones at -1), which the
inferred measures (xinfAP, infNDCG) read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from service.errors import Conflict, InvalidInput
from service.evaluation.common.memory import guarded
from service.evaluation.common.work import Followup, Outcome
from service.evaluation.judging import labels
from service.evaluation.judging.pools import get_pool, pool_documents, pool_sample, unsampled_documents
from service.evaluation.organising import idempotency
from service.evaluation.organising.planning import plan_job
from service.evaluation.organising.setup import (
    ParsedQrels,
    add_qrels,
    audit,
    load_qrels,
    load_sampled_qrels,
    official_set,
)
from service.evaluation.permissions import policy
from service.evaluation.permissions.access import Principal
from service.formats.readers import qrels_records
from service.formats.sampled import SampledQrels
from service.formats.text import counted
from service.metrics import sampling
from service.metrics.judgment_rules import derive
from service.store.models import (
    Collection,
    JudgmentSet,
    Pool,
    QrelsVersion,
    Run,
)


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
        unsampled = unsampled_documents(s, pool, topics)
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
                raise InvalidInput(source, None, f"topic {topic}: {counted(len(missing), 'pool document')} "
                                                 f"not judged, e.g. "
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
