"""Which door each state-changing route of the API and the portal is
(:mod:`service.evaluation.permissions.doors`), and the guard that knocks before the route reads anything of
its request: authorise, then validate.

Litestar runs a guard before it reads the query, the form or the body, so a caller who may not
act gets its 401 or 403 whatever it sent. Every route with POST, PUT, PATCH or DELETE is in
``ROUTES`` (``None``: open to anyone, signing in and out); a route missing from it is refused
with a 500 naming it, and the walk of the route table in
``tests/integration/test_authorise_first.py`` fails until it is added.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping
from typing import Any

import anyio.to_thread
from litestar.connection import ASGIConnection
from litestar.handlers.base import BaseRouteHandler
from sqlalchemy.orm import Session, sessionmaker

from service.evaluation.permissions import doors
from service.evaluation.permissions.access import Principal
from service.evaluation.permissions.doors import Door
from service.http.admission import CALLER

MUTATING = frozenset({"POST", "PUT", "PATCH", "DELETE"})

#: (method, path) -> the door; paths as the router writes them (``{cid}``, not ``{cid:int}``).
ROUTES: dict[tuple[str, str], Door | None] = {
    # the JSON API
    ("POST", "/api/collections"): doors.CREATE_COLLECTION,
    ("PATCH", "/api/collections/{cid}"): doors.CONFIGURE,
    ("POST", "/api/collections/{cid}/settings-preview"): doors.CONFIGURE,
    ("POST", "/api/collections/{cid}/reevaluate"): doors.CONFIGURE,
    ("POST", "/api/collections/{cid}/topics"): doors.CONFIGURE,
    ("PUT", "/api/collections/{cid}/judge-track"): doors.CONFIGURE,
    ("POST", "/api/collections/{cid}/judge-board"): doors.CONFIGURE,
    ("POST", "/api/collections/{cid}/reproduction-originals"): doors.CONFIGURE,
    ("POST", "/api/collections/{cid}/reproducibility"): doors.CONFIGURE,
    ("POST", "/api/runs/{rid}/reproduction"): doors.DECLARE_REPRODUCTION,
    ("DELETE", "/api/runs/{rid}/reproduction"): doors.DECLARE_REPRODUCTION,
    ("POST", "/api/teams"): doors.CREATE_TEAM,
    ("POST", "/api/tokens"): doors.ISSUE_TOKENS,
    ("DELETE", "/api/tokens/{tid}"): doors.REVOKE_TOKEN,
    ("POST", "/api/collections/{cid}/teams"): doors.MANAGE_TEAMS,
    ("DELETE", "/api/collections/{cid}/teams/{team}"): doors.MANAGE_TEAMS,
    ("POST", "/api/collections/{cid}/enrolment"): doors.ENROL_SELF,
    ("POST", "/api/collections/{cid}/runs"): doors.SUBMIT,
    ("PATCH", "/api/runs/{rid}/settings"): doors.EDIT_RUN,
    ("DELETE", "/api/runs/{rid}"): doors.DELETE_RUN,
    ("POST", "/api/collections/{cid}/snapshots"): doors.FREEZE_BOARD,
    ("POST", "/api/collections/{cid}/qrels"): doors.UPLOAD_QRELS,
    ("POST", "/api/collections/{cid}/qrels/preview"): doors.UPLOAD_QRELS,
    ("POST", "/api/collections/{cid}/answer-judgments/{part}"): doors.UPLOAD_QRELS,
    ("POST", "/api/collections/{cid}/judgment-sets"): doors.UPLOAD_QRELS,
    ("PATCH", "/api/collections/{cid}/judgment-sets/{name}"): doors.UPLOAD_QRELS,
    ("POST", "/api/collections/{cid}/judgment-sets/{name}/evaluate"): doors.UPLOAD_QRELS,
    ("POST", "/api/collections/{cid}/judgment-sets/{name}/official"): doors.UPLOAD_QRELS,
    ("POST", "/api/collections/{cid}/judgment-sets/{name}/labels"): doors.UPLOAD_QRELS,
    ("POST", "/api/collections/{cid}/judge-submissions"): doors.SUBMIT_JUDGMENTS,
    ("POST", "/api/collections/{cid}/pools"): doors.MANAGE_POOLS,
    ("PUT", "/api/collections/{cid}/assessors/{tid}"): doors.MANAGE_POOLS,
    ("POST", "/api/collections/{cid}/analyses"): doors.MANAGE_POOLS,
    ("POST", "/api/pools/{pid}/judgments"): doors.JUDGE_POOL,
    # the portal's forms
    ("POST", "/login"): None,
    ("POST", "/logout"): None,
    ("POST", "/collections/new"): doors.CREATE_COLLECTION,
    ("POST", "/c/{cid}/console/settings"): doors.CONFIGURE,
    ("POST", "/c/{cid}/console/release"): doors.CONFIGURE,
    ("POST", "/c/{cid}/console/reveal"): doors.CONFIGURE,
    ("POST", "/c/{cid}/console/reevaluate"): doors.CONFIGURE,
    ("POST", "/c/{cid}/console/runs/{rid}"): doors.CONFIGURE,
    ("POST", "/c/{cid}/topics/texts"): doors.CONFIGURE,
    ("POST", "/c/{cid}/judges/settings"): doors.CONFIGURE,
    ("POST", "/c/{cid}/judges/board"): doors.CONFIGURE,
    ("POST", "/c/{cid}/reproducibility/originals"): doors.CONFIGURE,
    ("POST", "/c/{cid}/teams"): doors.MANAGE_TEAMS,
    ("POST", "/c/{cid}/enrolment"): doors.ENROL_SELF,
    ("POST", "/tokens"): doors.MANAGE_TOKENS,
    ("POST", "/tokens/{tid}/revoke"): doors.REVOKE_TOKEN,
    ("POST", "/c/{cid}/submit"): doors.SUBMIT,
    ("POST", "/c/{cid}/runs/{rid}/primary"): doors.EDIT_RUN,
    ("POST", "/c/{cid}/console/runs/{rid}/delete"): doors.DELETE_RUN,
    ("POST", "/c/{cid}/snapshots"): doors.FREEZE_BOARD,
    ("POST", "/c/{cid}/qrels"): doors.UPLOAD_QRELS,
    ("POST", "/c/{cid}/judgment-sets"): doors.UPLOAD_QRELS,
    ("POST", "/c/{cid}/judgment-sets/{name}/official"): doors.UPLOAD_QRELS,
    ("POST", "/c/{cid}/judges/submissions"): doors.SUBMIT_JUDGMENTS,
    ("POST", "/c/{cid}/pools"): doors.MANAGE_POOLS,
    ("POST", "/c/{cid}/console/assessors"): doors.MANAGE_POOLS,
    ("POST", "/c/{cid}/console/assessors/{tid}"): doors.MANAGE_POOLS,
    ("POST", "/c/{cid}/analysis"): doors.MANAGE_POOLS,
    ("POST", "/assess/{pid}"): doors.JUDGE_POOL,
    ("POST", "/c/{cid}/answers/assess"): doors.ASSESS_ANSWERS,
    ("POST", "/c/{cid}/judgment-sets/{name}/derive"): doors.UPLOAD_QRELS,
}


def authorise_first(factory: sessionmaker[Session]
                    ) -> Callable[[ASGIConnection[Any, Any, Any, Any], BaseRouteHandler], Coroutine[Any, Any, None]]:
    """The guard of every route: for a state-changing request, the caller (the API's bearer
    token, the portal's session: the route's own ``me`` or ``viewer`` dependency) must be
    allowed through the route's door, before the route reads its request."""

    async def guard(connection: ASGIConnection[Any, Any, Any, Any], handler: BaseRouteHandler) -> None:
        method = connection.scope["method"]  # type: ignore[typeddict-item]
        if method not in MUTATING:
            return
        key = (method, connection.scope["path_template"])  # type: ignore[typeddict-item]
        if key not in ROUTES:
            raise RuntimeError(f"{method} {key[1]} has no door in service/http/doors.py")
        door = ROUTES[key]
        if door is None:
            return
        provided = handler.resolve_dependencies()
        me: Principal = await provided["viewer" if "viewer" in provided else "me"].dependency(connection)
        await anyio.to_thread.run_sync(_knock, factory, me, door, dict(connection.path_params))
        connection.state[CALLER] = me  # whose share of the upload slots an upload takes (admission.upload_slot)

    return guard


def _knock(factory: sessionmaker[Session], me: Principal, door: Door, path: Mapping[str, Any]) -> None:
    with factory() as s:
        doors.knock(s, me, door, path)
