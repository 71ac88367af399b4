"""The portal's router: its controllers, its dependencies and its one error page.

Dependencies:
- ``viewer``: the visitor, from the sign-in cookie's portal session, resolved in a short
  database session of its own (anonymous when signed out, when the portal session is unknown,
  expired or closed, or when its token is revoked);
- ``uow``: the request's unit of work (one lazily opened session, committed after the
  handler, follow-up work sent to the workers after the commit);
- ``page``: what handlers render with (the request, ``viewer`` and ``uow`` together);
- ``form``: a state-changing form, read whole once its CSRF token is checked.

Every exception raised under the router becomes an HTML page through the one error table
(:func:`service.http.problems.problem_of`): its status, title and message; a 401 offers to sign
in (and brings the visitor back), a 500 shows the request id it was logged with and never the
exception's text.

Every response of the router, error pages included, carries the hardening headers
(:data:`SECURITY_HEADERS`): a Content-Security-Policy that allows the portal's own script and
stylesheet only (inline styles stay allowed: the server-drawn SVG charts carry style
attributes; no inline script is allowed, and the pages have none), no framing, no MIME
sniffing, no referrer to other sites.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio.to_thread
from litestar import Request, Response, Router, get
from litestar.di import Provide
from litestar.response import Template
from sqlalchemy.orm import Session, sessionmaker

from service.errors import Unauthenticated
from service.evaluation.permissions import access
from service.evaluation.permissions.access import Principal
from service.http.problems import headers_of, problem_of
from service.http.unit_of_work import Dispatch, unit_of_work_provider
from service.portal import STATIC
from service.portal.controllers.analysis import AnalysisController
from service.portal.controllers.boards import BoardController
from service.portal.controllers.console import ConsoleController
from service.portal.controllers.console_runs import ConsoleRunsController
from service.portal.controllers.judge_track import JudgeTrackController
from service.portal.controllers.answer_assessment import AnswerAssessmentController
from service.portal.controllers.judges import JudgesController
from service.portal.controllers.judging import AssessmentController, PoolController
from service.portal.controllers.judgment_sets import JudgmentSetsController
from service.portal.controllers.qrels import QrelsController
from service.portal.controllers.reproducibility import ReproducibilityController
from service.portal.controllers.runs import RunController
from service.portal.controllers.signin import SignInController
from service.portal.controllers.snapshots import SnapshotController
from service.portal.controllers.submissions import SubmissionController
from service.portal.controllers.teams import TeamController, TokenController
from service.portal.controllers.topics import TopicController
from service.portal.forms import provide_form, secret_of
from service.portal.pages import provide_page, render

# The portal's pages load /static/portal.js and /static/portal.css only; the charts are inline SVG
# whose elements carry style attributes (hence 'unsafe-inline' for styles, never for scripts).
CONTENT_SECURITY_POLICY = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
                           "img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'self'; "
                           "frame-ancestors 'none'")
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}

CONTROLLERS = [SignInController, BoardController, RunController, AnalysisController, SubmissionController,
               QrelsController, PoolController, AssessmentController, SnapshotController, TeamController,
               TopicController, ConsoleController, ConsoleRunsController, TokenController, JudgesController,
               JudgmentSetsController, JudgeTrackController, ReproducibilityController, AnswerAssessmentController]


@get("/favicon.ico", include_in_schema=False, sync_to_thread=False)
def favicon() -> Response[bytes]:
    """The site's icon where browsers look for it without a link (pages link /static/favicon.svg)."""
    return Response((STATIC / "favicon.ico").read_bytes(), media_type="image/x-icon",
                    headers={"Cache-Control": "public, max-age=86400"})


def portal_router(factory: sessionmaker[Session], dispatch: Dispatch,
                  after_write: Callable[[bool], None] | None = None) -> Router:
    """The portal's pages on ``factory``'s database; ``dispatch`` hands follow-up work to the
    workers after each commit, ``after_write`` runs after each writing request (e.g. to drop
    the API's board cache)."""
    return Router(path="/", route_handlers=[*CONTROLLERS, favicon], include_in_schema=False,
                  dependencies={"viewer": Provide(viewer_provider(factory)),
                                "uow": Provide(unit_of_work_provider(factory, dispatch, after_write)),
                                "page": Provide(provide_page, sync_to_thread=False),
                                "form": Provide(provide_form)},
                  exception_handlers={Exception: error_page}, after_request=harden)


def harden(response: Response[Any]) -> Response[Any]:
    """The hardening headers on a response of the portal (``after_request`` and the error page)."""
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    return response


def viewer_provider(factory: sessionmaker[Session]) -> Callable[..., Any]:
    async def provide_viewer(request: Request[Any, Any, Any]) -> Principal:
        secret = secret_of(request)
        me = Principal()
        if secret:
            try:
                me = await anyio.to_thread.run_sync(signed_in, factory, secret)
            except Unauthenticated:
                pass  # an unknown, expired or closed session, or a revoked token, reads as signed out
        request.state.viewer = me  # for the error page, which runs outside the handler
        return me

    return provide_viewer


def signed_in(factory: sessionmaker[Session], secret: str) -> Principal:
    """The principal of the portal session ``secret`` (Unauthenticated when it is not live)."""
    with factory() as s:
        return access.principal_for_session(s, secret)


def error_page(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    """Any error under the portal as a page, from the one error table."""
    problem = problem_of(exc)
    me = request.state.get("viewer") or Principal()
    page: Template = render(request, me, None, "error.html", status=problem.status, title=problem.kind.title,
                            message=problem.detail, request_id=problem.details.get("request_id"),
                            source=problem.details.get("source"), line=problem.details.get("line"),
                            signin=problem.status == 401)
    page.headers.update(headers_of(exc, problem))  # Retry-After, Allow
    return harden(page)  # type: ignore[return-value]
