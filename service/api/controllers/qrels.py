"""Qrels versions: upload (validated before it is stored; previewed), list, diff."""

from __future__ import annotations

from typing import Annotated, Any

import anyio.to_thread
from litestar import Controller, Request, get, post
from litestar.datastructures import State
from litestar.params import Parameter

from service.api.dependencies import Caller, Coll, Uow
from service.api.openapi import errors, upload_body
from service.api.params import CollectionId, IdempotencyKeyHeader, Version
from service.api.schemas import out
from service.api.schemas.collections import QrelsPreview
from service.api.schemas.runs import (
    QrelsDiff,
    QrelsUploaded,
    QrelsVersions,
)
from service.api.uploads import read_body
from service.evaluation import qrels
from service.http.admission import OWN_TRANSACTIONS

MaxRemoval = Annotated[float | None, Parameter(
    description="Refuse (409) an upload that would remove a larger share of the current judgments (e.g. 0.2); "
                "left out: no limit.", ge=0, le=1)]

SetName = Annotated[str | None, Parameter(
    description="The judgment set the version goes to (default: the official one).", max_length=100)]


class QrelsController(Controller):
    """Qrels versions of a collection: never edited, only added."""

    path = "/api/collections/{cid:int}/qrels"
    tags = ["qrels"]

    @post("/", opt={OWN_TRANSACTIONS: True},  # its own transactions, no database slot
          operation_id="uploadQrels", summary="Upload a qrels version",
          responses=errors(400, 401, 403, 404, 409, 413, 422),
          operation_class=upload_body("Qrels in TREC (`topic iter docno level`) or NTCIR (`topic docno Lk`) form."))
    async def upload(self, request: Request[Any, Any, Any], cid: CollectionId, uow: Uow, me: Caller,
                     state: State, idempotency_key: IdempotencyKeyHeader = None,
                     max_removal: MaxRemoval = None, judgment_set: SetName = None) -> QrelsUploaded:
        """A new qrels version (organisers): validated whole before it is stored, then the
        collection is re-evaluated; earlier versions and their results are kept. With
        `max_removal`, an upload removing a larger share of the current judgments is refused
        (409, naming the topics that lose most); `POST .../qrels/preview` shows every change
        first. With an `Idempotency-Key`, a retried upload is answered as the first one was.
        With `judgment_set`, the version goes to that set (see `/judgment-sets`) instead of the
        official one, and is evaluated as the set says; boards keep ranking by the official set."""
        body = await read_body(request, state["max_body"])
        outcome = await anyio.to_thread.run_sync(
            lambda: qrels.upload(uow.factory, lambda _: me, cid, body, idempotency_key=idempotency_key,
                                 max_removal=max_removal, judgment_set=judgment_set),
            limiter=state.get("upload_threads"))
        return out(QrelsUploaded, uow.collect(outcome))

    @post("/preview", opt={OWN_TRANSACTIONS: True}, status_code=200,
          operation_id="previewQrels", summary="Preview a qrels upload",
          responses=errors(400, 401, 403, 404, 413, 422),
          operation_class=upload_body("The qrels file the upload would send."))
    async def preview(self, request: Request[Any, Any, Any], cid: CollectionId, uow: Uow, me: Caller,
                      state: State) -> QrelsPreview:
        """A dry run of the upload (organisers): the file validated as an upload is, then the
        judgments it would add, remove and change per topic against the current version (the
        form of the diff), the share of the current judgments it removes and whether that is a
        large removal (over 20%: the portal asks for a confirmation). Nothing is stored."""
        body = await read_body(request, state["max_body"])
        uow.changes_boards = False
        return out(QrelsPreview, await anyio.to_thread.run_sync(
            lambda: qrels.preview(uow.factory, lambda _: me, cid, body), limiter=state.get("upload_threads")))

    @get("/", operation_id="listQrelsVersions", summary="List qrels versions", sync_to_thread=True,
         responses=errors(401, 403, 404, 422))
    def versions(self, coll: Coll, uow: Uow, me: Caller) -> QrelsVersions:
        """Every version with its uploader, checksum and judgment counts per level (organisers)."""
        return out(QrelsVersions, qrels.versions(uow.session, coll, me))

    @get("/diff", operation_id="diffQrels", summary="Compare two qrels versions", sync_to_thread=True,
         responses=errors(400, 401, 403, 404, 422))
    def diff(self, coll: Coll, old: Version, new: Version, uow: Uow, me: Caller) -> QrelsDiff:
        """Judgments added, removed and changed per topic between two versions (organisers)."""
        return out(QrelsDiff, qrels.diff(uow.session, coll, me, old, new))
