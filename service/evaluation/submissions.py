"""Runs: submit one (window and daily quota), list, read, describe, download, delete.

A submission is validated completely before anything is stored (line-numbered errors) and
its evaluation is planned in the same transaction; the follow-ups go to the workers after
the commit.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from service.errors import BadRequest, Conflict, InvalidInput, NotFound
from service.evaluation import collections, idempotency, policy
from service.evaluation.access import Principal
from service.evaluation.planning import plan_job
from service.evaluation.setup import add_run, audit
from service.evaluation.teams import team_named
from service.evaluation.work import Followup, Outcome
from service.formats.readers import parse_run
from service.store.db import as_utc
from service.store.models import Collection, Run, Team, Topic


def get(s: Session, rid: int, me: Principal) -> tuple[Run, Collection]:
    """The run and its collection, if the caller may see the run."""
    row = s.get(Run, rid)
    coll = s.get(Collection, row.collection_id) if row is not None else None
    if row is None or coll is None:
        raise NotFound(f"no run {rid}")
    policy.require(policy.may_see_run(me, row, coll), me, f"run {rid}")
    return row, coll


def document(row: Run) -> dict[str, Any]:
    return {"id": row.id, "collection_id": row.collection_id, "tag": row.tag, "team": row.team.name,
            "status": row.status, "reason": row.status_reason, "submitted_at": collections.iso(row.submitted_at),
            "topics": row.n_topics, "depth": row.depth, "lines": row.n_lines, "baseline": row.is_baseline,
            "primary": row.is_primary, "description": row.description, "priority": row.judging_priority}


def listed(s: Session, coll: Collection, me: Principal) -> list[Run]:
    """The runs the caller may list: all of them for organisers, the own team's otherwise."""
    policy.require(policy.is_signed_in(me), me, "listing runs")
    every = policy.may_organise(me, coll.id)
    return [r for r in s.scalars(select(Run).where(Run.collection_id == coll.id).order_by(Run.id))
            if every or policy.owns(me, r)]


def file_text(s: Session, rid: int, me: Principal) -> bytes:
    row, coll = get(s, rid, me)
    policy.require(policy.may_see_run_details(me, row, coll), me, f"downloading run {rid}")
    return zlib.decompress(row.file)


def update(s: Session, rid: int, me: Principal, changes: Mapping[str, Any]) -> Run:
    """Description, primary flag and judging priority (its team, organisers); baseline
    (organisers). Only the fields present in ``changes`` change."""
    row, coll = get(s, rid, me)
    policy.require(policy.may_edit_run(me, row, coll), me, f"changing run {rid}")
    if changes.get("baseline") is not None:
        policy.require(policy.may_mark_baseline(me, coll), me, "marking baselines")
        row.is_baseline = bool(changes["baseline"])
    if changes.get("primary") is not None:
        row.is_primary = bool(changes["primary"])
    if "description" in changes:
        row.description = str(changes["description"] or "")
    if "priority" in changes:  # TREC's judging priority within the team (1 = judge first)
        priority = changes["priority"]
        if priority is not None and (not isinstance(priority, int) or isinstance(priority, bool) or priority < 1):
            raise BadRequest("priority is a positive integer or null")
        row.judging_priority = priority
    return row


def delete(s: Session, rid: int, me: Principal) -> int:
    row, coll = get(s, rid, me)
    policy.require(policy.may_delete_run(me, coll), me, f"deleting run {rid}")
    audit(s, me.name, "run.delete", coll.id, run=row.tag, checksum=row.checksum)
    s.delete(row)
    return rid


# ------------------------------------------------------------------------------- quotas
def next_midnight() -> str:
    now = datetime.now(UTC)
    return (now.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=1)).isoformat()


def runs_today(s: Session, cid: int, team_id: int) -> int:
    midnight = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return sum(1 for t in s.scalars(select(Run.submitted_at).where(Run.collection_id == cid, Run.team_id == team_id))
               if as_utc(t) >= midnight)


def quota_document(s: Session, coll: Collection, me: Principal) -> dict[str, Any]:
    if coll.daily_run_quota is None or me.team_id is None:
        return {}
    return {"quota": {"per_day": coll.daily_run_quota, "used_today": runs_today(s, coll.id, me.team_id),
                      "resets_at": next_midnight()}}


