"""The organisers' console: a collection's state and its buttons (release or withdraw the board,
reveal the hidden topics, re-evaluate now), its settings with a preview of their consequences
before they are saved, its topics, its audit log, and a new collection (admins).

Every page and form asks the use cases the API asks (``collections``, ``console``, ``topics``),
so the console does nothing the API cannot; every form posts without JavaScript.
"""

from __future__ import annotations

from typing import Any

from litestar import Controller, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, FromQuery
from litestar.response import Redirect, Template

from service.errors import BadRequest
from service.evaluation.common.work import Outcome
from service.evaluation.computing import jobs
from service.evaluation.organising import collections, topics
from service.evaluation.organising.setup import ConfigSpec
from service.evaluation.permissions import policy
from service.evaluation.publishing import console
from service.portal.controllers import console_forms
from service.portal.forms import PostedForm
from service.portal.pages import Page, Refusal, answer, attempt, see_other
from service.store.models import Collection

AUDIT_PAGE = 50


def organised(page: Page, cid: int) -> Collection:
    """The collection, if the visitor may configure it (``policy.may_configure``)."""
    coll = page.collection(cid)
    policy.require(policy.may_configure(page.me, coll), page.me, f"the console of collection {cid}")
    return coll


def yes_or_no(form: PostedForm, name: str) -> bool:
    value = form.text(name)
    if value not in ("0", "1"):
        raise BadRequest(f"{name} is 1 or 0")
    return value == "1"


