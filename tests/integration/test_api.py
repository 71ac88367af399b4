"""The HTTP API on both databases: the flow, every role against every endpoint, bad uploads.

Evaluation work the API hands out is run in-process here (what a worker does); the store,
the migrations and the use cases are real.
"""

from __future__ import annotations

import re

import pytest
from litestar.testing import TestClient

from service.api.app import create_app
from service.evaluation.permissions.access import create_token
from service.sample import generate
from service.store.db import transaction
from tests.integration.conftest import SPEC, Backend, World, auth, run_inline

# Run on PostgreSQL too; the module's other tests run on SQLite only (conftest.py):
# the flow, tokens, stored tests and uploads on both databases; roles and views on SQLite.
SQLITE_ONLY_BUT = {"test_flow_leaderboard_and_corrected_qrels", "test_tokens_are_stored_hashed_and_bad_tokens_are_401",
                   "test_previous_results_stay_served_during_a_reevaluation_and_multipart_uploads",
                   "test_every_metric_is_tested_and_letters_match_the_stored_tests"}


def test_flow_leaderboard_and_corrected_qrels(world: World) -> None:
    c, t = world.client, world.tokens
    board = c.get(f"/api/collections/{world.cid}/leaderboard", headers=auth(t["organiser"])).json()
    assert board["metric"] == "nDCG@10" and board["qrels_version"] == 1 and len(board["rows"]) == 3
    assert [r["rank"] for r in board["rows"]] == [1, 2, 3]
    # participants see only their own team's rows until the leaderboard is released
    mine = c.get(f"/api/collections/{world.cid}/leaderboard", headers=auth(t["beta"])).json()
    assert [r["team"] for r in mine["rows"]] == ["beta"]
    assert c.patch(f"/api/collections/{world.cid}", json={"leaderboard_released": True, "visibility": "public"},
                   headers=auth(t["organiser"])).status_code == 200
    public = c.get(f"/api/collections/{world.cid}/leaderboard?metric=AP").json()
    assert public["metric"] == "AP" and len(public["rows"]) == 3
    csv_text = c.get(f"/api/collections/{world.cid}/leaderboard?format=csv").text
    assert csv_text.splitlines()[0] == ("rank,run,team,mean,t_ci_low,t_ci_high,n_topics,baseline,groups,"
                                        "t_ci_truncated,boot_ci_low,boot_ci_high,boot_ci_method,boot_ci_resamples")
    # the API names the intervals as the CSV does (and keeps the old names frozen snapshots hold)
    row = public["rows"][0]
    assert (row["t_ci_low"], row["t_ci_high"], row["boot_ci_low"], row["boot_ci_method"]) == (
        row["ci_low"], row["ci_high"], row["boot_low"], row["boot_method"])
    # corrected qrels: a new version, re-evaluated, the leaderboard follows
    corrected = world.qrels.replace(" L0\n", " L1\n", 5)
    r = c.post(f"/api/collections/{world.cid}/qrels", content=corrected, headers=auth(t["organiser"]))
    assert r.status_code == 201 and r.json()["version"] == 2
    job = c.get(f"/api/jobs/{r.json()['job']}", headers=auth(t["organiser"])).json()
    assert job["status"] == "done" and job["report"]["new_qrels_version"] == 2
    assert c.get(f"/api/collections/{world.cid}/leaderboard").json()["qrels_version"] == 2
    versions = c.get(f"/api/collections/{world.cid}/qrels", headers=auth(t["organiser"])).json()
    assert [v["version"] for v in versions["items"]] == [1, 2] and versions["current"] == 2


ROLES = ("anonymous", "alpha", "beta", "organiser", "other_organiser", "admin", "assessor")


def expect(**by_role: int) -> dict[str, int]:
    default = by_role.pop("default")
    return {role: by_role.get(role, default) for role in ROLES}


