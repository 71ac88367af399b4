"""The Litestar application: the JSON API's controllers, the portal, the docs page, one error
mapping, one unit of work per request.

The API never computes a metric: uploads are validated and stored, evaluation work goes to the
workers through ``dispatch`` (given by the composition root, ``service.asgi``, so this package
never imports the workers), and reads come from stored results.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio.to_thread
from litestar import Litestar, Request, Response
from litestar.datastructures import MutableScopeHeaders, State
from litestar.di import Provide
from sqlalchemy.orm import Session, sessionmaker

from service.api.board_cache import BoardCache
from service.api.controllers.analyses import AnalysesController
from service.api.controllers.answers import AnswersController
from service.api.controllers.boards import BoardsController
from service.api.controllers.collections import CollectionsController
from service.api.controllers.health import HealthController
from service.api.controllers.jobs import JobsController
from service.api.controllers.judge_track import JudgeTrackController
from service.api.controllers.reproducibility import ReproducibilityController
from service.api.controllers.judges import JudgesController
from service.api.controllers.judging import AssessorsController, PoolsController
from service.api.controllers.judgment_sets import JudgmentSetsController
from service.api.controllers.qrels import QrelsController
from service.api.controllers.results import ResultsController
from service.api.controllers.runs import RunsController
from service.api.controllers.teams import TeamsController
from service.api.dependencies import provide_collection
from service.api.openapi import assets_router, openapi_config
from service.api.strict import strict_json_body
from service.api.uploads import release_after_upload
from service.http.doors import authorise_first
from service.http.problems import headers_of, problem_of
from service.http.admission import UPLOAD_SLOTS, AdmissionGate, DatabaseSlots, RequestSlots, ServerLimits, UploadSlots
from service.http.unit_of_work import Dispatch, PrincipalCache, caller_from_header, unit_of_work_provider
from service.store.db import session_factory, size_pool
from service.runtime import freeze_startup_heap

DEFAULT_MAX_BODY = 256 * 1024 * 1024
CONTROLLERS = [HealthController, TeamsController, CollectionsController, QrelsController, RunsController,
               BoardsController, ResultsController, PoolsController, AssessorsController, AnalysesController,
               JobsController, JudgesController, JudgmentSetsController, JudgeTrackController,
               ReproducibilityController, AnswersController]


async def no_sniffing(message: Any, _scope: Any) -> None:
    """Every response, errors and static files included: browsers take its content type as given."""
    if message["type"] == "http.response.start":
        MutableScopeHeaders.from_message(message).setdefault("X-Content-Type-Options", "nosniff")


API_PREFIXES = ("/api", "/health", "/schema", "/static")


def problem_response(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    """Every error of the JSON API: a problem document from the one error table. An error no
    route handled (a mistyped portal address) is a page for a browser that asks for HTML."""
    if not request.url.path.startswith(API_PREFIXES) and "text/html" in request.headers.get("accept", ""):
        from service.portal.app import error_page

        return error_page(request, exc)
    problem = problem_of(exc)
    return Response(problem.document(), status_code=problem.status, media_type="application/problem+json",
                    headers=headers_of(exc, problem) or None)


def create_app(database_url: str, dispatch: Dispatch, *, max_body: int = DEFAULT_MAX_BODY,
               readiness: Callable[[], dict[str, bool]] | None = None, board_ttl: float = 1.0,
               limits: ServerLimits = ServerLimits(), freeze_heap: bool = False) -> Litestar:
    """The whole HTTP application on ``database_url``. ``dispatch`` hands follow-up work to the
    workers after a commit; ``readiness`` adds checks to /health/ready; ``board_ttl`` is how
    long a rendered leaderboard is served from memory; ``limits`` sizes the process's threads,
    database slots, connection pool and admission limit together (docs/operations.md);
    ``freeze_heap``: on startup, freeze the process's heap for the collector (a server process,
    service/asgi.py; never a test process, where it would keep every earlier test's garbage)."""
    from litestar.plugins.jinja import JinjaTemplateEngine
    from litestar.static_files import create_static_files_router
    from litestar.template.config import TemplateConfig

    from service.portal import STATIC, TEMPLATES
    from service.portal.app import portal_router
    from service.portal.pages import configure_templates

    # PostgreSQL silent (a partition): a request fails in about the queue timeout, and answers 503
    size_pool(database_url, limits.pool_size, timeout=max(limits.queue_seconds, 1.0), net_bound=limits.queue_seconds)
    factory: sessionmaker[Session] = session_factory(database_url)
    board_cache = BoardCache(board_ttl)
    callers = PrincipalCache(limits.caller_cache_seconds)
    slots = RequestSlots(limits.max_in_flight, limits.queue_seconds, limits.max_waiting)

    def after_write(changes_boards: bool) -> None:
        if changes_boards:
            board_cache.clear()
        callers.clear()  # a first run enrols its team; a token may have been revoked

    def size_thread_pools(app: Litestar) -> None:
        anyio.to_thread.current_default_thread_limiter().total_tokens = limits.threads
        # Uploads are parsed and stored in threads of their own, a few at a time: a burst of
        # submissions then queues for them instead of taking every thread and the GIL from the
        # readers of the board.
        app.state["upload_threads"] = anyio.CapacityLimiter(limits.uploads)
        # ... and an upload (its decompression too) waits for one of as many slots, shared fairly
        # between callers (issue 34, items 2 and 3).
        app.state[UPLOAD_SLOTS] = UploadSlots(limits.uploads)

    def freeze(app: Litestar) -> None:
        if freeze_heap:
            freeze_startup_heap()  # full collections then skip the startup heap (service/runtime.py)

    app = Litestar(
        route_handlers=[*CONTROLLERS, portal_router(factory, dispatch, after_write=after_write), assets_router(),
                        create_static_files_router(path="/static", directories=[STATIC], include_in_schema=False)],
        dependencies={"uow": Provide(unit_of_work_provider(factory, dispatch, after_write=after_write)),
                      "me": Provide(caller_from_header(factory, callers)),
                      "coll": Provide(provide_collection, sync_to_thread=True)},
        exception_handlers={Exception: problem_response},
        guards=[authorise_first(factory)],  # authorise, then validate: before anything of the request is read
        before_request=strict_json_body,
        before_send=[no_sniffing],
        state=State({"max_body": max_body, "board_cache": board_cache, "readiness": readiness,
                     "db_slots": DatabaseSlots(limits.db_slots, limits.queue_seconds), "request_slots": slots}),
        on_startup=[size_thread_pools, freeze],
        request_max_body_size=max_body,
        template_config=TemplateConfig(directory=TEMPLATES, engine=JinjaTemplateEngine,
                                       engine_callback=configure_templates),
        openapi_config=openapi_config(),
    )
    # Admission comes first, before routing, middleware and dependencies (only Litestar's own
    # entry point, which wraps send with the before-send hooks, runs before it): a refusal
    # costs nothing else.
    app.asgi_handler = AdmissionGate(app.asgi_handler, slots, after=release_after_upload)  # its memory back
    return app
