"""Jobs: the progress of a collection's (re-)evaluations, for organisers; a participant follows
the job of its own submission."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.evaluation.common.lookup import existing
from service.evaluation.permissions import policy
from service.evaluation.permissions.access import Principal
from service.evaluation.publishing.reading import jobs as all_jobs
from service.store.models import Collection, Job, JobItem, Run


def of_collection(s: Session, coll: Collection, me: Principal) -> list[dict[str, Any]]:
    """The collection's jobs, newest first."""
    policy.require(policy.may_see_jobs(me, coll), me, f"the jobs of collection {coll.id}")
    return list(reversed(all_jobs(s, coll.name)))


def get(s: Session, jid: int, me: Principal) -> dict[str, Any]:
    """A job's progress: organisers read all of it; a participant reads the job of its own
    submission (every run of it the team's) without the report and error, which speak of the
    whole collection (rank changes of other teams' runs)."""
    job = existing(s, Job, jid, "job")
    coll = s.get(Collection, job.collection_id)
    teams = set(s.scalars(select(Run.team_id).join(JobItem, JobItem.run_id == Run.id).where(JobItem.job_id == jid)))
    policy.require(policy.may_follow_job(me, coll, teams), me, f"job {jid}")
    doc = next(j for j in all_jobs(s, coll.name) if j["id"] == jid)
    if not policy.may_see_jobs(me, coll):
        doc = {**doc, "report": None, "error": None}
    return doc