def test_every_role_against_every_endpoint(world: World) -> None:
    c, cid, other = world.client, world.cid, world.other_cid
    alpha_run = world.run_ids["RUN-01"]
    beta_run = world.run_ids["RUN-03"]
    # (method, path, body, expected status per role) -- the collection is private and unreleased
    cases = [
        ("GET", "/health/live", None, expect(default=200)),
        ("GET", f"/api/collections/{cid}", None, expect(default=200, anonymous=401, other_organiser=403,
                                                         assessor=403)),
        ("GET", f"/api/collections/{cid}/qrels", None, expect(default=403, anonymous=401, organiser=200, admin=200)),
        ("GET", f"/api/collections/{cid}/runs", None, expect(default=200, anonymous=401, other_organiser=403,
                                                              assessor=403)),
        ("GET", f"/api/runs/{alpha_run}", None, expect(default=403, anonymous=401, alpha=200, organiser=200,
                                                      admin=200)),
        ("GET", f"/api/runs/{alpha_run}/file", None, expect(default=403, anonymous=401, alpha=200, organiser=200,
                                                           admin=200)),
        ("GET", f"/api/runs/{beta_run}", None, expect(default=403, anonymous=401, beta=200, organiser=200, admin=200)),
        ("GET", f"/api/collections/{cid}/leaderboard", None, expect(default=200, anonymous=401,
                                                                    other_organiser=403, assessor=403)),
        ("GET", "/api/jobs/1", None, expect(default=403, anonymous=401, organiser=200, admin=200)),
        ("GET", f"/api/runs/{alpha_run}/scores", None, expect(default=403, anonymous=401, alpha=200, organiser=200,
                                                             admin=200)),
        ("GET", f"/api/runs/{alpha_run}/curve", None, expect(default=403, anonymous=401, alpha=200, organiser=200,
                                                            admin=200)),
        ("GET", f"/api/collections/{cid}/compare?a={alpha_run}&b={beta_run}", None,
         expect(default=403, anonymous=401, organiser=200, admin=200)),
        ("GET", f"/api/collections/{cid}/significance", None, expect(default=403, anonymous=401, organiser=200,
                                                                    admin=200)),
        ("GET", f"/api/collections/{cid}/metaeval", None, expect(default=403, anonymous=401, organiser=200,
                                                                admin=200)),
        ("GET", f"/api/collections/{cid}/qrels/diff?old=1&new=1", None,
         expect(default=403, anonymous=401, organiser=200, admin=200)),
        ("GET", f"/api/collections/{cid}/snapshots", None, expect(default=403, anonymous=401, organiser=200,
                                                                 admin=200)),
        ("PATCH", f"/api/collections/{cid}", {"description": "x"},
         expect(default=403, anonymous=401, organiser=200, admin=200)),
        ("POST", "/api/collections", {"name": "new-{role}"}, expect(default=403, anonymous=401, admin=201)),
        ("POST", "/api/teams", {"name": "team-{role}"},
         expect(default=403, anonymous=401, organiser=201, other_organiser=201, admin=201)),
        ("POST", "/api/tokens", {"role": "admin"}, expect(default=403, anonymous=401, admin=201)),
        # a token never reaches further than its creator (issue 34): alpha takes part in "task",
        # so the organiser of "other" makes no token of it, nor one naming a collection not its own
        ("POST", "/api/tokens", {"role": "participant", "team": "alpha", "name": "p-{role}"},
         expect(default=403, anonymous=401, organiser=201, admin=201)),
        ("POST", "/api/tokens", {"role": "participant", "team": "beta", "collections": [other]},
         expect(default=403, anonymous=401, admin=201)),
        ("POST", "/api/tokens", {"role": "assessor", "collections": [cid], "topics": ["0001"]},
         expect(default=403, anonymous=401, organiser=201, admin=201)),
        ("POST", "/api/tokens", {"role": "organiser", "collections": [other]}, expect(default=403, anonymous=401,
                                                                                    admin=201)),
        ("POST", f"/api/collections/{cid}/teams", {"team": "beta"},
         expect(default=403, anonymous=401, organiser=201, admin=201)),
        ("POST", f"/api/collections/{cid}/qrels", "t 0 d 1\n",
         expect(default=403, anonymous=401, organiser=201, admin=201)),
        # issue 35: a collection of ranked lists takes no nuggets (its organisers learn why: 409), and
        # its runs have no answers; every other role is refused first (the answers collection's own
        # matrix: tests/integration/test_answer_collections.py)
        ("POST", f"/api/collections/{cid}/answer-judgments/nuggets", '{"qid": "0001", "nuggets": []}\n',
         expect(default=403, anonymous=401, organiser=409, admin=409)),
        ("GET", f"/api/runs/{alpha_run}/answers", None, expect(default=403, anonymous=401, alpha=409, organiser=409,
                                                              admin=409)),
        # teams take part by enrolment: no team is enrolled in "other"
        ("POST", f"/api/collections/{other}/runs", "t Q0 d 1 1 x\n",
         expect(default=403, anonymous=401, other_organiser=400, admin=400)),
        ("GET", f"/api/collections/{other}", None, expect(default=403, anonymous=401, other_organiser=200, admin=200)),
        ("GET", f"/api/collections/{cid}/teams", None, expect(default=403, anonymous=401, organiser=200, admin=200)),
        ("POST", f"/api/collections/{other}/teams", {"team": "alpha"},
         expect(default=403, anonymous=401, other_organiser=201, admin=201)),
        ("POST", f"/api/collections/{cid}/enrolment", None, expect(default=403, anonymous=401)),  # invite only
        # topics, pools, assessment, reusability
        ("POST", f"/api/collections/{cid}/topics", {"topics": ["9001"]},
         expect(default=403, anonymous=401, organiser=201, admin=201)),
        ("POST", f"/api/collections/{cid}/pools", {"depth": 5},
         expect(default=403, anonymous=401, organiser=202, admin=202)),
        ("GET", f"/api/collections/{cid}/pools", None, expect(default=403, anonymous=401, organiser=200, admin=200)),
        ("GET", "/api/pools/1", None, expect(default=403, anonymous=401, organiser=200, admin=200)),
        ("GET", "/api/pools/1/topics/0001", None, expect(default=403, anonymous=401, organiser=200, admin=200,
                                                         assessor=200)),
        ("GET", "/api/pools/1/topics/0002", None, expect(default=403, anonymous=401, organiser=200, admin=200)),
        ("GET", "/api/assessments", None, expect(default=403, anonymous=401, assessor=200)),
        ("POST", "/api/pools/1/judgments", "0002 NTC-001-00001 L1\n",
         expect(default=403, anonymous=401, organiser=422, admin=422, assessor=422)),
        ("GET", f"/api/collections/{cid}/assessors", None,
         expect(default=403, anonymous=401, organiser=200, admin=200)),
        ("POST", f"/api/collections/{cid}/analyses", {"metric": "AP"},
         expect(default=403, anonymous=401, organiser=202, admin=202)),
        # ids 1 and 2 are the two pool builds above (the workers build pools as analyses of kind
        # "pool", read at /api/pool-builds), 3 and 4 the two analyses just requested
        ("GET", "/api/pool-builds/1", None, expect(default=403, anonymous=401, organiser=200, admin=200)),
        ("GET", "/api/analyses/1", None, expect(default=404)),
        ("GET", "/api/analyses/3", None, expect(default=403, anonymous=401, organiser=200, admin=200)),
        ("POST", f"/api/collections/{cid}/snapshots", {"label": "s-{role}"},
         expect(default=403, anonymous=401, organiser=201, admin=201)),
        ("PATCH", f"/api/runs/{alpha_run}/settings", {"description": "d"},
         expect(default=403, anonymous=401, alpha=200, organiser=200, admin=200)),
        ("DELETE", "/api/tokens/999999", None, expect(default=403, anonymous=401, admin=404)),
        ("DELETE", f"/api/runs/{beta_run}", None, expect(default=403, anonymous=401, organiser=200)),
        ("DELETE", f"/api/collections/{other}/teams/alpha", None,
         expect(default=403, anonymous=401, other_organiser=200)),
    ]
    for method, path, body, expected in cases:
        for role in ROLES:
            token = world.tokens.get(role)
            kwargs: dict = {"headers": auth(token)}
            if isinstance(body, dict):
                kwargs["json"] = {k: v.format(role=role) if isinstance(v, str) else v for k, v in body.items()}
            elif isinstance(body, str):
                kwargs["content"] = body
            r = c.request(method, path, **kwargs)
            assert r.status_code == expected[role], (method, path, role, r.status_code, r.text)
            if r.status_code >= 400:
                error = r.json()["error"]
                assert error["code"] and error["message"]  # the stable JSON error shape
            if method == "DELETE" and r.status_code == 200:
                break  # the run is gone for the roles after this one


