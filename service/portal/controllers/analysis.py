"""Collection-wide results and analyses: the significance heat map, the rank changes of the
last qrels update, the metric analysis (discriminative power, tau, reduced judgments)."""

from __future__ import annotations

from litestar import Controller, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, FromQuery
from litestar.response import Redirect, Template

from service.errors import NotFound
from service.evaluation.analysing import analyses, topic_sizes
from service.evaluation.permissions import policy
from service.evaluation.publishing import boards
from service.evaluation.runs import run_results
from service.portal import charts
from service.portal.forms import PostedForm
from service.portal.pages import Page, answer


class AnalysisController(Controller):
    @get("/c/{cid:int}/significance", sync_to_thread=True)
    def significance(self, cid: FromPath[int], page: NamedDependency[Page], metric: FromQuery[str | None] = None,
                     test: FromQuery[str | None] = None) -> Template:
        """``policy.may_see_results``: the adjusted p-value of every run pair, runs in board order."""
        s, me, coll = page.session, page.me, page.collection(cid)
        policy.require(policy.may_see_results(me, coll), me, f"the significance matrix of collection {cid}")
        matrix = chart = missing = None
        try:
            matrix = boards.significance_matrix(s, coll, me, metric or None, test or None)
        except NotFound as exc:
            missing = str(exc)  # no test stored yet (no qrels, one run, or tests still running)
        if matrix is not None:
            # Leaderboard order reads best: the strongest runs in the top-left corner.
            board = [r["run"] for r in boards.leaderboard_doc(s, coll, me, matrix["metric"])["rows"]]
            index = {r: i for i, r in enumerate(matrix["runs"])}
            order = [r for r in board if r in index] + [r for r in matrix["runs"] if r not in set(board)]
            # every per-pair matrix in that order (p, p_adjusted and the Monte Carlo fields when stored)
            matrix = {**matrix, "runs": order, **{
                key: [[matrix[key][index[x]][index[y]] for y in order] for x in order]
                for key in ("p", "p_adjusted", "undecided", "resamples_matrix", "mc_se") if matrix.get(key)}}
            p = matrix["p_adjusted"]
            # the test as stored with the matrix: its name, B, alpha, correction and topics
            stored = run_results.stored_test(s, coll, me, matrix["metric"], test or None)
            chart = charts.p_value_heatmap(order, p, matrix["alpha"], matrix["metric"], matrix["test"],
                                           correction=matrix.get("correction"),
                                           resamples=stored["resamples"] if stored else None,
                                           undecided=matrix.get("undecided"))
            matrix["stored"] = stored
        return page.show(coll, "significance.html", matrix=matrix, chart=chart, missing=missing, test=test,
                         tests=boards.stored_tests(s, coll), metrics=list(
                             coll.current_config.significance.get("metrics") or coll.current_config.metrics))

    @get("/c/{cid:int}/changes", sync_to_thread=True)
    def changes(self, cid: FromPath[int], page: NamedDependency[Page]) -> Template:
        """``policy.may_see_analyses``: old and new rank of each run after the last qrels update."""
        coll = page.collection(cid)
        return page.show(coll, "changes.html", report=boards.rank_change_report(page.session, coll, page.me))

    @get("/c/{cid:int}/analysis", sync_to_thread=True)
    def analysis(self, cid: FromPath[int], page: NamedDependency[Page]) -> Template:
        """``policy.may_see_analyses``: the workers' meta-evaluation and reduced-judgment experiment."""
        s, me, coll = page.session, page.me, page.collection(cid)
        policy.require(policy.may_see_analyses(me, coll), me, f"the metric analysis of collection {cid}")
        try:
            meta = boards.metaeval(s, coll, me)
        except NotFound:
            meta = None  # no finished job of the current results yet
        tau_chart = asl_chart = None
        if meta is not None:
            names = [m for m in coll.current_config.metrics if m in meta["power"]]
            tau = {tuple(k.split(" | ", 1)): v for k, v in meta["tau"].items()}
            if len(names) >= 2:
                tau_chart = charts.tau_heatmap(names, tau, meta.get("tau_significant_above"))
            # Most discriminative first (the table's order and the chart legend's); names case-insensitively
            # among equals, and metrics whose power could not be computed last.
            meta = {**meta, "power": dict(sorted(meta["power"].items(), key=lambda kv: (
                kv[1].get("power") is None, -(kv[1].get("power") or 0.0), kv[0].casefold())))}
            names = sorted(names, key=list(meta["power"]).index)
            if policy.may_see_results(me, coll):  # the board's own test beside the unadjusted counts
                meta["board_tests"] = {m: boards.board_test_counts(s, coll, me, m) for m in names}
            curves = {m: meta["power"][m]["asl_curve"] for m in names if "asl_curve" in meta["power"][m]}
            if curves:
                pairs = max(meta["power"][m].get("pairs", 0) for m in curves)
                asl_chart = charts.asl_chart(curves, meta["alpha"], pairs)
        latest = analyses.latest(s, coll, me, analyses.REDUCTION)
        reduced = analyses.doc(s, latest, me) if latest is not None else None
        reduction_chart = (charts.reduction_chart(reduced["result"]["rows"])
                           if reduced and reduced["status"] == "done" else None)
        return page.show(coll, "analysis.html", meta=meta, tau_chart=tau_chart, asl_chart=asl_chart, reduced=reduced,
                         reduction_chart=reduction_chart, topic_sizes=topic_sizes.topic_size_table(s, coll, me))

    @post("/c/{cid:int}/analysis", sync_to_thread=True)
    def request_reduction(self, cid: FromPath[int], page: NamedDependency[Page],
                          form: NamedDependency[PostedForm]) -> Redirect:
        """Organisers queue the reduced-judgment experiment for the workers."""
        page.uow.collect(analyses.request_reduction(page.session, page.collection(cid), page.me))
        return answer(f"/c/{cid}/analysis", "reduction-requested")
