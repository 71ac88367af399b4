"""Liveness and readiness probes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from litestar import Controller, Response, get
from litestar.datastructures import State
from msgspec import Meta
from sqlalchemy import select

import service
from service.api.dependencies import Uow
from service.api.openapi import errors
from service.api.schemas import Response as Body


class Live(Body, kw_only=True):
    status: Annotated[str, Meta(examples=["ok"])]
    version: str


class Ready(Body, kw_only=True):
    ready: bool
    checks: Annotated[dict[str, bool], Meta(description="database, and the broker where one is configured.")]


class HealthController(Controller):
    """Probes for orchestrators: no token needed."""

    path = "/health"
    tags = ["health"]
    security = [{}]  # no token needed

    @get("/live", operation_id="live", summary="Liveness", sync_to_thread=False, responses=errors())
    def live(self) -> Live:
        """The process answers (no dependency is checked)."""
        return Live(status="ok", version=service.__version__)

    @get("/ready", operation_id="ready", summary="Readiness", sync_to_thread=True, responses=errors(503))
    def ready(self, uow: Uow, state: State) -> Response[Ready]:
        """The database answers (and the broker, when the composition root gave a check);
        503 while one does not."""
        checks = {"database": True}
        try:
            uow.session.execute(select(1))
        except Exception:  # noqa: BLE001  (any failure means not ready)
            checks["database"] = False
        readiness: Callable[[], dict[str, bool]] | None = state.get("readiness")
        if readiness is not None:
            checks.update(readiness())
        ok = all(checks.values())
        return Response(Ready(ready=ok, checks=checks), status_code=200 if ok else 503)
