"""One access policy: the policy module, the JSON API and the portal give the same answer to
the same question, for every role, resource and collection state.

Each question names a policy predicate, the API request that depends on it and (where the
portal has one) the page that does; "allowed" is a 2xx answer, "denied" a 401 or 403, and
anything else fails the test. The portal's navigation is checked too: a link to a page is
shown exactly when that page would open.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy import select

from service.evaluation.permissions import access, policy
from service.portal.forms import COOKIE, csrf_for
from service.store.models import Collection, JudgmentSet, Pool, PoolDocument, QrelsVersion, Run
from tests.integration.conftest import World, auth

ROLES = ("anonymous", "alpha", "beta", "gamma", "organiser", "other_organiser", "admin", "assessor")


@dataclass(frozen=True)
class Question:
    name: str
    allowed: Callable[[access.Principal, Collection, Run, Pool], bool]
    api: str | None  # a GET path; {cid}, {rid}, {sid} and {pid} are filled in (None: a portal-only page)
    portal: str | None = None
    nav: str | None = None  # the href of the portal's link to this page, on the board page


QUESTIONS = [
    Question("read the collection", lambda me, c, r, p: policy.may_read_collection(me, c), "/api/collections/{cid}"),
    Question("see the board", lambda me, c, r, p: policy.may_see_board(me, c), "/api/collections/{cid}/leaderboard",
             "/c/{cid}"),
    Question("see the significance matrix", lambda me, c, r, p: policy.may_see_results(me, c),
             "/api/collections/{cid}/significance", "/c/{cid}/significance", "/c/{cid}/significance"),
    Question("see the meta-evaluation", lambda me, c, r, p: policy.may_see_analyses(me, c),
             "/api/collections/{cid}/metaeval", "/c/{cid}/analysis", "/c/{cid}/analysis"),
    Question("see snapshots", lambda me, c, r, p: policy.may_see_analyses(me, c), "/api/collections/{cid}/snapshots",
             "/c/{cid}/snapshots", "/c/{cid}/snapshots"),
    Question("see the qrels", lambda me, c, r, p: policy.may_see_qrels(me, c), "/api/collections/{cid}/qrels",
             "/c/{cid}/qrels", "/c/{cid}/qrels"),
    Question("compare qrels versions", lambda me, c, r, p: policy.may_see_qrels(me, c),
             "/api/collections/{cid}/qrels/compare?a=1&b=1", "/c/{cid}/qrels/compare"),
    Question("manage pools", lambda me, c, r, p: policy.may_manage_pools(me, c), "/api/collections/{cid}/pools",
             "/c/{cid}/pools", "/c/{cid}/pools"),
    Question("manage teams", lambda me, c, r, p: policy.may_manage_teams(me, c), "/api/collections/{cid}/teams",
             "/c/{cid}/teams", "/c/{cid}/teams"),
    Question("see jobs", lambda me, c, r, p: policy.may_see_jobs(me, c), "/api/collections/{cid}/jobs"),
    Question("see the run", lambda me, c, r, p: policy.may_see_run(me, r, c), "/api/runs/{rid}", "/runs/{rid}"),
    Question("see the run's per-topic scores", lambda me, c, r, p: policy.may_see_run_topics(me, r, c),
             "/api/runs/{rid}/scores"),
    Question("download the run", lambda me, c, r, p: policy.may_see_run_details(me, r, c), "/api/runs/{rid}/file"),
    Question("see the run's curves", lambda me, c, r, p: policy.may_see_run_curve(me, r, c), "/api/runs/{rid}/curve"),
    Question("read a snapshot", lambda me, c, r, p: policy.may_see_snapshot(me, c), "/api/snapshots/{sid}",
             "/snapshots/{sid}"),
    Question("judge topic 0001 of a pool", lambda me, c, r, p: policy.may_read_pool(me, p) and policy.may_assess(
        me, c.id, "0001"), "/api/pools/{pid}/topics/0001", "/assess/{pid}/0001"),
    # richer boards: each shows the rows of the caller's board, so it asks the board's predicate
    Question("see every metric side by side", lambda me, c, r, p: policy.may_see_board(me, c),
             "/api/collections/{cid}/leaderboard/metrics", "/c/{cid}/metrics", "/c/{cid}/metrics"),
    Question("see the topic analysis", lambda me, c, r, p: policy.may_see_board(me, c),
             "/api/collections/{cid}/topic-analysis", "/c/{cid}/topics", "/c/{cid}/topics"),
    Question("download the run x topic matrix", lambda me, c, r, p: policy.may_see_board(me, c),
             "/api/collections/{cid}/matrix?format=csv", "/c/{cid}/matrix.csv"),
    Question("download the run's trec_eval scores", lambda me, c, r, p: policy.may_see_run_topics(me, r, c),
             "/api/runs/{rid}/scores?format=trec", "/runs/{rid}/scores.txt"),
    Question("download the run file from the portal", lambda me, c, r, p: policy.may_see_run_details(me, r, c),
             "/api/runs/{rid}/file", "/runs/{rid}/file"),
    Question("download a snapshot", lambda me, c, r, p: policy.may_see_snapshot(me, c),
             "/api/snapshots/{sid}?format=csv", "/snapshots/{sid}/board.csv"),
    # the organisers' console
    Question("read the topic statements", lambda me, c, r, p: policy.may_read_topics(me, c),
             "/api/collections/{cid}/topics", "/c/{cid}/topics/texts", "/c/{cid}/topics/texts"),
    Question("open the console", lambda me, c, r, p: policy.may_configure(me, c), "/api/collections/{cid}/audit",
             "/c/{cid}/console", "/c/{cid}/console"),
    Question("read the audit log", lambda me, c, r, p: policy.may_see_audit(me, c), "/api/collections/{cid}/audit",
             "/c/{cid}/console/audit"),
    Question("manage assessors", lambda me, c, r, p: policy.may_manage_pools(me, c),
             "/api/collections/{cid}/assessors", "/c/{cid}/console/assessors"),
    Question("list tokens", lambda me, c, r, p: policy.may_list_tokens(me), "/api/tokens", "/tokens"),
    Question("edit the settings", lambda me, c, r, p: policy.may_configure(me, c), None,
             "/c/{cid}/console/settings"),
    Question("manage the runs", lambda me, c, r, p: policy.may_configure(me, c), None, "/c/{cid}/console/runs"),
    Question("confirm a run's deletion", lambda me, c, r, p: policy.may_delete_run(me, c), None,
             "/c/{cid}/console/runs/{rid}/delete"),
    Question("create a collection", lambda me, c, r, p: policy.may_create_collection(me), None, "/collections/new"),
    Question("download every metric side by side", lambda me, c, r, p: policy.may_see_board(me, c),
             "/api/collections/{cid}/leaderboard/metrics?format=csv", "/c/{cid}/metrics.csv"),
    Question("download the topic table", lambda me, c, r, p: policy.may_see_board(me, c),
             "/api/collections/{cid}/topic-analysis?format=csv", "/c/{cid}/topics.csv"),
    # judgment sets and a judges track (issue 16): a team never reads the official judgments
    Question("list judgment sets", lambda me, c, r, p: policy.may_list_judgment_sets(me, c),
             "/api/collections/{cid}/judgment-sets", "/c/{cid}/judgment-sets", "/c/{cid}/judgment-sets"),
    Question("read the official judgment set", lambda me, c, r, p: policy.may_see_judgment_set(
        me, c, JudgmentSet(team_id=None)), "/api/collections/{cid}/judgment-sets/official",
             "/c/{cid}/judgment-sets/official"),
    Question("compare judgment sets", lambda me, c, r, p: policy.may_see_qrels(me, c),
             "/api/collections/{cid}/judgment-sets/compare?a=official&b=1", "/c/{cid}/qrels/compare?a=official&b=1"),
    Question("read the judges track", lambda me, c, r, p: policy.may_list_judgment_sets(me, c),
             "/api/collections/{cid}/judge-track"),
    Question("see the judge board", lambda me, c, r, p: policy.may_see_judge_board(me, c),
             "/api/collections/{cid}/judge-board", "/c/{cid}/judges", "/c/{cid}/judges"),
    Question("download the documents to judge", lambda me, c, r, p: policy.may_download_judge_pool(me, c),
             "/api/collections/{cid}/judge-track/pool", "/c/{cid}/judges/pool.txt"),
]

# (visibility, released, topic split: None / hidden / revealed); the judges track is open in the
# released states, so that each visibility and split is asked with the track open and closed
STATES = list(itertools.product(("private", "public"), (False, True), (None, "hidden", "revealed")))


def _set_state(world: World, visibility: str, released: bool, split: str | None) -> None:
    body: dict[str, Any] = {"visibility": visibility, "leaderboard_released": released,
                            "hidden_topics": ["0001", "0002"] if split else [], "topics_revealed": split == "revealed"}
    r = world.client.patch(f"/api/collections/{world.cid}", json=body, headers=auth(world.tokens["admin"]))
    assert r.status_code == 200, r.text
    r = world.client.put(f"/api/collections/{world.cid}/judge-track", json={"accepts_judgments": released},
                         headers=auth(world.tokens["admin"]))
    assert r.status_code == 200, r.text


def _verdict(status: int, what: str) -> bool:
    assert status in (200, 201, 401, 403), what
    return status < 300


def _principals(world: World) -> dict[str, access.Principal]:
    with world.factory() as s:
        return {role: access.principal_for(s, f"Bearer {world.tokens[role]}") if role in world.tokens
                else access.Principal() for role in ROLES}


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)  # a question of rules, not of the database
def test_policy_api_and_portal_agree(world: World) -> None:
    c, admin = world.client, auth(world.tokens["admin"])
    assert c.post("/api/teams", json={"name": "gamma"}, headers=admin).status_code == 201
    world.tokens["gamma"] = c.post("/api/tokens", json={"role": "participant", "team": "gamma"},
                                   headers=admin).json()["token"]
    rid = world.run_ids["RUN-01"]  # team alpha's
    sid = c.post(f"/api/collections/{world.cid}/snapshots", json={"label": "s"}, headers=admin).json()["id"]
    build = c.post(f"/api/collections/{world.cid}/pools", json={"depth": 5}, headers=admin).json()
    pid = c.get(f"/api/pool-builds/{build['id']}", headers=admin).json()["pool"]  # built by the in-process worker
    ids = {"cid": world.cid, "rid": rid, "sid": sid, "pid": pid}
    me_of = _principals(world)
    checked = 0
    for visibility, released, split in STATES:
        _set_state(world, visibility, released, split)
        with world.factory() as s:
            coll, run, pool = s.get(Collection, world.cid), s.get(Run, rid), s.get(Pool, pid)
            answers = {(q.name, role): q.allowed(me_of[role], coll, run, pool) for q in QUESTIONS for role in ROLES}
        for role in ROLES:
            headers = auth(world.tokens.get(role))
            c.cookies.clear()
            if role in world.tokens:  # the portal's sign-in cookie (a portal session, opened by signing in)
                assert c.post("/login", data={"token": world.tokens[role]}, follow_redirects=False).status_code == 303
            state = f"{visibility}, released={released}, split={split}, {role}"
            for q in QUESTIONS:
                expected = answers[(q.name, role)]
                if q.api:
                    r = c.get(q.api.format(**ids), headers=headers)
                    assert _verdict(r.status_code, f"API {q.api} {state}: {r.status_code} {r.text[:200]}") == \
                        expected, f"policy says {expected} but the API answers {r.status_code} to '{q.name}' ({state})"
                if q.portal:
                    page = c.get(q.portal.format(**ids), follow_redirects=False)
                    assert _verdict(page.status_code, f"portal {q.portal} {state}: {page.status_code}") == expected, \
                        f"policy says {expected} but the portal answers {page.status_code} to '{q.name}' ({state})"
                checked += 1
            if answers[("see the board", role)]:
                board = c.get(f"/c/{world.cid}").text
                for q in QUESTIONS:
                    if q.nav:
                        href = f'href="{q.nav.format(**ids)}"'
                        assert (href in board) == answers[(q.name, role)], \
                            f"the link {href} is {'missing' if answers[(q.name, role)] else 'shown'} ({state})"
    c.cookies.clear()
    assert checked == len(STATES) * len(ROLES) * len(QUESTIONS)


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_submission_rules_agree(world: World) -> None:
    """Submitting: enrolled teams within the window, organisers for a team at any time."""
    c, admin = world.client, auth(world.tokens["admin"])
    assert c.post("/api/teams", json={"name": "gamma"}, headers=admin).status_code == 201
    world.tokens["gamma"] = c.post("/api/tokens", json={"role": "participant", "team": "gamma"},
                                   headers=admin).json()["token"]
    me_of = _principals(world)
    for n, (visibility, window) in enumerate(itertools.product(("private", "public"), ("open", "closed"))):
        closes = None if window == "open" else "2020-01-01T00:00:00+00:00"
        c.patch(f"/api/collections/{world.cid}", json={"visibility": visibility, "submission_closes_at": closes},
                headers=admin)
        with world.factory() as s:
            coll = s.get(Collection, world.cid)
            for role in ROLES:
                me = me_of[role]
                expected = policy.may_submit(me, coll) and (
                    policy.may_organise(me, coll.id) or policy.window_open(coll))
                run = f"0001 Q0 NTC-000-00001 1 2 {role}-{n}\n"
                r = c.post(f"/api/collections/{world.cid}/runs", content=run, params={"team": "beta"},
                           headers=auth(world.tokens.get(role)))
                assert r.status_code in (201, 401, 403, 409), (role, r.text)
                assert (r.status_code == 201) == expected, (role, visibility, window, r.status_code, r.text)
                # the same through the portal's form (signed in with the cookie, CSRF token included)
                c.cookies.clear()
                secret = world.tokens.get(role)
                if secret:
                    assert c.post("/login", data={"token": secret}, follow_redirects=False).status_code == 303
                page = c.post(f"/c/{world.cid}/submit", files={"file": ("run.txt", run.replace(f"-{n}", f"-p{n}"))},
                              data={"csrf": csrf_for(c.cookies[COOKIE]) if secret else "", "team": "beta"},
                              follow_redirects=False)
                assert page.status_code in (303, 401, 403, 409), (role, page.status_code, page.text[:300])
                assert (page.status_code == 303) == expected, (role, visibility, window, page.status_code)
                c.cookies.clear()


# ------------------------------------------------------------------ reads keyed by a qrels version
# Every endpoint and page that takes a qrels version (or a set reference standing for one), with
# the predicate of what it reads; the version goes in for {v}. A new route taking such a
# parameter fails test_every_version_parameter_is_in_the_matrix until it is added here.
VERSION_READS: list[tuple[str, Callable[[access.Principal, Collection], bool]]] = [
    ("/api/collections/{cid}/leaderboard?qrels_version={v}", policy.may_see_board),
    ("/api/collections/{cid}/leaderboard?qrels_version={v}&format=latex", policy.may_see_board),
    ("/api/collections/{cid}/significance?qrels_version={v}", policy.may_see_results),
    ("/api/collections/{cid}/qrels/compare?a=1&b={v}", policy.may_see_qrels),
    ("/api/collections/{cid}/qrels/diff?old=1&new={v}", policy.may_see_qrels),
    ("/api/collections/{cid}/judgment-sets/compare?a=official&b={v}", policy.may_see_qrels),
    ("/c/{cid}?qrels_version={v}", policy.may_see_board),
    ("/c/{cid}/board.csv?qrels_version={v}", policy.may_see_board),
    ("/c/{cid}/board.tex?qrels_version={v}", policy.may_see_board),
    ("/c/{cid}/qrels?old=1&new={v}", policy.may_see_qrels),
    ("/c/{cid}/qrels/compare?a=1&b={v}", policy.may_see_qrels),
    ("/c/{cid}/qrels/compare.csv?a=1&b={v}", policy.may_see_qrels),
]
#: Parameters that name a qrels version or a set standing for one, and the routes that take one
#: but read nothing under it: "a"/"b" of /compare are runs, "version" of the judgment-set pages
#: echoes what a form just stored, and the metrics board (the board's selectors) reads the
#: board's own version whatever ?qrels_version= says.
VERSION_PARAMETERS = {"qrels_version", "version", "old", "new", "a", "b"}
NOT_VERSION_READS = {"/api/collections/{cid:int}/compare", "/c/{cid:int}/compare", "/c/{cid:int}/judges",
                     "/c/{cid:int}/judgment-sets", "/c/{cid:int}/metrics", "/c/{cid:int}/metrics.csv",
                     # collections of answers only (this world's is of ranked lists: a 409 for everyone
                     # allowed); its every role on its own sets: tests/integration/test_answer_set_comparison.py
                     "/api/collections/{cid:int}/answer-judgments/compare"}
VERSION_ROLES = ("organiser", "admin", "anonymous", "alpha", "beta", "judges", "other_organiser", "assessor")
VERSION_STATES = (("private", False), ("private", True), ("public", True))  # unreleased, released, public


def test_every_version_parameter_is_in_the_matrix() -> None:
    from service.api.app import create_app

    app = create_app("sqlite://", lambda followups: None)
    covered = {path.split("?")[0].replace("{cid}", "{cid:int}") for path, _ in VERSION_READS}
    for route in app.routes:
        for handler in getattr(route, "route_handlers", []):
            if "GET" in handler.http_methods and VERSION_PARAMETERS & _parameters(handler):
                assert route.path in covered | NOT_VERSION_READS, f"{route.path} takes a qrels version: add it"
    assert {"/c/{cid:int}", "/c/{cid:int}/board.tex"} <= covered  # (their version comes through a dependency)


def _parameters(handler: Any) -> set[str]:
    """The names a route handler takes, its dependencies' included (the board's selectors)."""
    provided, names, todo = handler.resolve_dependencies(), set(), list(handler.parsed_fn_signature.parameters)
    while todo:
        name = todo.pop()
        if name not in names:
            names.add(name)
            if name in provided:
                todo += list(provided[name].parsed_fn_signature.parameters)
    return names


def _judge_sets(world: World) -> dict[str, int]:
    """Besides the official version 1: an organisers' set (version 2), and the judges track's
    sets of two teams, "judges" (version 3) and beta (version 4)."""
    c, admin, org = world.client, auth(world.tokens["admin"]), auth(world.tokens["organiser"])
    assert c.post("/api/teams", json={"name": "judges"}, headers=admin).status_code == 201
    assert c.post(f"/api/collections/{world.cid}/teams", json={"team": "judges"}, headers=admin).status_code == 201
    world.tokens["judges"] = c.post("/api/tokens", json={"role": "participant", "team": "judges"},
                                    headers=admin).json()["token"]
    relabelled = "".join(f"{line.rsplit(' ', 1)[0]} L{(i % 3)}\n" for i, line in enumerate(world.qrels.splitlines())
                         if not line.endswith("L-1"))
    assert c.post(f"/api/collections/{world.cid}/judgment-sets", json={"name": "umbrela"}, headers=org).status_code \
        == 201
    build = c.post(f"/api/collections/{world.cid}/pools", json={"depth": 5}, headers=org).json()
    pid = c.get(f"/api/pool-builds/{build['id']}", headers=org).json()["pool"]  # built by the in-process worker
    with world.factory() as s:
        pooled = s.execute(select(PoolDocument.topic, PoolDocument.docno).where(PoolDocument.pool_id == pid)).all()
    judged = "".join(f"{topic} {docno} L{i % 3}\n" for i, (topic, docno) in enumerate(pooled))
    r = c.post(f"/api/collections/{world.cid}/qrels", params={"judgment_set": "umbrela"}, content=relabelled,
               headers=org)
    assert r.status_code == 201 and r.json()["version"] == 2, r.text
    assert c.put(f"/api/collections/{world.cid}/judge-track", json={"accepts_judgments": True},
                 headers=org).status_code == 200
    found = {"official": 1, "organisers": 2}
    for team, version in (("judges", 3), ("beta", 4)):
        r = c.post(f"/api/collections/{world.cid}/judge-submissions", params={"name": f"{team}-llm"},
                   content=judged, headers=auth(world.tokens[team]))
        assert r.status_code == 201 and r.json()["version"] == version, r.text
        found[team] = version
    return found


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_every_read_keyed_by_a_qrels_version_follows_one_rule(world: World) -> None:
    """For each role and collection state, each version read with the official version, an
    organisers' set's, a judges track team's (another team's, or the caller's own) and a
    version that does not exist: 200 when the read's predicate and ``policy.may_read_version``
    allow it, 401/403 when the read's predicate does not, else 404, the same answer as for a
    version that does not exist (the number tells nothing of other sets)."""
    from tests.integration.test_portal import as_role

    c = world.client
    numbers = _judge_sets(world)
    me_of = _principals(world)
    with world.factory() as s:
        me_of["judges"] = access.principal_for(s, f"Bearer {world.tokens['judges']}")
    c.cookies.clear()
    checked = 0
    for visibility, released in VERSION_STATES:
        r = c.patch(f"/api/collections/{world.cid}", json={"visibility": visibility, "leaderboard_released": released},
                    headers=auth(world.tokens["admin"]))
        assert r.status_code == 200, r.text
        with world.factory() as s:
            coll = s.get(Collection, world.cid)
            official_set = coll.official_set_id
            set_of = {v.version: v.judgment_set_id for v in s.scalars(select(QrelsVersion))}
        for path, predicate in VERSION_READS:
            unknown: dict[str, str] = {}  # role -> the answer for a version that does not exist
            for number in (99, *numbers.values()):
                url = path.format(cid=world.cid, v=number)
                for role in VERSION_ROLES:  # organisers first: a board they were shown is never served to others
                    me = me_of[role]
                    if not predicate(me, coll) and number != 99:
                        continue  # refused whatever the version: asked once, with a version that does not exist
                    state = f"{url} as {role} ({visibility}, released={released})"
                    headers = as_role(world, role) if url.startswith("/c/") else auth(world.tokens.get(role))
                    answer = c.get(url, headers=headers, follow_redirects=False)
                    if not predicate(me, coll):
                        assert answer.status_code in (401, 403), f"{state}: {answer.status_code} {answer.text[:200]}"
                    elif number in set_of and policy.may_read_version(me, coll, set_of[number] == official_set):
                        assert answer.status_code == 200, f"{state}: {answer.status_code} {answer.text[:200]}"
                    else:
                        assert answer.status_code == 404, f"{state}: {answer.status_code} {answer.text[:200]}"
                        unknown.setdefault(role, _unnumbered(answer.text, number))
                        assert _unnumbered(answer.text, number) == unknown[role], state
                    checked += 1
    assert checked > len(VERSION_STATES) * len(VERSION_READS) * len(VERSION_ROLES)


def _unnumbered(text: str, number: int) -> str:
    """An answer without the version number it names (a request id aside, it is all the same)."""
    return re.sub(r'"request_id":"[^"]*"', "", text.replace(f"version {number}", "version N")
                  .replace(f"={number}", "=N"))


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_only_who_may_configure_changes_the_judges_track_limits(world: World) -> None:
    """The judges track's limits (sets and versions per team, the window) for every role, in the
    API and the portal's settings form: changed exactly when ``policy.may_configure`` allows it,
    401/403 otherwise, and a refused attempt leaves them as they were."""
    c, admin = world.client, auth(world.tokens["admin"])
    assert c.post("/api/teams", json={"name": "gamma"}, headers=admin).status_code == 201
    world.tokens["gamma"] = c.post("/api/tokens", json={"role": "participant", "team": "gamma"},
                                   headers=admin).json()["token"]
    me_of = _principals(world)
    with world.factory() as s:
        coll = s.get(Collection, world.cid)
        allowed = {role: policy.may_configure(me_of[role], coll) for role in ROLES}
    assert {role for role, ok in allowed.items() if ok} == {"organiser", "admin"}

    def limits() -> tuple[int, int, int, int]:
        t = c.get(f"/api/collections/{world.cid}/judge-track", headers=admin).json()
        return t["max_sets_per_team"], t["max_versions_per_team"], t["max_versions_per_window"], t["window_hours"]

    for n, role in enumerate(ROLES, start=2):
        before = limits()
        wanted = {"max_sets_per_team": n, "max_versions_per_team": 10 * n, "max_versions_per_window": n,
                  "window_hours": n}
        r = c.put(f"/api/collections/{world.cid}/judge-track", json=wanted, headers=auth(world.tokens.get(role)))
        assert r.status_code == (200 if allowed[role] else 401 if role == "anonymous" else 403), (role, r.text)
        assert limits() == (tuple(wanted.values()) if allowed[role] else before), role
        # the portal's form, signed in with the cookie (CSRF token included)
        c.cookies.clear()
        secret = world.tokens.get(role)
        if secret:
            assert c.post("/login", data={"token": secret}, follow_redirects=False).status_code == 303
        form = {k: str(v + 1) for k, v in wanted.items()} | {"csrf": csrf_for(c.cookies[COOKIE]) if secret else ""}
        before = limits()
        page = c.post(f"/c/{world.cid}/judges/settings", data=form, follow_redirects=False)
        c.cookies.clear()
        assert page.status_code in ((303,) if allowed[role] else (401, 403)), (role, page.status_code, page.text[:300])
        assert limits() == (tuple(int(form[k]) for k in wanted) if allowed[role] else before), role
