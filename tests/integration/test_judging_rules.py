"""Regression tests of the judgment workflow's rules (review findings), on both databases.

The world (tests/integration/conftest.py) is a collection with qrels version 1 and three
runs (RUN-01 and RUN-02 of team alpha, RUN-03 of beta); work is done in-process.
"""

from __future__ import annotations

from sqlalchemy import select

from service.evaluation import analyses, judging
from service.evaluation.access import Principal
from service.store.db import transaction
from service.store.models import Analysis, Collection
from tests.integration.conftest import Backend, World, auth, run_inline

ADMIN = Principal(role="admin", name="test")


def _pool(world: World, depth: int = 40, **extra: object) -> dict:
    r = world.client.post(f"/api/collections/{world.cid}/pools", json={"depth": depth, **extra},
                          headers=auth(world.tokens["organiser"]))
    assert r.status_code == 201, r.text
    return r.json()


def _judged(world: World, pool_id: int, topic: str, label: str = "L1") -> str:
    text = world.client.get(f"/api/pools/{pool_id}/topics/{topic}", headers=auth(world.tokens["organiser"])).text
    return "".join(f"{line} {label}\n" for line in text.splitlines())


def test_uploads_are_read_as_the_qrels_reader_reads_them(world: World) -> None:
    """A BOM and comment lines are the reader's business: same lines, same numbers."""
    pool = _pool(world)
    body = "\ufeff# judged by an assessor\n" + _judged(world, pool["id"], "0001")
    r = world.client.post(f"/api/pools/{pool['id']}/judgments", content=body.encode("utf-8"),
                          headers=auth(world.tokens["assessor"]))
    assert r.status_code == 201, r.text
    bad = "# header\n" + _judged(world, pool["id"], "0002").replace(" L1\n", " L9\n", 1)
    r = world.client.post(f"/api/pools/{pool['id']}/judgments", content=bad, headers=auth(world.tokens["organiser"]))
    assert r.status_code == 422 and r.json()["error"]["line"] == 2 and "unknown level 9" in r.json()["error"]["message"]


def test_concurrent_uploads_keep_each_others_judgments(world: World, backend: Backend, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """An upload committed while another is being validated is not dropped by the second."""
    factory = backend.factory()
    pool = _pool(world)
    first, second = _judged(world, pool["id"], "0001", "L2"), _judged(world, pool["id"], "0002", "L1")
    real = judging.transaction
    state = {"inner": False}

    def transaction_after_a_competitor(f):  # type: ignore[no-untyped-def]
        # the competing upload commits after this one was validated, before it writes
        if not state["inner"]:
            state["inner"] = True
            monkeypatch.setattr(judging, "transaction", real)
            judging.submit_judgments(factory, lambda _: ADMIN, pool["id"], second.encode())
        return real(f)

    monkeypatch.setattr(judging, "transaction", transaction_after_a_competitor)
    doc, _ = judging.submit_judgments(factory, lambda _: ADMIN, pool["id"], first.encode())
    assert doc["qrels_version"] == 3
    with factory() as s:
        coll = s.get(Collection, world.cid)
        judged = judging.load_qrels(coll.current_qrels).to_mapping()
    assert all(judged["0001"][line.split()[1]] == 2 for line in first.splitlines())
    assert all(judged["0002"][line.split()[1]] == 1 for line in second.splitlines())


def test_a_priority_pool_takes_at_most_n_runs_per_team(world: World) -> None:
    c = world.client
    alpha = auth(world.tokens["alpha"])
    # alpha puts its second run first; its first run has no priority
    assert c.patch(f"/api/runs/{world.run_ids['RUN-02']}/settings", json={"priority": 1},
                   headers=alpha).status_code == 200
    assert c.patch(f"/api/runs/{world.run_ids['RUN-01']}/settings", json={"priority": 0},
                   headers=alpha).status_code == 400
    pool = _pool(world, 10, selection="priority", max_priority=1)
    assert sorted(pool["runs"]) == ["RUN-02", "RUN-03"]
    assert sorted(_pool(world, 10, max_priority=2)["runs"]) == ["RUN-01", "RUN-02", "RUN-03"]


def test_a_lost_analysis_is_sent_again_and_only_its_last_claim_stores(world: World, backend: Backend) -> None:
    factory = backend.factory()
    with transaction(factory) as s:
        row, _ = analyses.request(s, s.get(Collection, world.cid), ADMIN, "AP")
        aid = row.id
    with transaction(factory) as s:  # a worker claimed it, then was lost
        row = s.get(Analysis, aid)
        row.status, row.attempts, row.started_at = "running", 1, row.created_at
    assert analyses.compute(factory, aid) == []  # not queued: a duplicate delivery does nothing
    followups = analyses.sweep(factory, timeout=0)
    assert [f.id for f in followups] == [aid]
    run_inline(factory, followups)
    with factory() as s:
        row = s.get(Analysis, aid)
        assert row.status == "done" and row.attempts == 2 and row.result["leave_one_team_out"]["runs"]
        assert s.scalar(select(Analysis.id).where(Analysis.status != "done")) is None


def test_a_pool_is_refused_when_the_qrels_change_while_it_is_built(world: World, backend: Backend,
                                                                   monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import pytest

    from service.evaluation.access import Conflict
    from service.evaluation.views import upload_qrels

    factory = backend.factory()
    real = judging.transaction

    def transaction_after_a_new_version(f):  # type: ignore[no-untyped-def]
        monkeypatch.setattr(judging, "transaction", real)
        upload_qrels(factory, lambda _: ADMIN, world.cid, world.qrels.encode())  # version 2 arrives meanwhile
        return real(f)

    monkeypatch.setattr(judging, "transaction", transaction_after_a_new_version)
    with pytest.raises(Conflict, match="qrels changed"):
        judging.create_pool(factory, lambda _: ADMIN, world.cid, 10)
    pool_id = judging.create_pool(factory, lambda _: ADMIN, world.cid, 10)  # built again on version 2
    with factory() as s:
        from service.store.models import Pool, QrelsVersion

        assert s.get(QrelsVersion, s.get(Pool, pool_id).base_qrels_version_id).version == 2
