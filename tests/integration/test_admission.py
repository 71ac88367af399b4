"""The API process's admission control in-process: slots are given back on every path, and
the limits answer 503 with Retry-After (issue 13, item 1)."""

from __future__ import annotations

from litestar.testing import TestClient

from service.api.app import create_app
from service.http.admission import ServerLimits
from tests.integration.conftest import Backend, World, auth


def test_refused_requests_give_their_database_slot_back(world: World, backend: Backend) -> None:
    """A bad token or a refused collection fails a dependency resolved after the unit of work;
    Litestar does not close the unit of work then, so the request gives the slot back itself.
    With two slots, forty refusals in a row would otherwise leave none."""
    app = create_app(backend.database_url, lambda followups: None,
                     limits=ServerLimits(threads=2, db_slots=2, queue_seconds=0.5, caller_cache_seconds=0))
    slots = app.state["db_slots"]
    with TestClient(app=app) as c:
        for _ in range(20):
            assert c.get(f"/api/collections/{world.cid}", headers=auth("not-a-token")).status_code == 401
            assert c.get(f"/api/collections/{world.other_cid}/runs",
                         headers=auth(world.tokens["alpha"])).status_code in (403, 404)
            assert c.post(f"/api/collections/{world.cid}/runs", content=b"garbage",
                          headers=auth(world.tokens["alpha"])).status_code == 422
        assert slots.in_use == 0
        r = c.get(f"/api/collections/{world.cid}/leaderboard", headers=auth(world.tokens["organiser"]))
        assert r.status_code == 200 and len(r.json()["rows"]) == 3


def test_beyond_the_in_flight_limit_the_answer_is_an_immediate_503(world: World, backend: Backend) -> None:
    app = create_app(backend.database_url, lambda followups: None, limits=ServerLimits(max_in_flight=0))
    with TestClient(app=app) as c:
        r = c.get(f"/api/collections/{world.cid}/leaderboard", headers=auth(world.tokens["organiser"]))
        assert r.status_code == 503 and r.headers["retry-after"] == "1"
        assert r.headers["content-type"].startswith("application/problem+json")
        assert r.json()["code"] == "unavailable"
        assert c.get("/health/live").status_code == 200  # the probes are never refused


def test_an_unreachable_database_is_a_503_not_a_500() -> None:
    """PostgreSQL down (here: nothing listens on the port): every request that needs it gets a
    503 with Retry-After, quickly, and the process stays alive to answer once it is back."""
    app = create_app("postgresql+psycopg://postgres@127.0.0.1:1/nothing?connect_timeout=2",
                     lambda followups: None)
    with TestClient(app=app) as c:
        for headers in ({}, auth("some-token")):
            r = c.get("/api/collections", headers=headers)
            assert r.status_code == 503, r.text
            assert int(r.headers["retry-after"]) >= 1 and r.json()["code"] == "unavailable"
        assert c.get("/health/live").status_code == 200
        assert c.get("/health/ready").status_code == 503


def test_the_in_flight_limit_counts_every_route_together(world: World, backend: Backend) -> None:
    """One counter for the process: a request in flight on one route counts against another
    route's (Litestar makes a middleware instance per route)."""
    import asyncio

    import httpx

    app = create_app(backend.database_url, lambda followups: None, limits=ServerLimits(max_in_flight=1))

    async def scene() -> tuple[int, int, int]:
        release = asyncio.Event()

        async def slow_body():  # type: ignore[no-untyped-def]
            yield b"0001 Q0 d1 1 1.0 slow\n"
            await release.wait()

        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
            upload = asyncio.create_task(c.post(f"/api/collections/{world.cid}/runs", content=slow_body(),
                                                headers=auth(world.tokens["alpha"])))
            await asyncio.sleep(0.3)  # the upload is in flight, its body still arriving
            other = await c.get("/api/collections", headers=auth(world.tokens["organiser"]))
            release.set()
            done = await upload
            after = await c.get("/api/collections", headers=auth(world.tokens["organiser"]))
            return other.status_code, done.status_code, after.status_code

    other, upload, after = asyncio.run(scene())
    assert other == 503 and after == 200 and upload in (201, 422)
