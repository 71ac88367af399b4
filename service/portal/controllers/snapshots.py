"""Frozen leaderboards: the list, freezing the current board (organisers), one snapshot (as CSV
and LaTeX too)."""

from __future__ import annotations

from litestar import Controller, Response, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, FromQuery
from litestar.response import Redirect, Template

from service.evaluation.publishing import boards
from service.evaluation.publishing.exports import board_csv, board_latex
from service.portal import charts
from service.portal.forms import PostedForm
from service.portal.pages import Page, answer, download


class SnapshotController(Controller):
    @get("/c/{cid:int}/snapshots", sync_to_thread=True)
    def snapshots(self, cid: FromPath[int], page: NamedDependency[Page]) -> Template:
        """``policy.may_see_analyses`` (a snapshot holds the organisers' board, all topics)."""
        coll = page.collection(cid)
        return page.show(coll, "snapshots.html", snapshots=boards.snapshots(page.session, coll, page.me))

    @post("/c/{cid:int}/snapshots", sync_to_thread=True)
    def freeze(self, cid: FromPath[int], page: NamedDependency[Page], form: NamedDependency[PostedForm]) -> Redirect:
        """``policy.may_freeze_board``: store the current board as an immutable snapshot."""
        snap = boards.freeze(page.session, page.collection(cid), page.me, form.optional("metric"), form.text("label"))
        return answer(f"/snapshots/{snap['id']}", "snapshot-frozen", metrics=", ".join(snap["metrics"]))

    @get("/snapshots/{sid:int}", sync_to_thread=True)
    def snapshot(self, sid: FromPath[int], page: NamedDependency[Page], metric: FromQuery[str | None] = None
                 ) -> Template:
        """``policy.may_see_snapshot``: one frozen metric's board (``metric``; default the one it
        was frozen on), with a selector of the metrics it froze."""
        snap = boards.snapshot(page.session, sid, page.me, metric or None)
        return page.show(page.collection(snap["collection_id"]), "snapshot.html", snap=snap,
                         chart=charts.for_each_width(charts.interval_chart(snap["rows"], snap["metric"]),
                                                     charts.interval_chart(snap["rows"], snap["metric"], narrow=True))
                         if snap["rows"] else None)

    @get("/snapshots/{sid:int}/board.csv", sync_to_thread=True)
    def snapshot_csv(self, sid: FromPath[int], page: NamedDependency[Page], metric: FromQuery[str | None] = None
                     ) -> Response[str]:
        """A frozen metric's board as CSV (``policy.may_see_snapshot``), as the board's own CSV."""
        snap = boards.snapshot(page.session, sid, page.me, metric or None)
        return download(board_csv(snap), "text/csv", f"snapshot-{sid}-{snap['metric']}.csv")

    @get("/snapshots/{sid:int}/board.tex", sync_to_thread=True)
    def snapshot_latex(self, sid: FromPath[int], page: NamedDependency[Page], metric: FromQuery[str | None] = None
                       ) -> Response[str]:
        """A frozen metric's board as a LaTeX table (``policy.may_see_snapshot``)."""
        snap = boards.snapshot(page.session, sid, page.me, metric or None)
        return download(board_latex(snap), "text/plain", f"snapshot-{sid}-{snap['metric']}.tex")
