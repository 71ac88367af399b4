"""A run's page (metrics; for its team and the organisers the per-topic chart and the gain
curves) and the comparison of two runs."""

from __future__ import annotations

from typing import Any

from litestar import Controller, get
from litestar.di import NamedDependency
from litestar.params import FromPath, FromQuery
from litestar.response import Template

from service.errors import BadRequest, NotFound
from service.evaluation import boards, policy, run_results, submissions
from service.portal import charts
from service.portal.pages import Page
from service.store.models import Collection, Run


class RunController(Controller):
    @get("/runs/{rid:int}", sync_to_thread=True)
    def run(self, rid: FromPath[int], page: NamedDependency[Page], metric: FromQuery[str | None] = None) -> Template:
        """``policy.may_see_run``; per-topic scores as ``may_see_run_details``, the topics'
        median and best as ``may_see_results``, curves as ``may_see_run_curve``."""
        s, me = page.session, page.me
        run, coll = submissions.get(s, rid, me)
        doc = run_results.run_metrics(s, rid, me)
        own = policy.may_see_run_details(me, run, coll)
        name = metric or coll.current_config.official_metric
        per_topic: list[dict[str, Any]] = []
        topic_chart = None
        if own and doc["metrics"]:
            scores = run_results.run_scores(s, rid, me, name)
            name = scores["metric"]
            # before the release a team sees its own bars only (the medians would reveal others' scores)
            summary = run_results.topic_summary(s, coll, me, name)["topics"] if policy.may_see_results(me, coll) else {}
            values = scores["runs"][run.tag]["per_topic"]
            per_topic = [{"topic": t, "value": v, **summary.get(t, {})} for t, v in values.items()]
            topic_chart = charts.per_topic_chart(list(values), list(values.values()),
                                                 [summary.get(t, {}).get("median") for t in values],
                                                 [summary.get(t, {}).get("best") for t in values], run.tag, name)
        return page.show(coll, "run.html", run=doc["run"], doc=doc, metric=name, per_topic=per_topic,
                         has_summary=any("median" in t for t in per_topic), topic_chart=topic_chart,
                         curve_chart=_curve_chart(page, run, coll), own=own, metrics=list(coll.current_config.metrics))

    @get("/c/{cid:int}/compare", sync_to_thread=True)
    def compare(self, cid: FromPath[int], page: NamedDependency[Page], a: FromQuery[int | None] = None,
                b: FromQuery[int | None] = None, metric: FromQuery[str | None] = None) -> Template:
        """Signed-in readers choose among the runs they may list (their team's; organisers: all);
        the comparison itself as ``policy.may_see_run_details`` of both runs."""
        coll = page.collection(cid)
        runs = [r for r in submissions.listed(page.session, coll, page.me) if r.status == "evaluated"]
        doc = chart = None
        if a is not None and b is not None:
            if a == b:
                raise BadRequest("choose two different runs")
            doc = run_results.compare(page.session, coll, page.me, a, b, metric or None)
            chart = charts.difference_chart(doc["differences"], doc["a"], doc["b"], doc["metric"])
        first = a if a is not None else (runs[0].id if runs else None)
        b_default = next((r.id for r in runs if r.id != first), None)  # B defaults to another run than A
        cfg = coll.current_config
        return page.show(coll, "compare.html", runs=runs, a=a, b=b, b_default=b_default, doc=doc, chart=chart,
                         metric=metric or cfg.official_metric, metrics=list(cfg.metrics))


def _curve_chart(page: Page, run: Run, coll: Collection) -> str | None:
    """J&K's curves of the run, of the best other run the visitor may see, and of the ideal ranking."""
    if not policy.may_see_run_curve(page.me, run, coll):
        return None
    try:
        curve = run_results.run_curve(page.session, run.id, page.me)
    except NotFound:
        return None  # not evaluated yet
    series = {run.tag: {"dcg": curve["dcg"], "ndcg": curve["ndcg"]}}
    best = _best_visible_curve(page, coll, run.id)
    if best is not None:
        series[f"best run ({best['run']})"] = {"dcg": best["dcg"], "ndcg": best["ndcg"]}
    series["ideal ranking"] = {"dcg": curve["ideal_dcg"]}
    return charts.gain_curve_chart(series, curve["depth"], curve["log_base"])


def _best_visible_curve(page: Page, coll: Collection, exclude: int) -> dict[str, Any] | None:
    """The curves of the best run on the official metric whose curves the visitor may see."""
    s, me = page.session, page.me
    if not policy.may_see_board(me, coll):
        return None
    for row in boards.leaderboard_doc(s, coll, me)["rows"]:
        if not row.get("run_id") or row["run_id"] == exclude:
            continue
        other, _ = submissions.get(s, row["run_id"], me)  # every row of the visitor's board is a run it may see
        if policy.may_see_run_curve(me, other, coll):
            try:
                return run_results.run_curve(s, other.id, me)
            except NotFound:
                continue
    return None
