"""A reproducibility track in the portal (issue 28): the board (every reproduction the visitor
may see with its measures on a metric and the verdict), the ER/DeltaRI plane of the pairs, and
one reproduction's per-topic values. The page reads what the API reads
(``service.evaluation.reproducing.board``): the figures are the workers', never computed here."""

from __future__ import annotations

from litestar import Controller, get
from litestar.di import NamedDependency
from litestar.params import FromPath, FromQuery
from litestar.response import Response, Template

from service.evaluation.permissions import policy
from service.evaluation.reproducing import board as repro_board
from service.portal.pages import Page, download
from service.portal.repro_charts import er_dri_plane


def _label(row: dict) -> str:  # type: ignore[type-arg]
    run = row["run"] or {}
    return f"{run.get('team', '')}: {run.get('tag', '')}" + (
        f" + {row['advanced_run']['tag']}" if row.get("advanced_run") else "")


class ReproducibilityController(Controller):
    @get("/c/{cid:int}/reproducibility", sync_to_thread=True)
    def board(self, cid: FromPath[int], page: NamedDependency[Page], metric: FromQuery[str | None] = None) -> Template:
        """``policy.may_see_reproducibility``: the board and the plane."""
        coll = page.collection(cid)
        doc = repro_board.board(page.session, coll, page.me, metric)
        for row in doc["rows"]:
            row["label"] = _label(row)
        pairs = [r for r in doc["rows"] if r["kind"] == "pair"]
        return page.show(coll, "reproducibility.html", board=doc, chart=er_dri_plane(pairs, doc["metric"]),
                         can_configure=policy.may_configure(page.me, coll))

    @get("/c/{cid:int}/reproducibility.csv", sync_to_thread=True)
    def csv(self, cid: FromPath[int], page: NamedDependency[Page], metric: FromQuery[str | None] = None
            ) -> Response[str]:
        """The board as CSV (as GET ``.../reproducibility?format=csv``)."""
        coll = page.collection(cid)
        doc = repro_board.board(page.session, coll, page.me, metric)
        return download(repro_board.board_csv(doc), "text/csv", f"{coll.name}-reproducibility.csv")

    @get("/c/{cid:int}/reproducibility/{xid:int}", sync_to_thread=True)
    def topics(self, cid: FromPath[int], xid: FromPath[int], page: NamedDependency[Page],
               metric: FromQuery[str | None] = None) -> Template:
        """One reproduction's values topic by topic (which topics did not reproduce)."""
        coll = page.collection(cid)
        doc = repro_board.per_topic(page.session, coll, page.me, xid, metric)
        return page.show(coll, "reproduction.html", doc=doc, label=_label(doc["reproduction"]))
