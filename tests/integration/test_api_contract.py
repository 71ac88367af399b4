"""The API's typed contract: the OpenAPI document describes every operation, the docs page
works offline, docs/api.md matches the schema, request bodies refuse unknown fields, PATCH
tells absent from null, and a bug is a 500 with a request id rather than a guessed 400."""

from __future__ import annotations

import re
from typing import Any

import pytest
from litestar.testing import TestClient

from service.api.app import create_app
from service.api.reference import DOC, generated, with_reference
from tests.integration.conftest import Backend, World, auth

# Run on PostgreSQL too; the module's other tests run on SQLite only (conftest.py):
# limits and connections of each database; the contract itself on SQLite.
SQLITE_ONLY_BUT = {"test_values_the_database_cannot_hold_are_400_not_500", "test_refused_requests_give_their_connection_back"}

METHODS = ("get", "post", "put", "patch", "delete")


@pytest.fixture(scope="module")
def openapi() -> dict[str, Any]:
    return create_app("sqlite://", lambda followups: None).openapi_schema.to_schema()


def _operations(doc: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(m, p, item[m]) for p, item in doc["paths"].items() for m in METHODS if m in item]


def test_every_operation_is_documented(openapi: dict[str, Any]) -> None:
    ops = _operations(openapi)
    assert len(ops) >= 40
    ids = [op.get("operationId") for _, _, op in ops]
    assert len(set(ids)) == len(ids), "operation ids are unique"
    for method, path, op in ops:
        where = f"{method.upper()} {path}"
        assert op.get("operationId") and re.fullmatch(r"[a-z][A-Za-z]+", op["operationId"]), where
        assert op.get("summary") and "callable" not in op["summary"].lower(), where
        assert len(op.get("description", "")) > 20, where
        assert op.get("tags"), where
        errors = {code for code in op["responses"] if code[0] in "45"}
        assert "500" in errors, where
        if path.startswith("/api"):
            assert errors & {"401", "403"}, f"{where}: access errors are documented"
        for code in errors:  # each the problem document the server sends, never Litestar's own error schema
            content = op["responses"][code]["content"]
            assert list(content) == ["application/problem+json"], f"{where}: {code}"
            assert content["application/problem+json"]["schema"]["$ref"] == "#/components/schemas/ProblemDocument", \
                f"{where}: {code}"
        if "422" in errors:  # a request the server cannot read at all is a 400
            assert "400" in errors, where
        # bodies a generated client can send (openapi-python-client takes no text/plain body)
        assert "text/plain" not in op.get("requestBody", {}).get("content", {}), where
        for param in op.get("parameters", []):
            assert param.get("description"), f"{where}: parameter {param['name']} has a description"
        if method in ("post", "put", "patch") and op["operationId"] not in ("enrolOwnTeam",):
            assert op.get("requestBody", {}).get("content"), f"{where}: the body is described"
        ok = [code for code in op["responses"] if code[0] == "2"]
        assert ok, where
        if op["operationId"] not in ("downloadRun", "downloadAssessment", "getLeaderboard", "getRunIrMetadata",
                                     "downloadJudgePool"):
            content = op["responses"][ok[0]].get("content", {})
            assert "application/json" in content and content["application/json"]["schema"], \
                f"{where}: the response body has a schema"


def test_every_body_field_is_documented_or_typed(openapi: dict[str, Any]) -> None:
    schemas = openapi["components"]["schemas"]
    for name in ("CollectionCreate", "CollectionUpdate", "TokenCreate", "RunUpdate", "PoolCreate", "Leaderboard"):
        assert name in schemas, name
        assert schemas[name]["properties"], name
    create = schemas["CollectionCreate"]
    assert create["required"] == ["name"] and not schemas["CollectionUpdate"].get("required")
    quota = create["properties"]["daily_run_quota"]
    typed = [quota, *quota.get("oneOf", [])]
    assert any(alt.get("description") for alt in typed) and any(alt.get("minimum") == 1 for alt in typed)
    assert schemas["Evaluation"]["properties"]["order"]["enum"] == ["score", "rank", "file"]


