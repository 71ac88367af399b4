"""Regression tests of the judgment workflow's rules (review findings), on both databases.

The world (tests/integration/conftest.py) is a collection with qrels version 1 and three
runs (RUN-01 and RUN-02 of team alpha, RUN-03 of beta); work is done in-process.
"""

from __future__ import annotations

from sqlalchemy import func, select

from service.evaluation.analysing import analyses
from service.evaluation.common.work import TaskName
from service.evaluation.judging import judgments, pools
from service.evaluation.organising import idempotency
from service.evaluation.permissions.access import Principal
from service.store.db import transaction
from service.store.models import Analysis, Collection
from tests.integration.conftest import Backend, World, auth, run_inline

ADMIN = Principal(role="admin", name="test")


def _pool(world: World, depth: int = 40, **extra: object) -> dict:
    """Ask for a pool (the world's dispatch builds it in-process once the request commits)."""
    org = auth(world.tokens["organiser"])
    r = world.client.post(f"/api/collections/{world.cid}/pools", json={"depth": depth, **extra}, headers=org)
    assert r.status_code == 202 and r.json()["status"] == "pending", r.text
    build = world.client.get(f"/api/pool-builds/{r.json()['id']}", headers=org).json()
    assert build["status"] == "done" and build["error"] == "", build
    return world.client.get(f"/api/pools/{build['pool']}", headers=org).json()


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
    real = idempotency.transaction  # the upload's write transaction (idempotency.store_once)
    state = {"inner": False}

    def transaction_after_a_competitor(f):  # type: ignore[no-untyped-def]
        # the competing upload commits after this one was validated, before it writes
        if not state["inner"]:
            state["inner"] = True
            monkeypatch.setattr(idempotency, "transaction", real)
            judgments.submit_judgments(factory, lambda _: ADMIN, pool["id"], second.encode())
        return real(f)

    monkeypatch.setattr(idempotency, "transaction", transaction_after_a_competitor)
    doc = judgments.submit_judgments(factory, lambda _: ADMIN, pool["id"], first.encode()).result
    assert doc["qrels_version"] == 3
    with factory() as s:
        coll = s.get(Collection, world.cid)
        judged = pools.load_qrels(coll.current_qrels).to_mapping()
    assert all(judged["0001"][line.split()[1]] == 2 for line in first.splitlines())
    assert all(judged["0002"][line.split()[1]] == 1 for line in second.splitlines())


def test_a_priority_pool_takes_at_most_n_runs_per_team(world: World) -> None:
    c = world.client
    alpha = auth(world.tokens["alpha"])
    # alpha puts its second run first; its first run has no priority
    assert c.patch(f"/api/runs/{world.run_ids['RUN-02']}/settings", json={"priority": 1},
                   headers=alpha).status_code == 200
    assert c.patch(f"/api/runs/{world.run_ids['RUN-01']}/settings", json={"priority": 0},
                   headers=alpha).status_code == 422  # refused by the schema (priority >= 1)
    pool = _pool(world, 10, selection="priority", max_priority=1)
    assert sorted(pool["runs"]) == ["RUN-02", "RUN-03"]
    assert sorted(_pool(world, 10, max_priority=2)["runs"]) == ["RUN-01", "RUN-02", "RUN-03"]


def test_a_lost_analysis_is_sent_again_and_only_its_last_claim_stores(world: World, backend: Backend) -> None:
    factory = backend.factory()
    with transaction(factory) as s:
        row = analyses.request(s, s.get(Collection, world.cid), ADMIN, "AP").result
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

    from service.errors import Conflict
    from service.evaluation.judging.qrels import upload as upload_qrels

    factory = backend.factory()
    real = pools.transaction

    def transaction_after_a_new_version(f):  # type: ignore[no-untyped-def]
        monkeypatch.setattr(pools, "transaction", real)
        upload_qrels(factory, lambda _: ADMIN, world.cid, world.qrels.encode())  # version 2 arrives meanwhile
        return real(f)

    monkeypatch.setattr(pools, "transaction", transaction_after_a_new_version)
    with pytest.raises(Conflict, match="qrels changed"):
        pools.create_pool(factory, lambda _: ADMIN, world.cid, 10)
    pool_id = pools.create_pool(factory, lambda _: ADMIN, world.cid, 10)  # built again on version 2
    with factory() as s:
        from service.store.models import Pool, QrelsVersion

        assert s.get(QrelsVersion, s.get(Pool, pool_id).base_qrels_version_id).version == 2


