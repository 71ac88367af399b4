"""Work for the workers: the task names, a follow-up, a use case's outcome, and the lease that
keeps a claimed piece of work alive while it is computed.

A use case never talks to the broker. It returns its result together with the follow-up
work (``Followup``: a task name and an id) that must be sent once its transaction has
committed; whoever committed sends them (the request's unit of work, a Celery task, the
CLI). The Celery task names are the values of :class:`TaskName`; which use case each one
runs is the table of :mod:`service.evaluation.computing.task_table`.

A claimed item, tests round or analysis holds a *lease* (``lease_expires_at``, or for a
job's tests ``tests_queued_at`` in the future) that its attempt renews from a
:class:`Heartbeat` thread while it computes: only an attempt that stopped renewing (a dead
one) may be taken over. The protocol is in :mod:`service.evaluation.organising.planning`.
"""

from __future__ import annotations

import ctypes
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from typing import Generic, TypeVar

from sqlalchemy.exc import DBAPIError, OperationalError

from service.store.db import is_unavailable

T = TypeVar("T")
log = logging.getLogger("cranfield.work")


class TaskName(StrEnum):
    """Every task the workers run, by its Celery name (stored in brokers' messages: never rename)."""

    EVALUATE_ITEM = "cranfield.evaluate_item"  # one job item: a run on a qrels version
    RUN_TESTS = "cranfield.run_tests"  # a job's pairwise tests, once its items are done
    RUN_ANALYSIS = "cranfield.run_analysis"  # a reusability or reduced-judgment analysis
    BUILD_POOL = "cranfield.build_pool"  # a requested pool (an Analysis row of kind "pool")
    RANK_JUDGES = "cranfield.rank_judges"  # a judges track's board (an Analysis row of kind "judge_board")
    MEASURE_REPRODUCTIONS = "cranfield.measure_reproductions"  # a collection's reproductions (kind "reproducibility")
    SWEEP = "cranfield.sweep"  # periodic, no id: re-queue stuck work
    REFRESH = "cranfield.refresh"  # periodic, no id: re-evaluate stale results
    PRUNE = "cranfield.prune"  # periodic, no id: delete old idempotency keys and ended portal sessions


@dataclass(frozen=True)
class Followup:
    """Work to send to the workers once the current transaction has committed.

    ``background``: work no board waits for (an evaluation under another judgment set's
    version, its tests, a judges track's board), sent below the rest so that a flood of it
    never delays a run's evaluation under the official set (``workers.tasks.send``).

    ``debounce``: a tests round held for ``CRANFIELD_TESTS_DEBOUNCE`` seconds before it starts,
    so that a burst of submissions finishing together costs one round
    (``planning.tests_followup``)."""

    task: TaskName
    id: int
    background: bool = False
    debounce: bool = False


@dataclass(frozen=True)
class Outcome(Generic[T]):
    """What a use case returns: its result and the work to send after the commit."""

    result: T
    followups: tuple[Followup, ...] = ()


@dataclass(frozen=True)
class Limits:
    """How the workers run a use case (service.config's WorkerSettings; the defaults are theirs)."""

    max_attempts: int = 3  # CRANFIELD_MAX_ATTEMPTS: claims of one piece of work before it fails
    pause: float = 0.0  # CRANFIELD_TASK_DELAY, tests only: seconds an evaluation "computes" after its claim
    lease: float = 30.0  # CRANFIELD_LEASE: seconds a claim lives without a renewal (renewed every third)
    time_budget: float = 900.0  # CRANFIELD_EVAL_TIME_BUDGET: seconds of computing per run evaluation
    max_lines: int = 20_000_000  # CRANFIELD_EVAL_MAX_LINES: largest run (lines) evaluated
    tests_max_wait: float = 60.0  # 12 x CRANFIELD_TESTS_DEBOUNCE: longest a job's tests wait for others
    run_cache_mb: float = 128.0  # CRANFIELD_RUN_CACHE_MB: parsed runs kept by a process for a re-evaluation


class LeaseLost(Exception):
    """The claim was taken over (its lease had expired): this attempt stops and stores nothing."""


class BudgetExceeded(Exception):
    """The computation ran past its time budget."""


