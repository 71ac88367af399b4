"""Engines and sessions, for SQLite (the embedded default) and PostgreSQL alike."""

from __future__ import annotations

import logging
import math
import random
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TypeVar

from sqlalchemy import Engine, create_engine, event, func, select
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.orm import Session, sessionmaker

T = TypeVar("T")
log = logging.getLogger("cranfield.store")

#: PostgreSQL's "try again" errors: serialization_failure and deadlock_detected. Either means
#: the transaction was rolled back as a whole and the same work, run again, may succeed.
RETRYABLE_SQLSTATES = frozenset({"40001", "40P01"})


def make_engine(url: str) -> Engine:
    """An engine; SQLite gets WAL, foreign keys and a busy timeout (several worker processes share it)."""
    pool = _POOL_SIZES.get(url)
    # A server process sized in one place (docs/operations.md): ``size`` connections and no
    # overflow, and a caller that cannot get one within ``timeout`` seconds fails fast
    # (the API answers 503 with Retry-After) instead of queueing behind a stuck pool.
    sized = {} if pool is None else {"pool_size": pool[0], "max_overflow": 0, "pool_timeout": pool[1]}
    if url.startswith("sqlite"):
        in_memory = url.rstrip("/") == "sqlite:" or ":memory:" in url or "mode=memory" in url
        engine = create_engine(url, connect_args={"timeout": 60}, **({} if in_memory else sized))

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn, _record):  # type: ignore[no-untyped-def]
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.close()

        @event.listens_for(engine, "begin")
        def _sqlite_begin(conn):  # type: ignore[no-untyped-def]
            # Write transactions (``transaction()``) take the write lock at BEGIN, so a
            # read-then-write cannot deadlock on a lock upgrade when two workers finish at
            # once; reads begin deferred and never block anyone (WAL).
            immediate = conn.get_execution_options().get("sqlite_immediate", False)
            conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

        # Let SQLAlchemy's "begin" event issue BEGIN itself (pysqlite's own is disabled).
        @event.listens_for(engine, "connect", insert=True)
        def _no_pysqlite_begin(dbapi_conn, _record):  # type: ignore[no-untyped-def]
            dbapi_conn.isolation_level = None

        return engine
    bound = _NET_BOUNDS.get(url)
    engine = create_engine(url, pool_pre_ping=True, connect_args=postgres_connect_args(url, bound), **sized)
    if bound is not None:
        _answer_within(engine, bound / 3)
    return engine


def _answer_within(engine: Engine, seconds: float) -> None:
    """Before each new connection, reach PostgreSQL's port within ``seconds`` or fail at once.

    libpq waits at least 2 s for a connection (a connect timeout below that counts as 2), and a
    pooled connection found dead by the pre-ping (``tcp_user_timeout``) is replaced within the
    same checkout: without this, a request of the API waited for both while PostgreSQL dropped
    packets, longer than its queue timeout. With it: a third of the bound for the ping (which the
    kernel notices at its next retransmission, a few hundred ms after ``tcp_user_timeout``), a
    third for this (measured: 1.8 s at most with the default bound of 2 s).
    """
    @event.listens_for(engine, "do_connect")
    def _probe(dialect, _record, _cargs, cparams) -> None:  # type: ignore[no-untyped-def]  (None: libpq connects)
        host, port = cparams.get("host"), cparams.get("port") or 5432
        if not host or str(host).startswith("/") or "," in str(host):
            return  # a Unix socket, or several hosts: libpq's own timeout alone
        try:
            socket.create_connection((str(host), int(port)), timeout=seconds).close()
        except OSError as exc:
            raise dialect.loaded_dbapi.OperationalError(
                f"could not connect to PostgreSQL at {host}:{port} within {seconds:g} s: {exc}") from exc


def keepalive_timings(net_timeout: float) -> tuple[int, int, int]:
    """TCP keepalive (idle, interval, count) in whole seconds that declare a silent peer dead
    at most ``net_timeout`` seconds after its last word (2 s at least: the kernel counts whole
    seconds): half of it idle, then up to three probes in the other half."""
    idle = max(1, math.floor(net_timeout / 2))
    rest = max(1, math.floor(net_timeout) - idle)
    count = min(3, rest)
    return idle, rest // count, count


def postgres_connect_args(url: str, bound: float | None = None) -> dict[str, object]:
    """libpq's connection parameters that turn a silent partition into an error within
    seconds instead of TCP's retransmission back-off (tens of seconds to minutes): a connect
    timeout, TCP keepalives, TCP_USER_TIMEOUT (unacknowledged data) and a statement timeout
    (docs/operations.md, "Partitions"). ``bound`` (the API: its queue timeout) caps the
    network timeouts, so a request answers 503 in about that time when PostgreSQL is away.
    Parameters the URL sets itself are left as they are."""
    from service.config import settings

    cfg = settings().store
    # the API: a third of the bound for a pooled connection found dead, a third for a new one (_answer_within)
    net = cfg.net_timeout if bound is None else max(0.5, min(cfg.net_timeout, bound / 3))
    connect = cfg.connect_timeout if bound is None else min(cfg.connect_timeout, bound)
    idle, interval, count = keepalive_timings(net)
    args: dict[str, object] = {
        # libpq counts whole seconds and takes anything below 2 as 2
        "connect_timeout": max(2, math.ceil(connect)),
        "keepalives": 1, "keepalives_idle": idle, "keepalives_interval": interval, "keepalives_count": count,
        "tcp_user_timeout": int(net * 1000),  # milliseconds
    }
    if cfg.statement_timeout:
        args["options"] = f"-c statement_timeout={int(cfg.statement_timeout * 1000)}"
    given = set(make_url(url).query)
    return {k: v for k, v in args.items() if k not in given}


