"""Boards: the leaderboard (JSON, CSV, LaTeX), significance matrix, snapshots, meta-evaluation."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Annotated, Literal

import anyio.to_thread
import msgspec
from litestar import Controller, Response, get, post
from litestar.datastructures import State
from litestar.params import JSONBody, Parameter

from service.api.board_cache import BoardCache
from service.api.dependencies import Caller, Coll, Uow
from service.api.openapi import errors
from service.api.params import CollectionId, Metric, QrelsVersion, SnapshotId, TestName
from service.api.schemas import out
from service.api.schemas.boards import (
    Leaderboard,
    MetaEvaluation,
    MetricsBoard,
    ScoreMatrix,
    SignificanceMatrix,
    Snapshot,
    SnapshotCreate,
    SnapshotList,
    SnapshotOut,
    TopicAnalysis,
)
from service.evaluation.analysing import topic_analysis
from service.evaluation.organising import collections
from service.evaluation.permissions import policy
from service.evaluation.permissions.access import Principal
from service.evaluation.publishing import boards
from service.evaluation.publishing.exports import board_csv, board_latex, matrix_csv, metrics_board_csv, topics_csv
from service.http.unit_of_work import UnitOfWork
from service.store.models import Collection

Format = Annotated[Literal["json", "csv", "latex"], Parameter(description="json, csv or latex (a booktabs table).")]
TableFormat = Annotated[Literal["json", "csv"], Parameter(description="json or csv.")]
PrimaryOnly = Annotated[bool, Parameter(description="Only each team's primary runs (ranked among themselves).")]
Pairs = Annotated[bool, Parameter(description=(
    "Each row also names the runs it significantly beats (beats) and is tied with (tied_with). Without it, "
    "rows carry their counts only (beats_count, tied_count): the names grow as the square of the runs "
    "(a 1,000-run board names about 500,000), and the group letters already say which runs are tied."))]
RunType = Annotated[Literal["automatic", "manual", "interactive"] | None, Parameter(
    description="Only runs of this type (ranked among themselves).")]
TrainingData = Annotated[Literal["yes", "no", "unstated"] | None, Parameter(
    description="Only runs that use the collection's training data (yes), do not (no), or do not say (unstated).")]
ExternalResources = Annotated[Literal["yes", "no", "unstated"] | None, Parameter(
    description="Only runs that use external resources (yes), do not (no), or do not say (unstated).")]
Sort = Annotated[str | None, Parameter(
    description="A metric of the collection to sort by (best first; default: the official one), or run or team.",
    max_length=200)]


class BoardsController(Controller):
    """The leaderboard and what is read alongside it."""

    tags = ["boards"]

    @get("/api/collections/{cid:int}/leaderboard", operation_id="getLeaderboard", summary="Read the leaderboard",
         responses=errors(400, 401, 403, 404, 422))
    async def leaderboard(self, cid: CollectionId, uow: Uow, me: Caller, state: State, metric: Metric = None,
                          format: Format = "json", primary_only: PrimaryOnly = False,  # noqa: A002
                          qrels_version: QrelsVersion = None, test: TestName = None, run_type: RunType = None,
                          training_data: TrainingData = None,
                          external_resources: ExternalResources = None, pairs: Pairs = False) -> Response[Leaderboard]:
        """Runs ranked by a metric's mean with its 95% interval, Judged@10 and the stored
        pairwise test (who beats whom, group letters), with each run's type and whether it uses
        training data or external resources. Filters (primary runs, run type, training data,
        external resources) show some runs, ranked among themselves. Before release a
        participant sees its own team's rows; under an unrevealed topic split, the visible
        topics' figures."""
        runs = boards.RunFilter(primary_only, run_type, training_data, external_resources)

        def render(coll: Collection) -> tuple[bytes, str]:
            doc = boards.leaderboard_doc(uow.session, coll, me, metric, qrels_version=qrels_version, test=test,
                                         runs=runs, pairs=pairs)
            if format == "csv":
                return board_csv(doc).encode(), "text/csv"
            if format == "latex":
                return board_latex(doc).encode(), "text/plain"
            return msgspec.json.encode(out(Leaderboard, doc)), "application/json"

        body, media = await _board(state["board_cache"], uow, me, cid,
                                   ("board", metric, format, qrels_version, test, runs, pairs), render)
        return Response(body, media_type=media)  # type: ignore[arg-type]

    @get("/api/collections/{cid:int}/leaderboard/metrics", operation_id="getMetricsBoard",
         summary="Read every metric side by side", responses=errors(400, 401, 403, 404, 422))
    async def metrics_board(self, cid: CollectionId, uow: Uow, me: Caller, state: State, sort: Sort = None,
                            format: TableFormat = "json", primary_only: PrimaryOnly = False,  # noqa: A002
                            run_type: RunType = None, training_data: TrainingData = None,
                            external_resources: ExternalResources = None) -> Response[MetricsBoard]:
        """Each run's mean and rank on every metric of the collection (the official one first),
        sorted by one of them, with each metric's description (the registry's), direction and
        range. The rows, ranks and filters are the single-metric boards': the same access rules
        (before release a participant sees its own team's rows)."""
        runs = boards.RunFilter(primary_only, run_type, training_data, external_resources)

        def render(coll: Collection) -> tuple[bytes, str]:
            doc = boards.metrics_board(uow.session, coll, me, sort, runs)
            if format == "csv":
                return metrics_board_csv(doc).encode(), "text/csv"
            return msgspec.json.encode(out(MetricsBoard, doc)), "application/json"

        body, media = await _board(state["board_cache"], uow, me, cid, ("metrics", sort, format, runs), render)
        return Response(body, media_type=media)  # type: ignore[arg-type]

    @get("/api/collections/{cid:int}/topic-analysis", operation_id="getTopicAnalysis", summary="Per-topic difficulty",
         sync_to_thread=True, responses=errors(400, 401, 403, 404, 422))
    def topics(self, coll: Coll, uow: Uow, me: Caller, metric: Metric = None,
               format: TableFormat = "json") -> Response[TopicAnalysis]:  # noqa: A002
        """Each topic's median, quartiles, least and best score over the runs on the caller's board
        (hardest topic first), the runs that reach the best, and the caller's own runs' scores.
        Before release a participant's figures are over its own team's runs only; hidden topics
        of an unrevealed split are left out as on the board."""
        doc = topic_analysis.topic_analysis(uow.session, coll, me, metric)
        if format == "csv":
            return Response(topics_csv(doc), media_type="text/csv")  # type: ignore[return-value]
        return Response(out(TopicAnalysis, doc))

    @get("/api/collections/{cid:int}/matrix", operation_id="getScoreMatrix", summary="Run x topic scores",
         sync_to_thread=True, responses=errors(400, 401, 403, 404, 422))
    def matrix(self, coll: Coll, uow: Uow, me: Caller, metric: Metric = None,
               format: TableFormat = "json") -> Response[ScoreMatrix]:  # noqa: A002
        """The stored per-topic scores of a metric of every run on the caller's board (board order)
        on every topic it may see; as CSV, a row per run and a column per topic (cells that a
        spreadsheet would read as a formula are written as text). The board's access rules:
        before release a participant gets its own team's runs only."""
        doc = topic_analysis.score_matrix(uow.session, coll, me, metric)
        if format == "csv":
            return Response(matrix_csv(doc), media_type="text/csv")  # type: ignore[return-value]
        return Response(out(ScoreMatrix, doc))

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
    def snapshot(self, sid: SnapshotId, uow: Uow, me: Caller, format: Format = "json",
                 metric: Annotated[str | None, Parameter(description=(
                     "The frozen metric whose rows lead the document and its CSV or LaTeX (default: the metric "
                     "the snapshot was frozen on); `metrics` lists those it holds."))] = None) -> Response[Snapshot]:
        """A frozen board, as it was served when frozen (as CSV or a LaTeX table too): every metric
        of the board (`boards`; snapshots frozen before that hold their own metric only)."""
        doc = boards.snapshot(uow.session, sid, me, metric)
        if format == "csv":
            return Response(board_csv(doc), media_type="text/csv")  # type: ignore[return-value]
        if format == "latex":
            return Response(board_latex(doc), media_type="text/plain")  # type: ignore[return-value]
        return Response(out(Snapshot, doc))


