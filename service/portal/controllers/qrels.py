"""Organisers' qrels page: upload a new version (or first preview what it changes), the
versions, the diff between two, and the latest evaluation job's live progress.

The upload form has two buttons: "Preview the change" shows the judgments the file adds,
removes and changes per topic against the current version (``qrels.preview``, as POST
``.../qrels/preview``) with a button that stores it; "Upload and re-evaluate" stores it at
once, unless it removes more than ``qrels.LARGE_REMOVAL`` of the current judgments: then the
preview is shown (409) and the upload needs a ticked confirmation. The file travels from the
preview to its confirmation in the page itself (compressed, in a hidden field, validated again
when it comes back), so the confirmation works without JavaScript and stores nothing before.

The form names the file's format (``format``: adhoc, diversity-trec, diversity-ntcir, sampled)
and, for NTCIR intent qrels, may bring an intent probability file (``probabilities``); both
travel with a previewed file to its confirmation.
"""

from __future__ import annotations

import base64
import binascii
import zlib
from typing import Any

from litestar import Controller, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, FromQuery
from litestar.response import Redirect, Template

from service.errors import BadRequest, InvalidInput
from service.evaluation.common.work import Outcome
from service.evaluation.computing import jobs
from service.evaluation.judging import qrels
from service.formats.compressed import inflate
from service.portal.forms import PostedForm, Upload, upload_limit
from service.portal.pages import Page, Refusal, attempt, see_other
from service.store.models import Collection

#: The upload formats the form offers (``setup.UPLOAD_FORMATS``), with their labels.
FORMAT_CHOICES = (
    ("adhoc", "Ad hoc qrels: TREC (topic 0 docno level) or NTCIR (topic docno L2)"),
    ("diversity-trec", "TREC diversity qrels (topic subtopic docno rel)"),
    ("diversity-ntcir", "NTCIR intent qrels (topic intent docno L2), with optional intent probabilities"),
    ("sampled", "Stratified sample, NIST's sampled qrels (topic 0 docno stratum rel)"),
)


def stage(body: bytes) -> str:
    """An upload carried by the preview page to its confirmation: compressed, as text."""
    return base64.b64encode(zlib.compress(body, 6)).decode("ascii")


def unstage(text: str, limit: int) -> bytes:
    """The upload :func:`stage` carried, decompressed within ``limit`` bytes (the upload limit:
    413 past it, counted before anything is kept, as a gzipped upload; issue 34, item 2: the
    posted field is anyone's, a zlib bomb in it expanded whole)."""
    try:
        return inflate([base64.b64decode(text.encode("ascii"), validate=True)], "the previewed file", limit,
                       zlib_stream=True)  # type: ignore[return-value]  # a bytearray: every reader takes it
    except (binascii.Error, InvalidInput, UnicodeEncodeError):
        raise BadRequest("the previewed file did not come back intact: upload it again") from None


