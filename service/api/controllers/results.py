"""Per-run results read from the stored evaluations: per-topic scores, comparisons, curves."""

from __future__ import annotations

from typing import Annotated, Literal

from litestar import Controller, Response, get
from litestar.params import Parameter

from service.api.dependencies import Caller, Coll, Uow
from service.api.openapi import errors
from service.api.params import Metric, RunId
from service.api.schemas import out
from service.api.schemas.boards import Comparison, Curves, RunScores
from service.evaluation.runs import run_results

RunA = Annotated[int, Parameter(description="The first run's id.", ge=1, le=2**31 - 1)]
RunB = Annotated[int, Parameter(description="The second run's id.", ge=1, le=2**31 - 1)]
ScoresFormat = Annotated[Literal["json", "trec"], Parameter(description=(
    "json, or trec: trec_eval's -q layout as text/plain (a runid line naming the run, measure, topic, value lines "
    "with %.4f values, then the means as topic all; every metric of the collection unless metric is given)."))]


class ResultsController(Controller):
    """Per-run results, read from the stored evaluations."""

    tags = ["results"]

    @get("/api/runs/{rid:int}/scores", operation_id="getRunScores", summary="Per-topic scores of a run",
         sync_to_thread=True, responses=errors(400, 401, 403, 404, 422))
    def scores(self, rid: RunId, uow: Uow, me: Caller, metric: Metric = None,
               format: ScoresFormat = "json") -> Response[RunScores]:  # noqa: A002
        """The run's score on every topic for one metric (its team and organisers; once the board
        is released, every reader of the results, as the run x topic matrix shows them). With
        `format=trec`, trec_eval's `-q` layout: a first `runid<TAB>all<TAB>TAG` line naming the run,
        then `measure<TAB>topic<TAB>value` lines (values `%.4f`)
        for every metric of the collection (or `metric`), topic by topic, then a line per metric
        with topic `all` and its mean; measures by their Cranfield canonical names (`nDCG@10`, not
        trec_eval's `ndcg_cut_10`); topics the run was not scored on have no line."""
        if format == "trec":
            return Response(run_results.run_scores_trec(uow.session, rid, me, metric),  # type: ignore[return-value]
                            media_type="text/plain")
        return Response(out(RunScores, run_results.run_scores(uow.session, rid, me, metric)))

    @get("/api/collections/{cid:int}/compare", operation_id="compareRuns", summary="Compare two runs",
         sync_to_thread=True, responses=errors(400, 401, 403, 404, 422))
    def compare(self, coll: Coll, a: RunA, b: RunB, uow: Uow, me: Caller,
                metric: Metric = None) -> Comparison:
        """Per-topic differences (a minus b), wins, ties, losses; the stored test's p-value of the
        pair with its test, B, alpha and correction; the mean difference with its t and bootstrap
        intervals and effect size, and why the test and an interval disagree when they do (runs the
        caller may see per topic: its own team's, all for organisers, and every run of a released
        board for its readers)."""
        return out(Comparison, run_results.compare(uow.session, coll, me, a, b, metric))

    @get("/api/runs/{rid:int}/curve", operation_id="getRunCurves", summary="Gain curves of a run",
         sync_to_thread=True, responses=errors(401, 403, 404, 422))
    def curve(self, rid: RunId, uow: Uow, me: Caller) -> Curves:
        """Järvelin & Kekäläinen's CG, DCG, nCG and nDCG curves averaged over topics, with the
        ideal ones, as stored by the workers."""
        return out(Curves, run_results.run_curve(uow.session, rid, me))
