"""Teams take part in a collection by enrolment (invite or open), on both databases; and the
migration that introduced enrolment keeps every team's access where it had submitted."""

from __future__ import annotations

from sqlalchemy import text

from tests.integration.conftest import Backend, World, auth

# Run on PostgreSQL too; the module's other tests run on SQLite only (conftest.py):
# the migration and enrolment rows; the other rules on SQLite.
SQLITE_ONLY_BUT = {"test_migration_enrols_teams_that_have_runs", "test_a_team_sees_and_submits_only_where_it_is_enrolled"}


def _gamma(world: World) -> str:
    """A participant of a team enrolled nowhere."""
    c, admin = world.client, auth(world.tokens["admin"])
    assert c.post("/api/teams", json={"name": "gamma"}, headers=admin).status_code == 201
    return c.post("/api/tokens", json={"role": "participant", "team": "gamma"}, headers=admin).json()["token"]


def test_a_team_sees_and_submits_only_where_it_is_enrolled(world: World) -> None:
    c, t, cid, other = world.client, world.tokens, world.cid, world.other_cid
    listed = c.get("/api/collections", headers=auth(t["alpha"])).json()
    assert [x["id"] for x in listed["items"]] == [cid] and listed["items"][0]["enrolled"] is True
    gamma = auth(_gamma(world))
    assert c.get("/api/collections", headers=gamma).json() == {"total": 0, "offset": 0, "items": []}
    for path in (f"/api/collections/{cid}", f"/api/collections/{cid}/leaderboard", f"/api/collections/{cid}/runs",
                 f"/api/runs/{world.run_ids['RUN-01']}"):
        assert c.get(path, headers=gamma).status_code == 403, path
    run = "0001 Q0 NTC-000-00001 1 2 gamma-1\n"
    assert c.post(f"/api/collections/{cid}/runs", content=run, headers=gamma).status_code == 403
    # a public, released collection is readable by every participant, but submission still needs enrolment
    org = auth(t["organiser"])
    c.patch(f"/api/collections/{cid}", json={"visibility": "public", "leaderboard_released": True}, headers=org)
    assert [x["id"] for x in c.get("/api/collections", headers=gamma).json()["items"]] == [cid]
    assert len(c.get(f"/api/collections/{cid}/leaderboard", headers=gamma).json()["rows"]) == 3
    r = c.post(f"/api/collections/{cid}/runs", content=run, headers=gamma)
    assert r.status_code == 403 and "enrolment" in r.json()["detail"]
    # enrolled by the organisers: it submits; removed: it no longer may
    r = c.post(f"/api/collections/{cid}/teams", json={"team": "gamma"}, headers=org)
    assert r.status_code == 201 and r.json()["team"] == "gamma"
    assert c.post(f"/api/collections/{cid}/teams", json={"team": "gamma"}, headers=org).status_code == 201
    assert [x["team"] for x in c.get(f"/api/collections/{cid}/teams", headers=org).json()["items"]] == \
        ["alpha", "beta", "gamma"]
    assert c.post(f"/api/collections/{cid}/runs", content=run, headers=gamma).status_code == 201
    assert c.delete(f"/api/collections/{cid}/teams/gamma", headers=org).status_code == 200
    assert c.delete(f"/api/collections/{cid}/teams/gamma", headers=org).status_code == 404
    r = c.post(f"/api/collections/{cid}/runs", content=run.replace("gamma-1", "gamma-2"), headers=gamma)
    assert r.status_code == 403
    r = c.post(f"/api/collections/{other}/teams", json={"team": "nobody"}, headers=auth(t["admin"]))
    assert r.status_code == 404


def test_open_enrolment(world: World) -> None:
    c, t, cid = world.client, world.tokens, world.cid
    gamma = auth(_gamma(world))
    r = c.post(f"/api/collections/{cid}/enrolment", headers=gamma)
    assert r.status_code == 403 and "invite" in r.json()["detail"]
    assert c.patch(f"/api/collections/{cid}", json={"enrolment": "open"},
                   headers=auth(t["organiser"])).json()["enrolment"] == "open"
    # open but private: ids are no secret, so a private collection's teams are enrolled by its organisers
    assert c.get("/api/collections", headers=gamma).json()["total"] == 0
    assert c.post(f"/api/collections/{cid}/enrolment", headers=gamma).status_code == 403
    assert c.get(f"/api/collections/{cid}", headers=gamma).status_code == 403
    c.patch(f"/api/collections/{cid}", json={"visibility": "public"}, headers=auth(t["organiser"]))
    assert c.post(f"/api/collections/{cid}/enrolment").status_code == 401
    assert c.post(f"/api/collections/{cid}/enrolment", headers=auth(t["organiser"])).status_code == 403
    assert c.post("/api/collections/9999/enrolment", headers=gamma).status_code == 404
    r = c.post(f"/api/collections/{cid}/enrolment", headers=gamma)
    assert r.status_code == 201 and r.json()["team"] == "gamma"
    assert c.get(f"/api/collections/{cid}", headers=gamma).json()["enrolled"] is True
    assert c.post(f"/api/collections/{cid}/runs", content="0001 Q0 NTC-000-00001 1 2 g\n",
                  headers=gamma).status_code == 201


