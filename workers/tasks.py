"""Thin Celery tasks: ids in, a use case of service.evaluation, follow-ups sent after commit.

The tasks that take an id are registered from the one table of task names to use cases
(:data:`service.evaluation.task_table.USE_CASES`); the periodic ones are the two below.
"""

from __future__ import annotations

from collections.abc import Iterable

from celery import Celery
from sqlalchemy.exc import OperationalError

from service.config import settings
from service.evaluation import analyses, sweeping
from service.evaluation.task_table import USE_CASES, Limits, UseCase
from service.evaluation.work import Followup, TaskName
from service.store.db import session_factory
from workers.app import app


def _factory():  # type: ignore[no-untyped-def]
    return session_factory(settings().store.database_url)


def send(followups: Iterable[Followup], celery_app: Celery | None = None) -> None:
    """Enqueue follow-up work; callers invoke this only after their transaction committed."""
    target = celery_app or app
    for f in followups:
        target.send_task(TaskName(f.task).value, args=[f.id], queue=settings().worker.queue)


# Retries are narrow: only a database that is briefly unreachable. Anything else is recorded
# as the item's failure by the use case, or picked up again by the sweeper.
_RETRY = {"autoretry_for": (OperationalError,), "retry_backoff": True, "max_retries": 5}


def _task(name: TaskName, use_case: UseCase):  # type: ignore[no-untyped-def]
    def task(id_: int) -> None:
        cfg = settings().worker
        send(use_case(_factory(), id_, Limits(cfg.max_attempts, cfg.task_delay)))

    task.__name__ = task.__qualname__ = name.value.rsplit(".", 1)[-1]
    return app.task(name=name.value, **_RETRY)(task)


#: The Celery task of each task name that takes an id, made from the one table.
TASKS = {name: _task(name, use_case) for name, use_case in USE_CASES.items()}


@app.task(name=TaskName.SWEEP.value, **_RETRY)
def sweep() -> None:
    cfg = settings().worker
    send(sweeping.sweep(_factory(), cfg.stuck_timeout, cfg.max_attempts))
    send(analyses.sweep(_factory(), cfg.stuck_timeout))


@app.task(name=TaskName.REFRESH.value, **_RETRY)
def refresh() -> None:
    send(sweeping.refresh_stale(_factory()))
