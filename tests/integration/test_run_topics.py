"""The topics of a run's file, stored with the run (issue 26, item 4; migration 0021).

The run page, the comparison of two runs and the topic analysis tell a topic missing from a
run (scored 0 under ``missing: zero``) from a real 0. They read the run's stored topic list
(``run_topics``), never the file: the statements the application sends are recorded, and none
may fetch ``runs.file``; with the list gone (the one fallback) the same pages read the file
and show the same. On SQLite and PostgreSQL.
"""

from __future__ import annotations

import importlib.util
import json
import re
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Self

import pytest
from sqlalchemy import Engine, delete, event, select, text

from service.store.models import RunTopics
from tests.integration.conftest import Backend, World, auth
from tests.integration.test_portal import as_role

MIGRATION = Path(__file__).parents[2] / "migrations" / "versions" / "0021_run_topics.py"


class Statements:
    """Every SQL statement any engine of this process sends while recording (the application's
    engine is its own: ``create_app`` sizes its pool, replacing an engine made before)."""

    def __init__(self) -> None:
        self.engine, self.sent = Engine, []

    def _record(self, conn, cursor, statement, parameters, context, executemany) -> None:  # type: ignore[no-untyped-def]
        self.sent.append(statement)

    def __enter__(self) -> Self:
        event.listen(self.engine, "before_cursor_execute", self._record)
        return self

    def __exit__(self, *exc: object) -> None:
        event.remove(self.engine, "before_cursor_execute", self._record)

    def reading_the_file(self) -> list[str]:
        return [s for s in self.sent if re.search(r"\bruns\.file\b", s)]


@pytest.fixture
def gaps(world: World) -> Iterator[tuple[World, int, str]]:
    """Team alpha's run GAPS: RUN-02 without topic 0003 (missing: scored 0) and with only
    unjudged documents on 0004 (a real 0)."""
    lines = world.runs["RUN-02"].replace(" RUN-02\n", " GAPS\n").splitlines()
    body = "\n".join(line if not line.startswith("0004 ") else line.replace(" NTC-", " NOPE-", 1)
                     for line in lines if not line.startswith("0003 ")) + "\n"
    r = world.client.post(f"/api/collections/{world.cid}/runs", content=body, headers=auth(world.tokens["alpha"]))
    assert r.status_code == 201, r.text
    rid = world.run_ids["GAPS"] = r.json()["id"]
    yield world, rid, body


def _views(world: World, rid: int) -> dict[str, Any]:
    """What the three readers of the missing topics show for GAPS."""
    c, admin = world.client, auth(world.tokens["admin"])
    page = c.get(f"/runs/{rid}", params={"metric": "AP"}, headers=as_role(world, "alpha")).text
    compare = c.get(f"/api/collections/{world.cid}/compare", headers=admin,
                    params={"a": rid, "b": world.run_ids["RUN-01"], "metric": "AP"}).json()
    analysis = c.get(f"/api/collections/{world.cid}/topic-analysis", params={"metric": "AP"}, headers=admin).json()
    return {"page": sorted(re.findall(r'<tr data-topic="([^"]+)" data-state="missing">', page)),
            "compare": compare["missing"], "not_counted": compare["not_counted"],
            "analysis": {i["topic"]: i["missing"] for i in analysis["items"] if i["missing"]}}


def test_missing_topics_are_read_from_the_stored_list_never_from_the_file(gaps: tuple[World, int, str]) -> None:
    world, rid, body = gaps
    with world.factory() as s:
        stored = s.scalar(select(RunTopics.topics).where(RunTopics.run_id == rid))
    in_file = {line.split()[0] for line in body.splitlines()}
    assert stored is not None and set(stored) == in_file and "0003" not in stored and "0004" in stored
    with Statements() as recorded:
        views = _views(world, rid)
    assert recorded.reading_the_file() == []
    assert any("run_topics" in s for s in recorded.sent)  # the list is what was read
    evaluated = world.client.get(f"/api/runs/{rid}/scores", params={"metric": "AP"},
                                 headers=auth(world.tokens["alpha"])).json()["runs"]["GAPS"]["per_topic"]
    assert views["page"] == sorted(set(evaluated) - in_file) and "0003" in views["page"]
    assert evaluated["0004"] == 0.0 and "0004" not in views["page"]  # a real 0
    assert views["compare"]["GAPS"] == views["page"] and views["analysis"]["0003"] == 1

    # Runs without their lists (none is stored so: add_run writes it, migration 0021 listed the
    # older runs'): the pages read the files instead, as they always did, and show the same.
    with world.factory() as s:
        s.execute(delete(RunTopics))
        s.commit()
    with Statements() as recorded:
        assert _views(world, rid) == views
    assert recorded.reading_the_file()  # the recorder sees a file read when there is one


