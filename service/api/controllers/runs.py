"""Runs: submission (validated before it is stored), listings, files, descriptions."""

from __future__ import annotations

from typing import Annotated, Any

import anyio.to_thread
from litestar import Controller, Request, Response, delete, get, patch, post
from litestar.datastructures import State
from litestar.openapi.spec import Schema
from litestar.params import JSONBody, Parameter

from service.api.dependencies import Caller, Coll, Uow
from service.api.openapi import WRITE_ERRORS, errors, upload_body
from service.api.params import (
    CollectionId,
    IdempotencyKeyHeader,
    Limit,
    Offset,
    Primary,
    Priority,
    RunDescription,
    RunId,
    RunType,
    TeamParam,
    UsesExternalResources,
    UsesTrainingData,
)
from service.api.schemas import out, present
from service.api.schemas.runs import (
    Deleted,
    RunOut,
    RunPage,
    RunUpdate,
    Submitted,
)
from service.api.uploads import read_run_form
from service.errors import InvalidRequest
from service.evaluation.reproducing import declarations as reproduction_declarations
from service.evaluation.runs import submissions
from service.http.admission import OWN_TRANSACTIONS

_TRUE_FALSE: Any = Schema(type="string", enum=["true", "false"])  # type: ignore[arg-type]
#: The multipart form's metadata fields (as query parameters when the body is the raw file).
METADATA_FORM = {
    "description": Schema(type="string", max_length=20_000, description="What the run is."),  # type: ignore[arg-type]
    "run_type": Schema(type="string", enum=list(submissions.RUN_TYPES),  # type: ignore[arg-type]
                       description="How the run was made (default automatic)."),
    "uses_training_data": _TRUE_FALSE,
    "uses_external_resources": _TRUE_FALSE,
    "priority": Schema(type="integer", minimum=1, maximum=1000,  # type: ignore[arg-type]
                       description="TREC's judging priority within the team (1 = judged first)."),
    "primary": _TRUE_FALSE,
    "ir_metadata": Schema(type="string", format="binary",  # type: ignore[arg-type]
                          description="An ir_metadata (PRIMAD) YAML file, checked against its schema."),
}


Reproduces = Annotated[int | None, Parameter(description="The registered original run this run reproduces "
                                                        "(issue 28).", ge=1, le=2**31 - 1)]


class RunsController(Controller):
    """Submitted runs: upload, list, read, describe, delete."""

    tags = ["runs"]

    @post("/api/collections/{cid:int}/runs", opt={OWN_TRANSACTIONS: True},  # its own transactions, no database slot
          operation_id="submitRun", summary="Submit a run",
          responses=errors(400, 401, 403, 404, 409, 413, 422),
          operation_class=upload_body("A run in TREC format (`topic Q0 docno rank score tag`), as the body "
                                      "or as the form field `file` of a multipart form with the run's metadata "
                                      "and an optional `ir_metadata` file.",
                                      form_fields=METADATA_FORM))
    async def submit(self, request: Request[Any, Any, Any], cid: CollectionId, uow: Uow, me: Caller,
                     state: State, team: TeamParam = None, idempotency_key: IdempotencyKeyHeader = None,
                     description: RunDescription = None, run_type: RunType = None,
                     uses_training_data: UsesTrainingData = None, uses_external_resources: UsesExternalResources = None,
                     priority: Priority = None, primary: Primary = None,
                     reproduces: Reproduces = None) -> Submitted:
        """Validate and store a run and queue its evaluation. Participants of an enrolled team
        submit within the window and the daily quota; organisers submit for a team (`?team=`).
        Errors name the file's line; a refused file stores nothing and uses no quota. The run's
        metadata comes as form fields (or, with the raw file as the body, as query parameters);
        the answer lists the run's warnings (missing topics, short lists, ties at the cutoff, a
        rank column that disagrees with the scores): the run is stored all the same. With an
        `Idempotency-Key`, a retried upload (same file and metadata) is answered as the first one was.
        `reproduces`: the run is declared a reproduction of that registered original run (issue 28;
        a pair is declared afterwards: `POST /api/runs/{rid}/reproduction`)."""
        body, form, ir_file, ir_name = await read_run_form(request, state["max_body"], submissions.METADATA_FIELDS)
        query = {"description": description, "run_type": run_type, "uses_training_data": uses_training_data,
                 "uses_external_resources": uses_external_resources, "priority": priority, "primary": primary}
        given = {k: v for k, v in query.items() if v is not None}
        both = sorted(set(given) & set(form))
        if both:
            raise InvalidRequest(f"{both[0]}: given both as a query parameter and as a form field")
        meta = submissions.metadata_from_fields({**given, **form}, ir_file, ir_name)
        uow.changes_boards = False  # the run shows once evaluated (the workers' results)
        if reproduces is not None:  # an unknown original refused before anything is stored
            await anyio.to_thread.run_sync(lambda: reproduction_declarations.check_original(uow.factory, cid,
                                                                                           reproduces))
        outcome = await anyio.to_thread.run_sync(
            lambda: submissions.submit(uow.factory, lambda _: me, cid, body, team, idempotency_key=idempotency_key,
                                       metadata=meta),
            limiter=state.get("upload_threads"))
        result = uow.collect(outcome)
        if reproduces is not None:
            result = {**result, "reproduction": uow.collect(await anyio.to_thread.run_sync(
                lambda: reproduction_declarations.declare_in_transaction(uow.factory, me, result["id"],
                                                                         reproduces)))["id"]}
        return out(Submitted, result)

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

    @get("/api/runs/{rid:int}/ir_metadata", operation_id="getRunIrMetadata", summary="Read a run's ir_metadata",
         sync_to_thread=True, media_type="text/plain", responses=errors(401, 403, 404, 422))
    def ir_metadata(self, rid: RunId, uow: Uow, me: Caller) -> Response[str]:
        """The ir_metadata (PRIMAD) YAML submitted with the run, as submitted (whoever may read the
        run); 404 when the run has none."""
        return Response(submissions.ir_metadata_text(uow.session, rid, me), media_type="text/plain")

    # A path of its own: with a PATCH on /api/runs/{rid}, Litestar 2.25 answered the GET of
    # that path with an un-awaited coroutine (a 500).
    @patch("/api/runs/{rid:int}/settings", operation_id="updateRun", summary="Describe a run", sync_to_thread=True,
           responses=errors(*WRITE_ERRORS))
    def update(self, rid: RunId, data: JSONBody[RunUpdate], uow: Uow, me: Caller) -> RunOut:
        """Its team and organisers set the description, primary flag, judging priority, run type
        and the two resource statements; organisers mark baselines. Fields left out stay; `null`
        clears description, priority and the statements (not stated)."""
        return out(RunOut, submissions.document(submissions.update(uow.session, rid, me, present(data))))

    @delete("/api/runs/{rid:int}", operation_id="deleteRun", summary="Delete a run", sync_to_thread=True,
            status_code=200, responses=errors(401, 403, 404, 422))
    def remove(self, rid: RunId, uow: Uow, me: Caller) -> Deleted:
        """Organisers delete a run with its evaluations (audited)."""
        return Deleted(deleted=submissions.delete(uow.session, rid, me))
