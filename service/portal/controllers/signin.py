"""The collections index, signing in with an API token and signing out.

Signing in opens a server-side portal session for the token (its cookie holds the session's
secret, never the token); signing out closes it, so the old cookie no longer signs in.
"""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Controller, Request, get, post
from litestar.di import NamedDependency
from litestar.enums import RequestEncodingType
from litestar.params import Body, FromQuery
from litestar.response import Redirect, Template

from service.config import settings
from service.errors import Unauthenticated
from service.evaluation.organising import collections
from service.evaluation.permissions import access, policy
from service.evaluation.permissions.access import Principal
from service.http.unit_of_work import UnitOfWork, principal_with_session
from service.portal import forms
from service.portal.forms import PostedForm
from service.portal.pages import Page, answer, render, see_other

SignInBody = Annotated[dict[str, str], Body(media_type=RequestEncodingType.URL_ENCODED)]


class SignInController(Controller):
    @get("/", sync_to_thread=True)
    def index(self, page: NamedDependency[Page]) -> Template:
        """The collections the visitor may read: public ones and, signed in, its team's or its
        own; each linked when its board opens (``policy.may_see_board``), with the "Enrol my
        team" button where the visitor's team may enrol (``policy.may_enrol_self``)."""
        me = page.me
        return page.render("index.html", collections=[
            {**collections.document(c, me), "can_board": policy.may_see_board(me, c),
             "can_enrol": policy.may_enrol_self(me, c) and not policy.is_enrolled(me, c)}
            for c in collections.visible(page.session, me)])

    @get("/login", sync_to_thread=False)
    def login_form(self, request: Request[Any, Any, Any], next: FromQuery[str] = "/") -> Template:  # noqa: A002
        """The sign-in form, the same for every visitor: rendered without the database (no visitor
        resolved, no session opened), so it shows while the database is down."""
        return render(request, Principal(), None, "login.html", next=forms.local(next), error=None)

    @post("/login", sync_to_thread=True)
    def login(self, request: Request[Any, Any, Any], uow: NamedDependency[UnitOfWork], data: SignInBody) -> Any:
        """Check the token; for a known one, open a portal session (its secret goes in the sign-in
        cookie, closing the session this browser had) and the visitor goes on to ``next``."""
        forms.check_same_origin(request)
        secret, target = data.get("token", "").strip(), forms.local(data.get("next", "/"))
        try:
            me = principal_with_session(uow.factory, f"Bearer {secret}") if secret else Principal()
        except Unauthenticated:
            me = Principal()
        if me.role is None:
            return render(request, Principal(), None, "login.html", status=401, next=target,
                          error="That token is unknown or revoked.")
        lifetime = settings().web.session_cookie_lifetime
        access.close_session(uow.session, forms.secret_of(request))
        session = access.open_session(uow.session, me.token_id, lifetime)  # type: ignore[arg-type]
        # (the page it lands on says "Signed in as ..." in its header: the address stays the one asked for)
        return see_other(target, [forms.sign_in_cookie(request, session, lifetime),
                                  forms.expired_cookie(forms.LEGACY_COOKIE)])

    @post("/logout", sync_to_thread=True)
    def logout(self, request: Request[Any, Any, Any], uow: NamedDependency[UnitOfWork],
               form: NamedDependency[PostedForm]) -> Redirect:
        """Close the portal session on the server and expire the cookie (asking for ``form``
        checks its CSRF token, as on every form): a copy of the cookie no longer signs in."""
        access.close_session(uow.session, forms.secret_of(request))
        return answer("/", "signed-out", forms.sign_out_cookies())
