"""Jobs: the progress of a collection's (re-)evaluations, for organisers."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from service.evaluation import policy
from service.evaluation.access import Principal
from service.evaluation.lookup import existing
from service.evaluation.reading import jobs as all_jobs
from service.store.models import Collection, Job


def of_collection(s: Session, coll: Collection, me: Principal) -> list[dict[str, Any]]:
    """The collection's jobs, newest first."""
    policy.require(policy.may_see_jobs(me, coll), me, f"the jobs of collection {coll.id}")
    return list(reversed(all_jobs(s, coll.name)))


def get(s: Session, jid: int, me: Principal) -> dict[str, Any]:
    job = existing(s, Job, jid, "job")
    coll = s.get(Collection, job.collection_id)
    policy.require(policy.may_see_jobs(me, coll), me, f"job {jid}")
    return next(j for j in all_jobs(s, coll.name) if j["id"] == jid)