def test_qrels_are_never_readable_by_participants_or_anonymous(world: World) -> None:
    for role in ("anonymous", "alpha", "beta"):
        r = world.client.get(f"/api/collections/{world.cid}/qrels", headers=auth(world.tokens.get(role)))
        assert r.status_code in (401, 403) and "judgments" not in r.text
    doc = world.client.get(f"/api/collections/{world.cid}", headers=auth(world.tokens["alpha"])).json()
    assert "levels" not in doc and "evaluation" not in doc


def test_bad_uploads_are_refused_with_lines_and_store_nothing(world: World) -> None:
    c, t, cid = world.client, world.tokens, world.cid
    bad_run = "0001 Q0 a 1 1 new\n0001 Q0 b 2 x new\n"
    r = c.post(f"/api/collections/{cid}/runs", content=bad_run, headers=auth(t["alpha"]))
    assert r.status_code == 422 and r.json()["error"]["line"] == 2 and "not a number" in r.json()["error"]["message"]
    dup = "0001 Q0 a 1 2 new\n0001 Q0 a 2 1 new\n"
    r = c.post(f"/api/collections/{cid}/runs", content=dup, headers=auth(t["alpha"]))
    assert r.status_code == 422 and r.json()["error"]["line"] == 2
    unknown = "9999 Q0 a 1 2 new\n"
    r = c.post(f"/api/collections/{cid}/runs", content=unknown, headers=auth(t["alpha"]))
    assert r.status_code == 422 and "unknown topics: 9999" in r.json()["error"]["message"]
    again = world.runs["RUN-01"]
    assert c.post(f"/api/collections/{cid}/runs", content=again, headers=auth(t["alpha"])).status_code == 422
    r = c.post(f"/api/collections/{cid}/qrels", content="t 0 d\n", headers=auth(t["organiser"]))
    assert r.status_code == 422 and r.json()["error"]["line"] == 1
    runs = c.get(f"/api/collections/{cid}/runs", headers=auth(t["organiser"])).json()
    assert runs["total"] == 3
    assert [v["version"] for v in c.get(f"/api/collections/{cid}/qrels",
                                        headers=auth(t["organiser"])).json()["items"]] == [1]


