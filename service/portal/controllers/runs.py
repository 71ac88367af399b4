"""A run's page (metrics and how the run was made; for its team and the organisers the
per-topic chart, the gain curves and the downloads), the run file and its per-topic scores as
downloads, and the comparison of two runs."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Response, get
from litestar.di import NamedDependency
from litestar.params import FromPath, FromQuery
from litestar.response import Template

from service.errors import BadRequest, NotFound
from service.evaluation.permissions import policy
from service.evaluation.publishing import boards
from service.evaluation.runs import answer_view, run_results, submissions
from service.portal import charts
from service.portal.pages import Page, download
from service.store.models import Collection, Run


class RunController(Controller):
    @get("/runs/{rid:int}", sync_to_thread=True)
    def run(self, rid: FromPath[int], page: NamedDependency[Page], metric: FromQuery[str | None] = None) -> Template:
        """``policy.may_see_run``; per-topic scores as ``may_see_run_topics``, warnings and the
        run file as ``may_see_run_details``, the topics' median and best as ``may_see_results``,
        curves as ``may_see_run_curve``."""
        s, me = page.session, page.me
        run, coll = submissions.get(s, rid, me)
        doc = run_results.run_metrics(s, rid, me)
        own = policy.may_see_run_details(me, run, coll)
        topics_shown = policy.may_see_run_topics(me, run, coll)  # after the release: every reader's
        name = metric or coll.current_config.official_metric
        per_topic: list[dict[str, Any]] = []
        topic_chart = None
        if topics_shown and doc["metrics"]:
            scores = run_results.run_scores(s, rid, me, name)
            name = scores["metric"]
            # before the release a team sees its own bars only (the medians would reveal others' scores)
            summary = run_results.topic_summary(s, coll, me, name)["topics"] if policy.may_see_results(me, coll) else {}
            values = scores["runs"][run.tag]["per_topic"]
            # A topic the run has no line for scores 0 (or nothing): told apart from a real 0 by the file.
            missing = run_results.missing_topics(run, [t for t, v in values.items() if not v])
            per_topic = [{"topic": t, "value": v, **summary.get(t, {}),
                          "state": "missing" if t in missing else "unscored" if v is None else None}
                         for t, v in values.items()]
            drawn = [(list(values), list(values.values()), [summary.get(t, {}).get("median") for t in values],
                      [summary.get(t, {}).get("best") for t in values], run.tag, name)]
            topic_chart = charts.for_each_width(*(
                charts.per_topic_chart(*drawn[0], marks=[p["state"] for p in per_topic], narrow=narrow)
                for narrow in (False, True)))
        # a collection of answers (issue 35): each topic's answer with its nuggets and support
        answers = answer_view.answers_of(s, rid, me) if own and coll.task_kind == "answers" else None
        return page.show(coll, "run.html", run=doc["run"], doc=doc, metric=name, per_topic=per_topic, answers=answers,
                         has_summary=any("median" in t for t in per_topic), topic_chart=topic_chart,
                         curve_chart=_curve_chart(page, run, coll), own=own, topics_shown=topics_shown, metrics=list(coll.current_config.metrics),
                         about=_about(doc["run"]), public_topics=policy.sees_visible_topics_only(me, coll))

    @get("/runs/{rid:int}/file", sync_to_thread=True)
    def file(self, rid: FromPath[int], page: NamedDependency[Page]) -> Response[str]:
        """The run file as submitted (``policy.may_see_run_details``: its team and the organisers)."""
        body = submissions.file_text(page.session, rid, page.me)
        run, _ = submissions.get(page.session, rid, page.me)
        return download(body.decode("utf-8", "replace"), "text/plain", f"{run.tag}.txt")

    @get("/runs/{rid:int}/ir_metadata.yaml", sync_to_thread=True)
    def ir_metadata(self, rid: FromPath[int], page: NamedDependency[Page]) -> Response[str]:
        """The run's ir_metadata (PRIMAD) YAML as submitted, as ``GET /api/runs/{rid}/ir_metadata``."""
        text = submissions.ir_metadata_text(page.session, rid, page.me)
        run, _ = submissions.get(page.session, rid, page.me)
        return download(text, "text/plain", f"{run.tag}.ir_metadata.yaml")

    @get("/runs/{rid:int}/scores.txt", sync_to_thread=True)
    def scores(self, rid: FromPath[int], page: NamedDependency[Page],
               metric: FromQuery[str | None] = None) -> Response[str]:
        """The run's per-topic scores in trec_eval's ``-q`` layout (``policy.may_see_run_topics``),
        as ``GET /api/runs/{rid}/scores?format=trec`` gives them."""
        text = run_results.run_scores_trec(page.session, rid, page.me, metric or None)
        run, _ = submissions.get(page.session, rid, page.me)
        return download(text, "text/plain", f"{run.tag}.scores.txt")

    @get("/c/{cid:int}/compare", sync_to_thread=True)
    def compare(self, cid: FromPath[int], page: NamedDependency[Page], a: FromQuery[int | None] = None,
                b: FromQuery[int | None] = None, metric: FromQuery[str | None] = None) -> Template:
        """Signed-in readers choose among the runs whose per-topic scores they may see (their
        team's; organisers and, once the board is released, its readers: every evaluated run);
        the comparison itself as ``policy.may_see_run_topics`` of both runs."""
        coll = page.collection(cid)
        runs = [r for r in submissions.comparable(page.session, coll, page.me) if r.status == "evaluated"]
        doc = chart = None
        if a is not None and b is not None:
            if a == b:
                raise BadRequest("choose two different runs")
            doc = run_results.compare(page.session, coll, page.me, a, b, metric or None)
            chart = charts.difference_chart(doc["differences"], doc["a"], doc["b"], doc["metric"],
                                            missing=sorted(set().union(*doc["missing"].values())))
        first = a if a is not None else (runs[0].id if runs else None)
        b_default = next((r.id for r in runs if r.id != first), None)  # B defaults to another run than A
        cfg = coll.current_config
        return page.show(coll, "compare.html", runs=runs, a=a, b=b, b_default=b_default, doc=doc, chart=chart,
                         metric=metric or cfg.official_metric, metrics=list(cfg.metrics))


