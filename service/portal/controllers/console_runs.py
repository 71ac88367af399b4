"""The console's runs and assessors: every run with its baseline and primary flags (a form per
run), deleting a run after a confirmation step, the assessors' topics, and new assessor tokens.

The runs' changes are those of PATCH ``/api/runs/{id}/settings`` and DELETE ``/api/runs/{id}``
(``submissions.update``, ``submissions.delete``: audited there); the assessors' those of
``/api/collections/{id}/assessors`` (``judging``) and POST ``/api/tokens`` (``teams``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from litestar import Controller, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, FromQuery
from litestar.response import Redirect, Template

from service.errors import BadRequest, NotFound
from service.evaluation.common.work import Outcome
from service.evaluation.judging import assessments
from service.evaluation.organising import teams
from service.evaluation.permissions import policy
from service.evaluation.runs import submissions
from service.portal.controllers.console import organised, yes_or_no
from service.portal.forms import PostedForm
from service.portal.pages import Page, Refusal, answer, attempt, attempt_once, see_other
from service.store.models import ApiToken, Collection, Run


def _run_of(page: Page, cid: int, rid: int) -> Run:
    run, coll = submissions.get(page.session, rid, page.me)
    if coll.id != cid:
        raise NotFound(f"no run {rid} in collection {cid}")
    return run


def no_store(template: Template) -> Template:
    """A page showing a new token's secret: never kept by a cache or the browser's history."""
    template.headers["Cache-Control"] = "no-store"
    return template


def new_token_once(page: Page, form: PostedForm, make: Callable[[], tuple[str, ApiToken]]
                   ) -> tuple[dict[str, Any] | None, Refusal | None]:
    """A token made by a form, once per rendered form (``pages.attempt_once``): what the page
    shows of it, its secret included; the same form posted again (a reload of the answer page)
    makes no second token and shows the first one's prefix without its secret (``already``)."""
    made, earlier, refused = attempt_once(page, form, "token", lambda: Outcome(make()),
                                          lambda m: {"prefix": m[1].prefix, "role": m[1].role, "name": m[1].name})
    if earlier is not None:
        return {**earlier, "already": True}, None
    if made is None:
        return None, refused
    secret, token = made
    return {"secret": secret, "prefix": token.prefix, "role": token.role, "name": token.name}, None


class ConsoleRunsController(Controller):
    @get("/c/{cid:int}/console/runs", sync_to_thread=True)
    def runs(self, cid: FromPath[int], page: NamedDependency[Page], deleted: FromQuery[str | None] = None
             ) -> Template:
        """``policy.may_configure``: every run with its team, status, baseline and primary flags
        (each a form of its own) and a delete button leading to a confirmation."""
        coll = organised(page, cid)
        rows = [submissions.document(r) for r in submissions.listed(page.session, coll, page.me)]
        return page.show(coll, "console_runs.html", runs=rows, deleted=deleted)

    @post("/c/{cid:int}/console/runs/{rid:int}", sync_to_thread=True)
    def flag(self, cid: FromPath[int], rid: FromPath[int], page: NamedDependency[Page],
             form: NamedDependency[PostedForm]) -> Redirect:
        """Mark a run as a baseline or not (``action=baseline``), or as its team's primary run or
        not (``action=primary``), with ``value`` 1 or 0."""
        organised(page, cid)
        action = form.text("action")
        if action not in ("baseline", "primary"):
            raise BadRequest("action is baseline or primary")
        run, value = _run_of(page, cid, rid), yes_or_no(form, "value")
        submissions.update(page.session, rid, page.me, {action: value})
        return answer(f"/c/{cid}/console/runs#run-{rid}", f"{action}-{'on' if value else 'off'}", run=run.tag)

    @get("/c/{cid:int}/console/runs/{rid:int}/delete", sync_to_thread=True)
    def confirm_delete(self, cid: FromPath[int], rid: FromPath[int], page: NamedDependency[Page]) -> Template:
        """``policy.may_delete_run``: what deleting the run removes, and the button that does it."""
        coll = organised(page, cid)
        policy.require(policy.may_delete_run(page.me, coll), page.me, f"deleting run {rid}")
        return page.show(coll, "console_delete.html", run=submissions.document(_run_of(page, cid, rid)))

    @post("/c/{cid:int}/console/runs/{rid:int}/delete", sync_to_thread=True)
    def delete(self, cid: FromPath[int], rid: FromPath[int], page: NamedDependency[Page],
               form: NamedDependency[PostedForm]) -> Redirect:
        """Delete the run with its evaluations (``confirm=1``; audited as ``run.delete``)."""
        organised(page, cid)
        tag = _run_of(page, cid, rid).tag
        if form.text("confirm") != "1":
            raise BadRequest("confirm the deletion (confirm=1)")
        submissions.delete(page.session, rid, page.me)
        return see_other(f"/c/{cid}/console/runs?deleted={tag}")

    # ------------------------------------------------------------------------ assessors
    @get("/c/{cid:int}/console/assessors", sync_to_thread=True)
    def assessors(self, cid: FromPath[int], page: NamedDependency[Page]) -> Template:
        """``policy.may_manage_pools``: the assessor tokens and their topics, a form per assessor
        replacing its topics, and a form creating an assessor token for this collection."""
        return _assessors_page(page, page.collection(cid), None, None)

    @post("/c/{cid:int}/console/assessors/{tid:int}", sync_to_thread=True)
    def assign(self, cid: FromPath[int], tid: FromPath[int], page: NamedDependency[Page],
               form: NamedDependency[PostedForm]) -> Redirect | Template:
        """Replace the assessor's topics in this collection (``topics``: ids separated by spaces)."""
        coll = page.collection(cid)
        chosen = form.text("topics").replace(",", " ").split()
        done, refused = attempt(page.uow, lambda: Outcome(assessments.set_assignment(page.session, coll, page.me, tid,
                                                                                 chosen)))
        if done is None:
            return _assessors_page(page, coll, refused, None)
        token = page.session.get(ApiToken, tid)
        return answer(f"/c/{cid}/console/assessors", "assessor-assigned", token=token.prefix if token else tid,
                      topics=", ".join(done) or "none")

    @post("/c/{cid:int}/console/assessors", sync_to_thread=True)
    def new_assessor(self, cid: FromPath[int], page: NamedDependency[Page], form: NamedDependency[PostedForm]
                     ) -> Template:
        """A new assessor token judging the given topics of this collection: its secret shown on
        this answer only."""
        coll = page.collection(cid)
        policy.require(policy.may_manage_pools(page.me, coll), page.me, f"the assessors of collection {cid}")
        chosen = form.text("topics").replace(",", " ").split()
        created, refused = new_token_once(page, form, lambda: teams.create_token(
            page.session, page.me, "assessor", name=form.text("name"), collections=[cid], topics=chosen))
        if created is None:
            return _assessors_page(page, coll, refused, None)
        return no_store(_assessors_page(page, coll, None, created))


def _assessors_page(page: Page, coll: Collection, refused: Refusal | None, created: dict[str, Any] | None
                    ) -> Template:
    s, me = page.session, page.me
    policy.require(policy.may_manage_pools(me, coll), me, f"the assessors of collection {coll.id}")
    return page.show(coll, "console_assessors.html", status=refused.status if refused else 200, error=refused,
                     assessors=assessments.assignments(s, coll, me), created=created)
