"""The scheduler's prune of bookkeeping rows (service/evaluation/computing/pruning.py), on SQLite and PostgreSQL:
idempotency keys past their retention and portal sessions that ended more than a grace period
ago are deleted, in bounded batches; everything else (a key a client may still retry under, a
live sign-in) is kept and keeps working.
"""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from sqlalchemy import func, select, update

from service.evaluation.computing import pruning
from service.evaluation.permissions import access
from service.store.db import transaction
from service.store.models import IdempotencyKey, PortalSession, Run, utcnow
from tests.integration.conftest import Backend, World, auth

DAY = 24 * 3600.0
RETENTION, GRACE = 7 * DAY, DAY


def _token(factory) -> int:  # type: ignore[no-untyped-def]
    with transaction(factory) as s:
        _, row = access.create_token(s, "admin", name="pruned")
        return row.id


def _keys(factory, token_id: int, ages: dict[str, float]) -> None:  # type: ignore[no-untyped-def]
    """Idempotency keys of the token, each ``ages[key]`` seconds old."""
    now = utcnow()
    with transaction(factory) as s:
        for key, age in ages.items():
            s.add(IdempotencyKey(token_id=token_id, scope="runs:1", key=key, request_hash="0" * 64,
                                 response={"id": 1}, created_at=now - timedelta(seconds=age)))


def _count(factory, model) -> int:  # type: ignore[no-untyped-def]
    with factory() as s:
        return s.scalar(select(func.count()).select_from(model)) or 0


def _names(factory) -> set[str]:  # type: ignore[no-untyped-def]
    with factory() as s:
        return set(s.scalars(select(IdempotencyKey.key)))


def test_old_keys_and_ended_sessions_go_recent_ones_and_live_sessions_stay(backend: Backend) -> None:
    factory = backend.factory()
    tid = _token(factory)
    _keys(factory, tid, {"old": RETENTION + 60, "older": 30 * DAY, "recent": RETENTION - 3600, "new": 0})
    now = utcnow()

    def ago(seconds: float):  # type: ignore[no-untyped-def]
        return now - timedelta(seconds=seconds)

    with transaction(factory) as s:
        live = access.open_session(s, tid, lifetime=3600)
        for name, created, expires, revoked in (
                ("expired-long-ago", ago(20 * DAY), ago(GRACE + 60), None),
                ("signed-out-long-ago", ago(3 * DAY), now + timedelta(days=10), ago(GRACE + 60)),
                ("expired-just-now", ago(20 * DAY), ago(60), None),
                ("signed-out-just-now", ago(3 * DAY), now + timedelta(days=10), ago(60)),
                ("live-and-old", ago(30 * DAY), now + timedelta(days=1), None)):
            s.add(PortalSession(secret_hash=name, token_id=tid, created_at=created, expires_at=expires,
                                revoked_at=revoked))
    assert pruning.prune(factory, retention=RETENTION, grace=GRACE) == {"idempotency_keys": 2,
                                                                        "portal_sessions": 2}
    assert _names(factory) == {"recent", "new"}
    with factory() as s:
        assert set(s.scalars(select(PortalSession.secret_hash))) == {
            access._hash(live), "expired-just-now", "signed-out-just-now", "live-and-old"}
        assert access.principal_for_session(s, live).token_id == tid  # the live sign-in still works
    # a pass with nothing to do is a no-op
    assert pruning.prune(factory, retention=RETENTION, grace=GRACE) == {"idempotency_keys": 0, "portal_sessions": 0}
    assert _names(factory) == {"recent", "new"} and _count(factory, PortalSession) == 4
    with factory() as s:
        assert access.principal_for_session(s, live).token_id == tid


def test_a_backlog_is_deleted_in_bounded_batches_over_several_passes(backend: Backend) -> None:
    factory = backend.factory()
    tid = _token(factory)
    _keys(factory, tid, {f"k{i}": RETENTION + 60 + i for i in range(11)} | {"kept": 60})
    assert pruning.prune(factory, retention=RETENTION, grace=GRACE, batch=3, max_batches=2)["idempotency_keys"] == 6
    assert _count(factory, IdempotencyKey) == 6
    assert pruning.prune(factory, retention=RETENTION, grace=GRACE, batch=3, max_batches=2)["idempotency_keys"] == 5
    assert pruning.prune(factory, retention=RETENTION, grace=GRACE, batch=3, max_batches=2)["idempotency_keys"] == 0
    assert _names(factory) == {"kept"}


