"""Judging: pools (built by the workers), assessors, their blind files and their judgments."""

from __future__ import annotations

from typing import Annotated, Any

import anyio.to_thread
from litestar import Controller, Request, Response, get, post, put
from litestar.datastructures import State
from litestar.params import JSONBody, Parameter

from service.api.dependencies import Caller, Coll, Uow
from service.api.openapi import WRITE_ERRORS, errors, upload_body
from service.api.params import AnalysisId, IdempotencyKeyHeader, PoolId, TokenId
from service.api.schemas import out
from service.api.schemas.judging import (
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
from service.api.uploads import read_body
from service.evaluation.judging import assessments, judgments, pools
from service.http.admission import OWN_TRANSACTIONS

# A topic id as a path parameter of type path (it may contain "/"); it arrives with a leading "/".
TopicPath = Annotated[str, Parameter(description="A topic id (it may contain \"/\").", min_length=1)]


class PoolsController(Controller):
    """Pools of the collection's runs: requested here, built by the workers, read by organisers
    and (their topics only, blind) by assessors."""

    tags = ["judging"]

    @post("/api/collections/{cid:int}/pools", operation_id="requestPool", summary="Build a pool", sync_to_thread=True,
          status_code=202, responses=errors(*WRITE_ERRORS))
    def request_pool(self, coll: Coll, data: JSONBody[PoolCreate], uow: Uow, me: Caller) -> PoolRequestOut:
        """Organisers ask the workers for a pool of the collection's runs: a depth-k pool
        (documents judged in the current qrels are left out), or a stratified-sampling pool
        (`kind: "stratified"`, `strata`, `seed`: every document some run ranks within the
        strata is pooled in the stratum of its best rank, and drawn at the stratum's rate;
        assessors judge the drawn ones). Answers at once with the pending build; read it at
        `/api/pool-builds/{id}` until it names the pool."""
        selection = "primary" if data.primary_only else data.selection
        if data.max_priority is not None and selection == "all":
            selection = "priority"
        strata = [list(s) for s in data.strata] if data.strata is not None else None
        return out(PoolRequestOut, uow.collect(pools.request_pool(
            uow.session, coll, me, data.depth, selection, data.max_priority, kind=data.kind, strata=strata,
            seed=data.seed)))

    @get("/api/pool-builds/{aid:int}", operation_id="getPoolBuild", summary="Read a pool build", sync_to_thread=True,
         responses=errors(401, 403, 404, 422))
    def pool_build(self, aid: AnalysisId, uow: Uow, me: Caller) -> PoolRequestOut:
        """A requested pool: pending, running, done (with the pool's id) or failed (with why)."""
        return out(PoolRequestOut, pools.pool_request_doc(uow.session, aid, me))

    @get("/api/collections/{cid:int}/pools", operation_id="listPools", summary="List pools", sync_to_thread=True,
         responses=errors(401, 403, 404, 422))
    def list_all(self, coll: Coll, uow: Uow, me: Caller) -> PoolList:
        """The collection's pools with their runs and sizes (organisers)."""
        return out(PoolList, {"items": pools.pools_of(uow.session, coll, me)})

    @get("/api/pools/{pid:int}", operation_id="getPool", summary="Read a pool", sync_to_thread=True,
         responses=errors(401, 403, 404, 422))
    def read(self, pid: PoolId, uow: Uow, me: Caller) -> PoolOut:
        """One pool (organisers)."""
        s = uow.session
        return out(PoolOut, pools.pool_doc(s, pools.get_pool(s, pid, me), me))

    # {topic:path}: a topic id may contain "/" (as is, or percent-encoded as in the assessors' list)
    @get("/api/pools/{pid:int}/topics/{topic:path}", operation_id="downloadAssessment",
         summary="Download a topic to judge", sync_to_thread=True, media_type="text/plain",
         responses=errors(401, 403, 404, 422))
    def assessment_file(self, pid: PoolId, topic: TopicPath, uow: Uow, me: Caller) -> Response[str]:
        """`topic docno` lines in a seeded random order (never rank order), for the topic's
        assessor or the organisers; return it with a level appended to each line. A
        stratified pool lists its sampled documents only."""
        return Response(assessments.assessment_file(uow.session, pid, me, topic.removeprefix("/")),
                        media_type="text/plain")

    @post("/api/pools/{pid:int}/judgments", opt={OWN_TRANSACTIONS: True},  # its own transactions, no slot
          operation_id="uploadJudgments", summary="Upload judgments",
          responses=errors(400, 401, 403, 404, 409, 413, 422),
          operation_class=upload_body("Judgments of pool documents, TREC (`topic iter docno level`) or NTCIR "
                                      "(`topic docno Lk`) lines."))
    async def judgments(self, request: Request[Any, Any, Any], pid: PoolId, uow: Uow, me: Caller,
                        state: State, idempotency_key: IdempotencyKeyHeader = None) -> JudgmentsAccepted:
        """Judgments checked against the pool (documents, assigned topics, levels, every pool
        document of an uploaded topic judged), laid over the current qrels as a new version
        (a stratified pool's: sampled qrels, see docs/judging.md). With an `Idempotency-Key`,
        a retried upload is answered as the first one was."""
        body = await read_body(request, state["max_body"])
        outcome = await anyio.to_thread.run_sync(
            lambda: judgments.submit_judgments(uow.factory, lambda _: me, pid, body, idempotency_key=idempotency_key),
            limiter=state.get("upload_threads"))
        return out(JudgmentsAccepted, uow.collect(outcome))


class AssessorsController(Controller):
    """Assessors: their topic assignments and what each has left to judge."""

    tags = ["judging"]

    @get("/api/assessments", operation_id="listAssessments", summary="My assessments", sync_to_thread=True,
         responses=errors(401, 403))
    def assessments(self, uow: Uow, me: Caller) -> AssessmentList:
        """An assessor's topics per pool with how many documents are judged (no runs, no scores)."""
        return out(AssessmentList, {"items": assessments.assessments(uow.session, me)})

    @get("/api/collections/{cid:int}/assessors", operation_id="listAssessors", summary="List assessors",
         sync_to_thread=True, responses=errors(401, 403, 404, 422))
    def assessors(self, coll: Coll, uow: Uow, me: Caller) -> AssessorList:
        """The collection's assessor tokens and their topics (organisers)."""
        return out(AssessorList, {"items": assessments.assignments(uow.session, coll, me)})

    @put("/api/collections/{cid:int}/assessors/{tid:int}", operation_id="assignTopics", summary="Assign topics",
         sync_to_thread=True, responses=errors(*WRITE_ERRORS))
    def assign(self, coll: Coll, tid: TokenId, data: JSONBody[AssignmentIn], uow: Uow,
               me: Caller) -> AssignmentOut:
        """Replace an assessor token's topics in the collection (organisers)."""
        return AssignmentOut(token_id=tid, topics=assessments.set_assignment(uow.session, coll, me, tid, data.topics))
