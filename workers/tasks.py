"""Thin Celery tasks: ids in, a use case of service.evaluation, follow-ups sent after commit.

The tasks that take an id are registered from the one table of task names to use cases
(:data:`service.evaluation.computing.task_table.USE_CASES`); the periodic ones are the three below.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

import scipy.stats  # noqa: F401  (see below)
from celery import Celery
from sqlalchemy.exc import OperationalError

from service.config import settings
from service.evaluation.common.work import Followup, TaskName
from service.evaluation.computing import pruning, sweeping
from service.evaluation.computing.task_table import USE_CASES, Limits, UseCase
from service.store.db import session_factory
from workers.app import app

# scipy.stats (the significance tests and analyses use it) is imported here, once, before the
# prefork pool forks its children, instead of once in each child at its first test; the API's
# modules import it only inside the functions that call it (most of a second of every start).

log = logging.getLogger("cranfield.workers")


def _factory():  # type: ignore[no-untyped-def]
    return session_factory(settings().store.database_url)


def limits() -> Limits:
    """The use cases' limits, from the worker settings."""
    cfg = settings().worker
    return Limits(max_attempts=cfg.max_attempts, pause=cfg.task_delay, lease=cfg.lease,
                  time_budget=cfg.eval_time_budget, max_lines=cfg.eval_max_lines,
                  tests_max_wait=12 * cfg.tests_debounce, run_cache_mb=cfg.run_cache_mb)


#: The priority of background work (``Followup.background``). kombu's Redis transport keeps a
#: list per priority step (0, 3, 6, 9) and a worker pops step 0 first: 0 (every other message)
#: is served first, 9 only when nothing else waits. The filesystem broker ignores it (FIFO).
BACKGROUND = 9


def send(followups: Iterable[Followup], celery_app: Celery | None = None) -> None:
    """Enqueue follow-up work; callers invoke this only after their transaction committed.

    A submission's tests are sent with the debounce delay (``CRANFIELD_TESTS_DEBOUNCE``,
    ``Followup.debounce``): a burst of jobs finishing together costs one round of tests (see
    service.evaluation.computing.significance_tests); a whole collection's re-evaluation starts
    its round at once.
    Background work goes below the rest (:data:`BACKGROUND`).
    """
    target = celery_app or app
    cfg = settings().worker
    for f in followups:
        delay = {"countdown": cfg.tests_debounce} if f.task == TaskName.RUN_TESTS and f.debounce \
            and cfg.tests_debounce else {}
        order = {"priority": BACKGROUND} if f.background else {}
        target.send_task(TaskName(f.task).value, args=[f.id], queue=cfg.queue, **delay, **order)


# Retries are narrow: only a database that is unreachable (a restart, a failover). They back
# off 2, 4, 8, 16 s, then every 30 s, 24 times: about ten minutes in all, longer than a
# database restart, and never more than 30 s late once it is back. Anything else is recorded
# as the item's failure by the use case, or picked up again by the sweeper.
_RETRY = {"autoretry_for": (OperationalError,), "retry_backoff": 2, "retry_backoff_max": 30,
          "retry_jitter": False, "max_retries": 24}


def _task(name: TaskName, use_case: UseCase):  # type: ignore[no-untyped-def]
    def task(id_: int) -> None:
        send(use_case(_factory(), id_, limits()))

    task.__name__ = task.__qualname__ = name.value.rsplit(".", 1)[-1]
    options: dict[str, object] = dict(_RETRY)
    if name == TaskName.EVALUATE_ITEM:
        # A backstop only: the evaluation stops itself at its time budget (its heartbeat
        # interrupts it); a process stuck in native code past that is killed, and its
        # attempt, dead, is taken over until CRANFIELD_MAX_ATTEMPTS fails the run.
        cfg = settings().worker
        options["time_limit"] = cfg.eval_time_budget + max(60.0, 2 * cfg.lease)
    return app.task(name=name.value, **options)(task)


#: The Celery task of each task name that takes an id, made from the one table.
TASKS = {name: _task(name, use_case) for name, use_case in USE_CASES.items()}


def backlog() -> int | None:
    """Messages waiting in the broker's queue (None if the broker cannot say)."""
    try:
        with app.connection_for_read() as conn:
            declared = conn.default_channel.queue_declare(queue=settings().worker.queue, durable=True,
                                                          auto_delete=False)
            return int(declared.message_count)
    except Exception as exc:  # noqa: BLE001  (then every queued item counts as possibly lost)
        log.warning("could not count the broker's messages (%s: %s)", type(exc).__name__, exc)
        return None


def sweep_once() -> None:
    """One round of the sweeper and the sending of what it re-queued. Beat runs it itself
    (workers.beat: never queued behind the evaluations it supervises)."""
    cfg = settings().worker
    send(sweeping.sweep(_factory(), cfg.max_attempts, lost_after=cfg.lost_after, stuck_timeout=cfg.stuck_timeout,
                        backlog=backlog(), tests_max_wait=12 * cfg.tests_debounce))


# Kept for a sweep message an older scheduler left in the queue; beat no longer sends it.
# Not retried: the scheduler sweeps again within CRANFIELD_SWEEP_INTERVAL.
@app.task(name=TaskName.SWEEP.value)
def sweep() -> None:
    sweep_once()


@app.task(name=TaskName.REFRESH.value, **_RETRY)
def refresh() -> None:
    send(sweeping.refresh_stale(_factory()))


@app.task(name=TaskName.PRUNE.value, **_RETRY)
def prune() -> None:
    cfg = settings().worker
    pruning.prune(_factory(), retention=cfg.idempotency_retention, grace=cfg.session_grace)
