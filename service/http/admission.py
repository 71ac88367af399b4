"""Admission control: how much work one server process takes on at once, a short wait for the
next requests, and a cheap 503 with ``Retry-After`` for the rest, never a hang.

Two limits, sized together with the connection pool and the thread pool (docs/operations.md):

- :class:`AdmissionGate` wraps the application's ASGI handler, before routing, middleware and
  dependencies, and lets at most ``CRANFIELD_API_MAX_IN_FLIGHT`` requests into the application
  at once (:class:`RequestSlots`). The next ones wait for a slot, holding nothing but their
  connection, for at most ``CRANFIELD_API_QUEUE_SECONDS``: oldest first while the queue is a
  passing burst, newest first once it has stood for :data:`STANDING` seconds without emptying.
  A request still waiting then, or one that finds ``CRANFIELD_API_MAX_WAITING`` waiting
  already, gets a 503 prepared once at start-up. The quantity shed on is waiting time, not the
  count in flight: every request yields to the event loop at least once, so under load the
  count in flight is about the number of clients, however little each costs; and a 503 sent at
  once to a client that ignores ``Retry-After`` comes straight back, so instant refusals to a
  crowd are a busy loop that starves the requests being served (issue 24, item 8: 89% 503s
  and the served rate down to a quarter at 300 such clients).
- :class:`DatabaseSlots` bounds the requests that may hold a database session between two
  trips to a worker thread (``CRANFIELD_API_DB_SLOTS``). A request waits for a slot on the
  event loop, holding nothing, for at most ``wait`` seconds (then 503). With the pool sized
  ``slots + threads`` a slot holder always finds a connection and a thread never waits for one
  (the short sessions that resolve a caller run inside one thread trip), so the pool can no
  longer be exhausted by requests that each hold one connection while waiting for another.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio

from service.errors import Unavailable, problem_for
from service.formats.text import counted

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

@dataclass(frozen=True)
class ServerLimits:
    """One server process's concurrency, sized together (docs/operations.md)."""

    threads: int = 16  # worker threads for blocking work (the database, rendering)
    db_slots: int = 16  # requests holding a database session at once
    max_in_flight: int = 256  # requests in the application at once; the next ones wait for a slot
    queue_seconds: float = 2.0  # longest wait for a request slot, then for a database slot, before a 503
    max_waiting: int = 1024  # requests waiting for a request slot; the next is refused at once
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


#: A queue that has not emptied for this long is overload, not a burst (CoDel's interval): from
#: then on the newest waiter is served first.
STANDING = 0.1

ADMITTED, FULL, WAITED = 0, 1, 2  # what RequestSlots.enter() says


