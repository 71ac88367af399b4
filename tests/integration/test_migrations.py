"""Alembic migrations: upgrade and downgrade on SQLite and PostgreSQL, and no drift between
the models and the migrations (an autogenerate comparison finds nothing to do)."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect

from service.store.db import make_engine
from service.store.migrate import downgrade, upgrade
from service.store.models import Base
from tests.integration.conftest import Backend


def test_upgrade_downgrade_and_no_pending_autogenerate(backend: Backend) -> None:
    url = backend.database_url  # the fixture has upgraded to head already
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            diff = compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}), Base.metadata)
        assert diff == [], f"models and migrations disagree: {diff}"
        tables = set(inspect(engine).get_table_names())
        assert set(Base.metadata.tables) <= tables
        downgrade(url, "base")
        engine.dispose()
        assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
        upgrade(url, "head")
        engine.dispose()
        assert set(Base.metadata.tables) <= set(inspect(engine).get_table_names())
    finally:
        engine.dispose()