def test_docs_reference_matches_the_schema(openapi: dict[str, Any]) -> None:
    text = DOC.read_text()
    assert with_reference(text, openapi) == text, "docs/api.md is stale: run python -m service.api.reference"
    assert generated(openapi).count("| POST /api/collections/{cid}/teams |") == 1
    for stale in ("`window`", "`quota`)"):
        assert stale not in text


def test_docs_page_works_offline() -> None:
    app = create_app("sqlite://", lambda followups: None)
    with TestClient(app=app) as client:
        page = client.get("/schema")
        assert page.status_code == 200 and "swagger" in page.text.lower()
        assets = re.findall(r'(?:src|href)=["\']([^"\']+)["\']', page.text)
        assert assets, page.text
        assert not [a for a in assets if a.startswith(("http://", "https://", "//"))], assets
        for asset in assets:
            r = client.get(asset)
            assert r.status_code == 200 and len(r.content) > 500, asset
        assert client.get("/schema/openapi.json").json()["info"]["title"] == "Cranfield"


def test_bad_bodies_are_422_naming_the_field(world: World) -> None:
    c, admin = world.client, auth(world.tokens["admin"])
    cases = [
        ({"name": "x", "bogus": 1}, "bogus"),
        ({"name": "x", "levels": [0, 1, 2, 3]}, "levels"),
        ({"name": "x", "evaluation": {"depth": "x"}}, "depth"),
        ({"name": "x", "evaluation": {"depht": 10}}, "depht"),
        ({"name": "x", "daily_run_quota": 0}, "daily_run_quota"),
        ({"name": ""}, "name"),
    ]
    for body, field in cases:
        r = c.post("/api/collections", json=body, headers=admin)
        assert r.status_code == 422, (body, r.text)
        problem = r.json()
        assert problem["code"] == "invalid_request" and field in problem["detail"], (body, problem)
        assert r.headers["content-type"].startswith("application/problem+json")
    r = c.patch(f"/api/collections/{world.cid}", json={"visibility": "secret"}, headers=admin)
    assert r.status_code == 422 and "visibility" in r.json()["detail"]
    r = c.patch(f"/api/runs/{world.run_ids['RUN-01']}/settings", json={"primary": True, "colour": "red"},
                headers=admin)
    assert r.status_code == 422 and "colour" in r.json()["detail"]
    assert c.get(f"/api/collections/{world.cid}", headers=admin).json()["name"] == "task"  # nothing changed


def test_patch_tells_absent_from_null(world: World) -> None:
    c, org, cid = world.client, auth(world.tokens["organiser"]), world.cid
    set_ = c.patch(f"/api/collections/{cid}", json={"daily_run_quota": 5, "description": "d",
                                                   "submission_closes_at": "2099-01-01T00:00:00Z"}, headers=org).json()
    assert set_["daily_run_quota"] == 5 and set_["submission_closes_at"].startswith("2099-01-01")
    kept = c.patch(f"/api/collections/{cid}", json={"description": "e"}, headers=org).json()
    assert kept["daily_run_quota"] == 5 and kept["submission_closes_at"] is not None and kept["description"] == "e"
    cleared = c.patch(f"/api/collections/{cid}", json={"daily_run_quota": None}, headers=org).json()
    assert cleared["daily_run_quota"] is None and cleared["submission_closes_at"] is not None
    rid = world.run_ids["RUN-01"]
    r = c.patch(f"/api/runs/{rid}/settings", json={"description": "mine", "priority": 2}, headers=org).json()
    assert r["description"] == "mine" and r["priority"] == 2
    r = c.patch(f"/api/runs/{rid}/settings", json={"priority": None}, headers=org).json()
    assert r["description"] == "mine" and r["priority"] is None