def test_submission_window_and_quota(world: World) -> None:
    c, t, cid = world.client, world.tokens, world.cid
    run = "0001 Q0 NTC-000-00001 1 2 quota{n}\n"
    assert c.patch(f"/api/collections/{cid}", json={"daily_run_quota": 3}, headers=auth(t["organiser"])).status_code == 200
    listing = c.get(f"/api/collections/{cid}/runs", headers=auth(t["beta"])).json()
    assert listing["quota"]["per_day"] == 3 and listing["quota"]["used_today"] == 1
    assert c.post(f"/api/collections/{cid}/runs", content=run.format(n=1), headers=auth(t["beta"])).status_code == 201
    assert c.post(f"/api/collections/{cid}/runs", content=run.format(n=2), headers=auth(t["beta"])).status_code == 201
    r = c.post(f"/api/collections/{cid}/runs", content=run.format(n=3), headers=auth(t["beta"]))
    assert r.status_code == 409 and "resets at" in r.json()["error"]["message"]
    c.patch(f"/api/collections/{cid}", json={"daily_run_quota": None,
                                             "submission_closes_at": "2020-01-01T00:00:00+00:00"},
            headers=auth(t["organiser"]))
    r = c.post(f"/api/collections/{cid}/runs", content=run.format(n=4), headers=auth(t["alpha"]))
    assert r.status_code == 409 and "closed" in r.json()["error"]["message"]


def test_tokens_are_stored_hashed_and_bad_tokens_are_401(world: World, backend: Backend) -> None:
    from sqlalchemy import select

    from service.store.models import ApiToken

    with backend.factory()() as s:
        hashes = list(s.scalars(select(ApiToken.token_hash)))
    assert all(secret not in hashes for secret in world.tokens.values())
    r = world.client.get(f"/api/collections/{world.cid}", headers={"Authorization": "Bearer nope"})
    assert r.status_code == 401 and r.json()["error"]["code"] == "unauthenticated"
    assert world.client.get("/schema/openapi.json").status_code == 200


def test_significance_exports_diffs_and_per_topic_views(world: World) -> None:
    c, t, cid = world.client, world.tokens, world.cid
    org = auth(t["organiser"])
    board = c.get(f"/api/collections/{cid}/leaderboard", params={"pairs": "true"}, headers=org).json()
    assert board["significance"]["test"] == "bootstrap"
    rows = board["rows"]
    assert all("groups" in r and "beats" in r and "tied_with" in r for r in rows)
    for r in rows:  # beating is consistent with the ranking and with "tied"
        assert not set(r["beats"]) & set(r["tied_with"])
        assert all(rows[[x["run"] for x in rows].index(b)]["mean"] < r["mean"] for b in r["beats"])
        assert (r["beats_count"], r["tied_count"]) == (len(r["beats"]), len(r["tied_with"]))
    # without ?pairs the rows carry the counts only (the names grow as the square of the runs)
    plain = c.get(f"/api/collections/{cid}/leaderboard", headers=org).json()["rows"]
    assert [(r["run"], r["beats_count"], r["tied_count"], r["groups"]) for r in plain] == \
        [(r["run"], r["beats_count"], r["tied_count"], r["groups"]) for r in rows]
    assert all(r.get("beats") is None and r.get("tied_with") is None for r in plain)
    matrix = c.get(f"/api/collections/{cid}/significance", headers=org).json()
    assert len(matrix["runs"]) == 3 and all(matrix["p_adjusted"][i][i] == 1.0 for i in range(3))
    latex = c.get(f"/api/collections/{cid}/leaderboard?format=latex", headers=org).text
    assert latex.startswith("\\begin{tabular}") and latex.count("\\\\") >= 4
    # per-topic scores: the team's own run, not the other team's
    alpha_run, beta_run = world.run_ids["RUN-01"], world.run_ids["RUN-03"]
    own = c.get(f"/api/runs/{alpha_run}/scores?metric=AP", headers=auth(t["alpha"])).json()
    assert own["metric"] == "AP" and len(own["runs"]["RUN-01"]["per_topic"]) >= 5
    assert c.get(f"/api/runs/{beta_run}/scores", headers=auth(t["alpha"])).status_code == 403
    cmp = c.get(f"/api/collections/{cid}/compare?a={alpha_run}&b={beta_run}", headers=org).json()
    assert cmp["wins"] + cmp["ties"] + cmp["losses"] == len(cmp["differences"]) and cmp["p_adjusted"] is not None
    mc = cmp["monte_carlo"]  # the pair's B, Monte Carlo SE and verdict under the stored test (issue 25, item 1)
    assert mc["resamples"] + mc["degenerate"] >= 10000 and 0 <= mc["mc_se"] < 0.01 and mc["verdict"] in (
        "significant", "not significant", "undecided") and mc["undecided"] == (mc["verdict"] == "undecided")
    # primary runs
    assert c.patch(f"/api/runs/{alpha_run}/settings", json={"primary": True}, headers=auth(t["alpha"])).json()["primary"]
    assert c.patch(f"/api/runs/{alpha_run}/settings", json={"baseline": True}, headers=auth(t["alpha"])).status_code == 403
    only = c.get(f"/api/collections/{cid}/leaderboard?primary_only=true", headers=org).json()
    assert [r["run"] for r in only["rows"]] == ["RUN-01"]
    # a corrected qrels version, and the diff of the two versions
    lines = world.qrels.splitlines()
    changed = [line.rsplit(" ", 1)[0] + " L3" for line in lines[:4] if not line.endswith(" L3")]
    corrected = "\n".join(changed + lines[4:] + ["0001 NEW-DOC L2"]) + "\n"
    assert c.post(f"/api/collections/{cid}/qrels", content=corrected, headers=org).status_code == 201
    diff = c.get(f"/api/collections/{cid}/qrels/diff?old=1&new=2", headers=org).json()
    assert diff["totals"] == {"added": 1, "removed": 4 - len(changed), "changed": len(changed)}
    assert c.get(f"/api/collections/{cid}/qrels/diff?old=1&new=2", headers=auth(t["alpha"])).status_code == 403


