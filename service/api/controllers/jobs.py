"""Evaluation jobs and their progress."""

from __future__ import annotations

from litestar import Controller, get

from service.api.dependencies import Caller, Coll, Uow
from service.api.openapi import errors
from service.api.params import JobId
from service.api.schemas import out
from service.api.schemas.runs import JobList, JobOut
from service.evaluation.computing import jobs


class JobsController(Controller):
    """Evaluation jobs: one per qrels version, configuration change or submission batch."""

    tags = ["jobs"]

    @get("/api/jobs/{jid:int}", operation_id="getJob", summary="Read a job", sync_to_thread=True,
         responses=errors(401, 403, 404, 422))
    def read(self, jid: JobId, uow: Uow, me: Caller) -> JobOut:
        """An evaluation job's progress (runs done, failed, total) and, once done, its report:
        rank changes against the previous qrels version and the meta-evaluation (organisers). A
        participant reads the job of its own submission, without report and error."""
        return out(JobOut, jobs.get(uow.session, jid, me))

    @get("/api/collections/{cid:int}/jobs", operation_id="listJobs", summary="List jobs", sync_to_thread=True,
         responses=errors(401, 403, 404, 422))
    def list_all(self, coll: Coll, uow: Uow, me: Caller) -> JobList:
        """The collection's jobs, newest first (organisers)."""
        return out(JobList, {"items": jobs.of_collection(uow.session, coll, me)})
