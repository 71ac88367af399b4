"""Qrels versions: upload (validated before it is stored; previewed), list, diff."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import anyio.to_thread
from litestar import Controller, Request, get, post
from litestar.datastructures import State
from litestar.openapi.spec import Schema
from litestar.params import Parameter

from service.api.dependencies import Caller, Coll, Uow
from service.api.openapi import errors, upload_body
from service.api.params import CollectionId, IdempotencyKeyHeader, Offset, Version
from service.api.schemas import out
from service.api.schemas.collections import QrelsPreview
from service.api.schemas.runs import (
    QrelsDiff,
    QrelsUploaded,
    QrelsVersions,
)
from service.api.uploads import read_qrels_form
from service.errors import InvalidRequest
from service.evaluation.judging import judgment_diff, qrels
from service.evaluation.organising.setup import UPLOAD_FORMATS
from service.http.admission import OWN_TRANSACTIONS

MaxRemoval = Annotated[float | None, Parameter(
    description="Refuse (409) an upload that would remove a larger share of the current judgments (e.g. 0.2); "
                "left out: no limit.", ge=0, le=1)]

SetName = Annotated[str | None, Parameter(
    description="The judgment set the version goes to (default: the official one).", max_length=100)]


ChangesLimit = Annotated[int, Parameter(
    description=f"Changes to list from `offset` (default {judgment_diff.LIMIT}, at most {judgment_diff.MAX_LIMIT}); "
                "the counts per topic and the totals are always complete.", ge=0, le=judgment_diff.MAX_LIMIT)]


QrelsFormat = Annotated[Literal["adhoc", "diversity-trec", "diversity-ntcir", "sampled"] | None, Parameter(
    description="The file's format (default adhoc): adhoc (TREC `topic iter docno level` or NTCIR `topic docno Lk`), "
                "diversity-trec (TREC diversity qrels `topic subtopic docno rel`), diversity-ntcir (NTCIR intent "
                "qrels `topic intent docno Lk`, with an optional intent probability file as the form part "
                "`probabilities`) or sampled (NIST's stratified-sample qrels `topic 0 docno stratum rel`). "
                "A multipart form may give it as the field `format` instead.")]

#: The multipart form of a qrels upload: the qrels in ``qrels`` (``file`` is read too), the rest optional.
QRELS_FORM = {
    "probabilities": Schema(type="string", format="binary",  # type: ignore[arg-type]
                            description="NTCIR intent probabilities (`topic intent probability [inf|nav]`, each "
                                        "topic's summing to 1), with format diversity-ntcir only; without it each "
                                        "topic's intents with a relevant document weigh alike."),
    "format": Schema(type="string", enum=list(UPLOAD_FORMATS),  # type: ignore[arg-type]
                     description="The qrels' format, as the query parameter `format`."),
}
_UPLOAD_TEXT = ("Qrels as the body (any format) or as the part `qrels` of a multipart form with an optional "
                "`probabilities` part (format diversity-ntcir) and `format` field.")


async def _read(request: Request[Any, Any, Any], state: State, fmt: str | None
                ) -> tuple[bytes, bytes | None, str, str]:
    """(qrels, probabilities, format, the probability file's name) of an upload or a preview."""
    body, probabilities, form_fmt, name = await read_qrels_form(request, state["max_body"])
    if fmt is not None and form_fmt is not None and fmt != form_fmt:
        raise InvalidRequest("format: given both as a query parameter and as a form field, differently")
    chosen = form_fmt or fmt or "adhoc"
    if chosen not in UPLOAD_FORMATS:
        raise InvalidRequest(f"format: one of {', '.join(UPLOAD_FORMATS)}, not {chosen[:40]!r}")
    return body, probabilities, chosen, name or "intent probabilities"


class QrelsController(Controller):
    """Qrels versions of a collection: never edited, only added."""

    path = "/api/collections/{cid:int}/qrels"
    tags = ["qrels"]

    @post("/", opt={OWN_TRANSACTIONS: True},  # its own transactions, no database slot
          operation_id="uploadQrels", summary="Upload a qrels version",
          responses=errors(400, 401, 403, 404, 409, 413, 422),
          operation_class=upload_body(_UPLOAD_TEXT, form_fields=QRELS_FORM, file_field="qrels"))
    async def upload(self, request: Request[Any, Any, Any], cid: CollectionId, uow: Uow, me: Caller,
                     state: State, idempotency_key: IdempotencyKeyHeader = None,
                     max_removal: MaxRemoval = None, judgment_set: SetName = None,
                     format: QrelsFormat = None) -> QrelsUploaded:
        """A new qrels version (organisers): validated whole before it is stored, then the
        collection is re-evaluated; earlier versions and their results are kept. With
        `max_removal`, an upload removing a larger share of the current judgments is refused
        (409, naming the topics that lose most); `POST .../qrels/preview` shows every change
        first. With an `Idempotency-Key`, a retried upload is answered as the first one was.
        With `judgment_set`, the version goes to that set (see `/judgment-sets`) instead of the
        official one, and is evaluated as the set says; boards keep ranking by the official set.
        With `format`, intent-aware qrels (`diversity-trec`, `diversity-ntcir` with an optional
        `probabilities` part) or a stratified sample (`sampled`): the version is scored with the
        diversity metrics (alpha-nDCG, ERR-IA, D#-nDCG...) or xinfAP and infNDCG, and its
        judgments are listed, diffed and pooled in their flattened view."""
        body, probabilities, fmt, probabilities_name = await _read(request, state, format)
        outcome = await anyio.to_thread.run_sync(
            lambda: qrels.upload(uow.factory, lambda _: me, cid, body, idempotency_key=idempotency_key,
                                 max_removal=max_removal, judgment_set=judgment_set, fmt=fmt,
                                 probabilities=probabilities, probabilities_source=probabilities_name),
            limiter=state.get("upload_threads"))
        return out(QrelsUploaded, uow.collect(outcome))

    @post("/preview", opt={OWN_TRANSACTIONS: True}, status_code=200,
          operation_id="previewQrels", summary="Preview a qrels upload",
          responses=errors(400, 401, 403, 404, 413, 422),
          operation_class=upload_body("The qrels the upload would send, as the upload sends them.",
                                      form_fields=QRELS_FORM, file_field="qrels"))
    async def preview(self, request: Request[Any, Any, Any], cid: CollectionId, uow: Uow, me: Caller,
                      state: State, format: QrelsFormat = None, offset: Offset = 0,
                      limit: ChangesLimit = judgment_diff.LIMIT) -> QrelsPreview:
        """A dry run of the upload (organisers): the file validated as an upload is, then the
        judgments it would add, remove and change per topic against the current version (the
        form of the diff), the share of the current judgments it removes and whether that is a
        large removal (over 20%: the portal asks for a confirmation). Nothing is stored. A file in
        another `format` is validated in it and compared in its flattened view. The counts are
        complete; the changes themselves are listed a page at a time (`limit`, default 1000, at
        most 10000, from `offset`; `next_offset` names the next page, null on the last)."""
        body, probabilities, fmt, probabilities_name = await _read(request, state, format)
        uow.changes_boards = False
        return out(QrelsPreview, await anyio.to_thread.run_sync(
            lambda: qrels.preview(uow.factory, lambda _: me, cid, body, fmt=fmt, probabilities=probabilities,
                                  probabilities_source=probabilities_name, offset=offset, limit=limit),
            limiter=state.get("upload_threads")))

    @get("/", operation_id="listQrelsVersions", summary="List qrels versions", sync_to_thread=True,
         responses=errors(401, 403, 404, 422))
    def versions(self, coll: Coll, uow: Uow, me: Caller) -> QrelsVersions:
        """Every version with its uploader, checksum and judgment counts per level (organisers)."""
        return out(QrelsVersions, qrels.versions(uow.session, coll, me))

    @get("/diff", operation_id="diffQrels", summary="Compare two qrels versions", sync_to_thread=True,
         responses=errors(400, 401, 403, 404, 422))
    def diff(self, coll: Coll, old: Version, new: Version, uow: Uow, me: Caller, offset: Offset = 0,
             limit: ChangesLimit = judgment_diff.LIMIT) -> QrelsDiff:
        """Judgments added, removed and changed per topic between two versions (organisers): the
        counts of every topic and the totals, and the changes a page at a time (`limit`, default
        1000, at most 10000, from `offset`; `next_offset` names the next page, null on the last),
        topics in order and each topic's changes by docno."""
        return out(QrelsDiff, qrels.diff(uow.session, coll, me, old, new, offset, limit))
