"""Admission control: how much work one server process takes on at once, and a fast 503 with
``Retry-After`` for the rest, never a hang.

Two limits, sized together with the connection pool and the thread pool (docs/operations.md):

- :class:`AdmissionLimit`, an ASGI middleware, bounds the requests in flight in the process
  (``CRANFIELD_API_MAX_IN_FLIGHT``). A request beyond it is answered 503 at once, before it
  costs anything: a burst of a thousand connections gets quick refusals, not a queue that
  times everyone out.
- :class:`DatabaseSlots` bounds the requests that may hold a database session between two
  trips to a worker thread (``CRANFIELD_API_DB_SLOTS``). A request waits for a slot on the
  event loop, holding nothing, for at most ``wait`` seconds (then 503). With the pool sized
  ``slots + threads`` a slot holder always finds a connection and a thread never waits for one
  (the short sessions that resolve a caller run inside one thread trip), so the pool can no
  longer be exhausted by requests that each hold one connection while waiting for another.
"""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio

from service.errors import Unavailable, problem_for

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

@dataclass(frozen=True)
class ServerLimits:
    """One server process's concurrency, sized together (docs/operations.md)."""

    threads: int = 16  # worker threads for blocking work (the database, rendering)
    db_slots: int = 16  # requests holding a database session at once
    max_in_flight: int = 256  # requests in flight; the next is refused at once
    queue_seconds: float = 2.0  # longest wait for a database slot before a 503
    caller_cache_seconds: float = 1.0  # a resolved token's life in memory
    uploads: int = 2  # uploads validated and stored at once (CPU-heavy: more would starve the readers)

    @property
    def pool_size(self) -> int:
        """Connections this process needs so that none is ever waited for: one per slot
        holder, one per thread (a caller's short session), one per upload (its own
        transactions, in one thread trip), one for the readiness probe."""
        return self.db_slots + self.threads + self.uploads + 1


#: A route handler's ``opt`` flag: its work opens and closes its own sessions within one
#: thread trip (the uploads), so it needs no database slot.
OWN_TRANSACTIONS = "own_transactions"


#: Paths never refused: the orchestrator's probes must see an overloaded process as alive.
EXEMPT = ("/health/",)


class InFlight:
    """The requests in flight in this process (one counter, shared by every route's middleware:
    Litestar makes a middleware instance per route handler)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.count = 0  # the event loop is one thread: no lock needed


class AdmissionLimit:
    """At most ``gate.limit`` HTTP requests in flight in this process; the next gets a 503."""

    def __init__(self, app: ASGIApp, gate: InFlight, retry_after: int = 1) -> None:
        self.app = app
        self.gate = gate
        self.retry_after = retry_after

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        gate = self.gate
        exempt = scope["path"].startswith(EXEMPT)
        if not exempt and gate.count >= gate.limit:
            await overloaded(send, f"the server is at its limit of {gate.limit} requests in flight",
                             self.retry_after)
            return
        gate.count += not exempt
        try:
            await self.app(scope, receive, send)
        finally:
            gate.count -= not exempt
            release_leftovers(scope)


async def overloaded(send: Send, message: str, retry_after: int) -> None:
    """A 503 problem document with ``Retry-After``, sent without touching anything else."""
    body = json.dumps(problem_for(Unavailable(message, retry_after)).document()).encode()
    await send({"type": "http.response.start", "status": 503,
                "headers": [(b"content-type", b"application/problem+json"), (b"retry-after", str(retry_after).encode()),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


class DatabaseSlots:
    """At most ``slots`` requests holding (or about to hold) a database session at once.

    A slot is given back when the request's unit of work ends, and in any case when the
    request itself ends (:class:`AdmissionLimit` calls :func:`release_leftovers`): Litestar
    does not close a generator dependency when a dependency resolved after it fails (a bad
    token, a refused collection), so the request, not the generator, is the owner of last
    resort."""

    def __init__(self, slots: int, wait: float) -> None:
        self.slots = slots
        self.wait = wait
        self._limiter: anyio.CapacityLimiter | None = None  # made inside the event loop

    @property
    def in_use(self) -> int:
        return int(self._limiter.borrowed_tokens) if self._limiter is not None else 0

    @asynccontextmanager
    async def held(self, scope: Scope) -> AsyncIterator[None]:
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(self.slots)
        hold = _Hold(self._limiter)
        try:
            self._limiter.acquire_on_behalf_of_nowait(hold)  # a free slot: no wait at all
            waited = None
        except anyio.WouldBlock:
            with anyio.move_on_after(self.wait) as waited:
                await self._limiter.acquire_on_behalf_of(hold)
        if waited is not None and waited.cancelled_caught:
            raise Unavailable(f"all {self.slots} database slots stayed busy for {self.wait:g} s",
                              retry_after=max(1, math.ceil(self.wait)))
        scope.setdefault(HOLDS, []).append(hold)
        try:
            yield
        finally:
            hold.release()


class _Hold:
    """One request's slot; released exactly once, whoever gets there first."""

    def __init__(self, limiter: anyio.CapacityLimiter) -> None:
        self.limiter = limiter
        self.released = False

    def release(self) -> None:
        if not self.released:
            self.released = True
            self.limiter.release_on_behalf_of(self)


HOLDS = "cranfield.db_slots"  # the ASGI scope's key of a request's slots


def release_leftovers(scope: Scope) -> None:
    """At the end of a request: give back any slot its unit of work did not."""
    for hold in scope.pop(HOLDS, ()):
        hold.release()