def db_now(s: Session) -> datetime:
    """Now on the database's clock: leases and deadlines are computed and compared on it, so
    that a worker whose own clock is wrong neither writes leases already expired nor takes a
    live attempt's work over (issue 34, item 7). PostgreSQL's ``clock_timestamp()``; SQLite is
    a file on this host, read by processes that share its clock, so this process's clock."""
    if s.get_bind().dialect.name == "postgresql":
        value = s.scalar(select(func.clock_timestamp()))
        assert value is not None
        return as_utc(value)  # type: ignore[return-value]
    return datetime.now(UTC)


_ENGINES: dict[str, Engine] = {}
_POOL_SIZES: dict[str, tuple[int, float]] = {}
_NET_BOUNDS: dict[str, float] = {}  # a server process's cap on the network timeouts (size_pool)


def engine_for(url: str) -> Engine:
    """One engine (and connection pool) per URL per process."""
    if url not in _ENGINES:
        _ENGINES[url] = make_engine(url)
    return _ENGINES[url]


def size_pool(url: str, size: int, timeout: float, net_bound: float | None = None) -> None:
    """Size this process's pool for ``url`` (before its engine is first made; the API's
    composition root calls it), and cap its network timeouts at ``net_bound`` seconds
    (:func:`postgres_connect_args`). An engine made earlier in this process (``cranfield serve
    --sample`` loads the sample first) is replaced, so the sizing always applies."""
    if _POOL_SIZES.get(url) != (size, timeout) or _NET_BOUNDS.get(url) != net_bound:
        _POOL_SIZES[url] = (size, timeout)
        if net_bound is None:
            _NET_BOUNDS.pop(url, None)
        else:
            _NET_BOUNDS[url] = net_bound
        engine = _ENGINES.pop(url, None)
        if engine is not None:
            engine.dispose()


def reset_after_fork() -> None:
    """In a forked child: forget the parent's pools without closing its connections."""
    for engine in _ENGINES.values():
        engine.dispose(close=False)
    _ENGINES.clear()


def session_factory(url: str) -> sessionmaker[Session]:
    return sessionmaker(engine_for(url), expire_on_commit=False)


@contextmanager
def transaction(factory: sessionmaker[Session]) -> Iterator[Session]:
    """A session in one write transaction: committed on success, rolled back on any error."""
    with factory() as session, session.begin():
        session.connection(execution_options={"sqlite_immediate": True})
        yield session


def is_retryable(exc: BaseException) -> bool:
    """A deadlock or serialization failure (PostgreSQL), or SQLite's "database is locked": the
    transaction was undone whole, so running it again is safe."""
    if not isinstance(exc, DBAPIError):
        return False
    orig = exc.orig
    state = getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)
    if state in RETRYABLE_SQLSTATES:
        return True
    return "database is locked" in str(orig)


def is_unavailable(exc: BaseException) -> bool:
    """The database cannot be reached or this process's pool is exhausted: a 503, not a bug."""
    if isinstance(exc, PoolTimeout):
        return True
    return isinstance(exc, DBAPIError) and bool(exc.connection_invalidated or _connection_failure(exc))


def _connection_failure(exc: DBAPIError) -> bool:
    state = getattr(exc.orig, "sqlstate", None) or ""
    # 08xxx connection exceptions, 57P01-57P03 admin shutdown / crash shutdown / cannot connect now,
    # 57014 a statement cancelled (CRANFIELD_DB_STATEMENT_TIMEOUT: the database stuck or swamped)
    # ... or the driver's own OperationalError without a state: "connection refused", and psycopg's
    # ConnectionTimeout ("connection timeout expired": PostgreSQL silent, CRANFIELD_DB_CONNECT_TIMEOUT)
    return state.startswith("08") or state in {"57P01", "57P02", "57P03", "57014"} or (
        state == "" and isinstance(exc, OperationalError) and "connect" in str(exc.orig).lower())


def retrying(work: Callable[[], T], attempts: int = 6, what: str = "a transaction") -> T:
    """Run ``work`` (which opens and commits its own transaction) again when the database undid
    it as a deadlock victim or serialization failure, with a short jittered back-off; the
    last failure propagates. Only whole transactions are retried, never a half of one."""
    for attempt in range(1, attempts + 1):
        try:
            return work()
        except DBAPIError as exc:
            if attempt == attempts or not is_retryable(exc):
                raise
            log.info("%s was undone by the database (%s); retry %d", what, type(exc.orig).__name__, attempt)
            time.sleep(random.uniform(0, 0.02 * 2 ** attempt))
    raise AssertionError("unreachable")


def as_utc(value: datetime | None) -> datetime | None:
    """SQLite returns naive datetimes (stored as UTC); PostgreSQL aware ones."""
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=UTC)
