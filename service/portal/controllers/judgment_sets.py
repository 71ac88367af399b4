"""Judgment sets (issue 16): the sets a visitor may see, each with its provenance, newest
version, judgments, kept labels and how far the runs are evaluated under it; one set with
every version; and the organisers' forms: create a set, upload a qrels version or an
assessors' label file into one, evaluate one now, change its rule, and make one the official
set (after a page saying what that changes).

Every page and form asks the use cases the JSON API asks (``judgment_sets``, ``qrels``,
``labels``), so the portal does nothing the API cannot and computes nothing itself. The forms
post without JavaScript and carry the CSRF token; a refused form comes back on the page with
its reason (a file's line). An upload carries the page's one-time key as its
``Idempotency-Key`` (as the API's uploads), the other forms act once per rendered form
(``pages.attempt_once``): the browser re-posting an answer page stores nothing twice. Uploads
run in their own transactions (as the qrels page's): the handler touches the request's session
only after them.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from litestar import Controller, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, FromQuery
from litestar.response import Redirect, Template

from service.errors import BadRequest
from service.evaluation.common.work import Outcome
from service.evaluation.judging import judgment_sets, labels, qrels
from service.evaluation.permissions import policy
from service.metrics.judgment_rules import RULES
from service.portal.forms import PostedForm
from service.portal.pages import Page, Refusal, attempt, attempt_once, see_other
from service.store.models import Collection

ACTIONS = ("create", "qrels", "labels", "evaluate", "rule")
# What the create form shows before anything is posted (the API's defaults).
DEFAULTS = {"source": "human", "rule": "latest", "auto_evaluate": "1"}


def done_at(cid: int, **query: Any) -> Redirect:
    """The listing after a successful form, saying what was done."""
    return see_other(f"/c/{cid}/judgment-sets?{urlencode({k: v for k, v in query.items() if v is not None})}")


class JudgmentSetsController(Controller):
    @get("/c/{cid:int}/judgment-sets", sync_to_thread=True)
    def listing(self, cid: FromPath[int], page: NamedDependency[Page], done: FromQuery[str | None] = None,
                name: FromQuery[str | None] = None, version: FromQuery[int | None] = None,
                job: FromQuery[int | None] = None) -> Template:
        """``policy.may_list_judgment_sets``: organisers every set, with the forms that change
        them; an enrolled team the sets it submitted to a judges track, nothing else."""
        return _listing_page(page, page.collection(cid), None, None,
                             {"done": done, "name": name, "version": version, "job": job} if done else None)

    @post("/c/{cid:int}/judgment-sets", sync_to_thread=True)
    def change(self, cid: FromPath[int], page: NamedDependency[Page], form: NamedDependency[PostedForm]
               ) -> Redirect | Template:
        """The organisers' forms (``policy.may_upload_qrels``), by ``action``: ``create`` a set
        (``name``, provenance, ``rule``, ``auto_evaluate``); upload a qrels version
        (``qrels``) or an assessors' label file (``labels``) into the set ``set`` (``file``);
        ``evaluate`` the set's newest version now; change its ``rule`` (and ``auto_evaluate``)."""
        action = form.text("action")
        if action not in ACTIONS:
            raise BadRequest(f"action is one of {', '.join(ACTIONS)}")
        if action in ("qrels", "labels"):  # in their own transactions: the request's session is not opened before
            return _upload(page, cid, form, action)
        coll = page.collection(cid)
        policy.require(policy.may_upload_qrels(page.me, coll), page.me,
                       f"changing the judgment sets of collection {cid}")
        if action == "create":
            return _create(page, coll, form)
        if action == "evaluate":
            return _evaluate(page, coll, form)
        return _change_rule(page, coll, form)

    @get("/c/{cid:int}/judgment-sets/{name:str}", sync_to_thread=True)
    def one(self, cid: FromPath[int], name: FromPath[str], page: NamedDependency[Page]) -> Template:
        """``policy.may_see_judgment_set``: the set's provenance, its evaluation and every version
        (organisers any set; a team its own submitted sets, never the official one)."""
        coll = page.collection(cid)
        doc = judgment_sets.describe(page.session, coll, page.me, name)
        progress = None
        if coll.task_kind == "answers" and policy.may_see_qrels(page.me, coll):  # the assessors' progress (issue 36)
            from service.evaluation.judging import answer_assessment

            progress = answer_assessment.progress(page.session, coll, page.me, name)
        return page.show(coll, "judgment_set.html", js=doc, can_change=policy.may_upload_qrels(page.me, coll),
                         progress=progress)

    @get("/c/{cid:int}/judgment-sets/{name:str}/agreement", sync_to_thread=True)
    def agreement(self, cid: FromPath[int], name: FromPath[str], page: NamedDependency[Page]) -> Template:
        """Organisers (``policy.may_see_qrels``): how far the set's assessors agree, as GET
        ``/api/collections/{cid}/judgment-sets/{name}/agreement`` (``labels.agreement``)."""
        coll = page.collection(cid)
        doc = labels.agreement(page.session, coll, page.me, name)
        return page.show(coll, "judgment_set_agreement.html", doc=doc)

    @get("/c/{cid:int}/judgment-sets/{name:str}/official", sync_to_thread=True)
    def confirm_official(self, cid: FromPath[int], name: FromPath[str], page: NamedDependency[Page]) -> Template:
        """Organisers (``policy.may_upload_qrels``): what making the set official changes, and
        the button that does it."""
        return _official_page(page, page.collection(cid), name, None)

    @post("/c/{cid:int}/judgment-sets/{name:str}/official", sync_to_thread=True)
    def make_official(self, cid: FromPath[int], name: FromPath[str], page: NamedDependency[Page],
                      form: NamedDependency[PostedForm]) -> Redirect | Template:
        """Make the set official (``confirm=1``), as POST ``.../judgment-sets/{name}/official``:
        the board ranks by its newest version once its evaluation is complete."""
        coll = page.collection(cid)
        policy.require(policy.may_upload_qrels(page.me, coll), page.me,
                       f"choosing the official judgments of collection {cid}")
        if form.text("confirm") != "1":
            raise BadRequest("confirm the change of the official judgment set (confirm=1)")
        doc, refused = attempt(page.uow, lambda: judgment_sets.make_official(page.session, coll, page.me, name))
        if doc is None:
            return _official_page(page, coll, name, refused)
        return done_at(cid, done="official" if doc["changed"] else "unchanged", name=name, job=doc["job"])


