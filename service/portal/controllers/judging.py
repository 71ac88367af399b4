"""Judging: the organisers' pools page (build a pool in the workers, the builds' status, the
assessors, the reusability analysis) and the assessors' pages (their topics, the blind
download, the judgment upload)."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Response, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, FromQuery
from litestar.response import Redirect, Template

from service.errors import BadRequest
from service.evaluation.analysing import analyses
from service.evaluation.judging import assessments, judgments, pools
from service.evaluation.permissions import policy
from service.portal.forms import PostedForm
from service.portal.pages import Page, answer, attempt, download, see_other


class PoolController(Controller):
    @get("/c/{cid:int}/pools", sync_to_thread=True)
    def pools(self, cid: FromPath[int], page: NamedDependency[Page]) -> Template:
        """``policy.may_manage_pools`` (organisers): pools, their builds, assessors, reusability."""
        s, me, coll = page.session, page.me, page.collection(cid)
        policy.require(policy.may_manage_pools(me, coll), me, f"the pools of collection {cid}")
        latest = analyses.latest(s, coll, me)
        return page.show(coll, "pools.html", pools=pools.pools_of(s, coll, me)[::-1],
                         builds=pools.pool_builds(s, coll, me), assessors=assessments.assignments(s, coll, me),
                         analysis=analyses.doc(s, latest, me) if latest is not None else None,
                         metrics=list(coll.current_config.metrics))

    @post("/c/{cid:int}/pools", sync_to_thread=True)
    def pools_action(self, cid: FromPath[int], page: NamedDependency[Page], form: NamedDependency[PostedForm]
                     ) -> Redirect:
        """Ask the workers for a pool (``action=pool``: a depth pool, or with ``kind=stratified`` a
        stratified-sampling pool of ``strata`` ``1-10:1, 11-100:0.1`` and an optional ``seed``) or the
        reusability analysis (``action=analyse``)."""
        s, me, coll = page.session, page.me, page.collection(cid)
        action = form.text("action")
        if action == "pool" and form.optional("kind") == "stratified":
            strata = pools.parse_strata(form.text("strata"))  # 400 naming the stratum
            page.uow.collect(pools.request_pool(s, coll, me, None, form.optional("selection") or "all",
                                                  form.whole_number("max_priority", "the judging priority"),
                                                  kind="stratified", strata=strata, seed=_seed(form.text("seed"))))
            return answer(f"/c/{cid}/pools", "pool-requested")
        elif action == "pool":
            depth = form.whole_number("depth", "the pool depth")
            if depth is None:
                raise BadRequest("the pool depth is a positive whole number")
            page.uow.collect(pools.request_pool(s, coll, me, depth, form.optional("selection") or "all",
                                                  form.whole_number("max_priority", "the judging priority")))
            return answer(f"/c/{cid}/pools", "pool-requested")
        elif action == "analyse":
            page.uow.collect(analyses.request(s, coll, me, form.optional("metric")))
            return answer(f"/c/{cid}/pools", "reusability-requested")
        raise BadRequest("unknown action: build a pool (action=pool) or analyse (action=analyse)")


def _seed(text: str) -> int | None:
    """A stratified pool's seed from the form: blank for a random one, else 0 to 2^31 - 1."""
    if not text:
        return None
    if not (text.isascii() and text.isdigit()) or int(text) > pools.MAX_SEED:
        raise BadRequest(f"the seed is a whole number from 0 to {pools.MAX_SEED}, not {text[:40]!r}")
    return int(text)


class AssessmentController(Controller):
    @get("/assess", sync_to_thread=True)
    def assessments(self, page: NamedDependency[Page], accepted: FromQuery[int | None] = None) -> Template:
        """``policy.is_assessor``: the assessor's topics per pool, with no runs, scores or teams."""
        return page.render("assess.html", items=assessments.assessments(page.session, page.me), error=None,
                           accepted=accepted, answers=assessments.answer_assessments(page.session, page.me))

    @get("/assess/{pid:int}/{topic:path}", sync_to_thread=True)  # a topic id may contain "/"
    def assessment_file(self, pid: FromPath[int], topic: FromPath[str], page: NamedDependency[Page]) -> Response[str]:
        """``policy.may_assess``: the topic's pool documents in a seeded random order."""
        topic = topic.removeprefix("/")  # a path parameter starts with its "/"
        return download(assessments.assessment_file(page.session, pid, page.me, topic), "text/plain",
                        f"pool{pid}-{topic}.txt")

    @post("/assess/{pid:int}", sync_to_thread=True)
    def upload_judgments(self, pid: FromPath[int], page: NamedDependency[Page], form: NamedDependency[PostedForm]
                         ) -> Any:
        """Judgments checked against the pool; accepted, they become a new qrels version."""
        upload = form.upload("file", "judgments")
        doc, refused = attempt(page.uow, lambda: judgments.submit_judgments(page.uow.factory, lambda _s: page.me, pid,
                                                                          upload.required(), source=upload.name))
        if refused is not None:
            return page.render("assess.html", status=refused.status, error=refused, accepted=None,
                               items=assessments.assessments(page.session, page.me),
                               answers=assessments.answer_assessments(page.session, page.me))
        return see_other(f"/assess?accepted={len(doc['topics'])}")