def test_every_metric_is_tested_and_letters_match_the_stored_tests(world: World, backend: Backend) -> None:
    """Every metric of the collection has a stored test by default; on each board two runs
    share a letter exactly when the stored p-value of the pair is at least alpha; a test over
    an earlier set of runs is replaced, not kept beside the new one."""
    from collections import Counter

    from sqlalchemy import select

    from service.store.models import Significance

    with backend.factory()() as s:
        keys = Counter(s.execute(select(Significance.qrels_version_id, Significance.settings_hash,
                                        Significance.metric, Significance.test, Significance.params_hash,
                                        Significance.subset)).all())
    assert keys and max(keys.values()) == 1
    c, t, cid = world.client, world.tokens, world.cid
    org = auth(t["organiser"])
    metrics = c.get(f"/api/collections/{cid}", headers=org).json()["metrics"]
    assert len(metrics) > 1
    for metric in metrics:
        board = c.get(f"/api/collections/{cid}/leaderboard", params={"metric": metric, "pairs": "true"},
                      headers=org).json()
        sig = board["significance"]
        assert sig is not None, f"no stored test for {metric}"
        assert sig["test"] == "bootstrap" and sig["resamples"] == 10000 and sig["correction"] == "none"
        matrix = c.get(f"/api/collections/{cid}/significance", params={"metric": metric}, headers=org).json()
        where = {r: i for i, r in enumerate(matrix["runs"])}
        rows = board["rows"]
        assert all(r["groups"] for r in rows)
        for x in rows:
            for y in rows:
                if x is y:
                    continue
                i, j = where[x["run"]], where[y["run"]]
                p = matrix["p_adjusted"][i][j]
                # letters use settled verdicts: an undecided pair counts as not significant (issue 25, item 1)
                undecided = matrix["undecided"][i][j]
                share = bool(set(x["groups"]) & set(y["groups"]))
                assert share == (p >= sig["alpha"] or undecided), (metric, x["run"], y["run"], p)
                assert (y["run"] in x["tied_with"]) == (p >= sig["alpha"] or undecided)
                # each pair's own B (at least the configured 10,000) and its Monte Carlo SE from its raw p
                b, raw = matrix["resamples_matrix"][i][j], matrix["p"][i][j]
                assert b + matrix["degenerate"][i][j] >= 10000
                assert matrix["mc_se"][i][j] == pytest.approx((raw * (1 - raw) / b) ** 0.5, rel=1e-9)
        assert matrix["monte_carlo_rule"] == "sequential"
        assert matrix["undecided_pairs"] == sum(map(sum, matrix["undecided"])) // 2
        # a participant's board before release holds its own runs only: the stored letters,
        # restricted to them, keep the guarantee
        own = c.get(f"/api/collections/{cid}/leaderboard", params={"metric": metric}, headers=auth(t["alpha"])).json()
        assert own["ranked_among"] == "team" and len(own["rows"]) == 2
        x, y = own["rows"]
        p = matrix["p_adjusted"][where[x["run"]]][where[y["run"]]]
        assert bool(set(x["groups"]) & set(y["groups"])) == (p >= sig["alpha"])
        assert x["groups"].startswith("a")


