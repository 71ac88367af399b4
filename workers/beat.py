"""The scheduler (celery beat) with the sweeper inside it, never behind the work it supervises.

A sweep used to be a message on the evaluations' queue. The queue is first in, first out,
so with a backlog a sweep waited behind every evaluation sent before it, and expired on
arrival: a partitioned worker's items were taken over 208.7 s after the cut with a lease of
30 s, and recovery grew with the queue's depth (issue 34, item 7). Now beat runs the sweep
itself, on a thread of its own, every ``CRANFIELD_SWEEP_INTERVAL`` seconds: no worker slot,
no broker round trip, the same on Redis and on the filesystem broker (where ``cranfield
worker --beat`` and ``cranfield serve`` run beat inside the worker). The sweep is a series of
short conditional transactions, so two schedulers at once are harmless (each change is made
once); a sweep that fails (the database away) is logged and the next one comes an interval
later. Refresh and prune stay queued tasks: nothing waits for them.
"""

from __future__ import annotations

import logging
import threading
import time

from celery.beat import PersistentScheduler

log = logging.getLogger("cranfield.beat")


class Sweeper(threading.Thread):
    """Runs ``sweep_once`` every ``interval`` seconds (from the start of one to the next; a
    sweep that overran its interval is followed by the next at once) until :meth:`stop`."""

    def __init__(self, interval: float) -> None:
        super().__init__(name="cranfield-sweeper", daemon=True)
        self.interval = interval
        self._halt = threading.Event()  # (not _stop: threading.Thread has one)

    def run(self) -> None:
        from workers.tasks import sweep_once

        next_sweep = time.monotonic()
        while not self._halt.wait(max(0.0, next_sweep - time.monotonic())):
            next_sweep = time.monotonic() + self.interval
            try:
                sweep_once()
            except Exception as exc:  # noqa: BLE001  (the database or broker away: the next sweep retries)
                log.warning("a sweep failed (%s: %s); the next one in %g s", type(exc).__name__, exc,
                            self.interval)

    def stop(self) -> None:
        self._halt.set()


class Scheduler(PersistentScheduler):
    """celery beat's default scheduler (its entries: refresh, prune), and the sweeper."""

    sweeper: Sweeper | None = None

    def setup_schedule(self) -> None:
        super().setup_schedule()
        if self.sweeper is None:
            from service.config import settings

            self.sweeper = Sweeper(settings().worker.sweep_interval)
            self.sweeper.start()

    def close(self) -> None:
        if self.sweeper is not None:
            self.sweeper.stop()
        super().close()