def test_a_pool_build_fails_with_the_reason_when_the_qrels_change_before_the_worker_builds_it(
        world: World, backend: Backend) -> None:
    """The 409 rule of the synchronous build, as a failure recorded on the build."""
    from service.evaluation.judging.qrels import upload as upload_qrels
    from service.store.models import Pool

    factory = backend.factory()
    with factory() as s:
        before = s.scalar(select(func.count()).select_from(Pool))
    with transaction(factory) as s:
        outcome = pools.request_pool(s, s.get(Collection, world.cid), ADMIN, 10)
    assert outcome.result["status"] == "pending" and outcome.result["pool"] is None
    assert [(f.task, f.id) for f in outcome.followups] == [(TaskName.BUILD_POOL, outcome.result["id"])]
    upload_qrels(factory, lambda _: ADMIN, world.cid, world.qrels.encode())  # version 2 before the worker runs
    run_inline(factory, outcome.followups)
    with factory() as s:
        doc = pools.pool_request_doc(s, outcome.result["id"], ADMIN)
        assert s.scalar(select(func.count()).select_from(Pool)) == before
    assert doc["status"] == "failed" and doc["error"] == pools.QRELS_CHANGED and doc["pool"] is None
    assert doc["finished_at"] is not None and doc["params"] == {"depth": 10, "selection": "all", "max_priority": None}
    org = auth(world.tokens["organiser"])
    r = world.client.get(f"/api/pool-builds/{doc['id']}", headers=org)
    assert r.status_code == 200 and r.json()["status"] == "failed" and "qrels changed" in r.json()["error"]
    assert world.client.get(f"/api/pool-builds/{doc['id']}", headers=auth(world.tokens["alpha"])).status_code == 403
    assert _pool(world, 10)["excludes_judged_in_qrels_version"] == 2  # asked again: built on version 2


def test_a_pool_build_stores_one_pool_under_duplicate_deliveries_and_a_lost_worker(world: World,
                                                                                   backend: Backend) -> None:
    from service.evaluation.computing.task_table import run_here
    from service.store.models import Pool

    factory = backend.factory()
    with factory() as s:
        before = s.scalar(select(func.count()).select_from(Pool))
    with transaction(factory) as s:
        outcome = pools.request_pool(s, s.get(Collection, world.cid), ADMIN, 10, "priority", 1)
    bid = outcome.result["id"]
    assert analyses.claim(factory, bid, 3, (analyses.KIND, analyses.REDUCTION)) is None  # not an analysis's task
    assert analyses.claim(factory, bid, 3, (analyses.POOL,)) == 1  # a worker claims it, then is lost
    assert pools.build_pool(factory, bid) == []  # a duplicate delivery: not queued, does nothing
    with factory() as s:
        assert pools.pool_request_doc(s, bid, ADMIN)["status"] == "running"
    with transaction(factory) as s:  # ... long ago
        row = s.get(Analysis, bid)
        row.started_at = row.created_at
    followups = analyses.sweep(factory, timeout=0)
    assert [(f.task, f.id) for f in followups] == [(TaskName.BUILD_POOL, bid)]
    run_here(factory, followups + followups)  # sent twice: the second delivery finds it done
    with factory() as s:
        doc = pools.pool_request_doc(s, bid, ADMIN)
        assert doc["status"] == "done" and s.scalar(select(func.count()).select_from(Pool)) == before + 1
        pool = s.get(Pool, doc["pool"])
        assert (pool.selection, pool.max_priority, pool.depth) == ("priority", 1, 10)
        assert analyses.claimed(s, bid, 1) is None  # the lost worker's claim can no longer store
        assert [b["id"] for b in pools.pool_builds(s, s.get(Collection, world.cid), ADMIN)][0] == bid
    assert pools.build_pool(factory, bid) == []  # a late redelivery: nothing more