def test_snapshots_are_frozen_and_tokens_can_be_revoked(world: World) -> None:
    c, t, cid = world.client, world.tokens, world.cid
    org = auth(t["organiser"])
    assert c.post(f"/api/collections/{cid}/snapshots", json={"label": "final"}, headers=auth(t["alpha"])).status_code == 403
    snap = c.post(f"/api/collections/{cid}/snapshots", json={"label": "final"}, headers=org)
    assert snap.status_code == 201 and snap.json()["qrels_version"] == 1
    frozen = c.get(f"/api/snapshots/{snap.json()['id']}", headers=org).json()
    # a new qrels version changes the live board, never the snapshot
    corrected = world.qrels.replace(" L0\n", " L2\n", 10)
    assert c.post(f"/api/collections/{cid}/qrels", content=corrected, headers=org).status_code == 201
    live = c.get(f"/api/collections/{cid}/leaderboard", headers=org).json()
    again = c.get(f"/api/snapshots/{snap.json()['id']}", headers=org).json()
    assert live["qrels_version"] == 2 and again == frozen and again["qrels_version"] == 1
    assert [s["label"] for s in c.get(f"/api/collections/{cid}/snapshots", headers=org).json()["items"]] == ["final"]
    # revoking a token takes effect at once
    new = c.post("/api/tokens", json={"role": "participant", "team": "beta"}, headers=auth(t["admin"])).json()
    assert c.get(f"/api/collections/{cid}", headers=auth(new["token"])).status_code == 200
    assert c.delete(f"/api/tokens/{new['id']}", headers=auth(t["organiser"])).status_code == 403
    assert c.delete(f"/api/tokens/{new['id']}", headers=auth(t["admin"])).status_code == 200
    assert c.get(f"/api/collections/{cid}", headers=auth(new["token"])).status_code == 401


def test_leaderboard_of_an_earlier_qrels_version_and_when_computed(world: World) -> None:
    c, t, cid = world.client, world.tokens, world.cid
    org = auth(t["organiser"])
    first = c.get(f"/api/collections/{cid}/leaderboard", headers=org).json()
    assert first["computed_at"] is not None
    corrected = world.qrels.replace(" L0\n", " L3\n", 8)
    assert c.post(f"/api/collections/{cid}/qrels", content=corrected, headers=org).status_code == 201
    old = c.get(f"/api/collections/{cid}/leaderboard?qrels_version=1", headers=org).json()
    new = c.get(f"/api/collections/{cid}/leaderboard", headers=org).json()
    assert old["qrels_version"] == 1 and new["qrels_version"] == 2
    assert [r["mean"] for r in old["rows"]] == [r["mean"] for r in first["rows"]]  # nothing of v1 is lost
    assert c.get(f"/api/collections/{cid}/leaderboard?test=t", headers=org).json()["significance"] is None
    assert c.get(f"/api/collections/{cid}/leaderboard?qrels_version=9", headers=org).status_code == 404  # as another set's version for others


def test_meta_evaluation_is_stored_by_the_workers_and_served(world: World) -> None:
    c, t, cid = world.client, world.tokens, world.cid
    doc = c.get(f"/api/collections/{cid}/metaeval", headers=auth(t["organiser"])).json()
    assert set(doc["power"]) == {"AP", "nDCG@10"}
    assert all(0 <= v["power"] <= 1 and v["pairs"] == 3 for v in doc["power"].values())
    (tau,) = doc["tau"].values()
    assert -1 <= tau <= 1 and doc["tau_significant_above"] > 0
    assert c.get(f"/api/collections/{cid}/metaeval", headers=auth(t["alpha"])).status_code == 403


def test_meta_evaluation_with_runs_tied_on_a_metric_serves_tau_as_null(world: World) -> None:
    """Issue 34, item 6: three runs tied on RR (each finds a relevant document first on every
    topic) leave Kendall's tau of RR and AP undefined; the workers store it as null, and the
    meta-evaluation answered 500 (``Expected float, got null``). Now null, in the API and the
    portal's analysis page (shown as a dash)."""
    from tests.integration.test_portal import as_role

    c, admin = world.client, auth(world.tokens["admin"])
    cid = c.post("/api/collections", json={"name": "ties", "official_metric": "AP", "metrics": ["AP", "RR"]},
                 headers=admin).json()["id"]
    topics = [f"T{i}" for i in range(1, 6)]
    qrels = "".join(f"{t} 0 {t}-rel{k} 1\n" for t in topics for k in (1, 2))
    assert c.post(f"/api/collections/{cid}/qrels", content=qrels, headers=admin).status_code == 201
    for n, team in enumerate(("alpha", "alpha", "beta")):
        # rel1 first everywhere (RR 1 for every run); rel2 at rank 2 + n (AP differs)
        text = "".join(f"{t} Q0 {doc} {rank} {10 - rank} run{n}\n" for t in topics for rank, doc in enumerate(
            [f"{t}-rel1", *(f"{t}-non{k}" for k in range(n)), f"{t}-rel2"], start=1))
        r = c.post(f"/api/collections/{cid}/runs", params={"team": team}, content=text, headers=admin)
        assert r.status_code == 201, r.text
    r = c.get(f"/api/collections/{cid}/metaeval", headers=admin)
    assert r.status_code == 200, r.text
    assert r.json()["tau"] == {"AP | RR": None}
    page = c.get(f"/c/{cid}/analysis", headers=as_role(world, "admin"))
    assert page.status_code == 200
    assert re.search(r'<tr><th scope="row">AP \| RR</th><td class="num">–</td></tr>', page.text)