class RequestSlots:
    """At most ``limit`` requests in the application at once (one counter for the process);
    the next ones wait for a slot, at most ``wait`` seconds and at most ``max_waiting`` of them.

    A slot that comes free goes to the oldest waiter while the queue is a passing burst, and
    to the newest once the queue has not emptied for :data:`STANDING` seconds (adaptive LIFO,
    with CoDel's test for a standing queue): the requests whose clients have just asked are
    served at once, and the oldest waiters, who would be served late anyway, get their 503 when
    their time is up. Either way a waiter costs a future (one timer serves every deadline),
    and a client that ignores ``Retry-After`` is refused at most once per ``wait`` seconds while
    its request waits, instead of as fast as the server can answer. With ``limit`` 0 every request is refused at
    once. The event loop is one thread: no lock."""

    def __init__(self, limit: int, wait: float, max_waiting: int) -> None:
        self.limit = limit
        self.wait = wait
        self.max_waiting = max_waiting
        self.in_flight = 0
        self.waiting = 0  # waiters neither admitted, refused nor cancelled
        # (deadline, turn), oldest on the left; may hold finished turns. Every waiter waits as
        # long, so the deadlines come in order from the left and one timer serves them all.
        self._queue: deque[tuple[float, asyncio.Future[bool]]] = deque()
        self._busy_since = 0.0  # loop time at which the queue last stopped being empty
        self._timer: asyncio.TimerHandle | None = None

    async def enter(self) -> int:
        """ADMITTED (call :meth:`leave` when done), FULL (refused at once) or WAITED (refused
        after ``wait`` seconds in the queue)."""
        if self.in_flight < self.limit and not self.waiting:
            self.in_flight += 1
            return ADMITTED
        if self.waiting >= self.max_waiting or self.limit <= 0:
            return FULL
        loop = asyncio.get_running_loop()
        turn: asyncio.Future[bool] = loop.create_future()
        now = loop.time()
        if not self.waiting:
            self._busy_since = now
        self.waiting += 1
        self._queue.append((now + self.wait, turn))
        if self._timer is None:
            self._timer = loop.call_at(now + self.wait, self._expire)
        try:
            return ADMITTED if await turn else WAITED
        except asyncio.CancelledError:
            if not turn.cancelled() and turn.done() and turn.result():
                self.leave()  # admitted, then cancelled before it could run
            elif turn.cancelled():
                self.waiting -= 1
            raise

    def leave(self) -> None:
        self.in_flight -= 1
        if not self.waiting:
            return
        queue = self._queue
        newest_first = asyncio.get_running_loop().time() - self._busy_since > STANDING
        while queue and self.waiting and self.in_flight < self.limit:
            _, turn = queue.pop() if newest_first else queue.popleft()
            if turn.done():  # refused or cancelled, already uncounted
                continue
            self.waiting -= 1
            self.in_flight += 1
            turn.set_result(True)
        if not self.waiting:
            queue.clear()

    def _expire(self) -> None:
        """Refuse the waiters whose time is up, then wake again at the next deadline."""
        loop = asyncio.get_running_loop()
        now, queue = loop.time() + 0.001, self._queue  # a timer may fire a clock tick early
        while queue and (queue[0][1].done() or queue[0][0] <= now):
            _, turn = queue.popleft()
            if not turn.done():
                turn.set_result(False)
                self.waiting -= 1
        self._timer = loop.call_at(queue[0][0], self._expire) if queue else None


class AdmissionGate:
    """The ASGI handler in front of routing: requests pass through :class:`RequestSlots`, and
    a refused one gets a 503 problem with ``Retry-After`` whose bytes were made once, here.
    ``/health/*`` is never refused nor counted."""

    def __init__(self, app: ASGIApp, slots: RequestSlots, retry_after: int = 1,
                 after: Callable[[Scope], Awaitable[None]] | None = None) -> None:
        self.app = app
        self.slots = slots
        self.after = after  # called once a request is done and its slots given back (an upload's memory)
        self.refusals = {
            FULL: _refusal(f"the server is at its limit of {slots.limit} requests in flight and "
                           f"{slots.max_waiting} waiting", retry_after),
            WAITED: _refusal(f"no request slot came free within {slots.wait:g} s (the server is at its limit "
                             f"of {slots.limit} requests in flight)", retry_after),
        }

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].startswith(EXEMPT):
            await self.app(scope, receive, send)
            return
        slots = self.slots
        verdict = await slots.enter()
        if verdict != ADMITTED:
            headers, body = self.refusals[verdict]
            await send({"type": "http.response.start", "status": 503, "headers": list(headers)})
            await send({"type": "http.response.body", "body": body})
            return
        try:
            await self.app(scope, receive, send)
        finally:
            slots.leave()
            release_leftovers(scope)
        if self.after is not None:  # here, not in a hook inside the application: a refused upload's
            await self.after(scope)  # exception (and its frames' buffers) is unreachable only now


def _refusal(message: str, retry_after: int) -> tuple[list[tuple[bytes, bytes]], bytes]:
    """A 503 problem document with ``Retry-After`` from the one error table: headers and body."""
    body = json.dumps(problem_for(Unavailable(message, retry_after)).document()).encode()
    return [(b"content-type", b"application/problem+json"), (b"retry-after", str(retry_after).encode()),
            (b"content-length", str(len(body)).encode())], body