# ------------------------------------------------------------------------ the forms
def _create(page: Page, coll: Collection, form: PostedForm) -> Redirect | Template:
    fields: dict[str, Any] = {key: form.text(key) for key in ("model", "prompt", "judged_on", "notes")}
    fields.update(source=form.optional("source"), rule=form.optional("rule"),  # None: the default
                  auto_evaluate=form.text("auto_evaluate") == "1")
    made, earlier, refused = attempt_once(
        page, form, f"judgment-set:{coll.id}",
        lambda: Outcome(judgment_sets.create(page.session, coll, page.me, form.text("name"), fields)),
        lambda js: {"name": js.name})
    if refused is not None:
        return _listing_page(page, coll, refused, form.fields)
    if earlier is not None:  # the same form again: what it made the first time
        return done_at(coll.id, done="created", name=earlier["name"])
    assert made is not None
    return done_at(coll.id, done="created", name=made.name)


def _upload(page: Page, cid: int, form: PostedForm, action: str) -> Redirect | Template:
    """A qrels version or a label file into the set ``set``, as POST ``.../qrels?judgment_set=``
    and POST ``.../judgment-sets/{name}/labels``; a qrels version that removes more than
    ``qrels.LARGE_REMOVAL`` of the set's judgments needs ``confirm_removal``."""
    name, key = form.text("set"), form.optional("once")
    upload = form.upload("file", "qrels" if action == "qrels" else "labels")
    if not name:  # nothing is uploaded: the request's session may answer
        coll = page.collection(cid)
        policy.require(policy.may_upload_qrels(page.me, coll), page.me, f"uploading to collection {cid}")
        return _listing_page(page, coll, Refusal(400, "choose the judgment set to upload into"), form.fields)
    if action == "qrels":
        confirmed = form.text("confirm_removal") == "1"
        doc, refused = attempt(page.uow, lambda: qrels.upload(
            page.uow.factory, lambda _s: page.me, cid, upload.required(), source=upload.name, idempotency_key=key,
            max_removal=None if confirmed else qrels.LARGE_REMOVAL, judgment_set=name))
    else:
        doc, refused = attempt(page.uow, lambda: labels.upload(
            page.uow.factory, lambda _s: page.me, cid, name, upload.required(), source=upload.name,
            idempotency_key=key))
    if doc is None:
        return _listing_page(page, page.collection(cid), refused, form.fields)
    return done_at(cid, done="uploaded" if action == "qrels" else "labelled", name=doc["judgment_set"],
                   version=doc["version"], job=doc["job"])


