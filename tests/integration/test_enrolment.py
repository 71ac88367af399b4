"""Teams take part in a collection by enrolment (invite or open), on both databases; and the
migration that introduced enrolment keeps every team's access where it had submitted."""

from __future__ import annotations

import re

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


# ------------------------------------------------------------------ a token never reaches further than its creator
def _reads(world: World, token: str, cid: int, rid: int) -> dict[str, int]:
    """What a participant token gets of collection ``cid`` and its run ``rid``: the status of
    each read, and of storing a run there."""
    c, h = world.client, auth(token)
    answers = {path: c.get(path, headers=h).status_code for path in (
        f"/api/collections/{cid}", f"/api/collections/{cid}/runs", f"/api/collections/{cid}/leaderboard",
        f"/api/collections/{cid}/judge-track/pool", f"/api/runs/{rid}", f"/api/runs/{rid}/file",
        f"/api/runs/{rid}/scores")}
    answers["store a run"] = c.post(f"/api/collections/{cid}/runs", content="0001 Q0 NTC-000-00001 1 2 probe\n",
                                    headers=h).status_code
    return answers


def test_an_organiser_cannot_mint_a_token_reaching_a_collection_it_does_not_organise(world: World) -> None:
    """Issue 34, item 1, the probe: the organiser of collection "other" only asks for a
    participant token of team alpha, enrolled in the private collection "task": 403, by the API
    and by the portal's Teams page (after enrolling alpha in its own collection), with or
    without naming its own collections; alpha's runs, scores and judge pool stay unread."""
    from tests.integration.test_portal import as_role, csrf_of

    c, t, cid, other = world.client, world.tokens, world.cid, world.other_cid
    org, intruder = auth(t["organiser"]), auth(t["other_organiser"])
    assert c.put(f"/api/collections/{cid}/judge-track", json={"accepts_judgments": True},
                 headers=org).status_code == 200
    for body in ({"role": "participant", "name": "x", "team": "alpha"},
                 {"role": "participant", "name": "x", "team": "alpha", "collections": [other]},
                 {"role": "participant", "name": "x", "team": "alpha", "collections": [cid]}):
        r = c.post("/api/tokens", json=body, headers=intruder)
        assert r.status_code == 403 and "never reaches further" in r.json()["detail"], (body, r.text)
    # enrolling alpha in its own collection is the organiser's right, but still makes no token of it
    assert c.post(f"/api/collections/{other}/teams", json={"team": "alpha"}, headers=intruder).status_code == 201
    assert c.post("/api/tokens", json={"role": "participant", "team": "alpha"}, headers=intruder).status_code == 403
    r = c.post(f"/c/{other}/teams", data={"csrf": csrf_of(world, "other_organiser"), "action": "token",
                                          "team": "alpha", "name": "x"}, headers=as_role(world, "other_organiser"))
    assert r.status_code == 403 and "never reaches further" in r.text
    assert not re.search(r"cf_[A-Za-z0-9_-]{40}", r.text)  # no secret on the page
    with world.factory() as s:
        from sqlalchemy import func, select

        from service.store.models import ApiToken
        assert s.scalar(select(func.count()).select_from(ApiToken).where(ApiToken.created_by != "root",
                                                                         ApiToken.role == "participant",
                                                                         ApiToken.name == "x")) == 0
    # the organiser of "task" makes one: alpha is enrolled in its collections only... no longer (also
    # in "other" now): refused as well, an admin's token is the one reaching both
    assert c.post("/api/tokens", json={"role": "participant", "team": "alpha"}, headers=org).status_code == 403
    assert c.post("/api/tokens", json={"role": "participant", "team": "alpha"},
                  headers=auth(t["admin"])).status_code == 201


def test_a_token_does_not_follow_its_team_into_another_organisers_collection(world: World) -> None:
    """The organiser of "other" makes team delta and a token of it (delta takes part nowhere
    else: allowed, scoped to "other"); the organiser of "task" later enrols delta in the private
    "task" and stores a run for it. That token reads nothing of "task" (the collection, delta's
    run, its file and scores, the judge pool) and stores no run there; an admin's token of delta
    reaches both. The token lists, reads and submits to "other" as before."""
    c, t, cid, other = world.client, world.tokens, world.cid, world.other_cid
    org, other_org, admin = auth(t["organiser"]), auth(t["other_organiser"]), auth(t["admin"])
    assert c.post("/api/teams", json={"name": "delta"}, headers=other_org).status_code == 201
    assert c.post(f"/api/collections/{other}/teams", json={"team": "delta"}, headers=other_org).status_code == 201
    minted = c.post("/api/tokens", json={"role": "participant", "team": "delta", "name": "d1"}, headers=other_org)
    assert minted.status_code == 201, minted.text
    scoped = minted.json()["token"]
    unscoped = c.post("/api/tokens", json={"role": "participant", "team": "delta"}, headers=admin).json()["token"]
    listed = c.get("/api/tokens", params={"team": "delta"}, headers=admin).json()["items"]
    assert [(x["scoped"], x["collections"]) for x in listed] == [(False, []), (True, [other])]
    # the organiser of "task" enrols delta, and stores a run for it
    assert c.post(f"/api/collections/{cid}/teams", json={"team": "delta"}, headers=org).status_code == 201
    c.put(f"/api/collections/{cid}/judge-track", json={"accepts_judgments": True}, headers=org)
    r = c.post(f"/api/collections/{cid}/runs", params={"team": "delta"}, content="0001 Q0 NTC-000-00001 1 2 d\n",
               headers=org)
    assert r.status_code == 201, r.text
    rid = r.json()["id"]
    refused = _reads(world, scoped, cid, rid)
    assert set(refused.values()) == {403}, refused
    reached = _reads(world, unscoped, cid, rid)
    assert all(code < 400 or path.endswith("/pool") for path, code in reached.items()), reached
    assert [x["id"] for x in c.get("/api/collections", headers=auth(scoped)).json()["items"]] == [other]
    assert c.get(f"/api/collections/{cid}/runs", headers=auth(unscoped)).json()["items"][0]["id"] == rid
    # in "other", where its maker organises, the token is a participant as before
    assert c.get(f"/api/collections/{other}", headers=auth(scoped)).json()["enrolled"] is True
    with world.factory() as s:
        from service.evaluation.permissions import access
        me = access.principal_for(s, f"Bearer {scoped}")
        assert (me.enrolled, me.reach) == ({other}, {other})