class QrelsController(Controller):
    @get("/c/{cid:int}/qrels", sync_to_thread=True)
    def qrels_page(self, cid: FromPath[int], page: NamedDependency[Page], old: FromQuery[int | None] = None,
                   new: FromQuery[int | None] = None, uploaded: FromQuery[int | None] = None,
                   offset: FromQuery[int] = 0) -> Template:
        """``policy.may_see_qrels`` (organisers); by default the diff of the last two versions,
        its changes a page at a time from ``offset`` (the counts are complete)."""
        return _qrels_page(page, page.collection(cid), None, old, new, uploaded, offset=offset)

    @post("/c/{cid:int}/qrels", sync_to_thread=True)
    def upload(self, cid: FromPath[int], page: NamedDependency[Page], form: NamedDependency[PostedForm]
               ) -> Redirect | Template:
        """``policy.may_upload_qrels``: ``action=preview`` shows the change; otherwise a new version,
        every run re-evaluated on it by the workers (a large removal needs ``confirm_removal``).
        A confirmation of a preview posts the file back in ``staged`` (with ``source``)."""
        fmt = form.text("format") or "adhoc"
        if form.text("staged"):
            limit = upload_limit(page.request)  # the app's, as for the file of the first post
            upload = Upload(form.text("source") or "qrels file", unstage(form.text("staged"), limit))
            staged_probabilities = form.text("staged_probabilities")
            probabilities = Upload(form.text("probabilities_source") or "intent probabilities",
                                   unstage(staged_probabilities, limit)) if staged_probabilities else None
        else:
            upload = form.upload("file", "qrels")
            chosen = form.upload("probabilities", "intent probabilities")
            probabilities = chosen if chosen.body else None  # an empty file field: none chosen
        if form.text("action") == "preview":  # a later page of a preview posts its ``offset``
            offset = form.text("offset")
            return _preview(page, cid, upload, fmt, probabilities,
                            offset=int(offset) if offset.isdigit() and len(offset) < 10 else 0)
        confirmed = form.text("confirm_removal") == "1"
        doc, refused = attempt(page.uow, lambda: qrels.upload(
            page.uow.factory, lambda _s: page.me, cid, upload.required(), source=upload.name,
            max_removal=None if confirmed else qrels.LARGE_REMOVAL, fmt=fmt,
            probabilities=probabilities.body if probabilities else None,
            probabilities_source=probabilities.name if probabilities else "intent probabilities"))
        if doc is None:
            if refused is not None and refused.status == 409:  # a large removal: show it, ask to confirm
                return _preview(page, cid, upload, fmt, probabilities, refused)
            return _qrels_page(page, page.collection(cid), refused, chosen_format=fmt)
        query = f"uploaded={doc['version']}"
        if doc.get("previous_version"):
            query += f"&old={doc['previous_version']}&new={doc['version']}"
        return see_other(f"/c/{cid}/qrels?{query}")


def _preview(page: Page, cid: int, upload: Upload, fmt: str = "adhoc", probabilities: Upload | None = None,
             refused: Refusal | None = None, offset: int = 0) -> Template:
    """The change the upload would make (its changes a page at a time from ``offset``), with the
    form that stores it."""
    summary, invalid = attempt(page.uow, lambda: Outcome(qrels.preview(
        page.uow.factory, lambda _s: page.me, cid, upload.required(), source=upload.name, fmt=fmt,
        probabilities=probabilities.body if probabilities else None,
        probabilities_source=probabilities.name if probabilities else "intent probabilities", offset=offset)))
    coll = page.collection(cid)
    if summary is None:
        return _qrels_page(page, coll, invalid, chosen_format=fmt)
    staged = {"staged": stage(upload.body), "source": upload.name, "format": fmt,
              "staged_probabilities": stage(probabilities.body) if probabilities else "",
              "probabilities_source": probabilities.name if probabilities else ""}
    return _qrels_page(page, coll, refused, preview=summary, staged=staged, chosen_format=fmt)


def _qrels_page(page: Page, coll: Collection, refused: Refusal | None, old: int | None = None,
                new: int | None = None, uploaded: int | None = None, preview: dict[str, Any] | None = None,
                staged: dict[str, str] | None = None, chosen_format: str = "adhoc", offset: int = 0) -> Template:
    s, me = page.session, page.me
    versions = qrels.versions(s, coll, me)  # organisers only
    numbers = [v["version"] for v in versions["items"]]
    if new is None and len(numbers) >= 2:
        new = numbers[-1]
    if old is None and new is not None and new - 1 in numbers:
        old = new - 1
    diff = qrels.diff(s, coll, me, old, new, offset) if old is not None and new is not None else None
    newest = jobs.of_collection(s, coll, me)
    return page.show(coll, "qrels.html", status=refused.status if refused else 200, error=refused, versions=versions,
                     diff=diff, old=old, new=new, job=newest[0] if newest else None, uploaded=uploaded,
                     preview=preview, staged=staged, formats=FORMAT_CHOICES, chosen_format=chosen_format)
