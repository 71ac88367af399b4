"""Reproducibility tracks (issue 28): originals, declarations, the board, per-topic values."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from litestar import Controller, Response, delete, get, post
from litestar.params import JSONBody, Parameter

from service.api.dependencies import Caller, Coll, Uow
from service.api.openapi import WRITE_ERRORS, errors
from service.api.params import Metric, RunId
from service.api.schemas import Items, out
from service.api.schemas.reproducibility import (
    DeclarationIn,
    DeclarationOut,
    Longitudinal,
    MeasureIn,
    MeasureRequested,
    OriginalIn,
    OriginalOut,
    ReproducibilityBoard,
    ReproductionTopics,
)
from service.api.schemas.runs import Deleted
from service.evaluation.publishing import exports
from service.evaluation.reproducing import board, declarations

Format = Annotated[Literal["json", "csv", "latex"], Parameter(description="json, csv or latex.")]
ReproductionId = Annotated[int, Parameter(description="The reproduction's id.", ge=1, le=2**31 - 1)]


class ReproducibilityController(Controller):
    """Which runs reproduce which, and how well (Breuer et al., SIGIR 2020)."""

    tags: ClassVar[list[str]] = ["reproducibility"]

    @get("/api/collections/{cid:int}/reproduction-originals", operation_id="listOriginals",
         summary="List the originals to reproduce", sync_to_thread=True, responses=errors(401, 403, 404, 422))
    def list_originals(self, coll: Coll, uow: Uow, me: Caller) -> Items[OriginalOut]:
        """The runs (and baseline/advanced pairs) the organisers offer to be reproduced here."""
        return out(Items[OriginalOut], {"items": declarations.originals(uow.session, coll, me)})

    @post("/api/collections/{cid:int}/reproduction-originals", operation_id="registerOriginal",
          summary="Register an original to reproduce", sync_to_thread=True, responses=errors(*WRITE_ERRORS))
    def register(self, coll: Coll, data: JSONBody[OriginalIn], uow: Uow, me: Caller) -> OriginalOut:
        """Offer a run, or a baseline/advanced pair, of this collection or of another collection
        you organise, to be reproduced by this collection's teams (organisers; audited)."""
        return out(OriginalOut, uow.collect(declarations.register_original(
            uow.session, coll, me, data.run, data.advanced_run, data.label)))

    @post("/api/runs/{rid:int}/reproduction", operation_id="declareReproduction",
          summary="Declare what a run reproduces", sync_to_thread=True, responses=errors(*WRITE_ERRORS))
    def declare(self, rid: RunId, data: JSONBody[DeclarationIn], uow: Uow, me: Caller) -> DeclarationOut:
        """This run reproduces a registered original run, or with `advanced_run` and
        `original_advanced_run` the pair (this run, `advanced_run`) reproduces the original pair.
        The run's team within the submission window, or the organisers; replaces any declaration
        naming either run; the workers measure it."""
        return out(DeclarationOut, uow.collect(declarations.declare(
            uow.session, me, rid, data.original_run, data.advanced_run, data.original_advanced_run)))

    @delete("/api/runs/{rid:int}/reproduction", operation_id="withdrawReproduction",
            summary="Withdraw what a run was declared to reproduce", sync_to_thread=True, status_code=200,
            responses=errors(*WRITE_ERRORS))
    def withdraw(self, rid: RunId, uow: Uow, me: Caller) -> Deleted:
        """The declaration naming this run (alone or in a pair) withdrawn with its measures: the
        run's team within the submission window, or the organisers."""
        return out(Deleted, uow.collect(declarations.withdraw(uow.session, me, rid)))

    @get("/api/collections/{cid:int}/reproducibility", operation_id="getReproducibilityBoard",
         summary="Read the reproducibility board", sync_to_thread=True, responses=errors(400, 401, 403, 404, 422))
    def read_board(self, coll: Coll, uow: Uow, me: Caller, metric: Metric = None,
                   format: Format = "json") -> Response[ReproducibilityBoard]:
        """Every reproduction with its measures on the metric: KTU and RBO (same collection),
        per run the means, RMSE, nRMSE and the t-test's p, for a pair ER and DeltaRI with their
        bootstrap intervals, and the verdict in words. Organisers see every reproduction; a team
        its own until the board is released; then whoever reads the collection."""
        doc = board.board(uow.session, coll, me, metric)
        if format == "csv":
            return Response(exports.reproducibility_csv(doc), media_type="text/csv")  # type: ignore[return-value]
        if format == "latex":
            return Response(exports.reproducibility_latex(doc), media_type="text/x-tex")  # type: ignore[return-value]
        return Response(out(ReproducibilityBoard, doc))

    @get("/api/collections/{cid:int}/longitudinal", operation_id="getLongitudinal",
         summary="Follow each system along the snapshots", sync_to_thread=True,
         responses=errors(400, 401, 403, 404, 422))
    def read_longitudinal(self, coll: Coll, uow: Uow, me: Caller, metric: Metric = None) -> Longitudinal:
        """Each system of the board followed back along its declarations (this snapshot's run
        reproducing the previous snapshot's, and so on): its mean in every snapshot, and per
        step the result delta, the t-test's p and a pair's ER and DeltaRI. The board's rules."""
        return out(Longitudinal, board.longitudinal(uow.session, coll, me, metric))

    @get("/api/collections/{cid:int}/reproducibility/{xid:int}", operation_id="getReproductionTopics",
         summary="Read a reproduction's per-topic values", sync_to_thread=True,
         responses=errors(400, 401, 403, 404, 422))
    def read_topics(self, coll: Coll, xid: ReproductionId, uow: Uow, me: Caller,
                    metric: Metric = None) -> ReproductionTopics:
        """Per topic: the original's and the reproduction's scores, a pair's improvements, KTU
        and RBO (which topics did not reproduce)."""
        return out(ReproductionTopics, board.per_topic(uow.session, coll, me, xid, metric))

    @post("/api/collections/{cid:int}/reproducibility", operation_id="measureReproductions",
          summary="Measure the reproductions now", sync_to_thread=True, status_code=202,
          responses=errors(*WRITE_ERRORS))
    def measure(self, coll: Coll, data: JSONBody[MeasureIn], uow: Uow, me: Caller) -> MeasureRequested:
        """Have the workers measure the reproductions now (organisers), unless up to date; they
        do anyway after every declaration and evaluation."""
        return out(MeasureRequested, uow.collect(board.request(uow.session, coll, me, data.force)))