def test_run_curves_are_stored_by_the_workers_and_served(world: World) -> None:
    from service.formats.readers import parse_qrels, parse_run
    from service.metrics.curves import gain_curves

    c, t = world.client, world.tokens
    rid = world.run_ids["RUN-01"]
    doc = c.get(f"/api/runs/{rid}/curve", headers=auth(t["alpha"])).json()
    (expected,) = gain_curves(parse_qrels(world.qrels.encode()), [parse_run(world.runs["RUN-01"].encode())],
                              doc["depth"])
    assert doc["cg"] == expected.cg.tolist() and doc["ndcg"] == expected.ndcg.tolist()
    assert len(doc["ideal_dcg"]) == doc["depth"] == 20
    assert c.get(f"/api/runs/{rid}/curve", headers=auth(t["beta"])).status_code == 403


def test_previous_results_stay_served_during_a_reevaluation_and_multipart_uploads(backend: Backend) -> None:
    """Dispatch is held back: a new qrels version is stored but not yet evaluated."""
    held: list = []
    with transaction(backend.factory()) as s:
        admin, _ = create_token(s, "admin")
    factory = backend.factory()

    def run_all(followups):  # type: ignore[no-untyped-def]
        run_inline(factory, followups)

    mode = {"hold": False}

    def dispatch(followups):  # type: ignore[no-untyped-def]
        held.extend(followups) if mode["hold"] else run_all(followups)

    with TestClient(app=create_app(backend.database_url, dispatch)) as c:
        a = auth(admin)
        cid = c.post("/api/collections", json={"name": "x", "metrics": ["AP"]}, headers=a).json()["id"]
        c.post("/api/teams", json={"name": "t"}, headers=a)
        qrels, runs = generate(SPEC)
        assert c.post(f"/api/collections/{cid}/qrels", content=qrels, headers=a).status_code == 201
        for tag, text in runs.items():  # multipart this time
            r = c.post(f"/api/collections/{cid}/runs?team=t", files={"file": (f"{tag}.run", text.encode())}, headers=a)
            assert r.status_code == 201, r.text
        before = c.get(f"/api/collections/{cid}/leaderboard", headers=a).json()
        mode["hold"] = True
        assert c.post(f"/api/collections/{cid}/qrels", content=qrels.replace(" L0\n", " L2\n", 6),
                      headers=a).status_code == 201
        during = c.get(f"/api/collections/{cid}/leaderboard", headers=a).json()
        assert during["qrels_version"] == 1 and during["newest_qrels_version"] == 2
        assert during["reevaluation_in_progress"] and during["rows"] == before["rows"]
        run_all(held)
        c.post("/api/teams", json={"name": "flush-cache"}, headers=a)  # a write clears the board cache
        after = c.get(f"/api/collections/{cid}/leaderboard", headers=a).json()
        assert after["qrels_version"] == 2 and not after["reevaluation_in_progress"]


def test_public_private_topic_split(world: World) -> None:
    c, t, cid = world.client, world.tokens, world.cid
    org = auth(t["organiser"])
    assert c.patch(f"/api/collections/{cid}", json={"leaderboard_released": True, "visibility": "public"},
                   headers=org).status_code == 200
    hidden = ["0001", "0002"]
    r = c.patch(f"/api/collections/{cid}", json={"hidden_topics": hidden}, headers=org)
    assert r.status_code == 200 and r.json()["topic_split"]  # a new configuration, re-evaluated at once
    full = c.get(f"/api/collections/{cid}/leaderboard?metric=AP", headers=org).json()
    public = c.get(f"/api/collections/{cid}/leaderboard?metric=AP").json()
    assert full["topics"] == "all" and public["topics"].startswith("visible only")
    # the public means are the means over the visible topics of the per-topic scores
    alpha_run = world.run_ids["RUN-01"]
    per_topic = c.get(f"/api/runs/{alpha_run}/scores?metric=AP", headers=org).json()["runs"]["RUN-01"]["per_topic"]
    visible = [v for k, v in per_topic.items() if k not in hidden]
    row = next(r for r in public["rows"] if r["run"] == "RUN-01")
    assert row["mean"] == pytest.approx(sum(visible) / len(visible), abs=1e-12) and row["n_topics"] == len(visible)
    assert c.get(f"/api/collections/{cid}/leaderboard").json()["significance"] is not None  # visible-topic test
    # participants never see hidden topics' scores, nor curves or meta-evaluation mixing them in
    own = c.get(f"/api/runs/{alpha_run}/scores?metric=AP", headers=auth(t["alpha"])).json()["runs"]["RUN-01"]
    assert not set(own["per_topic"]) & set(hidden) and own["mean"] is None
    assert c.get(f"/api/runs/{alpha_run}/curve", headers=auth(t["alpha"])).status_code == 403
    assert c.get(f"/api/collections/{cid}/metaeval").status_code == 401
    # a snapshot holds the organisers' all-topic board: not shown to others before the reveal
    sid = c.post(f"/api/collections/{cid}/snapshots", json={"label": "all topics"}, headers=org).json()["id"]
    for who in (auth(t["alpha"]), {}):
        assert c.get(f"/api/snapshots/{sid}", headers=who).status_code in (401, 403)
        assert c.get(f"/api/collections/{cid}/snapshots", headers=who).status_code in (401, 403)
        assert c.get(f"/snapshots/{sid}", headers=who).status_code in (401, 403)  # the portal page too
    # the organisers reveal the full leaderboard at the end
    assert c.patch(f"/api/collections/{cid}", json={"topics_revealed": True}, headers=org).status_code == 200
    revealed = c.get(f"/api/collections/{cid}/leaderboard?metric=AP").json()
    assert revealed["topics"] == "all" and [r["mean"] for r in revealed["rows"]] == [r["mean"] for r in full["rows"]]
    assert c.get(f"/api/snapshots/{sid}", headers=auth(t["alpha"])).status_code == 200


