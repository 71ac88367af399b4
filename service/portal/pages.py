"""Rendering a page: the ``page`` dependency (the visitor, the unit of work, the request), the
collection navigation (every flag a predicate of :mod:`service.evaluation.permissions.policy`), downloads,
and refusals shown on a form's page.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from litestar import Request, Response
from litestar.datastructures import Cookie
from litestar.di import NamedDependency
from litestar.response import Redirect, Template
from sqlalchemy.orm import Session

from service.errors import BadRequest, Conflict, InvalidInput, TooLarge
from service.evaluation.common.work import Outcome
from service.evaluation.organising import collections, idempotency, teams
from service.evaluation.permissions import policy
from service.evaluation.permissions.access import Principal
from service.http.problems import problem_of
from service.http.unit_of_work import UnitOfWork
from service.portal.forms import PostedForm, csrf_for, secret_of
from service.portal.notices import answered, notice_of
from service.store.models import Collection

T = TypeVar("T")


def configure_templates(engine: Any) -> None:
    """The functions every template may call (the TemplateConfig's engine callback): ``pval``
    prints a p-value on its side of alpha (never "0.0500" for p < 0.05), ``correction_name``
    names a stored test's correction, ``interval_name`` an interval by its kind and B,
    ``verdict`` a pair's verdict in words (docs/statistics.md, "How verdicts are printed"); the
    presenters (:mod:`service.portal.presenters`) put every other value in words."""
    from service.metrics.stats.presentation import correction_name, format_p, interval_name, verdict_words
    from service.portal import presenters

    engine.engine.globals.update(pval=format_p, correction_name=correction_name, interval_name=interval_name,
                                 verdict=verdict_words)
    presenters.register(engine.engine)


def render(request: Request[Any, Any, Any], me: Principal, uow: UnitOfWork | None, name: str, status: int = 200,
           **context: Any) -> Template:
    """A page: the template with the visitor (``me``, their team, the form token) and the path."""
    team = teams.team_name(uow.session, me) if uow is not None and me.team_id is not None else None
    return Template(template_name=name, status_code=status, media_type="text/html", context={
        "me": me, "team": team, "csrf": csrf_for(secret_of(request)) if policy.is_signed_in(me) else "",
        # a fresh key per rendered page for forms that must act once (attempt_once): a reload
        # re-posts it; a page with several such forms suffixes it per form
        "once": secrets.token_urlsafe(16), "path": request.url.path,
        # what the form that led here did (a redirect after a post names it: service.portal.notices)
        "notice": notice_of(request.query_params), **context})


def navigation(coll: Collection, me: Principal) -> dict[str, Any]:
    """A collection page's context: the collection as the visitor may see it and what the
    navigation offers. Each flag is the policy predicate of the page it links to, so a link is
    shown exactly when its page opens."""
    return {
        "coll": collections.document(coll, me),
        "organiser": policy.may_configure(me, coll),
        "can_board": policy.may_see_board(me, coll),
        "can_results": policy.may_see_results(me, coll),
        "can_analyses": policy.may_see_analyses(me, coll),
        "can_runs": policy.is_signed_in(me),
        "can_submit": policy.may_submit(me, coll),
        "can_freeze": policy.may_freeze_board(me, coll),
        "can_qrels": policy.may_see_qrels(me, coll),
        "can_pools": policy.may_manage_pools(me, coll),
        "can_teams": policy.may_manage_teams(me, coll),
        "can_enrol": policy.may_enrol_self(me, coll) and not policy.is_enrolled(me, coll),
        "can_judgment_sets": policy.may_list_judgment_sets(me, coll),
        "can_judges": policy.may_see_judge_board(me, coll),
        # organisers always (they register the originals); others where the track has any
        "can_reproducibility": policy.may_see_reproducibility(me, coll) and (
            policy.may_configure(me, coll) or _has_originals(coll)),
    }


def _has_originals(coll: Collection) -> bool:
    """Whether the collection runs a reproducibility track (an original is registered)."""
    from sqlalchemy import exists, select
    from sqlalchemy.orm import object_session

    from service.store.models import ReproductionOriginal

    s = object_session(coll)
    return s is not None and bool(s.scalar(select(exists().where(ReproductionOriginal.collection_id == coll.id))))


@dataclass(frozen=True)
class Page:
    """What a handler renders with: the request, the visitor (``me``) and the request's unit of work."""

    request: Request[Any, Any, Any]
    me: Principal
    uow: UnitOfWork

    @property
    def session(self) -> Session:
        return self.uow.session

    def collection(self, cid: int) -> Collection:
        """The collection, if the visitor may read it (404, or 401/403 as the policy says)."""
        return collections.get(self.session, cid, self.me)

    def render(self, name: str, status: int = 200, **context: Any) -> Template:
        return render(self.request, self.me, self.uow, name, status, **context)

    def show(self, coll: Collection, name: str, status: int = 200, **context: Any) -> Template:
        """A page of one collection, with its navigation."""
        return self.render(name, status, **navigation(coll, self.me), **context)


def provide_page(request: Request[Any, Any, Any], viewer: NamedDependency[Principal],
                 uow: NamedDependency[UnitOfWork]) -> Page:
    """The ``page`` dependency, from the ``viewer`` and ``uow`` dependencies."""
    return Page(request, viewer, uow)


def see_other(path: str, cookies: list[Cookie] | None = None) -> Redirect:
    """After a successful post: the page to show (303, so a reload does not post again)."""
    return Redirect(path=path, status_code=303, cookies=cookies or [])


def answer(path: str, notice: str, cookies: list[Cookie] | None = None, **values: object) -> Redirect:
    """:func:`see_other` to ``path``, whose page then says what was done (the notice ``notice``
    of :mod:`service.portal.notices`, with its ``values``)."""
    return see_other(answered(path, notice, **values), cookies)


def download(body: str, media_type: str, filename: str) -> Response[str]:
    safe = "".join(c if c.isalnum() or c in "-_.@" else "_" for c in filename)
    return Response(body, media_type=media_type, headers={"Content-Disposition": f'attachment; filename="{safe}"'})


# ------------------------------------------------------------------- irreversible actions
@dataclass(frozen=True)
class ConfirmStep:
    """The page an irreversible action's form answers first (confirm.html): what it will do,
    and a form posting the same fields again with ``confirm=1`` (and, with ``understand``, a
    box the visitor must tick: its field name and label). Nothing changes until then."""

    title: str
    consequences: list[str]
    action: str
    button: str
    back: str
    keep: str = "Keep it"
    fields: dict[str, str] | None = None
    understand: dict[str, str] | None = None


def confirm_page(page: Page, step: ConfirmStep, coll: Collection | None = None, refused: Refusal | None = None
                 ) -> Template:
    """The confirmation step of an irreversible action (with its collection's navigation)."""
    context = {"step": {**step.__dict__, "fields": step.fields or {}}, "error": refused,
               "status": refused.status if refused else 200}
    return page.show(coll, "confirm.html", **context) if coll is not None else page.render("confirm.html", **context)


def confirmed(form: PostedForm) -> bool:
    """The form was posted from its confirmation step."""
    return form.text("confirm") == "1"


# ------------------------------------------------------------------- refusals on a form
# What a form's page shows next to the form (with the error's status) instead of an error page:
# the visitor's input is wrong or does not fit the current state, and can be fixed there.
SHOWN_ON_THE_FORM = (InvalidInput, BadRequest, Conflict, TooLarge)


@dataclass(frozen=True)
class Refusal:
    """A refused upload or form as its page shows it: the status from the error table, the file
    and line when the error has them, and the reason."""

    status: int
    reason: str
    source: str | None = None
    line: int | None = None


def attempt(uow: UnitOfWork, use_case: Callable[[], Outcome[T]]) -> tuple[T | None, Refusal | None]:
    """Run a use case whose refusal belongs on the form's page: (its result, None), its
    follow-ups kept for after the commit; or (None, the refusal). Other errors propagate to the
    error page."""
    try:
        return uow.collect(use_case()), None
    except SHOWN_ON_THE_FORM as exc:
        problem = problem_of(exc)
        return None, Refusal(problem.status, problem.detail, problem.details.get("source"), problem.details.get("line"))


def attempt_once(page: Page, form: PostedForm, scope: str, use_case: Callable[[], Outcome[T]],
                 record: Callable[[T], dict[str, Any]]) -> tuple[T | None, dict[str, Any] | None, Refusal | None]:
    """:func:`attempt`, once per rendered form: the form carries the page's ``once`` key, and
    the same form posted again (the browser re-posting it when its answer page is reloaded)
    does not run ``use_case`` a second time: it answers (None, ``record`` of the first result,
    None). The key is an ``Idempotency-Key`` of the visitor's token (service.evaluation.organising.idempotency),
    its record must hold nothing secret (a new token's record is its prefix, not its secret)."""
    key = idempotency.check_key(form.optional("once"))
    digest = idempotency.request_hash(b"", *sorted((k, v) for k, v in form.fields.items() if k not in ("csrf", "once")))
    if key is not None:
        earlier = idempotency.replay(page.session, page.me, f"portal:{scope}", key, digest)
        if earlier is not None:
            return None, earlier, None
    result, refused = attempt(page.uow, use_case)
    if result is not None:
        idempotency.remember(page.session, page.me, f"portal:{scope}", key, digest, record(result))
    return result, None, refused
