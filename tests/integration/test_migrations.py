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


def test_judgment_sets_migration_puts_every_earlier_version_in_an_official_set(backend: Backend) -> None:
    """Migration 0017 on a database holding collections from before it: each gets an "official"
    set holding all its versions (the current one its newest), and going back keeps them."""
    from sqlalchemy import text

    url = backend.database_url
    downgrade(url, "0016")
    engine = make_engine(url)
    try:
        with engine.begin() as conn:
            for cid, name in ((1, "with qrels"), (2, "without")):
                conn.execute(text("INSERT INTO collections (id, name, description, visibility, enrolment, "
                                  "leaderboard_released, topics_revealed, created_at) VALUES (:id, :name, '', "
                                  "'private', 'invite', false, false, CURRENT_TIMESTAMP)"), {"id": cid, "name": name})
            for vid, version in ((10, 1), (11, 2)):
                conn.execute(text("INSERT INTO qrels_versions (id, collection_id, version, uploaded_by, uploaded_at, "
                                  "source_name, checksum, n_judgments, level_counts, file) VALUES (:id, 1, :v, 'o', "
                                  "CURRENT_TIMESTAMP, 'q', 'x', 0, '{}', :f)"), {"id": vid, "v": version, "f": b""})
            conn.execute(text("UPDATE collections SET current_qrels_id = 11 WHERE id = 1"))
        upgrade(url, "head")
        engine.dispose()
        with engine.connect() as conn:
            sets = conn.execute(text("SELECT collection_id, id, name, source, current_version_id FROM judgment_sets "
                                     "ORDER BY collection_id")).all()
            assert [(c, n, src, cur) for c, _, n, src, cur in sets] == [(1, "official", "human", 11),
                                                                         (2, "official", "human", None)]
            official = {c: i for c, i, *_ in sets}
            assert dict(conn.execute(text("SELECT id, official_set_id FROM collections")).all()) == official
            assert conn.execute(text("SELECT DISTINCT judgment_set_id FROM qrels_versions")).scalars().all() == [
                official[1]]
        downgrade(url, "0016")
        engine.dispose()
        with engine.connect() as conn:
            assert conn.execute(text("SELECT id FROM qrels_versions ORDER BY id")).scalars().all() == [10, 11]
        upgrade(url, "head")
    finally:
        engine.dispose()