def test_uploads_over_the_limit_are_refused_while_streaming(backend: Backend) -> None:
    with transaction(backend.factory()) as s:
        admin, _ = create_token(s, "admin")
    with TestClient(app=create_app(backend.database_url, lambda f: None, max_body=1000)) as c:
        cid = c.post("/api/collections", json={"name": "small"}, headers=auth(admin)).json()["id"]
        r = c.post(f"/api/collections/{cid}/qrels", content="t 0 d 1\n" * 500, headers=auth(admin))
        assert r.status_code == 413 and r.json()["error"]["code"] == "too_large"
        assert c.get(f"/api/collections/{cid}/qrels", headers=auth(admin)).json()["items"] == []


def test_a_released_board_shares_per_topic_scores_not_run_files(world: World) -> None:
    """Before the release a team reads its own runs' per-topic scores only; once the board is
    released, its readers read every run's (as the run x topic matrix shows them) and compare any
    two, while a run file stays its team's and the organisers'."""
    c, t, cid = world.client, world.tokens, world.cid
    alpha_run, beta = world.run_ids["RUN-01"], auth(t["beta"])
    beta_run = next(rid for tag, rid in world.run_ids.items() if tag != "RUN-01" and
                    c.get(f"/api/runs/{rid}", headers=beta).status_code == 200)
    assert c.get(f"/api/runs/{alpha_run}/scores", headers=beta).status_code == 403
    assert c.get(f"/api/collections/{cid}/compare?a={alpha_run}&b={beta_run}", headers=beta).status_code == 403
    assert c.patch(f"/api/collections/{cid}", json={"leaderboard_released": True},
                   headers=auth(t["admin"])).status_code == 200
    scores = c.get(f"/api/runs/{alpha_run}/scores", headers=beta)
    assert scores.status_code == 200, scores.text
    matrix = c.get(f"/api/collections/{cid}/matrix", headers=beta).json()  # the same figures through both doors
    row = next(r for r in matrix["rows"] if r["run"] == "RUN-01")
    per_topic = scores.json()["runs"]["RUN-01"]["per_topic"]
    assert dict(zip(matrix["topics"], row["scores"])) == per_topic
    assert c.get(f"/api/runs/{alpha_run}/scores?format=trec", headers=beta).status_code == 200
    assert c.get(f"/api/collections/{cid}/compare?a={alpha_run}&b={beta_run}", headers=beta).status_code == 200
    assert c.get(f"/api/runs/{alpha_run}/file", headers=beta).status_code == 403
    assert c.get(f"/api/runs/{alpha_run}/ir_metadata", headers=beta).status_code in (403, 404)


def test_a_board_before_any_qrels_names_the_metric_it_will_rank_by(world: World) -> None:
    """No judgments yet: an empty board under the official metric (or the one asked for), and
    a metric the collection does not compute is a 400 as on any other board."""
    c, admin = world.client, auth(world.tokens["admin"])
    cid = c.post("/api/collections", json={"name": "unjudged", "official_metric": "nDCG@10",
                                           "metrics": ["nDCG@10", "AP"], "visibility": "public"},
                 headers=admin).json()["id"]
    board = c.get(f"/api/collections/{cid}/leaderboard", headers=admin).json()
    assert (board["metric"], board["rows"], board["qrels_version"]) == ("nDCG@10", [], None)
    assert c.get(f"/api/collections/{cid}/leaderboard", params={"metric": "AP"}, headers=admin).json()["metric"] == "AP"
    r = c.get(f"/api/collections/{cid}/leaderboard", params={"metric": "P@5"}, headers=admin)
    assert r.status_code == 400 and "P@5 is not among the collection's metrics" in r.text, r.text