def test_a_scoped_token_enrols_its_team_where_enrolment_is_open_but_not_where_others_did(world: World) -> None:
    """Self-enrolment in a public collection whose enrolment is open is anyone's: a scoped token
    that enrols its team there reaches it from then on. Where its team is enrolled already (by an
    organiser, or another token of the team) it does not: that would read the team's runs made
    there by others."""
    c, t, cid, other = world.client, world.tokens, world.cid, world.other_cid
    other_org = auth(t["other_organiser"])
    assert c.patch(f"/api/collections/{other}", json={"visibility": "public", "enrolment": "open"},
                   headers=other_org).status_code == 200
    org = auth(t["organiser"])
    made = {team: c.post("/api/tokens", json={"role": "participant", "team": team}, headers=org).json()["token"]
            for team in ("alpha", "beta")}  # made by the organiser of "task": scoped to it
    alpha = auth(made["alpha"])
    r = c.post(f"/api/collections/{other}/enrolment", headers=alpha)
    assert r.status_code == 201 and c.get(f"/api/collections/{other}", headers=alpha).json()["enrolled"] is True
    r = c.post(f"/api/collections/{other}/runs", content="0001 Q0 NTC-000-00001 1 2 a\n", headers=alpha)
    assert r.status_code == 409 and "no topics yet" in r.text, r.text  # taken in: "other" has no topics to check it
    # beta is enrolled in "other" by its organiser; beta's token (scoped to "task") may not join in
    assert c.post(f"/api/collections/{other}/teams", json={"team": "beta"}, headers=other_org).status_code == 201
    r = c.post(f"/api/collections/{other}/enrolment", headers=auth(made["beta"]))
    assert r.status_code == 403 and "ask an admin" in r.json()["detail"]
    assert c.get(f"/api/collections/{other}", headers=auth(made["beta"])).json()["enrolled"] is False


def test_a_scoped_token_does_not_re_enrol_its_team_where_the_team_left_runs(world: World) -> None:
    """Removed from an open collection, a team's runs stay there: a token scoped elsewhere that
    enrolled the team again would own them (their files, scores). Refused as for a team still
    enrolled there."""
    c, t, other = world.client, world.tokens, world.other_cid
    other_org = auth(t["other_organiser"])
    assert c.patch(f"/api/collections/{other}", json={"visibility": "public", "enrolment": "open"},
                   headers=other_org).status_code == 200
    r = c.post(f"/api/collections/{other}/qrels", content="0001 0 NTC-000-00001 1\n", headers=other_org)
    assert r.status_code == 201, r.text
    assert c.post(f"/api/collections/{other}/teams", json={"team": "alpha"}, headers=other_org).status_code == 201
    run = c.post(f"/api/collections/{other}/runs", content="0001 Q0 NTC-000-00001 1 2 left\n",
                 headers=auth(t["alpha"]))  # the admin's token of alpha: unscoped
    assert run.status_code == 201, run.text
    assert c.delete(f"/api/collections/{other}/teams/alpha", headers=other_org).status_code == 200
    scoped = c.post("/api/tokens", json={"role": "participant", "team": "alpha"},
                    headers=auth(t["organiser"])).json()["token"]  # made by the organiser of "task"
    r = c.post(f"/api/collections/{other}/enrolment", headers=auth(scoped))
    assert r.status_code == 403 and "ask an admin" in r.json()["detail"], r.text
    assert c.get(f"/api/runs/{run.json()['id']}/scores", headers=auth(scoped)).status_code == 403


def test_a_scoped_token_loses_its_makers_collections_when_the_maker_is_revoked(world: World) -> None:
    """A scoped token reaches what its maker organises while the maker's token is valid: a
    revoked organiser's tokens no longer open its collections through it."""
    c, t, cid = world.client, world.tokens, world.cid
    admin = auth(t["admin"])
    maker = c.post("/api/tokens", json={"role": "organiser", "collections": [cid]}, headers=admin).json()
    made = c.post("/api/tokens", json={"role": "participant", "team": "alpha"},
                  headers=auth(maker["token"])).json()["token"]
    assert c.get(f"/api/collections/{cid}/runs", headers=auth(made)).status_code == 200
    listed = c.get("/api/tokens", params={"team": "alpha"}, headers=admin).json()["items"]
    assert [(x["scoped"], x["collections"]) for x in listed if x["prefix"] == made[:10]] == [(True, [cid])]
    assert c.delete(f"/api/tokens/{maker['id']}", headers=admin).status_code == 200
    assert c.get(f"/api/collections/{cid}/runs", headers=auth(made)).status_code in (403, 404)
    listed = c.get("/api/tokens", params={"team": "alpha"}, headers=admin).json()["items"]
    assert [(x["scoped"], x["collections"]) for x in listed if x["prefix"] == made[:10]] == [(True, [])]
