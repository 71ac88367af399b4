"""A reproducibility track in the portal (issue 28): the board (every reproduction the visitor
may see with its measures on a metric and the verdict), the ER/DeltaRI plane of the pairs, and
one reproduction's per-topic values. The page reads what the API reads
(``service.evaluation.reproducing.board``): the figures are the workers', never computed here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from litestar import Controller, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, FromQuery
from litestar.response import Redirect, Response, Template

from service.evaluation.permissions import policy
from service.evaluation.publishing import exports
from service.evaluation.reproducing import board as repro_board
from service.evaluation.reproducing import declarations
from service.portal.forms import PostedForm
from service.portal.pages import Page, Refusal, attempt, download, see_other
from service.portal.repro_charts import er_dri_plane, persistence_lines
from service.store.models import Collection


def _label(row: dict) -> str:  # type: ignore[type-arg]
    run = row["run"] or {}
    return f"{run.get('team', '')}: {run.get('tag', '')}" + (
        f" + {row['advanced_run']['tag']}" if row.get("advanced_run") else "")


def _board_page(page: Page, coll: Collection, metric: str | None = None, refused: Refusal | None = None,
                done: str | None = None, values: dict[str, str] | None = None) -> Template:
    doc = repro_board.board(page.session, coll, page.me, metric)
    for row in doc["rows"]:
        row["label"] = _label(row)
    pairs = [r for r in doc["rows"] if r["kind"] == "pair"]
    can_register = policy.may_register_originals(page.me, coll)
    return page.show(coll, "reproducibility.html", status=refused.status if refused else 200, error=refused,
                     board=doc, chart=er_dri_plane(pairs, doc["metric"]), done=done, values=values or {},
                     can_configure=policy.may_configure(page.me, coll), can_register=can_register,
                     originals=declarations.originals(page.session, coll, page.me))


def _board_download(page: Page, cid: int, metric: str | None, render: Callable[[dict[str, Any]], str],
                    media_type: str, suffix: str) -> Response[str]:
    """The board the caller may see, rendered by ``render`` as a file to save."""
    coll = page.collection(cid)
    doc = repro_board.board(page.session, coll, page.me, metric)
    return download(render(doc), media_type, f"{coll.name}-reproducibility.{suffix}")


class ReproducibilityController(Controller):
    @get("/c/{cid:int}/reproducibility", sync_to_thread=True)
    def board(self, cid: FromPath[int], page: NamedDependency[Page], metric: FromQuery[str | None] = None,
              done: FromQuery[str | None] = None) -> Template:
        """``policy.may_see_reproducibility``: the board, the plane, the originals; the
        organisers' form registering an original."""
        return _board_page(page, page.collection(cid), metric, done=done)

    @post("/c/{cid:int}/reproducibility/originals", sync_to_thread=True)
    def register(self, cid: FromPath[int], page: NamedDependency[Page], form: NamedDependency[PostedForm]
                 ) -> Redirect | Template:
        """Register an original (``policy.may_register_originals``), as POST
        ``.../reproduction-originals``: a run id and, for a pair, the advanced run's id."""
        coll = page.collection(cid)
        policy.require(policy.may_register_originals(page.me, coll), page.me, f"the originals of collection {cid}")
        run = form.whole_number("run", "the original run")
        advanced = form.whole_number("advanced_run", "the advanced run")
        if run is None:
            return _board_page(page, coll, refused=Refusal(400, "name the original run by its id"),
                               values=dict(form.fields))
        saved, refused = attempt(page.uow, lambda: declarations.register_original(
            page.session, coll, page.me, run, advanced, form.text("label")))
        if saved is None:
            return _board_page(page, coll, refused=refused, values=dict(form.fields))
        return see_other(f"/c/{cid}/reproducibility?done=registered")

    @get("/c/{cid:int}/reproducibility.csv", sync_to_thread=True)
    def csv(self, cid: FromPath[int], page: NamedDependency[Page], metric: FromQuery[str | None] = None
            ) -> Response[str]:
        """The board as CSV (as GET ``.../reproducibility?format=csv``)."""
        return _board_download(page, cid, metric, exports.reproducibility_csv, "text/csv", "csv")

    @get("/c/{cid:int}/reproducibility.tex", sync_to_thread=True)
    def latex(self, cid: FromPath[int], page: NamedDependency[Page], metric: FromQuery[str | None] = None
              ) -> Response[str]:
        """The board as a LaTeX table (as GET ``.../reproducibility?format=latex``)."""
        return _board_download(page, cid, metric, exports.reproducibility_latex, "text/x-tex", "tex")

    @get("/c/{cid:int}/reproducibility/longitudinal", sync_to_thread=True)
    def longitudinal(self, cid: FromPath[int], page: NamedDependency[Page], metric: FromQuery[str | None] = None
                     ) -> Template:
        """Each system followed back along its declarations over the snapshots (LongEval's
        persistence): its mean in every snapshot and per step the result delta, the t-test's p
        and a pair's ER and DeltaRI, as GET ``.../longitudinal`` (the board's role rules)."""
        coll = page.collection(cid)
        doc = repro_board.longitudinal(page.session, coll, page.me, metric)
        metrics = list(coll.current_config.metrics)  # the selector's choices, as the board offers them
        return page.show(coll, "longitudinal.html", doc=doc, metrics=metrics,
                         chart=persistence_lines(doc["systems"], doc["metric"]))

    @get("/c/{cid:int}/reproducibility/{xid:int}", sync_to_thread=True)
    def topics(self, cid: FromPath[int], xid: FromPath[int], page: NamedDependency[Page],
               metric: FromQuery[str | None] = None) -> Template:
        """One reproduction's values topic by topic (which topics did not reproduce)."""
        coll = page.collection(cid)
        doc = repro_board.per_topic(page.session, coll, page.me, xid, metric)
        return page.show(coll, "reproduction.html", doc=doc, label=_label(doc["reproduction"]))