def test_several_prunes_at_once_share_the_work(backend: Backend) -> None:
    """Two schedulers (or a redelivered task) pruning together: every old row deleted once, no
    error, no deadlock; the recent rows are kept."""
    factory = backend.factory()
    tid = _token(factory)
    _keys(factory, tid, {f"k{i}": RETENTION + 60 + i for i in range(300)} | {"kept": 60})
    results: list[dict[str, int]] = []
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def one() -> None:
        try:
            start.wait()
            results.append(pruning.prune(factory, retention=RETENTION, grace=GRACE, batch=7))
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    assert sum(r["idempotency_keys"] for r in results) == 300
    assert _names(factory) == {"kept"}


def test_a_keyed_retry_within_the_retention_is_still_answered_as_the_first(world: World, backend: Backend) -> None:
    factory = world.factory
    c, h = world.client, {**auth(world.tokens["alpha"]), "Idempotency-Key": "six-days-ago"}
    text = world.runs["RUN-01"].replace("RUN-01", "RUN-LATE")
    first = c.post(f"/api/collections/{world.cid}/runs", content=text, headers=h)
    assert first.status_code == 201, first.text
    with transaction(factory) as s:  # the upload was six days ago
        s.execute(update(IdempotencyKey).values(created_at=utcnow() - timedelta(days=6)))
    before = _count(factory, Run)
    assert pruning.prune(factory, retention=RETENTION, grace=GRACE)["idempotency_keys"] == 0
    again = c.post(f"/api/collections/{world.cid}/runs", content=text, headers=h)
    assert again.status_code == 201 and again.json()["id"] == first.json()["id"], again.text
    assert _count(factory, Run) == before  # no second run
    with transaction(factory) as s:  # ... eight days ago: past the retention, the key goes
        s.execute(update(IdempotencyKey).values(created_at=utcnow() - timedelta(days=8)))
    assert pruning.prune(factory, retention=RETENTION, grace=GRACE)["idempotency_keys"] == 1
    assert _count(factory, IdempotencyKey) == 0


def test_a_live_portal_sign_in_works_after_a_pass(backend: Backend) -> None:
    """A signed-in browser keeps its session through a prune; a sign-out two days ago is gone."""
    factory = backend.factory()
    tid = _token(factory)
    with transaction(factory) as s:
        live = access.open_session(s, tid, lifetime=3600)
        ended = access.open_session(s, tid, lifetime=3600)
        access.close_session(s, ended, now=utcnow() - timedelta(days=2))
    assert pruning.prune(factory, retention=RETENTION, grace=GRACE)["portal_sessions"] == 1
    with factory() as s:
        assert access.principal_for_session(s, live).token_id == tid
        assert s.scalar(select(PortalSession.id).where(PortalSession.secret_hash == access._hash(ended))) is None


def test_the_scheduled_task_prunes_with_the_settings(backend: Backend, monkeypatch: pytest.MonkeyPatch) -> None:
    from service.config import settings
    from workers.app import make_app
    from workers.tasks import prune

    monkeypatch.setenv("CRANFIELD_IDEMPOTENCY_RETENTION", str(2 * DAY))
    monkeypatch.setenv("CRANFIELD_PRUNE_INTERVAL", "600")
    settings.cache_clear()
    try:
        entry = make_app().conf.beat_schedule["prune-old-rows"]
        assert entry["task"] == "cranfield.prune" and entry["schedule"] == timedelta(seconds=600)
        factory = backend.factory()
        tid = _token(factory)
        _keys(factory, tid, {"three-days": 3 * DAY, "one-day": DAY})
        prune()  # the Celery task, run here
        assert _names(factory) == {"one-day"}
    finally:
        settings.cache_clear()
