"""The engine's PostgreSQL timeouts on the real server (issue 34, item 7): a statement past
CRANFIELD_DB_STATEMENT_TIMEOUT is cancelled by the server and counts as "unavailable" (a 503 in
the API, a retry in the workers); the connection carries the keepalive settings."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from service.config import settings
from service.store.db import is_unavailable, make_engine
from tests.integration.conftest import PG_ADMIN, _unavailable


@pytest.fixture
def engine(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("CRANFIELD_DB_STATEMENT_TIMEOUT", "0.5")
    monkeypatch.setenv("CRANFIELD_NET_TIMEOUT", "8")
    settings.cache_clear()
    made = make_engine(PG_ADMIN)
    try:
        with made.connect() as conn:
            conn.execute(text("select 1"))
    except Exception as exc:  # noqa: BLE001
        _unavailable(f"PostgreSQL at {PG_ADMIN}", exc)
    yield made
    made.dispose()
    settings.cache_clear()


def test_a_runaway_statement_is_cancelled_and_answered_as_unavailable(engine) -> None:  # type: ignore[no-untyped-def]
    with engine.connect() as conn:
        assert conn.execute(text("show statement_timeout")).scalar() == "500ms"
        params = conn.connection.dbapi_connection.info.get_parameters()  # libpq's, on this side
        assert (params["tcp_user_timeout"], params["keepalives"], params["keepalives_idle"]) == ("8000", "1", "4")
        with pytest.raises(DBAPIError) as caught:
            conn.execute(text("select pg_sleep(3)"))
    assert getattr(caught.value.orig, "sqlstate", None) == "57014"
    assert is_unavailable(caught.value)