def _raise_in(thread_id: int, exc: type[BaseException] | None) -> None:
    """Raise ``exc`` in another thread at its next Python instruction (None: cancel a pending one)."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id),
                                               ctypes.py_object(exc) if exc is not None else None)


class Heartbeat:
    """Renews a claim every ``lease / 3`` seconds from a thread of its own while the caller works.

    ``renew()`` runs a short transaction of its own, conditional on the claim still being this
    attempt's, and says whether it is: False means another attempt took the work over
    (:attr:`lost`). A database that cannot be reached is tried again at the next beat (the
    lease runs out only if that lasts a whole lease). With a ``budget``, the heartbeat notices
    the deadline too (:attr:`over_budget`). Inside :meth:`guarded` the calling thread is
    interrupted (:class:`BudgetExceeded` or :class:`LeaseLost` raised in it, at most once)
    when either happens, so a long computation stops without checking a flag; no database
    session may be open inside :meth:`guarded`.
    """

    def __init__(self, renew: Callable[[], bool], lease: float, budget: float | None = None) -> None:
        self._renew = renew
        self.interval = max(lease / 3.0, 0.05)
        self.budget = budget
        self._deadline = None if budget is None else time.monotonic() + budget
        self.lost = False
        self.over_budget = False
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._target: int | None = None  # the thread inside guarded()
        self._fired = False
        self._thread = threading.Thread(target=self._beat, name="cranfield-heartbeat", daemon=True)

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _beat(self) -> None:
        next_renewal = time.monotonic() + self.interval
        while True:
            wake = next_renewal if self._deadline is None else min(next_renewal, self._deadline)
            if self._stop.wait(max(0.0, wake - time.monotonic())):
                return
            now = time.monotonic()
            if self._deadline is not None and now >= self._deadline:
                self._deadline = None
                self.over_budget = True
                self._interrupt(BudgetExceeded)  # and go on renewing: the attempt records the failure
            if now < next_renewal:
                continue
            next_renewal = now + self.interval
            try:
                held = self._renew()
            except Exception as exc:  # noqa: BLE001  (the database away: try again at the next beat)
                log.warning("could not renew a lease (%s: %s); trying again in %.0f s",
                            type(exc).__name__, exc, self.interval)
                continue
            if not held:
                self.lost = True
                self._interrupt(LeaseLost)
                return

    def _interrupt(self, exc: type[BaseException]) -> None:
        with self._lock:
            if self._target is not None and not self._fired:
                self._fired = True
                _raise_in(self._target, exc)
                self._target = None

    def check(self) -> None:
        """Raise :class:`LeaseLost` or :class:`BudgetExceeded` if that has happened."""
        if self.lost:
            raise LeaseLost
        if self.over_budget:
            raise BudgetExceeded

    @contextmanager
    def guarded(self) -> Iterator[None]:
        """Run the block interruptible by the heartbeat (pure computation only)."""
        self.check()
        me = threading.get_ident()
        with self._lock:
            self._target = None if self._fired else me
        try:
            yield
        finally:
            with self._lock:
                self._target = None
                if self._fired:
                    _raise_in(me, None)  # raised but perhaps not delivered yet: cancel, check() reports it
        self.check()


def patiently(work: Callable[[], T], heartbeat: Heartbeat | None = None, window: float = 600.0) -> T:
    """Run ``work`` (one whole transaction) again while the database cannot be reached (a
    restart, a failover) or undid it (a deadlock victim), backing off up to 5 s between tries,
    for at most ``window`` seconds and only while ``heartbeat``'s claim holds; then the error
    propagates (the Celery task is retried, the sweeper re-queues what stays unfinished)."""
    deadline = time.monotonic() + window
    delay = 0.5
    while True:
        try:
            return work()
        except DBAPIError as exc:
            if not (isinstance(exc, OperationalError) or is_unavailable(exc)):
                raise
            if heartbeat is not None and heartbeat.lost:
                raise LeaseLost from exc
            if time.monotonic() + delay > deadline:
                raise
            log.warning("the database is unavailable (%s); trying again in %.1f s", type(exc.orig).__name__, delay)
            time.sleep(delay)
            delay = min(delay * 2, 5.0)
