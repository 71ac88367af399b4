"""Submitting a run (with its metadata), the visitor's runs (all runs for organisers) with the
warnings of the run just submitted and a form to mark primary runs, and the progress document
the live displays poll."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from litestar import Controller, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, FromQuery
from litestar.response import Redirect, Template
from sqlalchemy import select

from service.errors import NotFound
from service.evaluation.computing import jobs
from service.evaluation.judging import pools
from service.evaluation.organising import teams
from service.evaluation.permissions import policy
from service.evaluation.publishing import boards
from service.evaluation.reproducing import declarations as reproduction_declarations
from service.evaluation.runs import submissions
from service.portal import presenters
from service.portal.forms import PostedForm
from service.portal.pages import Page, Refusal, answer, attempt, see_other
from service.store.models import Collection, Topic


class SubmissionController(Controller):
    @get("/c/{cid:int}/submit", sync_to_thread=True)
    def submit_form(self, cid: FromPath[int], page: NamedDependency[Page]) -> Template:
        """``policy.may_submit``: enrolled teams (window and quota apply), organisers (for an enrolled team)."""
        return _submit_page(page, page.collection(cid), None)

    @post("/c/{cid:int}/submit", sync_to_thread=True)
    def submit(self, cid: FromPath[int], page: NamedDependency[Page], form: NamedDependency[PostedForm]
               ) -> Redirect | Template:
        """Validate and store the run (its evaluation goes to the workers); a refused file comes
        back on the form with its line."""
        upload = form.upload("file", "run")
        ir = form.upload("ir_metadata", "ir_metadata")  # optional: an empty file input is no file
        reproduces = form.whole_number("reproduces", "the original run this run reproduces")
        if reproduces is not None:  # an unknown original refused on the form before anything is stored
            try:
                reproduction_declarations.check_original(page.uow.factory, cid, reproduces)
            except NotFound as exc:
                return _submit_page(page, page.collection(cid), Refusal(404, str(exc)), form.fields)
        doc, refused = attempt(page.uow, lambda: submissions.submit(
            page.uow.factory, lambda _s: page.me, cid, upload.required(), team_param=form.optional("team"),
            source=upload.name, metadata=submissions.metadata_from_fields(
                {name: form.text(name) for name in submissions.METADATA_FIELDS}, ir.body, ir.name)))
        if doc is None:
            return _submit_page(page, page.collection(cid), refused, form.fields)
        if reproduces is not None:  # the run is stored: its declaration in a transaction of its own
            attempt(page.uow, lambda: reproduction_declarations.declare_in_transaction(
                page.uow.factory, page.me, doc["id"], reproduces))
        return see_other(f"/c/{cid}/runs?submitted={doc['id']}")

    @post("/c/{cid:int}/runs/{rid:int}/primary", sync_to_thread=True)
    def mark_primary(self, cid: FromPath[int], rid: FromPath[int], page: NamedDependency[Page],
                     form: NamedDependency[PostedForm]) -> Redirect:
        """``policy.may_edit_run``: a team marks its own runs primary (or not), organisers any run."""
        primary = submissions.metadata_from_fields({"primary": form.text("primary")}).primary
        row, _ = submissions.get(page.session, rid, page.me)
        if row.collection_id != cid:
            raise NotFound(f"no run {rid} in collection {cid}")
        submissions.update(page.session, rid, page.me, {"primary": primary})
        return answer(f"/c/{cid}/runs", "primary-on" if primary else "primary-off", run=row.tag)

    @get("/c/{cid:int}/runs", sync_to_thread=True)
    def runs(self, cid: FromPath[int], page: NamedDependency[Page], submitted: FromQuery[int | None] = None
             ) -> Template:
        """Signed-in readers: their team's runs (organisers: every run), with rank and official score."""
        coll = page.collection(cid)
        runs = runs_with_ranks(page, coll)
        # the run just submitted, with the warnings it was accepted with
        just = next((r for r in runs if r["id"] == submitted), None) if submitted is not None else None
        return page.show(coll, "runs.html", runs=runs, submitted=submitted, just=just,
                         **submissions.quota_document(page.session, coll, page.me))

    @get("/c/{cid:int}/progress.json", sync_to_thread=True)
    def progress(self, cid: FromPath[int], page: NamedDependency[Page]) -> dict[str, Any]:
        """What the live displays poll (signed-in readers): the runs' status and rank; for
        organisers the newest job (``policy.may_see_jobs``) and the pool builds (``may_manage_pools``)."""
        s, me, coll = page.session, page.me, page.collection(cid)
        policy.require(policy.is_signed_in(me), me, f"the progress of collection {cid}")
        doc: dict[str, Any] = {"runs": [{k: r[k] for k in ("id", "status", "reason", "rank", "mean")}
                                        for r in runs_with_ranks(page, coll)]}
        if policy.may_see_jobs(me, coll):
            newest = jobs.of_collection(s, coll, me)
            # with its progress in words, as the page prints it (portal.js shows it)
            doc["job"] = {**newest[0], "summary": presenters.job_summary(newest[0])} if newest else None
        if policy.may_manage_pools(me, coll):
            doc["pool_builds"] = pools.pool_builds(s, coll, me)
        return doc


def runs_with_ranks(page: Page, coll: Collection) -> list[dict[str, Any]]:
    """The runs the visitor may list, with their rank and mean on the board it may see."""
    s, me = page.session, page.me
    ranks: dict[str, dict[str, Any]] = {}
    if coll.current_qrels_id is not None and policy.may_see_board(me, coll):
        ranks = {r["run"]: r for r in boards.leaderboard_doc(s, coll, me)["rows"]}
    return [{**submissions.document(r), "rank": ranks.get(r.tag, {}).get("rank"),
             "mean": ranks.get(r.tag, {}).get("mean"), "editable": policy.may_edit_run(me, r, coll)}
            for r in submissions.listed(s, coll, me)]


def _submit_page(page: Page, coll: Collection, refused: Refusal | None,
                 values: Mapping[str, str] | None = None) -> Template:
    """The form; after a refusal, with the values the visitor entered (the files must be chosen again)."""
    s, me = page.session, page.me
    policy.require(policy.may_submit(me, coll), me, f"submitting to collection {coll.id} (teams take part by "
                   "enrolment)")
    # organisers submit for a team: one of the enrolled teams
    names = [t["team"] for t in teams.enrolled_teams(s, coll, me)] if policy.may_manage_teams(me, coll) else []
    topics = sorted(s.scalars(select(Topic.topic_id).where(Topic.collection_id == coll.id)))
    return page.show(coll, "submit.html", status=refused.status if refused else 200, error=refused, teams=names,
                     topics=topics, order=(coll.current_config.evaluation or {}).get("order", "score"),
                     run_types=submissions.RUN_TYPES, values=values or {}, **submissions.quota_document(s, coll, me),
                     originals=reproduction_declarations.originals(s, coll, me))