def test_deleting_a_run_deletes_its_topic_list(gaps: tuple[World, int, str]) -> None:
    world, rid, _ = gaps
    r = world.client.delete(f"/api/runs/{rid}", headers=auth(world.tokens["organiser"]))
    assert r.status_code in (200, 204), r.text
    with world.factory() as s:
        assert s.scalar(select(RunTopics.run_id).where(RunTopics.run_id == rid)) is None
        assert s.scalar(select(RunTopics.run_id).where(RunTopics.run_id == world.run_ids["RUN-01"])) is not None


def _migration() -> Any:
    spec = importlib.util.spec_from_file_location("migration_0021", MIGRATION)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_migration_0021_lists_the_topics_of_every_run_stored_before_it(backend: Backend) -> None:
    """Runs stored at revision 0020 (a byte-order mark, comments, blank lines, CRLF, indented
    lines, a run with no data line) get the topics their files have lines for, as the pages
    read them from the files until now; the files are read in batches bounded in bytes."""
    from service.evaluation.runs.run_results import _topics_in_file
    from service.store.db import make_engine
    from service.store.migrate import downgrade, upgrade

    files = {
        1: b"\xef\xbb\xbf301 Q0 d1 1 2.0 r\n302 Q0 d2 1 1.0 r\n",
        2: b"# a comment\r\n\r\n  7 Q0 a 1 3 r\r\n\t10 Q0 b 1 2 r\r\n#9 Q0 c 1 1 r\r\n7 Q0 c 2 1 r",
        3: b"# only a comment\n",
        4: "".join(f"{t:04d} Q0 doc{d} {d} {1 / d} r\n" for t in range(1, 51) for d in range(1, 41)).encode(),
    }
    url = backend.database_url
    downgrade(url, "0020")
    engine = make_engine(url)
    try:
        with engine.begin() as conn:
            conn.execute(text("INSERT INTO collections (id, name, description, visibility, enrolment, "
                              "leaderboard_released, topics_revealed, created_at) VALUES (1, 'c', '', 'private', "
                              "'invite', false, false, CURRENT_TIMESTAMP)"))
            conn.execute(text("INSERT INTO teams (id, name) VALUES (1, 't')"))
            for rid, body in files.items():
                conn.execute(text(
                    "INSERT INTO runs (id, collection_id, team_id, tag, description, is_baseline, is_primary, "
                    "submitted_at, submitted_by, status, status_reason, source_name, checksum, file, n_topics, "
                    "n_lines, depth) VALUES (:id, 1, 1, :tag, '', false, false, CURRENT_TIMESTAMP, '', "
                    "'validated', '', 'r', 'x', :file, 0, 0, 0)"),
                    {"id": rid, "tag": f"r{rid}", "file": zlib.compress(body, 1)})
        engine.dispose()
        upgrade(url, "head")
        with engine.connect() as conn:
            listed = dict(conn.execute(text("SELECT run_id, topics FROM run_topics")).all())
            listed = {rid: v if isinstance(v, list) else json.loads(v) for rid, v in listed.items()}
            assert listed == {1: ["301", "302"], 2: ["10", "7"], 3: [], 4: [f"{t:04d}" for t in range(1, 51)]}
            for rid, body in files.items():  # the same as the pages' reading of the file
                assert set(listed[rid]) == _topics_in_file(zlib.compress(body, 1))
            module = _migration()
            module.BATCH_BYTES = len(zlib.compress(files[4], 1)) - 1  # run 4 alone, over the budget
            assert list(module._batches(conn)) == [[1, 2, 3], [4]]
    finally:
        engine.dispose()
