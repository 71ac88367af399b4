"""A use case fetches what it needs once and passes it down (issue 37, item 11).

A qrels upload read the collection's row three times in the use case (to authorise, to lock it
for the write, and again in the planning of the job, inside the same transaction), four with
the API's. Counted here as the SELECTs on ``collections`` the database receives."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import event

from service.evaluation.judging import qrels
from service.evaluation.organising.setup import ConfigSpec, add_qrels, ensure_collection
from service.evaluation.permissions.access import Principal
from service.store.db import engine_for, session_factory, transaction
from service.store.migrate import upgrade


@pytest.fixture()
def collection(tmp_path: Path) -> Iterator[tuple[str, int]]:
    url = f"sqlite:///{tmp_path / 'lookups.db'}"
    upgrade(url)
    with transaction(session_factory(url)) as s:
        coll = ensure_collection(s, "lookups", ConfigSpec(official_metric="AP"), "organiser")
        add_qrels(s, coll, b"1 0 d1 1\n1 0 d2 0\n", "qrels-v1", "organiser")
        cid = coll.id
    yield url, cid
    engine_for(url).dispose()


def test_a_qrels_upload_reads_the_collection_once_per_transaction(collection: tuple[str, int]) -> None:
    url, cid = collection
    selects: list[str] = []

    def count(conn, cursor, statement, parameters, context, executemany) -> None:  # type: ignore[no-untyped-def]
        if statement.lstrip().upper().startswith("SELECT") and "FROM collections" in statement:
            selects.append(statement)

    engine = engine_for(url)
    event.listen(engine, "before_cursor_execute", count)
    try:
        me = Principal(role="admin", name="admin")
        outcome = qrels.upload(session_factory(url), lambda _: me, cid, b"1 0 d1 2\n1 0 d2 0\n1 0 d3 1\n", "qrels-v2")
    finally:
        event.remove(engine, "before_cursor_execute", count)
    assert outcome.result["version"] == 2 and outcome.result["job"] is not None  # stored and planned
    # one read to authorise before the body is parsed, one locking read in the write transaction
    assert len(selects) == 2, selects
