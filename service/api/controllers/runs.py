"""Runs: submission (validated before it is stored), listings, files, descriptions."""

from __future__ import annotations

from typing import Any

import anyio.to_thread
from litestar import Controller, Request, Response, delete, get, patch, post
from litestar.datastructures import State
from litestar.params import JSONBody

from service.api.dependencies import Caller, Coll, Uow
from service.api.openapi import WRITE_ERRORS, errors, upload_body
from service.api.params import CollectionId, IdempotencyKeyHeader, Limit, Offset, RunId, TeamParam
from service.api.schemas import out, present
from service.api.schemas.runs import (
    Deleted,
    RunOut,
    RunPage,
    RunUpdate,
    Submitted,
)
from service.api.uploads import read_body
from service.http.admission import OWN_TRANSACTIONS
from service.evaluation import submissions


class RunsController(Controller):
    """Submitted runs: upload, list, read, describe, delete."""

    tags = ["runs"]

    @post("/api/collections/{cid:int}/runs", opt={OWN_TRANSACTIONS: True},  # its own transactions, no database slot
          operation_id="submitRun", summary="Submit a run",
          responses=errors(400, 401, 403, 404, 409, 413, 422),
          operation_class=upload_body("A run in TREC format (`topic Q0 docno rank score tag`), as the body "
                                      "or as the form field `file`.", multipart=True))
    async def submit(self, request: Request[Any, Any, Any], cid: CollectionId, uow: Uow, me: Caller,
                     state: State, team: TeamParam = None,
                     idempotency_key: IdempotencyKeyHeader = None) -> Submitted:
        """Validate and store a run and queue its evaluation. Participants of an enrolled team
        submit within the window and the daily quota; organisers submit for a team (`?team=`).
        Errors name the file's line; a refused file stores nothing and uses no quota. With an
        `Idempotency-Key`, a retried upload is answered as the first one was."""
        body = await read_body(request, state["max_body"])
        uow.changes_boards = False  # the run shows once evaluated (the workers' results)
        outcome = await anyio.to_thread.run_sync(
            lambda: submissions.submit(uow.factory, lambda _: me, cid, body, team, idempotency_key=idempotency_key),
            limiter=state.get("upload_threads"))
        return out(Submitted, uow.collect(outcome))

    @get("/api/collections/{cid:int}/runs", operation_id="listRuns", summary="List runs", sync_to_thread=True,
         responses=errors(401, 403, 404, 422))
    def list_all(self, coll: Coll, uow: Uow, me: Caller, offset: Offset = 0,
             limit: Limit = 100) -> RunPage:
        """Organisers see every run; participants their team's, with its daily quota."""
        runs = submissions.listed(uow.session, coll, me)
        page = runs[offset: offset + min(limit, 500)]
        return out(RunPage, {"total": len(runs), "offset": offset, "items": [submissions.document(r) for r in page],
                             **submissions.quota_document(uow.session, coll, me)})

    @get("/api/runs/{rid:int}", operation_id="getRun", summary="Read a run", sync_to_thread=True,
         responses=errors(401, 403, 404, 422))
    def read(self, rid: RunId, uow: Uow, me: Caller) -> RunOut:
        """A run's description: its team and organisers; everyone who reads a released board."""
        return out(RunOut, submissions.document(submissions.get(uow.session, rid, me)[0]))

    @get("/api/runs/{rid:int}/file", operation_id="downloadRun", summary="Download a run file", sync_to_thread=True,
         media_type="text/plain", responses=errors(401, 403, 404, 422))
    def file(self, rid: RunId, uow: Uow, me: Caller) -> Response[bytes]:
        """The file as submitted (its team and organisers)."""
        return Response(submissions.file_text(uow.session, rid, me), media_type="text/plain")

    # A path of its own: with a PATCH on /api/runs/{rid}, Litestar 2.25 answered the GET of
    # that path with an un-awaited coroutine (a 500).
    @patch("/api/runs/{rid:int}/settings", operation_id="updateRun", summary="Describe a run", sync_to_thread=True,
           responses=errors(*WRITE_ERRORS))
    def update(self, rid: RunId, data: JSONBody[RunUpdate], uow: Uow, me: Caller) -> RunOut:
        """Its team and organisers set the description, primary flag and judging priority;
        organisers mark baselines. Fields left out stay; `null` clears description and priority."""
        return out(RunOut, submissions.document(submissions.update(uow.session, rid, me, present(data))))

    @delete("/api/runs/{rid:int}", operation_id="deleteRun", summary="Delete a run", sync_to_thread=True,
            status_code=200, responses=errors(401, 403, 404, 422))
    def remove(self, rid: RunId, uow: Uow, me: Caller) -> Deleted:
        """Organisers delete a run with its evaluations (audited)."""
        return Deleted(deleted=submissions.delete(uow.session, rid, me))