class ConsoleController(Controller):
    @get("/c/{cid:int}/console", sync_to_thread=True)
    def overview(self, cid: FromPath[int], page: NamedDependency[Page], done: FromQuery[str | None] = None,
                 job: FromQuery[int | None] = None) -> Template:
        """``policy.may_configure`` (organisers): the collection's state, the buttons that change
        it, the latest job and the console's other pages."""
        coll = organised(page, cid)
        return page.show(coll, "console.html", state=console.overview(page.session, coll, page.me), done=done,
                         started=job, error=None)

    @post("/c/{cid:int}/console/release", sync_to_thread=True)
    def release(self, cid: FromPath[int], page: NamedDependency[Page], form: NamedDependency[PostedForm]) -> Redirect:
        """Release (``released=1``) or withdraw (``released=0``) the board: as PATCH
        ``leaderboard_released``."""
        released = yes_or_no(form, "released")
        page.uow.collect(collections.update(page.session, organised(page, cid), page.me,
                                            {"leaderboard_released": released}))
        return see_other(f"/c/{cid}/console?done={'released' if released else 'withdrawn'}")

    @post("/c/{cid:int}/console/reveal", sync_to_thread=True)
    def reveal(self, cid: FromPath[int], page: NamedDependency[Page], form: NamedDependency[PostedForm]) -> Redirect:
        """Reveal (``revealed=1``) or hide again (``revealed=0``) the hidden topics of a split."""
        revealed = yes_or_no(form, "revealed")
        page.uow.collect(collections.update(page.session, organised(page, cid), page.me,
                                            {"topics_revealed": revealed}))
        return see_other(f"/c/{cid}/console?done={'revealed' if revealed else 'hidden'}")

    @post("/c/{cid:int}/console/reevaluate", sync_to_thread=True)
    def reevaluate(self, cid: FromPath[int], page: NamedDependency[Page],
                   form: NamedDependency[PostedForm]) -> Redirect | Template:
        """Evaluate every run lacking current results now (``console.reevaluate``, as the API)."""
        coll = organised(page, cid)
        doc, refused = attempt(page.uow, lambda: console.reevaluate(page.session, coll, page.me))
        if doc is None:
            return _refused(page, coll, refused)
        return see_other(f"/c/{cid}/console?done=reevaluating&job={doc['job']}")

    # ------------------------------------------------------------------------ settings
    @get("/c/{cid:int}/console/settings", sync_to_thread=True)
    def settings_page(self, cid: FromPath[int], page: NamedDependency[Page], saved: FromQuery[int | None] = None,
                      job: FromQuery[int | None] = None) -> Template:
        """Every setting of the collection in one form (generated from the API's schema); it
        posts to a preview of its consequences, which saves on confirmation."""
        coll = organised(page, cid)
        return _settings_form(page, coll, console_forms.shown_values(console.settings_of(coll)), None,
                              saved=saved, job=job)

    @post("/c/{cid:int}/console/settings", sync_to_thread=True)
    def settings_post(self, cid: FromPath[int], page: NamedDependency[Page],
                      form: NamedDependency[PostedForm]) -> Redirect | Template:
        """Without ``confirm=1``: the preview (``console.preview_settings``) with a button that
        posts the same values again with ``confirm=1``; with it: the change, as PATCH makes it."""
        coll = organised(page, cid)
        values = {k: v for k, v in form.fields.items() if k not in ("csrf", "confirm")}
        try:
            changes = console_forms.changed(console_forms.read(form), console.settings_of(coll))
        except BadRequest as exc:
            return _settings_form(page, coll, values, Refusal(400, str(exc)))
        if form.text("confirm") != "1":
            preview, refused = attempt(page.uow, lambda: _outcome(console.preview_settings(
                page.session, coll, page.me, changes)))
            if preview is None:
                return _settings_form(page, coll, values, refused)
            return page.show(coll, "console_preview.html", preview=preview, values=values,
                             action=f"/c/{cid}/console/settings")
        config = coll.current_config_id
        updated, refused = attempt(page.uow, lambda: collections.update(page.session, coll, page.me, changes))
        if updated is None:
            return _settings_form(page, coll, values, refused)
        query = "saved=1"
        if coll.current_config_id != config and coll.current_qrels_id is not None:  # a job was planned just now
            newest = jobs.of_collection(page.session, coll, page.me)
            query += f"&job={newest[0]['id']}" if newest and newest[0]["status"] != "done" else ""
        return see_other(f"/c/{cid}/console/settings?{query}")

    # ------------------------------------------------------------------------ audit log
    @get("/c/{cid:int}/console/audit", sync_to_thread=True)
    def audit(self, cid: FromPath[int], page: NamedDependency[Page], offset: FromQuery[int] = 0) -> Template:
        """``policy.may_see_audit``: who did what when, newest first, a page at a time."""
        coll = page.collection(cid)
        log = console.audit_log(page.session, coll, page.me, max(0, offset), AUDIT_PAGE)
        return page.show(coll, "console_audit.html", log=log, page_size=AUDIT_PAGE)

    # ------------------------------------------------------------------------ topics
    @get("/c/{cid:int}/topics/texts", sync_to_thread=True)
    def topics_page(self, cid: FromPath[int], page: NamedDependency[Page]) -> Template:
        """``policy.may_read_topics``: the topics with their titles and descriptions (assessors:
        their assigned topics, on a page without the collection's navigation); organisers also
        add topics and edit their texts."""
        coll, items = topics.of_collection(page.session, cid, page.me)
        return _topics_page(page, coll, items, None)

    @post("/c/{cid:int}/topics/texts", sync_to_thread=True)
    def topics_post(self, cid: FromPath[int], page: NamedDependency[Page], form: NamedDependency[PostedForm]
                    ) -> Redirect | Template:
        """Organisers register topics: one with its title and description (``id``, ``title``,
        ``description``; a known id gets the texts), or several ids at once (``ids``)."""
        coll = organised(page, cid)
        items: list[Any] = [t for t in form.text("ids").replace(",", " ").split() if t]
        if form.text("id"):
            items.append({"id": form.text("id"), "title": form.text("title"),
                          "description": form.text("description")})
        doc, refused = attempt(page.uow, lambda: _outcome(topics.register(page.session, coll, page.me, items)))
        if doc is None:
            return _topics_page(page, coll, topics.listing(page.session, coll, page.me), refused)
        return answer(f"/c/{cid}/topics/texts", "topics-saved", new=len(doc["new"]), updated=len(doc["updated"]),
                      unchanged=len(doc["unchanged"]))

    # ------------------------------------------------------------------------ a new collection
    @get("/collections/new", sync_to_thread=True)
    def new_collection(self, page: NamedDependency[Page]) -> Template:
        """``policy.may_create_collection`` (admins): the settings form with the defaults and a name."""
        policy.require(policy.may_create_collection(page.me), page.me, "creating a collection")
        return _new_form(page, console_forms.shown_values(_defaults()), None)

    @post("/collections/new", sync_to_thread=True)
    def create_collection(self, page: NamedDependency[Page], form: NamedDependency[PostedForm]
                          ) -> Redirect | Template:
        """Create the collection with the form's settings (``collections.create``, as the API)."""
        policy.require(policy.may_create_collection(page.me), page.me, "creating a collection")
        values = {k: v for k, v in form.fields.items() if k != "csrf"}
        try:
            settings = console_forms.read(form)
        except BadRequest as exc:
            return _new_form(page, values, Refusal(400, str(exc)))
        for flag in ("leaderboard_released", "topics_revealed"):  # the defaults: nothing to release or audit
            if not settings.get(flag):
                settings.pop(flag, None)
        if form.text("task_kind") == "answers":  # generated answers (issue 35; docs/rag.md)
            settings["task_kind"] = "answers"
            defaults = _defaults()
            for key in ("official_metric", "metrics"):  # the ranked defaults left as shown: the answers' defaults
                if settings.get(key) == defaults[key]:
                    settings.pop(key)
        coll, refused = attempt(page.uow, lambda: _outcome(collections.create(page.session, page.me,
                                                                                 form.text("name"), settings)))
        if coll is None:
            return _new_form(page, values, refused)
        return see_other(f"/c/{coll.id}/console?done=created")


