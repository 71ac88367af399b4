"""Assessing generated answers in the portal (issue 36, items 1-2): an assessor's page per topic
(every answer, blind and in the assessor's own order, beside the topic's nuggets; each sentence's
first cited passage), one form per answer that keeps the assessor's labels in the judgment set
(``answer_assessment.record``), and the organisers' form that makes the set's next version from
its labels under its rule (``answer_assessment.derive_version``). Plain forms: radio buttons in
fieldsets with legends, so the keyboard and a screen reader go through them as through any form;
no JavaScript needed."""

from __future__ import annotations

from urllib.parse import urlencode

from litestar import Controller, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, FromQuery
from litestar.response import Redirect, Template

from service.errors import BadRequest
from service.evaluation.common.lookup import existing
from service.evaluation.common.work import Outcome
from service.evaluation.judging import answer_assessment, judgment_sets
from service.evaluation.permissions import policy
from service.portal.forms import PostedForm
from service.portal.pages import Page, attempt, attempt_once, see_other
from service.store.models import Collection


def _page_url(cid: int, topic: str, set_name: str | None, **more: object) -> str:
    query = {"topic": topic, **({"set": set_name} if set_name else {}), **{k: v for k, v in more.items() if v}}
    return f"/c/{cid}/answers/assess?{urlencode(query)}"


def _collection(page: Page, cid: int) -> Collection:
    """The collection of an assessment page: assessors may not read a collection's pages, only
    assess its topics assigned to them (``answer_assessment`` asks ``policy.may_assess``)."""
    if not policy.is_signed_in(page.me):
        return page.collection(cid)  # (401: the sign-in page)
    return existing(page.session, Collection, cid, "collection")


class AnswerAssessmentController(Controller):
    @get("/c/{cid:int}/answers/assess", sync_to_thread=True)
    def page(self, cid: FromPath[int], page: NamedDependency[Page], topic: FromQuery[str],
             set: FromQuery[str | None] = None, saved: FromQuery[int | None] = None) -> Template:  # noqa: A002
        """``policy.may_assess`` (the topic's assessors, the organisers): the topic's answers to assess."""
        coll = _collection(page, cid)
        doc = answer_assessment.assessment(page.session, coll, page.me, topic, set)
        return page.render("answer_assess.html", coll=coll, doc=doc, set_name=set or "", saved=saved,
                           every=(coll.answer_settings or {}).get("assessed_citations") == "every",
                         labels=answer_assessment.LABELS, support_words=answer_assessment.SUPPORT_WORDS)

    @post("/c/{cid:int}/answers/assess", sync_to_thread=True)
    def save(self, cid: FromPath[int], page: NamedDependency[Page], form: NamedDependency[PostedForm]) -> Redirect:
        """One answer's labels: ``topic``, ``position``, ``set``, ``n{K}`` (nugget K) and
        ``s{I}_{J}`` (sentence I's citation J), each 0, 1 or 2 (a blank one is left unlabelled)."""
        coll = _collection(page, cid)
        topic, set_name = form.text("topic"), form.optional("set")
        position = form.whole_number("position", "answer")
        if not topic or position is None:
            raise BadRequest("topic and position are required")
        nuggets: dict[int, int] = {}
        support: dict[tuple[int, int], int] = {}
        for name, value in form.fields.items():
            if not value.strip() or not name[:1] in ("n", "s") or not name[1:2].isdigit():
                continue
            try:
                level = int(value)
                if name[0] == "n":
                    nuggets[int(name[1:])] = level
                else:
                    i, j = name[1:].split("_")
                    support[(int(i), int(j))] = level
            except ValueError:
                raise BadRequest(f"{name}: a label is 0, 1 or 2, not {value!r}") from None
        _, _, refused = attempt_once(
            page, form, f"assess:{cid}:{topic}:{position}",
            lambda: Outcome(answer_assessment.record(page.session, coll, page.me, topic, position, nuggets, support,
                                                     set_name)),
            lambda n: {"kept": n})
        if refused is not None:
            raise BadRequest(refused.reason)
        return see_other(_page_url(cid, topic, set_name, saved=position) + f"#answer-{position}")

    @post("/c/{cid:int}/judgment-sets/{name:str}/derive", sync_to_thread=True)
    def derive(self, cid: FromPath[int], name: FromPath[str], page: NamedDependency[Page],
               form: NamedDependency[PostedForm]) -> Redirect:
        """Organisers: the set's next version from its assessors' labels (``answer_assessment.derive_version``)."""
        coll = page.collection(cid)
        js = judgment_sets.get(page.session, coll, name, page.me)
        doc, refused = attempt(page.uow, lambda: answer_assessment.derive_version(
            page.session, coll, js, page.me, "labels of the assessment pages"))
        if refused is not None:
            raise BadRequest(refused.reason)
        assert doc is not None
        return see_other(f"/c/{cid}/judgment-sets?{urlencode({'done': 'labelled', 'name': name, 'version': doc['version'], 'job': doc['job'] or ''})}")
