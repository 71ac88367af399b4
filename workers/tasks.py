"""Thin Celery tasks: ids in, a use case of service.evaluation, follow-ups sent after commit."""

from __future__ import annotations

from celery import Celery
from sqlalchemy.exc import OperationalError

from service.config import settings
from service.evaluation import analyses, pipeline
from service.store.db import session_factory
from workers.app import app


def _factory():  # type: ignore[no-untyped-def]
    return session_factory(settings().store.database_url)


def send(followups: list[pipeline.Followup], celery_app: Celery | None = None) -> None:
    """Enqueue follow-up work; callers invoke this only after their transaction committed."""
    target = celery_app or app
    for f in followups:
        target.send_task(TASK_NAMES[f.task], args=[f.id], queue=settings().worker.queue)


# Retries are narrow: only a database that is briefly unreachable. Anything else is recorded
# as the item's failure by the use case, or picked up again by the sweeper.
_RETRY = {"autoretry_for": (OperationalError,), "retry_backoff": True, "max_retries": 5}


@app.task(name="cranfield.evaluate_item", **_RETRY)
def evaluate_item(item_id: int) -> None:
    cfg = settings().worker
    send(pipeline.evaluate_item(_factory(), item_id, cfg.max_attempts, pause=cfg.task_delay))


@app.task(name="cranfield.run_tests", **_RETRY)
def run_tests(job_id: int) -> None:
    send(pipeline.run_tests(_factory(), job_id))


@app.task(name="cranfield.run_analysis", **_RETRY)
def run_analysis(analysis_id: int) -> None:
    send(analyses.compute(_factory(), analysis_id, settings().worker.max_attempts))


@app.task(name="cranfield.sweep", **_RETRY)
def sweep() -> None:
    cfg = settings().worker
    send(pipeline.sweep(_factory(), cfg.stuck_timeout, cfg.max_attempts))
    send(analyses.sweep(_factory(), cfg.stuck_timeout))


@app.task(name="cranfield.refresh", **_RETRY)
def refresh() -> None:
    send(pipeline.refresh_stale(_factory()))


TASK_NAMES = {"evaluate_item": "cranfield.evaluate_item", "run_tests": "cranfield.run_tests",
              "run_analysis": "cranfield.run_analysis"}
