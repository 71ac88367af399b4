"""Property-based API tests from the OpenAPI schema (schemathesis): no request makes a 5xx.

Every operation is called with path, query and body values generated from the typed schema
(bodies included), anonymously and as an admin, an organiser and a participant of an enrolled
team, against a real (SQLite) store holding an evaluated collection; the work a request hands
to the workers is done in-process, as a worker would.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error

from service.api.app import create_app
from service.evaluation.computing.task_table import run_here
from service.evaluation.organising.planning import plan_job
from service.evaluation.organising.setup import ConfigSpec, add_qrels, add_run, ensure_collection
from service.evaluation.permissions.access import create_token
from service.sample import CollectionSpec, generate
from service.store.db import session_factory, transaction
from service.store.migrate import upgrade

#: The store the generated requests go to. Every pytest-xdist worker imports this module to
#: collect its tests, and the schema is read from the application then; only the worker that
#: runs the tests fills the store (the ``store`` fixture), and removes it afterwards.
DB = Path(os.environ.get("CRANFIELD_SCHEMA_TEST_DB",
                         Path(tempfile.gettempdir()) / f"cranfield-schemathesis-{os.getpid()}.sqlite"))
URL = f"sqlite:///{DB}"
TOKENS: dict[str, str] = {}


def _app():  # type: ignore[no-untyped-def]
    factory = session_factory(URL)
    return create_app(URL, lambda followups: run_here(factory, followups))


@pytest.fixture(scope="module", autouse=True)
def store() -> Iterator[None]:
    """An evaluated, public collection, its team enrolled, and a token of each role."""
    _remove_store()
    upgrade(URL)
    factory = session_factory(URL)
    qrels, runs = generate(CollectionSpec(topics=4, runs=3, depth=10, docs_per_topic=30, judged_per_topic=15))
    with transaction(factory) as s:
        coll = ensure_collection(s, "task", ConfigSpec(official_metric="AP", metrics=("AP", "P@5")))
        coll.visibility, coll.leaderboard_released = "public", True
        add_qrels(s, coll, qrels.encode(), "q")
        for tag, text in runs.items():
            add_run(s, coll, text.encode(), tag, team="alpha")  # enrols team alpha
        _, followups = plan_job(s, coll, "load")
        TOKENS["admin"], _ = create_token(s, "admin", name="schemathesis")
        TOKENS["organiser"], _ = create_token(s, "organiser", name="org", collections=[coll.id])
        TOKENS["participant"], _ = create_token(s, "participant", name="p", team="alpha")
    run_here(factory, followups)
    yield
    _remove_store()


def _remove_store() -> None:
    from service.store.db import engine_for

    engine_for(URL).dispose()
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{DB}{suffix}").unlink(missing_ok=True)


schema = schemathesis.openapi.from_asgi("/schema/openapi.json", _app())


@schema.parametrize()
@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@pytest.mark.parametrize("role", ["anonymous", "admin", "organiser", "participant"])
def test_no_server_errors(case, role: str) -> None:  # type: ignore[no-untyped-def]
    headers = {"Authorization": f"Bearer {TOKENS[role]}"} if role in TOKENS else {}
    response = case.call(headers=headers)
    case.validate_response(response, checks=(not_a_server_error,))