def test_migration_enrols_teams_that_have_runs(backend: Backend) -> None:
    from service.store.db import make_engine
    from service.store.migrate import downgrade, upgrade

    url = backend.database_url
    downgrade(url, "0006")
    engine = make_engine(url)
    try:
        with engine.begin() as conn:
            conn.execute(text("INSERT INTO teams (id, name) VALUES (1, 'a'), (2, 'b'), (3, 'c')"))
            conn.execute(text("INSERT INTO collections (id, name, description, visibility, leaderboard_released, "
                              "topics_revealed, created_at) VALUES (1, 'x', '', 'private', false, false, "
                              "CURRENT_TIMESTAMP), (2, 'y', '', 'private', false, false, CURRENT_TIMESTAMP)"))
            for rid, coll, team in ((1, 1, 1), (2, 1, 1), (3, 1, 2), (4, 2, 2)):
                conn.execute(text(
                    "INSERT INTO runs (id, collection_id, team_id, tag, checksum, file, n_lines, n_topics, depth, "
                    "status, status_reason, source_name, description, is_baseline, is_primary, submitted_at, "
                    "submitted_by) VALUES (:id, :c, :t, :tag, :sum, :f, 1, 1, 1, 'received', '', '', '', false, "
                    "false, CURRENT_TIMESTAMP, '')"), {"id": rid, "c": coll, "t": team, "tag": f"r{rid}",
                                                 "sum": f"{rid:064d}", "f": b"x"})
        engine.dispose()
        upgrade(url, "head")
        with engine.connect() as conn:
            rows = sorted(tuple(r) for r in conn.execute(text("SELECT collection_id, team_id FROM enrolments")))
            modes = set(conn.execute(text("SELECT enrolment FROM collections")).scalars())
        assert rows == [(1, 1), (1, 2), (2, 2)] and modes == {"invite"}
    finally:
        engine.dispose()


def test_a_run_submitted_for_a_team_enrols_it(world: World) -> None:
    """Organisers submitting (or loading) a run for a team enrol it, the rule migration 0007
    applied to older databases: every team with a run in a collection takes part in it."""
    c, t, cid = world.client, world.tokens, world.cid
    gamma = auth(_gamma(world))
    assert c.get(f"/api/collections/{cid}", headers=gamma).status_code == 403
    r = c.post(f"/api/collections/{cid}/runs", params={"team": "gamma"}, content="0001 Q0 NTC-000-00001 1 2 g\n",
               headers=auth(t["organiser"]))
    assert r.status_code == 201 and r.json()["team"] == "gamma"
    assert c.get(f"/api/collections/{cid}", headers=gamma).json()["enrolled"] is True
    teams = c.get(f"/api/collections/{cid}/teams", headers=auth(t["organiser"])).json()["items"]
    assert "gamma" in [x["team"] for x in teams]


def test_a_removed_team_loses_its_runs_in_a_private_collection(world: World) -> None:
    c, t, cid = world.client, world.tokens, world.cid
    rid = world.run_ids["RUN-03"]  # team beta's
    beta = auth(t["beta"])
    assert c.get(f"/api/runs/{rid}/scores", headers=beta).status_code == 200
    assert c.delete(f"/api/collections/{cid}/teams/beta", headers=auth(t["organiser"])).status_code == 200
    for path in (f"/api/runs/{rid}", f"/api/runs/{rid}/scores", f"/api/runs/{rid}/file"):
        assert c.get(path, headers=beta).status_code == 403, path
    assert c.patch(f"/api/runs/{rid}/settings", json={"description": "x"}, headers=beta).status_code == 403
    assert c.post("/login", data={"token": t["beta"]}, follow_redirects=False).status_code == 303  # the portal
    assert c.get(f"/runs/{rid}").status_code == 403
    c.cookies.clear()
