"""Assessments: which topics an assessor judges, and the file of a topic's pooled documents.

Assessors download the documents of their assigned topics in a seeded random order (never rank
order) and return them judged (:mod:`.judgments`). Organisers assign topics to assessor tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.errors import Forbidden, NotFound
from service.evaluation.judging.pools import get_pool, pool_documents
from service.evaluation.organising.setup import (
    audit,
)
from service.evaluation.permissions import policy
from service.evaluation.permissions.access import Principal
from service.metrics import pooling
from service.store.models import (
    AssessorAssignment,
    Collection,
    Pool,
)


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


def answer_assessments(s: Session, me: Principal) -> list[dict[str, Any]]:
    """An assessor's topics of collections of answers, each with its assessment page (issue 36):
    one per judgment set that takes people's assessments (a set of source ``human`` other than
    the official one: the organiser made it for the assessment), else the official set."""
    from urllib.parse import urlencode

    from service.store.models import JudgmentSet

    policy.require(policy.is_assessor(me), me, "the assessors' list (organisers read their pools)")
    out = []
    for cid in sorted({c for c, _ in me.assigned}):
        coll = s.get(Collection, cid)
        if coll is None or coll.task_kind != "answers":
            continue
        sets = list(s.scalars(select(JudgmentSet.name).where(
            JudgmentSet.collection_id == cid, JudgmentSet.source == "human",
            JudgmentSet.id != coll.official_set_id).order_by(JudgmentSet.id))) or [None]
        for topic in sorted(t for c, t in me.assigned if c == cid):
            for name in sets:
                query = {"topic": topic, **({"set": name} if name else {})}
                out.append({"collection_id": cid, "collection": coll.name, "topic": topic, "judgment_set": name,
                            "page": f"/c/{cid}/answers/assess?{urlencode(query)}"})
    return out


def _judged_pairs(s: Session, qrels_version_id: int) -> set[tuple[str, str]]:
    from service.store.models import Judgment

    return set(s.execute(select(Judgment.topic, Judgment.docno).where(
        Judgment.qrels_version_id == qrels_version_id, Judgment.level >= 0)).all())


def set_assignment(s: Session, coll: Collection, me: Principal, token_id: int, topics: list[str]) -> list[str]:
    """Replace an assessor token's topics in this collection (organisers)."""
    from service.evaluation.permissions.access import assign_topics
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
