"""Engines and sessions, for SQLite (the embedded default) and PostgreSQL alike."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import Session, sessionmaker


def make_engine(url: str) -> Engine:
    """An engine; SQLite gets WAL, foreign keys and a busy timeout (several worker processes share it)."""
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"timeout": 60})

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
    return create_engine(url, pool_pre_ping=True)


_ENGINES: dict[str, Engine] = {}


def engine_for(url: str) -> Engine:
    """One engine (and connection pool) per URL per process."""
    if url not in _ENGINES:
        _ENGINES[url] = make_engine(url)
    return _ENGINES[url]


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


def as_utc(value: datetime | None) -> datetime | None:
    """SQLite returns naive datetimes (stored as UTC); PostgreSQL aware ones."""
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=UTC)
