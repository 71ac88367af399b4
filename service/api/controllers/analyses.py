"""Analyses the workers compute on request: reusability and the reduced-judgment experiment."""

from __future__ import annotations

from litestar import Controller, get, post
from litestar.params import JSONBody

from service.api.dependencies import Caller, Coll, Uow
from service.api.openapi import WRITE_ERRORS, errors
from service.api.params import AnalysisId
from service.api.schemas import out
from service.api.schemas.judging import (
    AnalysisOut,
    AnalysisRequest,
)
from service.evaluation.analysing import analyses


class AnalysesController(Controller):
    """Analyses of the current qrels that the workers compute on request."""

    tags = ["analyses"]

    @post("/api/collections/{cid:int}/analyses", operation_id="requestAnalysis", summary="Request an analysis",
          sync_to_thread=True, status_code=202, responses=errors(*WRITE_ERRORS))
    def request(self, coll: Coll, data: JSONBody[AnalysisRequest], uow: Uow, me: Caller) -> AnalysisOut:
        """Queue an analysis of the current qrels for the workers: `reusability` (pool
        statistics, leave-one-team-out) or `reduction` (the reduced-judgment experiment)."""
        s = uow.session
        if data.kind == "reduction":
            row = uow.collect(analyses.request_reduction(s, coll, me, data.kept))
        else:
            row = uow.collect(analyses.request(s, coll, me, data.metric, data.pool, data.depth))
        return out(AnalysisOut, analyses.doc(s, row, me))

    @get("/api/analyses/{aid:int}", operation_id="getAnalysis", summary="Read an analysis", sync_to_thread=True,
         responses=errors(401, 403, 404, 422))
    def read(self, aid: AnalysisId, uow: Uow, me: Caller) -> AnalysisOut:
        """An analysis with its status and, once done, its result."""
        return out(AnalysisOut, analyses.doc(uow.session, analyses.get(uow.session, aid, me), me))
