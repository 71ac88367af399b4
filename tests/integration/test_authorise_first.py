"""Authorise, then validate (issue 24, item 7): a caller who may not act is told so (401 without
a token, 403 with one) whatever it sends, in every door of the API and the portal; a refusal
of its request's form (400, 422), of the state (409) or a missing thing (404) would tell it
about a door it may not use, and about what is behind it.

The doors are the app's own route table, so a new route is walked without being named here.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from sqlalchemy import select

from service.store.models import ApiToken, PoolDocument
from tests.integration.conftest import World, auth
from tests.integration.test_portal import as_role, csrf_of

SQLITE_ONLY_BUT: set[str] = set()  # a question of rules, answered the same on both databases

MUTATING = {"POST", "PUT", "PATCH", "DELETE"}
#: Doors open to anyone: signing in and out.
OPEN_TO_ALL = {"/login", "/logout"}
#: Doors an enrolled team may use in the world's collection (its malformed request is then refused
#: as malformed): submitting runs and judgments.
OPEN_TO_ENROLLED = {"/api/collections/{cid:int}/runs", "/c/{cid:int}/submit",
                    "/api/collections/{cid:int}/judge-submissions", "/c/{cid:int}/judges/submissions"}
MALFORMED_JSON = b'{"released": "maybe", "name": 7, "depth": -1, '
MALFORMED_FORM = {"released": "maybe", "revealed": "perhaps", "name": "9 no", "depth": "deep", "metric": "nDCG@-1",
                  "team": "", "visibility": "everywhere", "topics": "\x00", "staged": "%%%", "action": "preview"}
CALLERS = ("anonymous", "beta", "gamma")  # beta: an enrolled team; gamma: a team that is not enrolled


def _doors() -> list[tuple[str, str, set[str]]]:
    """(method, path, query parameter names) of every state-changing route of the app (the
    route table's own, so a new route is walked without being named here)."""
    from service.api.app import create_app

    app = create_app("sqlite://", lambda followups: None)
    found = []
    for route in app.routes:
        for handler in getattr(route, "route_handlers", []):
            provided = handler.resolve_dependencies()
            names = set(handler.parsed_fn_signature.parameters) - set(provided) - set(route.path_parameters) - {
                "data", "request", "state", "scope"}
            for method in sorted(set(handler.http_methods) & MUTATING):
                found.append((method, route.path, names))
    return found


DOORS = _doors()


def _url(path: str, ids: dict[str, Any], query: set[str]) -> str:
    url = re.sub(r"\{(\w+):\w+\}", lambda m: str(ids[m.group(1)]), path)
    return url + ("?" + "&".join(f"{name}=%FF-not-{name}" for name in sorted(query)) if query else "")


def _world_ids(world: World) -> dict[str, Any]:
    c, admin = world.client, auth(world.tokens["admin"])
    assert c.post("/api/teams", json={"name": "gamma"}, headers=admin).status_code == 201
    world.tokens["gamma"] = c.post("/api/tokens", json={"role": "participant", "team": "gamma"},
                                   headers=admin).json()["token"]
    build = c.post(f"/api/collections/{world.cid}/pools", json={"depth": 5}, headers=admin).json()
    pid = c.get(f"/api/pool-builds/{build['id']}", headers=admin).json()["pool"]
    with world.factory() as s:
        tid = s.query(ApiToken.id).filter(ApiToken.role == "assessor").scalar()
    return {"cid": world.cid, "rid": world.run_ids["RUN-01"], "pid": pid, "tid": tid, "name": "official",
            "team": "alpha", "topic": "0001", "part": "nuggets"}


def test_the_walk_finds_the_doors() -> None:
    """Every state-changing route is in the table of doors (a route missing from it is a 500)."""
    from service.http.doors import ROUTES

    paths = {path for _, path, _ in DOORS}
    assert len(DOORS) > 50 and "/c/{cid:int}/console/release" in paths and "/api/runs/{rid:int}" in paths
    assert OPEN_TO_ENROLLED <= paths and OPEN_TO_ALL <= paths  # the exceptions still name real doors
    assert {(method, re.sub(r":\w+}", "}", path)) for method, path, _ in DOORS} == set(ROUTES)
    assert {path for (_, path), door in ROUTES.items() if door is None} == OPEN_TO_ALL


def test_a_caller_who_may_not_act_is_refused_before_its_request_is_read(world: World) -> None:
    """Every state-changing route, with a malformed body and malformed query parameters, as
    anonymous and as teams without the right (an enrolled one, one that is not enrolled), in a
    private and a public collection: 401 or 403, never 400, 404, 405, 409, 413 or 422; without a
    token, 401 even where the path names nothing that exists."""
    c = world.client
    ids = _world_ids(world)
    wrong = []
    for visibility in ("private", "public"):
        r = c.patch(f"/api/collections/{world.cid}", json={"visibility": visibility},
                    headers=auth(world.tokens["admin"]))
        assert r.status_code == 200, r.text
        for method, path, query in DOORS:
            if path in OPEN_TO_ALL:
                continue
            url = _url(path, ids, query)
            for role in CALLERS:
                if role == "beta" and path in OPEN_TO_ENROLLED:
                    continue
                if path.startswith("/api/"):
                    answer = c.request(method, url, content=MALFORMED_JSON, headers={
                        **auth(world.tokens.get(role)), "Content-Type": "application/json"})
                else:
                    form = {**MALFORMED_FORM, "csrf": csrf_of(world, role)}
                    answer = c.request(method, url, data=form, headers=as_role(world, role), follow_redirects=False)
                if answer.status_code != (401 if role == "anonymous" else 403):
                    wrong.append(f"{method} {url} as {role} ({visibility}): {answer.status_code} "
                                 f"{answer.text[:120]}")
    # Without a token nothing is looked up either: a run, pool or collection that does not exist is a 401 too.
    missing = {key: 2**31 - 1 for key in ("cid", "rid", "pid", "tid")} | {"name": "no-such-set", "team": "nobody",
                                                                           "topic": "none", "part": "nuggets"}
    for method, path, query in DOORS:
        if path not in OPEN_TO_ALL:
            answer = c.request(method, _url(path, missing, query), content=MALFORMED_JSON,
                               headers={"Content-Type": "application/json"}, follow_redirects=False)
            if answer.status_code != 401:
                wrong.append(f"{method} {path} with unknown ids, anonymous: {answer.status_code} {answer.text[:120]}")
    assert not wrong, f"{len(wrong)} doors read the request before refusing the caller:\n" + "\n".join(wrong)


def test_another_teams_set_names_cannot_be_found(world: World) -> None:
    """Asking for a set the caller may not see gets the same answer whether a set of that name
    exists (another team's, the organisers') or not, at every door that takes a set's name; a
    team at its limit submitting under a name it does not hold is refused the same way too."""
    c, org = world.client, auth(world.tokens["organiser"])
    ids = _world_ids(world)
    assert c.post(f"/api/collections/{world.cid}/judgment-sets", json={"name": "umbrela"}, headers=org).status_code \
        == 201
    assert c.put(f"/api/collections/{world.cid}/judge-track", json={"accepts_judgments": True, "max_sets_per_team": 1},
                 headers=org).status_code == 200
    with world.factory() as s:
        pooled = s.execute(select(PoolDocument.topic, PoolDocument.docno)
                           .where(PoolDocument.pool_id == ids["pid"])).all()
    judged = "".join(f"{topic} {docno} L{i % 3}\n" for i, (topic, docno) in enumerate(pooled))
    for team in ("alpha", "beta"):
        r = c.post(f"/api/collections/{world.cid}/judge-submissions", params={"name": f"{team}-llm"}, content=judged,
                   headers=auth(world.tokens[team]))
        assert r.status_code == 201, r.text
    base = f"/api/collections/{world.cid}/judgment-sets"
    asks = [("GET", base + "/{name}", None), ("PATCH", base + "/{name}", {"notes": "x"}),
            ("POST", base + "/{name}/evaluate", {}), ("POST", base + "/{name}/official", {}),
            ("GET", base + "/compare?a=official&b={name}", None),
            ("GET", f"/c/{world.cid}/judgment-sets/{{name}}", None),
            ("GET", f"/c/{world.cid}/judgment-sets/{{name}}/official", None),
            ("GET", f"/c/{world.cid}/qrels/compare?a=official&b={{name}}", None)]
    for role in ("alpha", "gamma", "anonymous", "assessor"):
        for method, path, body in asks:
            answers = set()
            for name in ("beta-llm", "umbrela", "no-such-set"):  # ("official": a word of the pages)
                headers = as_role(world, role) if path.startswith("/c/") else auth(world.tokens.get(role))
                r = c.request(method, path.format(name=name), json=body, headers=headers, follow_redirects=False)
                assert r.status_code in (401, 403), (role, method, path, name, r.status_code, r.text[:200])
                answers.add((r.status_code, re.sub(r'"request_id":"\w+"', "", r.text).replace(name, "NAME")))
            assert len(answers) == 1, (role, method, path, answers)
    # the team's own set is its to read; at its limit, a name held by another team is no news
    assert c.get(base + "/alpha-llm", headers=auth(world.tokens["alpha"])).status_code == 200
    answers = set()
    for name in ("beta-llm", "umbrela", "no-such-set"):
        r = c.post(f"/api/collections/{world.cid}/judge-submissions", params={"name": name}, content=judged,
                   headers=auth(world.tokens["alpha"]))
        answers.add((r.status_code, r.text.replace(name, "NAME")))
    assert len(answers) == 1 and next(iter(answers))[0] == 409 and "limit" in next(iter(answers))[1], answers


def test_a_team_under_its_limit_learns_nothing_of_other_teams_set_names(world: World) -> None:
    """A team's sets live in its own namespace: submitting under a name another team holds, or
    under a free one, makes a set of the team's own either way (the answer never depends on
    what others hold)."""
    c, org = world.client, auth(world.tokens["organiser"])
    ids = _world_ids(world)
    assert c.put(f"/api/collections/{world.cid}/judge-track", json={"accepts_judgments": True, "max_sets_per_team": 3,
                                                                    "max_versions_per_window": 5},
                 headers=org).status_code == 200
    with world.factory() as s:
        pooled = s.execute(select(PoolDocument.topic, PoolDocument.docno)
                           .where(PoolDocument.pool_id == ids["pid"])).all()
    judged = "".join(f"{topic} {docno} L{i % 3}\n" for i, (topic, docno) in enumerate(pooled))

    def submit(team: str, name: str) -> Any:
        return c.post(f"/api/collections/{world.cid}/judge-submissions", params={"name": name}, content=judged,
                      headers=auth(world.tokens[team]))

    assert submit("beta", "llm").json()["judgment_set"] == "beta-llm"
    assert submit("beta", "beta-x").json()["judgment_set"] == "beta-x"  # already in its namespace: kept
    held, free = submit("alpha", "beta-llm"), submit("alpha", "beta-free")
    assert (held.status_code, free.status_code) == (201, 201), (held.text, free.text)
    assert (held.json()["judgment_set"], free.json()["judgment_set"]) == ("alpha-beta-llm", "alpha-beta-free")
    assert {k for k in held.json()} == {k for k in free.json()}
