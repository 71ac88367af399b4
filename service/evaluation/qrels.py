"""Qrels: upload a new version (validated before it is stored), list versions, diff two."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from service.evaluation import collections, idempotency, policy
from service.evaluation.access import Principal
from service.evaluation.planning import plan_job
from service.evaluation.reading import qrels_diff
from service.evaluation.setup import add_qrels
from service.evaluation.work import Outcome
from service.formats.readers import parse_qrels
from service.store.models import Collection, QrelsVersion


def upload(factory: sessionmaker[Session], me_of: Any, cid: int, body: bytes,
           source: str = "qrels upload", idempotency_key: str | None = None) -> Outcome[dict[str, Any]]:
    """Validate, store as a new qrels version and plan the re-evaluation. The caller is
    authorised and the file parsed before any write lock is taken; ``me_of(session)`` gives
    the caller. The write transaction locks the collection row first (the lock order of
    every write to a collection's runs and qrels; see ``submissions.submit``) and is retried
    whole if the database undoes it. Commits; the follow-ups are for the workers."""
    idempotency.check_key(idempotency_key)
    with factory() as s:
        me = me_of(s)
        coll = collections.get(s, cid, me)
        policy.require(policy.may_upload_qrels(me, coll), me, f"uploading qrels to collection {cid}")
    parsed = parse_qrels(body, source)  # InvalidInput with the line before anything is stored
    digest = idempotency.request_hash(body)

    def store(s: Session, coll: Collection) -> Outcome[dict[str, Any]]:
        previous = coll.current_qrels_id
        version = add_qrels(s, coll, body, source, me.name, parsed=parsed)
        job, followups = plan_job(s, coll, "qrels", previous_qrels_id=previous)
        return Outcome({"version": version.version, "judgments": version.n_judgments, "job": job.id,
                        "previous_version": s.get(QrelsVersion, previous).version if previous else None},
                       tuple(followups))

    return idempotency.store_once(factory, cid, me, f"qrels:{cid}", idempotency_key, digest, store,
                                  what=f"a qrels upload to collection {cid}")


def versions(s: Session, coll: Collection, me: Principal) -> dict[str, Any]:
    policy.require(policy.may_see_qrels(me, coll), me, f"the qrels of collection {coll.id}")
    rows = s.scalars(select(QrelsVersion).where(QrelsVersion.collection_id == coll.id).order_by(QrelsVersion.version))
    return {"current": coll.current_qrels.version if coll.current_qrels else None, "items": [
        {"version": v.version, "uploaded_by": v.uploaded_by, "uploaded_at": collections.iso(v.uploaded_at),
         "checksum": v.checksum, "judgments": v.n_judgments, "level_counts": v.level_counts} for v in rows]}


def diff(s: Session, coll: Collection, me: Principal, old: int, new: int) -> dict[str, Any]:
    policy.require(policy.may_see_qrels(me, coll), me, f"the qrels of collection {coll.id}")
    return qrels_diff(s, coll.id, old, new)