def check_window(coll: Collection) -> None:
    if not policy.window_open(coll):
        raise Conflict(f"submissions are closed (window {collections.iso(coll.submission_opens_at)} - "
                       f"{collections.iso(coll.submission_closes_at)})")


def check_quota(s: Session, coll: Collection, team_id: int) -> None:
    if coll.daily_run_quota is not None and runs_today(s, coll.id, team_id) >= coll.daily_run_quota:
        raise Conflict(f"the team's quota of {coll.daily_run_quota} runs a day is used; it resets at "
                       f"{next_midnight()}")


# ------------------------------------------------------------------------------ submit
def submit(factory: sessionmaker[Session], me_of: Any, cid: int, body: bytes, team_param: str | None = None,
           source: str = "run upload", description: str = "",
           idempotency_key: str | None = None) -> Outcome[dict[str, Any]]:
    """Validate and store a run and plan its evaluation (participants: window and quota
    apply). ``me_of(session)`` gives the caller. Commits; the follow-ups are for the workers.

    Three steps, so that the expensive one holds no connection and no lock: a short read
    (who submits what to which collection, in which order), the parse (no session open),
    then one write transaction that locks the collection row *first* and only then checks
    the window and the quota, inserts the run and plans its job. Every submission to a
    collection takes the same lock in the same order, so concurrent submissions queue on it
    instead of deadlocking, and the quota's count and insert are atomic. A transaction the
    database still undoes (a deadlock victim, a serialization failure) is retried whole.
    ``idempotency_key``: a retry of an upload that did store gets the first answer again.
    """
    idempotency.check_key(idempotency_key)
    with factory() as s:
        me = me_of(s)
        coll = collections.get(s, cid, me)
        # a closed window refuses before the parse; not a keyed request, which may be a retry
        _may_submit(s, me, coll, team_param, window=idempotency_key is None)
        order = coll.current_config.evaluation.get("order", "score") if coll.current_config else "score"
    digest = idempotency.request_hash(body, team_param, description)
    parsed = parse_run(body, source, order)  # InvalidInput with the line before anything is stored

    def store(s: Session, coll: Collection) -> Outcome[dict[str, Any]]:
        team = _may_submit(s, me, coll, team_param, now=True)
        known = set(s.scalars(select(Topic.topic_id).where(Topic.collection_id == cid)))
        if not known:
            raise Conflict("the collection has no topics yet (upload qrels or register its topics)")
        unknown = sorted(set(parsed.topics) - known)
        if unknown:
            raise InvalidInput(source, None, f"unknown topics: {', '.join(unknown[:20])}")
        row = add_run(s, coll, body, source, team=team.name, actor=me.name, parsed=parsed)
        if description:
            row.description = description
        followups: list[Followup] = []
        job_id = None
        if coll.current_qrels_id is not None:  # before any judgment the run waits for the pool's qrels
            job, followups = plan_job(s, coll, "submission")
            job_id = job.id
        return Outcome({**document(row), "job": job_id}, tuple(followups))

    return idempotency.store_once(factory, cid, me, f"runs:{cid}", idempotency_key, digest, store,
                                  what=f"a run submission to collection {cid}")


def _may_submit(s: Session, me: Principal, coll: Collection, team_param: str | None,
                now: bool = False, window: bool = False) -> Team:
    """The team a submission is for, if the caller may submit to the collection; with ``now``
    (under the collection's lock, after an idempotent retry has been answered) the window and
    the daily quota are checked too: a retry of a run stored at 23:59:59 is answered as the
    first request was, even after the window has closed."""
    policy.require(policy.may_submit(me, coll), me, f"submitting to collection {coll.id} (teams take part by "
                   "enrolment)")
    if policy.may_organise(me, coll.id):
        if not team_param:
            raise BadRequest("organisers submit for a team: add ?team=NAME")
        return team_named(s, team_param)
    team = s.get(Team, me.team_id)
    if team is None:
        raise NotFound("the token's team no longer exists")
    if now or window:
        check_window(coll)
    if now:
        check_quota(s, coll, team.id)
    return team