async def _board(cache: BoardCache, uow: UnitOfWork, me: Principal, cid: int, choices: tuple[Hashable, ...],
                 render: Callable[[Collection], tuple[bytes, str]]) -> tuple[bytes, str]:
    """A rendered board (``render(collection)``: its bytes and media type) of the caller's view.

    Served from memory when it can be (no worker thread, no database): the collection's access
    facts and the board of the caller's view are each made once per moment, by one request, in
    a worker thread, and kept under every choice that changes the board (``choices``: the
    metric, format, filters...) and the view. A board whose view, as rendered, is not the view
    it was asked for (the facts changed meanwhile) is given to its own caller only."""
    def made() -> tuple[bytes, str, object]:
        coll = collections.get(uow.session, cid, me)
        return *render(coll), policy.board_view(me, coll)  # the view of the collection as rendered

    facts = await cache.get_or_make(("access", cid), lambda: anyio.to_thread.run_sync(
        boards.access_snapshot, uow.session, cid))
    view = policy.board_view(me, facts) if facts is not None else None
    if view is None:  # no such collection, or not this caller's to see: the refusal, rendered
        body, media, _ = await anyio.to_thread.run_sync(made)
    else:
        body, media, _ = await cache.get_or_make((*choices[:1], cid, *choices[1:], view),
                                                 lambda: anyio.to_thread.run_sync(made),
                                                 keep=lambda value: value[2] == view)
    return body, media
