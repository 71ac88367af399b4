"""Qrels versions: upload (validated before it is stored), list, diff."""

from __future__ import annotations

from typing import Any

import anyio.to_thread
from litestar import Controller, Request, get, post
from litestar.datastructures import State

from service.api.dependencies import Caller, Coll, Uow
from service.api.openapi import errors, upload_body
from service.api.params import CollectionId, IdempotencyKeyHeader, Version
from service.api.schemas import out
from service.api.schemas.runs import (
    QrelsDiff,
    QrelsUploaded,
    QrelsVersions,
)
from service.api.uploads import read_body
from service.http.admission import OWN_TRANSACTIONS
from service.evaluation import qrels


class QrelsController(Controller):
    """Qrels versions of a collection: never edited, only added."""

    path = "/api/collections/{cid:int}/qrels"
    tags = ["qrels"]

    @post("/", opt={OWN_TRANSACTIONS: True},  # its own transactions, no database slot
          operation_id="uploadQrels", summary="Upload a qrels version",
          responses=errors(400, 401, 403, 404, 409, 413, 422),
          operation_class=upload_body("Qrels in TREC (`topic iter docno level`) or NTCIR (`topic docno Lk`) form."))
    async def upload(self, request: Request[Any, Any, Any], cid: CollectionId, uow: Uow, me: Caller,
                     state: State, idempotency_key: IdempotencyKeyHeader = None) -> QrelsUploaded:
        """A new qrels version (organisers): validated whole before it is stored, then the
        collection is re-evaluated; earlier versions and their results are kept. With an
        `Idempotency-Key`, a retried upload is answered as the first one was."""
        body = await read_body(request, state["max_body"])
        outcome = await anyio.to_thread.run_sync(
            lambda: qrels.upload(uow.factory, lambda _: me, cid, body, idempotency_key=idempotency_key),
            limiter=state.get("upload_threads"))
        return out(QrelsUploaded, uow.collect(outcome))

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