def test_a_pool_request_is_checked_as_the_synchronous_build_is(world: World, backend: Backend) -> None:
    import pytest

    from service.errors import Conflict, Forbidden, InvalidMeasure

    factory = backend.factory()
    with transaction(factory) as s:
        coll = s.get(Collection, world.cid)
        with pytest.raises(InvalidMeasure, match="depth is a positive integer"):
            pools.request_pool(s, coll, ADMIN, 0)
        with pytest.raises(InvalidMeasure, match="selection is one of"):
            pools.request_pool(s, coll, ADMIN, 5, "some")
        with pytest.raises(InvalidMeasure, match="max_priority"):
            pools.request_pool(s, coll, ADMIN, 5, "priority")
        with pytest.raises(Conflict, match="no run matches"):
            pools.request_pool(s, coll, ADMIN, 5, "primary")
        with pytest.raises(Forbidden):
            pools.request_pool(s, coll, Principal(role="participant", name="p"), 5)
        assert s.scalar(select(func.count()).select_from(Analysis)) == 0
    r = world.client.post(f"/api/collections/{world.cid}/pools", json={"depth": 0},
                          headers=auth(world.tokens["organiser"]))
    assert r.status_code in (400, 422), r.text


def _versions(world: World) -> list[int]:
    r = world.client.get(f"/api/collections/{world.cid}/qrels", headers=auth(world.tokens["organiser"]))
    return [v["version"] for v in r.json()["items"]]


def test_a_keyed_judgments_upload_retried_is_stored_once(world: World) -> None:
    """The same upload under one Idempotency-Key (the answer was lost): one qrels version, the
    first answer again; the same key with another file is a 422 and stores nothing."""
    pool = _pool(world)
    body = _judged(world, pool["id"], "0001", "L2")
    keyed = {**auth(world.tokens["assessor"]), "Idempotency-Key": "judged-0001"}
    first = world.client.post(f"/api/pools/{pool['id']}/judgments", content=body, headers=keyed)
    assert first.status_code == 201, first.text
    again = world.client.post(f"/api/pools/{pool['id']}/judgments", content=body, headers=keyed)
    assert again.status_code == 201 and again.json() == first.json(), again.text
    assert _versions(world) == [1, 2] and first.json()["qrels_version"] == 2
    other = world.client.post(f"/api/pools/{pool['id']}/judgments", content=body.replace(" L2\n", " L1\n", 1),
                              headers=keyed)
    assert other.status_code == 422 and "Idempotency-Key" in other.text, other.text
    assert _versions(world) == [1, 2]
    fresh = world.client.post(f"/api/pools/{pool['id']}/judgments", content=body,
                              headers={**auth(world.tokens["assessor"]), "Idempotency-Key": "judged-0001-bis"})
    assert fresh.status_code == 201 and fresh.json()["qrels_version"] == 3, fresh.text  # a new key: a new upload
    unkeyed = world.client.post(f"/api/pools/{pool['id']}/judgments", content=body,
                                headers=auth(world.tokens["assessor"]))
    assert unkeyed.status_code == 201 and unkeyed.json()["qrels_version"] == 4, unkeyed.text
    too_long = world.client.post(f"/api/pools/{pool['id']}/judgments", content=body,
                                 headers={**auth(world.tokens["assessor"]), "Idempotency-Key": "k" * 201})
    assert too_long.status_code in (400, 422) and _versions(world) == [1, 2, 3, 4], too_long.text


def test_judgments_idempotency_keys_belong_to_the_token(world: World) -> None:
    """Two tokens sending the same key (and file) make two uploads: neither gets the other's answer."""
    pool = _pool(world)
    body = _judged(world, pool["id"], "0001", "L3")
    answers = []
    for name in ("assessor", "organiser"):
        r = world.client.post(f"/api/pools/{pool['id']}/judgments", content=body,
                              headers={**auth(world.tokens[name]), "Idempotency-Key": "same-key"})
        assert r.status_code == 201, r.text
        answers.append(r.json()["qrels_version"])
    assert answers == [2, 3] and _versions(world) == [1, 2, 3]
    r = world.client.post(f"/api/pools/{pool['id']}/judgments", content=body,  # each token's retry: its own answer
                          headers={**auth(world.tokens["assessor"]), "Idempotency-Key": "same-key"})
    assert r.status_code == 201 and r.json()["qrels_version"] == 2, r.text