def _evaluate(page: Page, coll: Collection, form: PostedForm) -> Redirect | Template:
    name = form.text("set")
    doc, earlier, refused = attempt_once(
        page, form, f"judgment-set-evaluation:{coll.id}",
        lambda: judgment_sets.request_evaluation(page.session, coll, page.me, name),
        lambda d: {"judgment_set": d["judgment_set"], "version": d["version"], "job": d["job"]})
    if refused is not None:
        return _listing_page(page, coll, refused, None)
    answer = earlier or doc
    assert answer is not None
    return done_at(coll.id, done="evaluating", name=answer["judgment_set"], version=answer["version"],
                   job=answer["job"])


def _change_rule(page: Page, coll: Collection, form: PostedForm) -> Redirect | Template:
    """A new rule re-derives every labelled document of the set: a new version, evaluated as
    the set says; ``auto_evaluate`` 1 or 0 changes whether new versions are evaluated by themselves."""
    changes: dict[str, Any] = {}
    if form.text("rule"):
        changes["rule"] = form.text("rule")
    if form.text("auto_evaluate") in ("0", "1"):
        changes["auto_evaluate"] = form.text("auto_evaluate") == "1"
    if not changes:
        return _listing_page(page, coll, Refusal(400, "choose a new rule, or whether new versions are evaluated "
                                                      "automatically"), form.fields)
    doc, refused = attempt(page.uow, lambda: labels.update_set(page.session, coll, page.me, form.text("set"),
                                                                  changes))
    if doc is None:
        return _listing_page(page, coll, refused, form.fields)
    return done_at(coll.id, done="changed", name=doc["name"], version=doc["new_version"],
                   job=doc["evaluation"]["job"] if doc["new_version"] else None)


# ------------------------------------------------------------------------ the pages
def _listing_page(page: Page, coll: Collection, refused: Refusal | None, values: Any,
                  done: dict[str, Any] | None = None) -> Template:
    """The sets the visitor may see; for organisers the forms, the posted one (``values``) with
    what the visitor entered (the files must be chosen again), the create form with the defaults."""
    s, me = page.session, page.me
    doc = judgment_sets.listing(s, coll, me)  # policy.may_list_judgment_sets
    posted = dict(values or {})
    forms: dict[str, dict[str, str]] = {a: posted if a == posted.get("action") else {} for a in ACTIONS}
    if posted.get("action") != "create":
        forms["create"] = dict(DEFAULTS)
    return page.show(coll, "judgment_sets.html", status=refused.status if refused else 200, error=refused,
                     sets=doc["items"], accepts_judgments=doc["accepts_judgments"],
                     can_change=policy.may_upload_qrels(me, coll),
                     forms=forms, sources=judgment_sets.SOURCES, rules=RULES, done=done,
                     threshold=qrels.LARGE_REMOVAL)


def _official_page(page: Page, coll: Collection, name: str, refused: Refusal | None) -> Template:
    s, me = page.session, page.me
    policy.require(policy.may_upload_qrels(me, coll), me, f"choosing the official judgments of collection {coll.id}")
    target = judgment_sets.describe(s, coll, me, name)
    current = next((item for item in judgment_sets.listing(s, coll, me)["items"] if item["official"]), None)
    return page.show(coll, "judgment_sets_official.html", status=refused.status if refused else 200, error=refused,
                     target=target, current=current)