def _about(doc: dict[str, Any]) -> dict[str, Any]:
    """How the run was made, as its team said at submission, and what the submission check warned
    of (from the run's document, ``submissions.document``)."""
    return {k: doc[k] for k in ("run_type", "uses_training_data", "uses_external_resources", "has_ir_metadata",
                                "warnings")}


def _curve_chart(page: Page, run: Run, coll: Collection) -> str | None:
    """J&K's curves of the run, of the best run the visitor may see (on the best run's own page:
    the runner-up, labelled so), and of the ideal ranking."""
    if not policy.may_see_run_curve(page.me, run, coll):
        return None
    try:
        curve = run_results.run_curve(page.session, run.id, page.me)
    except NotFound:
        return None  # not evaluated yet
    series = {run.tag: {"dcg": curve["dcg"], "ndcg": curve["ndcg"]}}
    other = _best_visible_curve(page, coll, run.id)
    if other is not None:
        label, best = other
        series[f"{label} ({best['run']})"] = {"dcg": best["dcg"], "ndcg": best["ndcg"]}
    series["ideal ranking"] = {"dcg": curve["ideal_dcg"]}
    return charts.gain_curve_chart(series, curve["depth"], curve["log_base"])


def _best_visible_curve(page: Page, coll: Collection, run_id: int) -> tuple[str, dict[str, Any]] | None:
    """The curves of the best run on the official metric whose curves the visitor may see,
    labelled "best run"; when that is the run ``run_id`` itself, the next one's, labelled
    "runner-up"."""
    s, me = page.session, page.me
    if not policy.may_see_board(me, coll):
        return None
    ahead = False  # the run itself came first among the runs with curves
    for row in boards.leaderboard_doc(s, coll, me)["rows"]:
        if not row.get("run_id"):
            continue
        if row["run_id"] == run_id:
            ahead = True
            continue
        other, _ = submissions.get(s, row["run_id"], me)  # every row of the visitor's board is a run it may see
        if policy.may_see_run_curve(me, other, coll):
            try:
                return ("runner-up" if ahead else "best run"), run_results.run_curve(s, other.id, me)
            except NotFound:
                continue
    return None
