"""A collection's home page: its leaderboard (when the visitor may see it), and the board as
CSV or LaTeX; every metric side by side (``/c/{id}/metrics``, as CSV too)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import anyio.to_thread
from litestar import Controller, Response, get
from litestar.di import NamedDependency, Provide
from litestar.params import FromPath, FromQuery
from litestar.response import Template

from service.evaluation.judging import qrels
from service.evaluation.permissions import policy
from service.evaluation.publishing import boards
from service.evaluation.publishing.exports import board_csv, board_latex, metrics_board_csv
from service.portal import charts
from service.portal.forms import whole_number
from service.portal.pages import Page, download
from service.store.models import Collection


@dataclass(frozen=True)
class BoardChoices:
    """The board's selectors (forms send "" for a default choice) and its run filters."""

    metric: str | None = None
    test: str | None = None
    qrels_version: int | None = None
    runs: boards.RunFilter = field(default_factory=boards.RunFilter)
    sort: str | None = None  # the multi-metric board's column

    @property
    def primary_only(self) -> bool:
        return self.runs.primary_only

    def board(self, page: Page, coll: Collection) -> dict[str, Any]:
        """The board as the visitor may see it (``policy.may_see_board``), with these choices."""
        return boards.leaderboard_doc(page.session, coll, page.me, self.metric, qrels_version=self.qrels_version,
                                      test=self.test, runs=self.runs, pairs=True)  # names up to 5 beaten runs

    def metrics_board(self, page: Page, coll: Collection) -> dict[str, Any]:
        """Every metric side by side, as ``policy.may_see_board`` allows, with these filters."""
        return boards.metrics_board(page.session, coll, page.me, self.sort, self.runs)

    def query(self, **changes: Any) -> str:
        """The choices as a query string (defaults left out), with ``changes``."""
        values = {"metric": self.metric, "test": self.test, "qrels_version": self.qrels_version,
                  "primary_only": "true" if self.runs.primary_only else None, "run_type": self.runs.run_type,
                  "training_data": self.runs.training_data, "external_resources": self.runs.external_resources,
                  "sort": self.sort, **changes}
        return urlencode({k: v for k, v in values.items() if v})


def board_choices(metric: FromQuery[str | None] = None, test: FromQuery[str | None] = None,
                  qrels_version: FromQuery[str | None] = None, primary_only: FromQuery[bool] = False,
                  run_type: FromQuery[str | None] = None, training_data: FromQuery[str | None] = None,
                  external_resources: FromQuery[str | None] = None,
                  sort: FromQuery[str | None] = None) -> BoardChoices:
    runs = boards.RunFilter(primary_only, run_type or None, training_data or None, external_resources or None)
    return BoardChoices(metric or None, test or None, whole_number(qrels_version, "qrels_version"), runs, sort or None)


class BoardController(Controller):
    dependencies = {"choices": Provide(board_choices, sync_to_thread=False)}

    @get("/c/{cid:int}", sync_to_thread=True)
    def board(self, cid: FromPath[int], page: NamedDependency[Page],
              choices: NamedDependency[BoardChoices]) -> Template:
        """The collection's home page: its board, as ``policy.may_see_board`` allows (before the
        release an enrolled team sees its own rows only; others once it is released)."""
        coll = page.collection(cid)
        doc, cfg = choices.board(page, coll), coll.current_config
        versions = ([v["version"] for v in reversed(qrels.versions(page.session, coll, page.me)["items"])]
                    if policy.may_see_qrels(page.me, coll) else [])
        return page.show(coll, "board.html", doc=doc, versions=versions, test=choices.test,
                         chart=charts.for_each_width(charts.interval_chart(doc["rows"], doc["metric"]),
                                                     charts.interval_chart(doc["rows"], doc["metric"], narrow=True))
                         if doc["rows"] else None,
                         metrics=[cfg.official_metric, *(m for m in cfg.metrics if m != cfg.official_metric)],
                         tests=boards.stored_tests(page.session, coll), qrels_version=choices.qrels_version,
                         primary_only=choices.primary_only, filters=choices.runs, query=choices.query,
                         run_types=boards.RUN_TYPES)

    @get("/c/{cid:int}/metrics", sync_to_thread=True)
    def metrics(self, cid: FromPath[int], page: NamedDependency[Page],
                choices: NamedDependency[BoardChoices]) -> Template:
        """Every metric side by side, sortable by any column (``?sort=``), with the board's filters:
        the board's rows (``policy.may_see_board``, the same secrecy before the release)."""
        coll = page.collection(cid)
        doc = choices.metrics_board(page, coll)
        return page.show(coll, "metrics.html", doc=doc, filters=choices.runs, query=choices.query,
                         run_types=boards.RUN_TYPES)

    # (async, with the work in a thread: Litestar 2.25 fails a sync_to_thread handler of several paths)
    @get("/c/{cid:int}/metrics.csv", sync_to_thread=True)
    def metrics_file(self, cid: FromPath[int], page: NamedDependency[Page],
                     choices: NamedDependency[BoardChoices]) -> Response[str]:
        """Every metric side by side, with the page's choices, as CSV."""
        coll = page.collection(cid)
        return download(metrics_board_csv(choices.metrics_board(page, coll)), "text/csv", f"{coll.name}-metrics.csv")

    @get(["/c/{cid:int}/board.csv", "/c/{cid:int}/board.tex"])
    async def board_file(self, cid: FromPath[int], page: NamedDependency[Page],
                         choices: NamedDependency[BoardChoices]) -> Response[str]:
        """The board with the page's choices, as CSV or as a LaTeX table (``board.tex``)."""
        return await anyio.to_thread.run_sync(_board_file, page, cid, choices)


def _board_file(page: Page, cid: int, choices: BoardChoices) -> Response[str]:
    coll = page.collection(cid)
    doc = choices.board(page, coll)
    if page.request.url.path.endswith(".csv"):
        return download(board_csv(doc), "text/csv", f"{coll.name}-{doc['metric']}.csv")
    return download(board_latex(doc), "text/plain", f"{coll.name}-{doc['metric']}.tex")
