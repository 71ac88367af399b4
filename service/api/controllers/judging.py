"""Judging: pools (built by the workers), assessors, their blind files and their judgments;
the analyses the workers compute on request; jobs."""

from __future__ import annotations

from typing import Any

import anyio.to_thread
from litestar.di import NamedDependency
from litestar.params import JSONBody
from litestar import Controller, Request, Response, get, post, put
from litestar.datastructures import State

from service.api.openapi import WRITE_ERRORS, errors, upload_body
from service.api.params import AnalysisId, CollectionId, JobId, PoolId, TokenId, Topic
from service.api.schemas import out
from service.api.schemas.judging import (
    AnalysisOut,
    AnalysisRequest,
    AssessmentList,
    AssessorList,
    AssignmentIn,
    AssignmentOut,
    JudgmentsAccepted,
    PoolCreate,
    PoolList,
    PoolOut,
    PoolRequestOut,
)
from service.api.schemas.runs import JobOut
from service.api.uploads import read_body
from service.evaluation import analyses, collections, judging, jobs
from service.evaluation.access import Principal
from service.http.unit_of_work import UnitOfWork


class PoolsController(Controller):
    tags = ["judging"]

    @post("/api/collections/{cid:int}/pools", operation_id="requestPool", summary="Build a pool", sync_to_thread=True,
          status_code=202, responses=errors(*WRITE_ERRORS))
    def request_pool(self, cid: CollectionId, data: JSONBody[PoolCreate], uow: NamedDependency[UnitOfWork], me: NamedDependency[Principal]) -> PoolRequestOut:
        """Organisers ask the workers for a depth-k pool of the collection's runs (documents
        judged in the current qrels are left out). Answers at once with the pending build;
        read it at `/api/pool-builds/{id}` until it names the pool."""
        coll = collections.get(uow.session, cid, me)
        selection = "primary" if data.primary_only else data.selection
        if data.max_priority is not None and selection == "all":
            selection = "priority"
        return out(PoolRequestOut, uow.collect(judging.request_pool(uow.session, coll, me, data.depth, selection,
                                                                    data.max_priority)))

    @get("/api/pool-builds/{aid:int}", operation_id="getPoolBuild", summary="Read a pool build", sync_to_thread=True,
         responses=errors(401, 403, 404, 422))
    def pool_build(self, aid: AnalysisId, uow: NamedDependency[UnitOfWork], me: NamedDependency[Principal]) -> PoolRequestOut:
        """A requested pool: pending, running, done (with the pool's id) or failed (with why)."""
        return out(PoolRequestOut, judging.pool_request_doc(uow.session, aid, me))

    @get("/api/collections/{cid:int}/pools", operation_id="listPools", summary="List pools", sync_to_thread=True,
         responses=errors(401, 403, 404, 422))
    def list_all(self, cid: CollectionId, uow: NamedDependency[UnitOfWork], me: NamedDependency[Principal]) -> PoolList:
        """The collection's pools with their runs and sizes (organisers)."""
        coll = collections.get(uow.session, cid, me)
        return out(PoolList, {"items": judging.pools_of(uow.session, coll, me)})

    @get("/api/pools/{pid:int}", operation_id="getPool", summary="Read a pool", sync_to_thread=True,
         responses=errors(401, 403, 404, 422))
    def read(self, pid: PoolId, uow: NamedDependency[UnitOfWork], me: NamedDependency[Principal]) -> PoolOut:
        """One pool (organisers)."""
        s = uow.session
        return out(PoolOut, judging.pool_doc(s, judging.get_pool(s, pid, me), me))

    @get("/api/pools/{pid:int}/topics/{topic:str}", operation_id="downloadAssessment",
         summary="Download a topic to judge", sync_to_thread=True, media_type="text/plain",
         responses=errors(401, 403, 404, 422))
    def assessment_file(self, pid: PoolId, topic: Topic, uow: NamedDependency[UnitOfWork], me: NamedDependency[Principal]) -> Response[str]:
        """`topic docno` lines in a seeded random order (never rank order), for the topic's
        assessor or the organisers; return it with a level appended to each line."""
        return Response(judging.assessment_file(uow.session, pid, me, topic), media_type="text/plain")

    @post("/api/pools/{pid:int}/judgments", operation_id="uploadJudgments", summary="Upload judgments",
          responses=errors(400, 401, 403, 404, 409, 413, 422),
          operation_class=upload_body("Judgments of pool documents, TREC (`topic iter docno level`) or NTCIR "
                                      "(`topic docno Lk`) lines."))
    async def judgments(self, request: Request[Any, Any, Any], pid: PoolId, uow: NamedDependency[UnitOfWork], me: NamedDependency[Principal],
                        state: State) -> JudgmentsAccepted:
        """Judgments checked against the pool (documents, assigned topics, levels, every pool
        document of an uploaded topic judged), laid over the current qrels as a new version."""
        body = await read_body(request, state["max_body"])
        outcome = await anyio.to_thread.run_sync(lambda: judging.submit_judgments(uow.factory, lambda _: me, pid, body))
        return out(JudgmentsAccepted, uow.collect(outcome))


