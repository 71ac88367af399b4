"""A request's unit of work: one database session, committed once after the handler, and the
follow-up tasks handed to the workers only after that commit.

Handlers never commit and never send: a use case returns its result and its follow-ups (an
:class:`~service.evaluation.common.work.Outcome`); the handler passes it to :meth:`UnitOfWork.collect`
and returns the result; the dependency that provided the unit of work commits, then sends.
An exception rolls everything back and sends nothing.

The session is opened lazily, so a request that does not touch the database (an upload still
being received, a health check) holds no connection; a writing request takes SQLite's write
lock when its session begins (a no-op on PostgreSQL) so it cannot fail on a lock upgrade
midway.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import nullcontext
from typing import Any, TypeVar

import anyio.to_thread
from litestar import Request
from sqlalchemy.orm import Session, sessionmaker

from service.evaluation.common.work import Followup, Outcome
from service.evaluation.permissions import access
from service.evaluation.permissions.access import Principal
from service.http.admission import OWN_TRANSACTIONS, DatabaseSlots
from service.http.single_flight import SingleFlight

T = TypeVar("T")
log = logging.getLogger("cranfield.http")
Dispatch = Callable[[Sequence[Followup]], None]
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class UnitOfWork:
    """One request's session and the follow-ups to send once it has committed."""

    def __init__(self, factory: sessionmaker[Session], writing: bool) -> None:
        self.factory = factory
        self._writing = writing
        self._session: Session | None = None
        self.followups: list[Followup] = []
        #: False for a write that cannot change what a leaderboard shows at once (an upload: a
        #: new run or qrels version shows once the workers have evaluated it), so the rendered
        #: boards stay cached through a burst of submissions.
        self.changes_boards = True

    @property
    def session(self) -> Session:
        if self._session is None:
            self._session = self.factory()
            if self._writing:
                self._session.connection(execution_options={"sqlite_immediate": True})
        return self._session

    def collect(self, outcome: Outcome[T]) -> T:
        """Keep the outcome's follow-ups for after the commit; return its result."""
        self.followups.extend(outcome.followups)
        return outcome.result

    @property
    def opened(self) -> bool:
        return self._session is not None

    def commit(self) -> None:
        if self._session is not None:
            self._session.commit()

    def commit_and_close(self) -> None:
        try:
            self.commit()
        finally:
            self.close(rollback=False)

    def close(self, rollback: bool) -> None:
        if self._session is not None:
            if rollback:
                self._session.rollback()
            self._session.close()
            self._session = None


def unit_of_work_provider(factory: sessionmaker[Session], dispatch: Dispatch,
                          after_write: Callable[[bool], None] | None = None) -> Callable[..., AsyncIterator[UnitOfWork]]:
    """The dependency: commit after the handler (in a worker thread), then dispatch the
    follow-ups, then ``after_write(changes_boards)`` (e.g. drop caches) for writing requests."""

    async def provide_unit_of_work(request: Request[Any, Any, Any]) -> AsyncIterator[UnitOfWork]:
        writing = request.method not in SAFE_METHODS
        uow = UnitOfWork(factory, writing)
        slots: DatabaseSlots | None = request.app.state.get("db_slots")
        if request.route_handler.opt.get(OWN_TRANSACTIONS):
            slots = None  # its sessions open and close inside one thread trip
        async with slots.held(request.scope) if slots is not None else nullcontext():
            try:
                yield uow
            except BaseException:
                if uow.opened:
                    await anyio.to_thread.run_sync(uow.close, True)
                raise
            if uow.opened:  # one trip to a worker thread; none for a request served from memory
                await anyio.to_thread.run_sync(uow.commit_and_close)
        if uow.followups:
            # Committed is committed: a broker that is down now must not turn the stored upload
            # into an error (a retrying client would store it twice). The work is in the
            # database; the sweeper sends what the broker never got.
            try:
                await anyio.to_thread.run_sync(dispatch, list(uow.followups))
            except Exception:
                log.warning("could not hand %d follow-up(s) to the broker after the commit; the sweeper will "
                            "send them", len(uow.followups), exc_info=True)
        if writing and after_write is not None:
            after_write(uow.changes_boards)

    return provide_unit_of_work


class PrincipalCache:
    """Callers resolved in the last ``seconds``, by the sha256 of their credentials.

    Everyone refreshing the board sends the same token again and again: remembering its
    principal for a second keeps the hot path off the database (and off the thread pool).
    This process's own writes clear it at once (a revoked token, a new enrolment); another
    process's show within ``seconds``, as the cached boards do. 0 turns it off."""

    def __init__(self, seconds: float, max_entries: int = 4096) -> None:
        self.seconds = seconds
        self.max_entries = max_entries
        self._entries: dict[bytes, tuple[float, Principal]] = {}
        self.generation = 0  # bumped by clear(): a caller resolved before a write is not kept after it
        self._flights = SingleFlight()

    def get(self, key: bytes) -> Principal | None:
        hit = self._entries.get(key)
        return hit[1] if hit is not None and hit[0] > time.monotonic() else None

    def put(self, key: bytes, me: Principal, generation: int) -> None:
        if self.seconds <= 0 or generation != self.generation:
            return
        if len(self._entries) >= self.max_entries:
            self._entries.clear()
        self._entries[key] = (time.monotonic() + self.seconds, me)

    def clear(self) -> None:
        self._entries.clear()
        self.generation += 1

    async def resolve(self, key: bytes, make: Callable[[], Awaitable[Principal]]) -> Principal:
        """The caller of ``key``: remembered, or resolved once for all the requests that ask
        for it meanwhile (single flight: when a token's entry expires under a crowd of its
        requests, one database query, not one per request in flight). A failure (an unknown
        token, the database down) is every waiter's; a resolution that was cancelled leaves
        each waiter to resolve its own. A write's :meth:`clear` starts a new flight."""
        me = self.get(key)
        if me is not None:
            return me
        if self.seconds <= 0:  # nothing remembered: each request checks its own token
            return await make()
        generation = self.generation  # a write's clear() starts a new flight
        me, made = await self._flights.run((key, generation), make)
        if made:
            self.put(key, me, generation)
        return me


ANONYMOUS = Principal()  # the caller of a request without credentials (access.principal_for's)


def caller_from_header(factory: sessionmaker[Session], cache: PrincipalCache | None = None) -> Callable[..., Any]:
    """The dependency giving the caller of an API request (``Authorization: Bearer ...``).

    The token is checked in a short session of its own, inside one worker-thread trip, so a
    request never holds one connection while it waits for another; a caller seen in the last
    moment comes from ``cache`` without a thread or a connection, and a token whose entry has
    expired is looked up once for all its requests in flight (:meth:`PrincipalCache.resolve`).
    A request without credentials is anonymous at once."""

    async def provide_caller(request: Request[Any, Any, Any]) -> Principal:
        header = request.headers.get("authorization")
        if not header:
            return ANONYMOUS  # nothing to look up: no thread, no session

        def resolve() -> Awaitable[Principal]:
            return anyio.to_thread.run_sync(principal_with_session, factory, header)

        if cache is None:
            return await resolve()
        return await cache.resolve(hashlib.sha256(header.encode()).digest(), resolve)

    return provide_caller


def principal_with_session(factory: sessionmaker[Session], secret_or_header: str | None) -> Principal:
    with factory() as s:
        return access.principal_for(s, secret_or_header)
