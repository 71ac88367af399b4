"""Boards: the leaderboard (JSON, CSV, LaTeX), significance matrix, snapshots, meta-evaluation."""

from __future__ import annotations

from typing import Annotated, Literal

import anyio.to_thread
import msgspec
from litestar import Controller, Response, get, post
from litestar.datastructures import State
from litestar.params import JSONBody, Parameter

from service.api.dependencies import Caller, Coll, Uow
from service.api.openapi import errors
from service.api.params import CollectionId, Metric, QrelsVersion, SnapshotId, TestName
from service.api.schemas import out
from service.api.schemas.boards import (
    Leaderboard,
    MetaEvaluation,
    SignificanceMatrix,
    Snapshot,
    SnapshotCreate,
    SnapshotList,
    SnapshotOut,
)
from service.evaluation import boards, collections, policy
from service.evaluation.exports import board_csv, board_latex

Format = Annotated[Literal["json", "csv", "latex"], Parameter(description="json, csv or latex (a booktabs table).")]
PrimaryOnly = Annotated[bool, Parameter(description="Only each team's primary runs.")]


class BoardsController(Controller):
    """The leaderboard and what is read alongside it."""

    tags = ["boards"]

    @get("/api/collections/{cid:int}/leaderboard", operation_id="getLeaderboard", summary="Read the leaderboard",
         responses=errors(400, 401, 403, 404, 422))
    async def leaderboard(self, cid: CollectionId, uow: Uow, me: Caller, state: State, metric: Metric = None,
                    format: Format = "json", primary_only: PrimaryOnly = False,  # noqa: A002
                    qrels_version: QrelsVersion = None, test: TestName = None) -> Response[Leaderboard]:
        """Runs ranked by a metric's mean with its 95% interval, Judged@10 and the stored
        pairwise test (who beats whom, group letters). Before release a participant sees its
        own team's rows; under an unrevealed topic split, the visible topics' figures."""
        def render() -> tuple[bytes, str, object]:
            coll = collections.get(uow.session, cid, me)
            doc = boards.leaderboard_doc(uow.session, coll, me, metric, primary_only, qrels_version, test)
            view = policy.board_view(me, coll)  # of the collection as rendered
            if format == "csv":
                return board_csv(doc).encode(), "text/csv", view
            if format == "latex":
                return board_latex(doc).encode(), "text/plain", view
            return msgspec.json.encode(out(Leaderboard, doc)), "application/json", view

        # Served from memory when it can be (no worker thread, no database): the collection's
        # access facts and the board of the caller's view are each made once per moment, by
        # one request, in a worker thread. A board whose view, as rendered, is not the view it
        # was asked for (the facts changed meanwhile) is given to its own caller only.
        cache = state["board_cache"]
        facts = await cache.get_or_make(("access", cid), lambda: anyio.to_thread.run_sync(
            boards.access_snapshot, uow.session, cid))
        view = policy.board_view(me, facts) if facts is not None else None
        if view is None:  # no such collection, or not this caller's to see: the refusal, rendered
            body, media, _ = await anyio.to_thread.run_sync(render)
        else:
            key = ("board", cid, metric, format, primary_only, qrels_version, test, view)
            body, media, _ = await cache.get_or_make(key, lambda: anyio.to_thread.run_sync(render),
                                                     keep=lambda made: made[2] == view)
        return Response(body, media_type=media)  # type: ignore[arg-type]

    @get("/api/collections/{cid:int}/significance", operation_id="getSignificance",
         summary="Read the significance matrix", sync_to_thread=True, responses=errors(400, 401, 403, 404, 422))
    def significance(self, coll: Coll, uow: Uow, me: Caller, metric: Metric = None,
                     test: TestName = None, qrels_version: QrelsVersion = None) -> SignificanceMatrix:
        """Every pair's p-value of the stored test (organisers; everyone once released)."""
        return out(SignificanceMatrix, boards.significance_matrix(uow.session, coll, me, metric, test, qrels_version))

    @get("/api/collections/{cid:int}/metaeval", operation_id="getMetaEvaluation", summary="Read the meta-evaluation",
         sync_to_thread=True, responses=errors(401, 403, 404, 422))
    def metaeval(self, coll: Coll, uow: Uow, me: Caller) -> MetaEvaluation:
        """Discriminative power and Kendall's tau of the collection's metrics, stored by the workers."""
        return out(MetaEvaluation, boards.metaeval(uow.session, coll, me))

    @post("/api/collections/{cid:int}/snapshots", operation_id="freezeBoard", summary="Freeze the board",
          sync_to_thread=True, responses=errors(400, 401, 403, 404, 422))
    def freeze(self, coll: Coll, data: JSONBody[SnapshotCreate], uow: Uow, me: Caller) -> SnapshotOut:
        """Organisers store the current board as an immutable snapshot."""
        return out(SnapshotOut, boards.freeze(uow.session, coll, me, data.metric, data.label))

    @get("/api/collections/{cid:int}/snapshots", operation_id="listSnapshots", summary="List snapshots",
         sync_to_thread=True, responses=errors(401, 403, 404, 422))
    def snapshots(self, coll: Coll, uow: Uow, me: Caller) -> SnapshotList:
        """The collection's frozen boards (organisers; everyone once released and revealed)."""
        return out(SnapshotList, {"items": boards.snapshots(uow.session, coll, me)})

    @get("/api/snapshots/{sid:int}", operation_id="getSnapshot", summary="Read a snapshot", sync_to_thread=True,
         responses=errors(401, 403, 404, 422))
    def snapshot(self, sid: SnapshotId, uow: Uow, me: Caller) -> Snapshot:
        """A frozen board, as it was served when frozen."""
        return out(Snapshot, boards.snapshot(uow.session, sid, me))
