"""Per-topic difficulty over the runs on the visitor's board (``/c/{id}/topics``, as CSV too) and
the run x topic matrix of a metric (``/c/{id}/matrix.csv``)."""

from __future__ import annotations

from litestar import Controller, Response, get
from litestar.di import NamedDependency
from litestar.params import FromPath, FromQuery
from litestar.response import Template

from service.evaluation.analysing import topic_analysis
from service.evaluation.publishing.exports import matrix_csv, topics_csv
from service.portal import charts
from service.portal.pages import Page, download


class TopicController(Controller):
    @get("/c/{cid:int}/topics", sync_to_thread=True)
    def topics(self, cid: FromPath[int], page: NamedDependency[Page], metric: FromQuery[str | None] = None) -> Template:
        """``policy.may_see_board``; the figures are over the runs on the visitor's board (before
        the release a participant's own team's), hidden topics left out as on the board."""
        coll = page.collection(cid)
        doc = topic_analysis.topic_analysis(page.session, coll, page.me, metric or None)
        cfg = coll.current_config
        chart = charts.topic_difficulty_chart(doc["items"], doc["own_runs"], doc["metric"]) if doc["items"] else None
        return page.show(coll, "topics.html", doc=doc, chart=chart,
                         metrics=[cfg.official_metric, *(m for m in cfg.metrics if m != cfg.official_metric)])

    @get("/c/{cid:int}/topics.csv", sync_to_thread=True)
    def topics_file(self, cid: FromPath[int], page: NamedDependency[Page],
                    metric: FromQuery[str | None] = None) -> Response[str]:
        """The topic table as CSV (the page's access and figures)."""
        coll = page.collection(cid)
        doc = topic_analysis.topic_analysis(page.session, coll, page.me, metric or None)
        return download(topics_csv(doc), "text/csv", f"{coll.name}-topics-{doc['metric']}.csv")

    @get("/c/{cid:int}/matrix.csv", sync_to_thread=True)
    def matrix_file(self, cid: FromPath[int], page: NamedDependency[Page],
                    metric: FromQuery[str | None] = None) -> Response[str]:
        """The run x topic matrix of a metric as CSV: the runs on the visitor's board by the topics it may see."""
        coll = page.collection(cid)
        doc = topic_analysis.score_matrix(page.session, coll, page.me, metric or None)
        return download(matrix_csv(doc), "text/csv", f"{coll.name}-matrix-{doc['metric']}.csv")
