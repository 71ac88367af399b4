"""Property-based API tests from the OpenAPI schema (schemathesis): no request makes a 5xx.

Every operation is called with generated path, query and body values, anonymously and with
an admin token, against a real (SQLite) store holding an evaluated collection.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error

from service.api.app import create_app
from service.evaluation.access import create_token
from service.evaluation.pipeline import evaluate_item, plan_job, run_tests
from service.evaluation.setup import ConfigSpec, add_qrels, add_run, ensure_collection
from service.sample import CollectionSpec, generate
from service.store.db import session_factory, transaction
from service.store.migrate import upgrade

DB = Path(os.environ.get("CRANFIELD_SCHEMA_TEST_DB", f"/tmp/cranfield-schemathesis-{os.getpid()}.sqlite"))


def _app():  # type: ignore[no-untyped-def]
    DB.unlink(missing_ok=True)
    url = f"sqlite:///{DB}"
    upgrade(url)
    factory = session_factory(url)
    qrels, runs = generate(CollectionSpec(topics=4, runs=3, depth=10, docs_per_topic=30, judged_per_topic=15))
    with transaction(factory) as s:
        coll = ensure_collection(s, "task", ConfigSpec(official_metric="AP", metrics=("AP", "P@5")))
        coll.visibility, coll.leaderboard_released = "public", True
        add_qrels(s, coll, qrels.encode(), "q")
        for tag, text in runs.items():
            add_run(s, coll, text.encode(), tag)
        _, followups = plan_job(s, coll, "load")
        secret, _ = create_token(s, "admin", name="schemathesis")
    queue = list(followups)
    while queue:
        f = queue.pop(0)
        queue += evaluate_item(factory, f.id) if f.task == "evaluate_item" else run_tests(factory, f.id)
    global ADMIN
    ADMIN = secret
    return create_app(url, lambda followups: None)


ADMIN = ""
schema = schemathesis.openapi.from_asgi("/schema/openapi.json", _app())


@schema.parametrize()
@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@pytest.mark.parametrize("as_admin", [False, True])
def test_no_server_errors(case, as_admin: bool) -> None:  # type: ignore[no-untyped-def]
    headers = {"Authorization": f"Bearer {ADMIN}"} if as_admin else {}
    response = case.call(headers=headers)
    case.validate_response(response, checks=(not_a_server_error,))