class DatabaseSlots:
    """At most ``slots`` requests holding (or about to hold) a database session at once.

    A slot is given back when the request's unit of work ends, and in any case when the
    request itself ends (:class:`AdmissionGate` calls :func:`release_leftovers`): Litestar
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


class UploadSlots:
    """At most ``limit`` uploads of this process validated at once (decompressed, parsed,
    stored: CPU and memory a few times the file each), and at most ``limit - 1`` of them (at
    least one) of one caller: its team, else its token (:func:`caller_key`). One team's flood
    of uploads then always leaves a slot to everyone else, and a waiting upload is served in
    arrival order among those whose caller is under that share (issue 34, item 3: while two
    blank-line gzips of one team were being read, another team's 0.2 MB run waited 103 s).

    A slot is taken once the request's body has been received (a slow sender holds none) and
    kept until the request ends (:func:`release_leftovers`, as a database slot). At most
    ``limit`` uploads of one caller wait; the next is a 503. A waiter holds a future; the event
    loop is one thread: no lock."""

    def __init__(self, limit: int) -> None:
        self.limit = max(1, limit)
        self.share = max(1, self.limit - 1)
        self.in_use = 0
        self.held: dict[object, int] = {}
        self._waiting: deque[tuple[object, asyncio.Future[None]]] = deque()

    def _free_for(self, key: object) -> bool:
        return self.in_use < self.limit and self.held.get(key, 0) < self.share

    async def acquire(self, key: object) -> _UploadHold:
        """A slot for ``key``'s upload, once one is free for it (see the class). A caller with
        ``limit`` uploads waiting already is refused at once (503): each waiter holds its body
        and a request slot, and one team's flood must not take every request slot of the process."""
        # (no waiter is ever free for a slot here: _serve grants one the moment it frees)
        if self._free_for(key):
            return self._take(key)
        if sum(1 for k, f in self._waiting if k == key and not f.done()) >= self.limit:
            raise Unavailable(f"{counted(self.limit, 'upload')} of yours {'is' if self.limit == 1 else 'are'} "
                              f"waiting for a slot already; send this one "
                              "when one of them is answered", retry_after=5)
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append((key, turn))
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():  # granted, then cancelled before it could run
                self._give_back(key)
            else:
                self._waiting = deque(w for w in self._waiting if w[1] is not turn)
            raise
        return _UploadHold(self, key)  # (counted when granted: _serve)

    def _take(self, key: object) -> _UploadHold:
        self.in_use += 1
        self.held[key] = self.held.get(key, 0) + 1
        return _UploadHold(self, key)

    def _give_back(self, key: object) -> None:
        self.in_use -= 1
        self.held[key] -= 1
        if not self.held[key]:
            del self.held[key]
        self._serve()

    def _serve(self) -> None:
        """Grant free slots to the oldest waiters whose caller is under its share."""
        kept: deque[tuple[object, asyncio.Future[None]]] = deque()
        for key, turn in self._waiting:
            if turn.done():
                continue
            if self._free_for(key):
                self._take(key)
                turn.set_result(None)
            else:
                kept.append((key, turn))
        self._waiting = kept


class _UploadHold:
    """One request's upload slot; released exactly once, whoever gets there first."""

    def __init__(self, slots: UploadSlots, key: object) -> None:
        self.slots = slots
        self.key = key
        self.released = False

    def release(self) -> None:
        if not self.released:
            self.released = True
            self.slots._give_back(self.key)


#: The request state's key of the caller the door's guard resolved (service/http/doors.py).
CALLER = "cranfield.caller"
#: The application state's key of the process's :class:`UploadSlots`.
UPLOAD_SLOTS = "upload_slots"
_UPLOAD_HELD = "cranfield.upload_slot"  # the ASGI scope's mark of a request that holds one


def caller_key(me: Any) -> object:
    """Whose share an upload counts against: the caller's team, else its token."""
    if me is None:
        return ("anonymous",)
    return ("team", me.team_id) if getattr(me, "team_id", None) is not None else ("token", getattr(me, "token_id", None))


async def upload_slot(connection: Any) -> None:
    """Wait for one of the process's upload slots for this request's caller (:class:`UploadSlots`);
    it is held until the request ends. A request takes one slot however many files it has."""
    slots = connection.app.state.get(UPLOAD_SLOTS)
    scope = connection.scope
    if slots is None or scope.get(_UPLOAD_HELD):
        return
    hold = await slots.acquire(caller_key(connection.state.get(CALLER)))
    scope[_UPLOAD_HELD] = True
    scope.setdefault(HOLDS, []).append(hold)
