"""Organisers' qrels page: upload a new version, the versions, the diff between two, and the
latest evaluation job's live progress."""

from __future__ import annotations

from litestar import Controller, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, FromQuery
from litestar.response import Redirect, Template

from service.evaluation import jobs, qrels
from service.portal.forms import PostedForm
from service.portal.pages import Page, Refusal, attempt, see_other
from service.store.models import Collection


class QrelsController(Controller):
    @get("/c/{cid:int}/qrels", sync_to_thread=True)
    def qrels_page(self, cid: FromPath[int], page: NamedDependency[Page], old: FromQuery[int | None] = None,
                   new: FromQuery[int | None] = None, uploaded: FromQuery[int | None] = None) -> Template:
        """``policy.may_see_qrels`` (organisers); by default the diff of the last two versions."""
        return _qrels_page(page, page.collection(cid), None, old, new, uploaded)

    @post("/c/{cid:int}/qrels", sync_to_thread=True)
    def upload(self, cid: FromPath[int], page: NamedDependency[Page], form: NamedDependency[PostedForm]
               ) -> Redirect | Template:
        """``policy.may_upload_qrels``: a new version, every run re-evaluated on it by the workers."""
        upload = form.upload("file", "qrels")
        doc, refused = attempt(page.uow, lambda: qrels.upload(page.uow.factory, lambda _s: page.me, cid,
                                                              upload.required(), source=upload.name))
        if doc is None:
            return _qrels_page(page, page.collection(cid), refused)
        query = f"uploaded={doc['version']}"
        if doc.get("previous_version"):
            query += f"&old={doc['previous_version']}&new={doc['version']}"
        return see_other(f"/c/{cid}/qrels?{query}")


def _qrels_page(page: Page, coll: Collection, refused: Refusal | None, old: int | None = None,
                new: int | None = None, uploaded: int | None = None) -> Template:
    s, me = page.session, page.me
    versions = qrels.versions(s, coll, me)  # organisers only
    numbers = [v["version"] for v in versions["items"]]
    if new is None and len(numbers) >= 2:
        new = numbers[-1]
    if old is None and new is not None and new - 1 in numbers:
        old = new - 1
    diff = qrels.diff(s, coll, me, old, new) if old is not None and new is not None else None
    newest = jobs.of_collection(s, coll, me)
    return page.show(coll, "qrels.html", status=refused.status if refused else 200, error=refused, versions=versions,
                     diff=diff, old=old, new=new, job=newest[0] if newest else None, uploaded=uploaded)