def _outcome(value: Any) -> Outcome[Any]:
    """A use case's plain result as an outcome with no follow-up (for ``attempt``)."""
    return Outcome(value)


def _refused(page: Page, coll: Collection, refused: Refusal | None) -> Template:
    """The console's first page with a refused button's reason (e.g. nothing to re-evaluate yet)."""
    return page.show(coll, "console.html", status=refused.status if refused else 200, error=refused,
                     state=console.overview(page.session, coll, page.me), done=None, started=None)


def _settings_form(page: Page, coll: Collection, values: dict[str, Any], refused: Refusal | None,
                   saved: int | None = None, job: int | None = None) -> Template:
    return page.show(coll, "console_settings.html", status=refused.status if refused else 200, error=refused,
                     controls=console_forms.controls(), values=values, rows=console_forms.level_rows(values),
                     saved=saved, job=job, action=f"/c/{coll.id}/console/settings",
                     version=(coll.current_config.version if coll.current_config else None))


def _new_form(page: Page, values: dict[str, Any], refused: Refusal | None) -> Template:
    return page.render("console_new.html", status=refused.status if refused else 200, error=refused,
                       controls=console_forms.controls(), values=values, rows=console_forms.level_rows(values),
                       action="/collections/new")


def _defaults() -> dict[str, Any]:
    """A new collection's settings, as the form shows them (the API's defaults)."""
    cfg = ConfigSpec().normalised()
    evaluation = dict(cfg["evaluation"])
    hidden = evaluation.pop("hidden_topics", [])
    return {"official_metric": cfg["official_metric"], "metrics": cfg["metrics"], "levels": cfg["levels"],
            "evaluation": evaluation, "hidden_topics": hidden, "significance": cfg["significance"],
            "description": "", "visibility": "private", "enrolment": "invite", "submission_opens_at": None,
            "submission_closes_at": None, "daily_run_quota": None, "leaderboard_released": False,
            "topics_revealed": False, "answer_settings": {"format": "auto", "assessed_citations": "first"}}


def _topics_page(page: Page, coll: Collection, items: list[dict[str, Any]], refused: Refusal | None) -> Template:
    context = {"status": refused.status if refused else 200, "error": refused, "topics": items,
               "can_edit": policy.may_configure(page.me, coll), "collection_name": coll.name, "cid": coll.id}
    if policy.may_read_collection(page.me, coll):
        return page.show(coll, "console_topics.html", **context)
    return page.render("console_topics.html", **context)  # assessors: no collection navigation
