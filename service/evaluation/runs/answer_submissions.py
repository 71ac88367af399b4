"""Submitting an answer run to a collection of answers (issue 35): the door of ranked runs
(:func:`service.evaluation.runs.submissions.submit`: API upload, portal form, ``cranfield
remote submit``), with the same permission, window, quota, idempotency and lock order, the
file read as answers in the collection's format and limits instead of as a TREC run.

The file is validated completely (file, line and field of the first problem; an unknown topic
among them) before anything is stored; its warnings (a topic not answered, a response_length
that is not the words counted) are stored with the run.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from service.errors import Conflict
from service.evaluation.common import idempotency
from service.evaluation.computing.planning import plan_job
from service.evaluation.computing.work import Followup, Outcome
from service.evaluation.organising import answers
from service.evaluation.permissions.access import Principal
from service.evaluation.runs import submissions
from service.formats import ir_metadata
from service.store.models import Collection, Topic


def submit(factory: sessionmaker[Session], me: Principal, cid: int, body: bytes, team_param: str | None,
           source: str, meta: submissions.RunMetadata, idempotency_key: str | None) -> Outcome[dict[str, Any]]:
    with factory() as s:
        coll = s.get(Collection, cid)
        assert coll is not None
        settings = dict(coll.answer_settings or {})
        known = set(s.scalars(select(Topic.topic_id).where(Topic.collection_id == cid)))
    if not known:
        raise Conflict("the collection has no topics yet (upload its nuggets or assignments, or register its topics)")
    parsed = answers.parse(body, source, settings, known)  # InvalidInput with the line before anything is stored
    digest = idempotency.request_hash(body, team_param, meta.description, *meta.request_key())

    def store(s: Session, coll: Collection) -> Outcome[dict[str, Any]]:
        team = submissions._may_submit(s, me, coll, team_param, now=True)
        row = answers.add_answer_run(s, coll, body, source, parsed, team=team.name, actor=me.name)
        row.description = meta.description
        row.run_type, row.is_primary, row.judging_priority = meta.run_type, meta.primary, meta.priority
        row.uses_training_data, row.uses_external_resources = meta.uses_training_data, meta.uses_external_resources
        row.warnings = [{"code": "answers", "message": w, "topics": [], "count": 0} for w in parsed.warnings]
        if meta.ir_metadata is not None:
            row.ir_metadata = ir_metadata.read(meta.ir_metadata, meta.ir_metadata_source)
        followups: list[Followup] = []
        job_id = None
        if coll.current_qrels_id is not None:  # before any judgment the run waits for them
            job, followups = plan_job(s, coll, "submission")
            job_id = job.id
        return Outcome({**submissions.document(row), "format": parsed.format, "job": job_id}, tuple(followups))

    return idempotency.store_once(factory, cid, me, f"runs:{cid}", idempotency_key, digest, store,
                                  what=f"a run submission to collection {cid}")