class AssessorsController(Controller):
    tags = ["judging"]

    @get("/api/assessments", operation_id="listAssessments", summary="My assessments", sync_to_thread=True,
         responses=errors(401, 403))
    def assessments(self, uow: NamedDependency[UnitOfWork], me: NamedDependency[Principal]) -> AssessmentList:
        """An assessor's topics per pool with how many documents are judged (no runs, no scores)."""
        return out(AssessmentList, {"items": judging.assessments(uow.session, me)})

    @get("/api/collections/{cid:int}/assessors", operation_id="listAssessors", summary="List assessors",
         sync_to_thread=True, responses=errors(401, 403, 404, 422))
    def assessors(self, cid: CollectionId, uow: NamedDependency[UnitOfWork], me: NamedDependency[Principal]) -> AssessorList:
        """The collection's assessor tokens and their topics (organisers)."""
        coll = collections.get(uow.session, cid, me)
        return out(AssessorList, {"items": judging.assignments(uow.session, coll, me)})

    @put("/api/collections/{cid:int}/assessors/{tid:int}", operation_id="assignTopics", summary="Assign topics",
         sync_to_thread=True, responses=errors(*WRITE_ERRORS))
    def assign(self, cid: CollectionId, tid: TokenId, data: JSONBody[AssignmentIn], uow: NamedDependency[UnitOfWork],
               me: NamedDependency[Principal]) -> AssignmentOut:
        """Replace an assessor token's topics in the collection (organisers)."""
        coll = collections.get(uow.session, cid, me)
        return AssignmentOut(token_id=tid, topics=judging.set_assignment(uow.session, coll, me, tid, data.topics))


class AnalysesController(Controller):
    tags = ["analyses"]

    @post("/api/collections/{cid:int}/analyses", operation_id="requestAnalysis", summary="Request an analysis",
          sync_to_thread=True, status_code=202, responses=errors(*WRITE_ERRORS))
    def request(self, cid: CollectionId, data: JSONBody[AnalysisRequest], uow: NamedDependency[UnitOfWork], me: NamedDependency[Principal]) -> AnalysisOut:
        """Queue an analysis of the current qrels for the workers: `reusability` (pool
        statistics, leave-one-team-out) or `reduction` (the reduced-judgment experiment)."""
        s = uow.session
        coll = collections.get(s, cid, me)
        if data.kind == "reduction":
            row = uow.collect(analyses.request_reduction(s, coll, me, data.kept))
        else:
            row = uow.collect(analyses.request(s, coll, me, data.metric, data.pool, data.depth))
        return out(AnalysisOut, analyses.doc(s, row, me))

    @get("/api/analyses/{aid:int}", operation_id="getAnalysis", summary="Read an analysis", sync_to_thread=True,
         responses=errors(401, 403, 404, 422))
    def read(self, aid: AnalysisId, uow: NamedDependency[UnitOfWork], me: NamedDependency[Principal]) -> AnalysisOut:
        """An analysis with its status and, once done, its result."""
        return out(AnalysisOut, analyses.doc(uow.session, analyses.get(uow.session, aid, me), me))


class JobsController(Controller):
    tags = ["jobs"]

    @get("/api/jobs/{jid:int}", operation_id="getJob", summary="Read a job", sync_to_thread=True,
         responses=errors(401, 403, 404, 422))
    def read(self, jid: JobId, uow: NamedDependency[UnitOfWork], me: NamedDependency[Principal]) -> JobOut:
        """An evaluation job's progress and, once done, its report (organisers)."""
        return out(JobOut, jobs.get(uow.session, jid, me))

    @get("/api/collections/{cid:int}/jobs", operation_id="listJobs", summary="List jobs", sync_to_thread=True,
         responses=errors(401, 403, 404, 422))
    def list_all(self, cid: CollectionId, uow: NamedDependency[UnitOfWork], me: NamedDependency[Principal]) -> list[JobOut]:
        """The collection's jobs, newest first (organisers)."""
        coll = collections.get(uow.session, cid, me)
        return [out(JobOut, j) for j in jobs.of_collection(uow.session, coll, me)]