def test_a_bug_is_a_500_with_a_request_id_not_a_400(world: World, monkeypatch: pytest.MonkeyPatch,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    from service.evaluation.organising import collections

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise ValueError("secret internals")

    monkeypatch.setattr(collections, "document", broken)
    r = world.client.get(f"/api/collections/{world.cid}", headers=auth(world.tokens["admin"]))
    assert r.status_code == 500
    problem = r.json()
    assert problem["code"] == "internal_error" and re.fullmatch(r"[0-9a-f]{16}", problem["request_id"])
    assert "secret internals" not in r.text
    assert problem["request_id"] in caplog.text and "secret internals" in caplog.text


def test_unknown_path_and_method_are_problems(world: World) -> None:
    c = world.client
    r = c.get("/api/nothing-here")
    assert r.status_code == 404 and r.json()["code"] == "not_found"
    r = c.put(f"/api/collections/{world.cid}", json={}, headers=auth(world.tokens["admin"]))
    assert r.status_code == 405 and r.json()["code"] == "method_not_allowed"


def test_values_the_database_cannot_hold_are_400_not_500(world: World, backend: Backend) -> None:
    """A number past 64 bits, a NUL character, a name past its column: the request's fault
    (a NUL is refused as a control character before either database sees it: never a 500)."""
    c, admin = world.client, auth(world.tokens["admin"])
    cases = [
        ("POST", "/api/tokens", {"role": "organiser", "collections": [2**70]}),
        ("POST", f"/api/collections/{world.cid}/analyses", {"kind": "reusability", "pool": 2**70}),
        ("PATCH", f"/api/collections/{world.cid}", {"description": "nul \x00 inside"}),
        ("POST", f"/api/collections/{world.cid}/snapshots", {"label": "nul \x00 inside"}),
    ]
    for method, path, body in cases:
        r = c.request(method, path, json=body, headers=admin)
        # a NUL is a control character: refused by the free-text rule on both databases
        assert r.status_code in (400, 404, 422), (method, path, r.status_code, r.text)
    for name, status in (("a/b", 422), ("tab\there", 400), ("x" * 201, 422)):
        r = c.post("/api/teams", json={"name": name}, headers=admin)
        assert r.status_code == status and "name" in r.json()["detail"], name
    r = c.post(f"/api/collections/{world.cid}/runs", params={"team": "alpha"},
               content=f"0001 Q0 NTC-000-00001 1 2 {'t' * 300}\n", headers=admin)
    assert r.status_code in (400, 422), r.text


def test_snapshots_frozen_by_earlier_versions_are_still_served(world: World) -> None:
    """Boards frozen before members were added to the leaderboard document (no ``topics``,
    ``newest_qrels_version``, ``computed_at``) still read: the schema gives them defaults."""
    from service.store.db import transaction
    from service.store.models import LeaderboardSnapshot

    org = auth(world.tokens["organiser"])
    frozen = world.client.post(f"/api/collections/{world.cid}/snapshots", json={"label": "now"}, headers=org).json()
    assert frozen["created_at"] and frozen["label"] == "now"
    old = {"collection": "task", "metric": "nDCG@10", "released": False, "qrels_version": 1,
           "rows": [{"rank": 1, "run": "RUN-01", "team": "alpha", "mean": 0.5, "n_topics": 6}]}
    with transaction(world.factory) as s:
        snap = LeaderboardSnapshot(collection_id=world.cid, qrels_version=1, metric="nDCG@10", label="old",
                                   content=old, created_by="an earlier version")
        s.add(snap)
        s.flush()
        sid = snap.id
    r = world.client.get(f"/api/snapshots/{sid}", headers=org)
    assert r.status_code == 200, r.text
    doc = r.json()
    assert doc["rows"][0]["run"] == "RUN-01" and doc["topics"] == "all" and doc["computed_at"] is None


def test_refused_requests_give_their_connection_back(world: World, backend: Backend) -> None:
    """A 403 or 404 raised while resolving the collection must not keep a pooled connection."""
    from service.store.db import engine_for

    engine = engine_for(backend.database_url)
    before = engine.pool.checkedout()
    for _ in range(30):
        assert world.client.get(f"/api/collections/{world.other_cid}/runs",
                                headers=auth(world.tokens["alpha"])).status_code == 403
        assert world.client.get("/api/collections/99999/runs", headers=auth(world.tokens["alpha"])).status_code == 404
    assert engine.pool.checkedout() <= before
