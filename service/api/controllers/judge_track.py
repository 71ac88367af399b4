"""A judges track: its settings, teams' judgment submissions and the judge board (issue 16)."""

from __future__ import annotations

from typing import Annotated, Any

import anyio.to_thread
from litestar import Controller, Request, Response, get, post, put
from litestar.datastructures import State
from litestar.params import JSONBody, Parameter

from service.api.dependencies import Caller, Coll, Uow
from service.api.openapi import WRITE_ERRORS, errors, upload_body
from service.api.params import CollectionId, IdempotencyKeyHeader
from service.api.schemas import out, present
from service.api.schemas.judgment_sets import (
    JudgeBoard,
    JudgeBoardIn,
    JudgeBoardRequested,
    JudgeTrackChange,
    JudgeTrackSettings,
    JudgmentsSubmitted,
)
from service.api.uploads import read_body
from service.evaluation.judging import judge_track
from service.http.admission import OWN_TRANSACTIONS

SetName = Annotated[str, Parameter(description="Your judgment set's name (a new name: a new set; your set's name "
                                               "again: its next version).", max_length=100)]
Model = Annotated[str | None, Parameter(description="The judge's model (e.g. gpt-4o-2024-08-06).", max_length=200)]
Prompt = Annotated[str | None, Parameter(description="Its prompt, or the prompt's name or URL.", max_length=2000)]
JudgedOn = Annotated[str | None, Parameter(description="When it judged (an ISO date).", max_length=40)]
Notes = Annotated[str | None, Parameter(description="Anything the organisers should know.", max_length=2000)]
FileName = Annotated[str | None, Parameter(description="The file's name, which errors name (default: the multipart "
                                                       "part's file name, else 'judgments').", max_length=200)]


async def _part_name(request: Request[Any, Any, Any]) -> str | None:
    """The file name of a multipart upload's ``file`` part (the form is parsed once: cached)."""
    if not request.headers.get("content-type", "").startswith("multipart/form-data"):
        return None
    part = (await request.form()).get("file")
    return getattr(part, "filename", None) or None


class JudgeTrackController(Controller):
    """Teams submit automatic judgments; the workers rank them by agreement with the official ones."""

    path = "/api/collections/{cid:int}"
    tags = ["judges track"]

    @get("/judge-track", operation_id="getJudgeTrack", summary="Read the judges track's settings",
         sync_to_thread=True, responses=errors(401, 403, 404, 422))
    def read_settings(self, coll: Coll, uow: Uow, me: Caller) -> JudgeTrackSettings:
        """Whether the collection accepts judgment sets and what its judge board ranks by
        (organisers and enrolled teams)."""
        return out(JudgeTrackSettings, judge_track.public_settings(uow.session, coll, me))

    @get("/judge-track/pool", operation_id="downloadJudgePool", summary="Download the documents to judge",
         sync_to_thread=True, media_type="text/plain", responses=errors(401, 403, 404, 409, 422))
    def pool(self, coll: Coll, uow: Uow, me: Caller) -> Response[str]:
        """What a team judges: a `topic docno` line for each document of the collection's pools
        (of a stratified pool, the drawn ones), in topic and document order: exactly the
        documents a judge file may label (return it with a level appended, `topic docno L2`), and
        nothing else (no level, stratum, probability or rank). Organisers; enrolled teams while
        the track is open; 409 while there is no pool."""
        return Response(judge_track.pool_file(uow.session, coll, me), media_type="text/plain")

    @put("/judge-track", operation_id="setJudgeTrack", summary="Open, close or set up the judges track",
         sync_to_thread=True, responses=errors(*WRITE_ERRORS))
    def change_settings(self, coll: Coll, data: JSONBody[JudgeTrackChange], uow: Uow, me: Caller) -> JudgeTrackSettings:
        """Open or close the track and choose the board's metric, agreement measure, interval
        (resamples, level, seed), the top k of `tau_top_k`, the sets and versions a team may
        submit (in all, and within a window of hours) and whether the board is released to the
        teams (organisers; audited)."""
        return out(JudgeTrackSettings, judge_track.configure(uow.session, coll, me, present(data)))

    @post("/judge-submissions", opt={OWN_TRANSACTIONS: True}, operation_id="submitJudgments",
          summary="Submit a judgment set", responses=errors(400, 401, 403, 404, 409, 413, 422),
          operation_class=upload_body("Judgments of pool documents in TREC (`topic iter docno level`) or NTCIR "
                                      "(`topic docno Lk`) form."))
    async def submit(self, request: Request[Any, Any, Any], cid: CollectionId, name: SetName, uow: Uow, me: Caller,
                     state: State, model: Model = None, prompt: Prompt = None, judged_on: JudgedOn = None,
                     notes: Notes = None, filename: FileName = None,
                     idempotency_key: IdempotencyKeyHeader = None) -> JudgmentsSubmitted:
        """A team's automatic judgments for the collection's pool (enrolled teams, while the
        track is open): checked line by line before anything is stored (topics and documents of
        the collection's pools, levels within the scale, a negative level such as `L-1` being a
        pooled document left unjudged as in the official qrels; a refusal names the file (`filename`,
        else the multipart part's name) and the line, reveals nothing of the official judgments and
        uses none of the limits or version numbers), stored, within the track's limits of sets and
        versions (409 beyond them), as a version of the team's set `name`, and every run
        evaluated under it in the background. The official judgments, and agreement with them
        document by document, are never shown to teams."""
        body = await read_body(request, state["max_body"])
        source = filename or await _part_name(request) or "judgments"
        fields = {k: v for k, v in {"model": model, "prompt": prompt, "judged_on": judged_on,
                                    "notes": notes}.items() if v is not None}
        outcome = await anyio.to_thread.run_sync(
            lambda: judge_track.submit(uow.factory, lambda _: me, cid, body, name, fields, source=source,
                                       idempotency_key=idempotency_key),
            limiter=state.get("upload_threads"))
        return out(JudgmentsSubmitted, uow.collect(outcome))

    @get("/judge-board", operation_id="getJudgeBoard", summary="Read the judge board", sync_to_thread=True,
         responses=errors(401, 403, 404, 422))
    def read_board(self, coll: Coll, uow: Uow, me: Caller) -> JudgeBoard:
        """The submitted judges ranked by the agreement of the runs' ranking under their
        judgments with the ranking under the official set, with a bootstrap interval over
        topics and their leniency. Organisers see every row; a team its own sets until the
        board is released; then whoever may read the collection. `stale` while a run evaluation
        it waits for is still queued or running (`pending` counts them) or its inputs changed
        since; a row names the runs left out because their evaluation failed (`failed_runs`)."""
        return out(JudgeBoard, judge_track.board(uow.session, coll, me))

    @post("/judge-board", operation_id="computeJudgeBoard", summary="Compute the judge board now",
          sync_to_thread=True, status_code=202, responses=errors(*WRITE_ERRORS))
    def compute_board(self, coll: Coll, data: JSONBody[JudgeBoardIn], uow: Uow, me: Caller) -> JudgeBoardRequested:
        """Have the workers compute the board now (organisers), unless an up-to-date one is
        stored or on its way. The workers compute it anyway when the evaluations of a set's
        (or the official set's) version complete, and the scheduled refresh when its inputs change."""
        return out(JudgeBoardRequested, uow.collect(judge_track.request_board(uow.session, coll, me, data.force)))
