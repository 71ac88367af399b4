"""Run metadata at submission and the warnings a run is accepted with, over the API and the
portal, on both databases.

The world (conftest.py): collection "task" with topics 0001-0006, official metric nDCG@10,
metrics AP and nDCG@10 and no evaluation depth, so the warning depth is 1000 (AP reads the
whole list) and a tie straddles the cutoff at ranks 10 and 11. Teams alpha and beta are enrolled.
"""

from __future__ import annotations

import itertools

import pytest
from sqlalchemy import func, select

from service.evaluation.permissions import access, policy
from service.formats import ir_metadata
from service.store.models import Collection, Run
from tests.integration.conftest import World, auth
from tests.integration.test_portal import as_role, csrf_of

# Run on PostgreSQL too; the module's other tests run on SQLite only (conftest.py):
# metadata rules on SQLite; storage on both.
SQLITE_ONLY_BUT = {"test_metadata_round_trip_as_a_multipart_form", "test_idempotency_key_compares_the_metadata_too",
                   "test_bad_metadata_is_refused_naming_the_field_and_stores_nothing"}

TOPICS = [f"{i:04d}" for i in range(1, 7)]
IR_METADATA = b"""schema-version: 0.1
tag: TAG
method:
  automatic: false
  retrieval:
  - {name: bm25, method: BM25, b: 0.4}
actor: {name: A. Person, team: alpha, role: experimenter}
data:
  training data: [{name: task-train}]
"""


def run_file(tag: str, topics: list[str] = TOPICS, depth: int = 1000, tie_at: int | None = None,
             swap_ranks: bool = False, header: str = "") -> str:
    """A run whose warnings follow from its arguments: ``depth`` documents per topic with
    strictly decreasing scores (none of the defaults warn), the documents at ranks ``tie_at``
    and ``tie_at + 1`` tied, the first two ranks swapped in the first topic."""
    lines = [header] if header else []
    for n, topic in enumerate(topics):
        for i in range(depth):
            score = float(depth - i) if tie_at is None or i != tie_at else float(depth - i + 1)
            rank = i + 1
            if swap_ranks and n == 0 and i < 2:
                rank = 2 - i
            lines.append(f"{topic} Q0 {topic}-d{i} {rank} {score} {tag}")
    return "\n".join(lines) + "\n"


def n_runs(world: World) -> int:
    with world.factory() as s:
        return int(s.scalar(select(func.count()).select_from(Run)))


def codes(doc: dict) -> dict[str, tuple[list[str], int]]:
    return {w["code"]: (w["topics"], w["count"]) for w in doc["warnings"]}


# ------------------------------------------------------------------------------ API
def test_every_warning_code_over_the_api_and_none_for_a_clean_run(world: World) -> None:
    c, cid, alpha = world.client, world.cid, auth(world.tokens["alpha"])
    r = c.post(f"/api/collections/{cid}/runs", content=run_file("clean"), headers=alpha)
    assert r.status_code == 201, r.text
    assert r.json()["warnings"] == [] and r.json()["status"] in ("evaluated", "validated", "evaluating")
    r = c.post(f"/api/collections/{cid}/runs", content=run_file("bad", TOPICS[1:], depth=50, tie_at=10,
                                                                 swap_ranks=True), headers=alpha)
    assert r.status_code == 201, r.text  # stored all the same
    found = codes(r.json())
    assert found == {"missing_topics": (["0001"], 1), "short_lists": (TOPICS[1:], 5),
                     "ties_at_cutoff": (TOPICS[1:], 5), "rank_disagrees": (["0002"], 1)}
    assert all(w["message"] for w in r.json()["warnings"])
    # stored with the run: read back, listed, and kept through evaluation
    rid = r.json()["id"]
    assert codes(c.get(f"/api/runs/{rid}", headers=alpha).json()) == found
    listed = {d["tag"]: d for d in c.get(f"/api/collections/{cid}/runs", headers=alpha).json()["items"]}
    assert codes(listed["bad"]) == found and listed["clean"]["warnings"] == []
    # the world's own runs were checked too (20 documents a topic: short lists)
    assert "short_lists" in codes(listed["RUN-01"])


def test_metadata_round_trip_as_a_multipart_form(world: World) -> None:
    c, cid, alpha = world.client, world.cid, auth(world.tokens["alpha"])
    form = {"description": "BM25, then a manual reformulation", "run_type": "manual", "uses_training_data": "true",
            "uses_external_resources": "false", "priority": "2", "primary": "true"}
    r = c.post(f"/api/collections/{cid}/runs", data=form, headers=alpha,
               files={"file": ("m.run", run_file("m")), "ir_metadata": ("m.yaml", IR_METADATA)})
    assert r.status_code == 201, r.text
    doc = r.json()
    assert (doc["description"], doc["run_type"], doc["uses_training_data"], doc["uses_external_resources"],
            doc["priority"], doc["primary"], doc["has_ir_metadata"]) == (
        form["description"], "manual", True, False, 2, True, True)
    same = {k: v for k, v in doc.items() if k not in ("job", "status", "reproduction", "format")}  # (the submission's own fields)
    assert {k: v for k, v in c.get(f"/api/runs/{doc['id']}", headers=alpha).json().items() if k != "status"} == same
    r = c.get(f"/api/runs/{doc['id']}/ir_metadata", headers=alpha)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    assert r.text == IR_METADATA.decode()
    # ir_metadata as a text field; the statements left out are "not stated"
    r = c.post(f"/api/collections/{cid}/runs", data={"ir_metadata": IR_METADATA.decode()}, headers=alpha,
               files={"file": ("t.run", run_file("t"))})
    assert r.status_code == 201, r.text
    assert (r.json()["run_type"], r.json()["uses_training_data"], r.json()["primary"], r.json()["has_ir_metadata"]
            ) == ("automatic", None, False, True)
    # a run without ir_metadata: 404 for its team
    r = c.get(f"/api/runs/{world.run_ids['RUN-01']}/ir_metadata", headers=alpha)
    assert r.status_code == 404 and r.json()["code"] == "not_found"


def test_metadata_round_trip_as_query_parameters(world: World) -> None:
    c, cid, alpha = world.client, world.cid, auth(world.tokens["alpha"])
    r = c.post(f"/api/collections/{cid}/runs?run_type=interactive&uses_training_data=false"
               "&uses_external_resources=true&priority=7&primary=true&description=by%20hand",
               content=run_file("q"), headers=alpha)
    assert r.status_code == 201, r.text
    doc = r.json()
    assert (doc["run_type"], doc["uses_training_data"], doc["uses_external_resources"], doc["priority"],
            doc["primary"], doc["description"], doc["has_ir_metadata"]) == (
        "interactive", False, True, 7, True, "by hand", False)


@pytest.mark.parametrize(("query", "form", "status", "field"), [
    ("run_type=robot", None, 422, "run_type"),
    ("priority=0", None, 422, "priority"),
    ("uses_training_data=maybe", None, 422, "uses_training_data"),
    (None, {"run_type": "robot"}, 400, "run_type"),
    (None, {"priority": "first"}, 400, "priority"),
    (None, {"priority": "1001"}, 400, "priority"),
    (None, {"uses_external_resources": "maybe"}, 400, "uses_external_resources"),
    (None, {"primary": "sure"}, 400, "primary"),
    (None, {"runtype": "manual"}, 422, "runtype"),  # an unknown field, as in JSON bodies
    ("run_type=manual", {"run_type": "manual"}, 422, "run_type"),  # given twice
])
def test_bad_metadata_is_refused_naming_the_field_and_stores_nothing(
        world: World, query: str | None, form: dict[str, str] | None, status: int, field: str) -> None:
    c, cid, alpha = world.client, world.cid, auth(world.tokens["alpha"])
    before = n_runs(world)
    url = f"/api/collections/{cid}/runs" + (f"?{query}" if query else "")
    if form is None:
        r = c.post(url, content=run_file("x"), headers=alpha)
    else:
        r = c.post(url, data=form, files={"file": ("x.run", run_file("x"))}, headers=alpha)
    assert r.status_code == status, r.text
    assert field in r.json()["detail"]
    assert n_runs(world) == before


@pytest.mark.parametrize(("document", "line", "fragment"), [
    (IR_METADATA + b"results: {map: 0.3}\n", IR_METADATA.count(b"\n") + 1, "unknown section 'results'"),
    (b"- platform\n- method\n", 1, "not a list"),
    (b"method:\n  automatic: [yes\n", 3, "not valid YAML"),
    (b"method:\n  automatic: sometimes\n", 2, "automatic"),
    (b"#" * (ir_metadata.MAX_BYTES + 1), None, "larger than 256 KB"),
])
def test_invalid_ir_metadata_is_refused_with_its_line_and_stores_nothing(
        world: World, document: bytes, line: int | None, fragment: str) -> None:
    c, cid, alpha = world.client, world.cid, auth(world.tokens["alpha"])
    before = n_runs(world)
    r = c.post(f"/api/collections/{cid}/runs", headers=alpha,
               files={"file": ("x.run", run_file("x")), "ir_metadata": ("meta.yaml", document)})
    assert r.status_code == 422, r.text
    problem = r.json()
    assert problem["code"] == "invalid_input" and problem["source"] == "meta.yaml" and problem["line"] == line
    assert fragment in problem["detail"]
    assert n_runs(world) == before


def test_ir_metadata_in_the_run_files_header(world: World) -> None:
    c, cid, alpha = world.client, world.cid, auth(world.tokens["alpha"])
    header = "\n".join(f"# {line}" for line in ["ir_metadata.start", "tag: h", "method:", "  automatic: true",
                                                  "ir_metadata.end"])
    r = c.post(f"/api/collections/{cid}/runs", content=run_file("h", header=header), headers=alpha)
    assert r.status_code == 201, r.text
    assert c.get(f"/api/runs/{r.json()['id']}/ir_metadata", headers=alpha).text == \
        "tag: h\nmethod:\n  automatic: true\n"
    bad = header.replace("automatic: true", "automatic: perhaps")
    r = c.post(f"/api/collections/{cid}/runs", content=run_file("h2", header=bad), headers=alpha)
    assert r.status_code == 422 and r.json()["line"] == 4, r.text  # the run file's line


def test_settings_patch_changes_run_type_and_statements(world: World) -> None:
    c, alpha, beta = world.client, auth(world.tokens["alpha"]), auth(world.tokens["beta"])
    rid = world.run_ids["RUN-01"]  # alpha's
    r = c.patch(f"/api/runs/{rid}/settings", json={"run_type": "manual", "uses_training_data": True,
                                                   "uses_external_resources": False}, headers=alpha)
    assert r.status_code == 200, r.text
    assert (r.json()["run_type"], r.json()["uses_training_data"], r.json()["uses_external_resources"]) == (
        "manual", True, False)
    r = c.patch(f"/api/runs/{rid}/settings", json={"uses_training_data": None}, headers=alpha)
    assert (r.json()["run_type"], r.json()["uses_training_data"], r.json()["uses_external_resources"]) == (
        "manual", None, False)  # null: not stated; the fields left out stay
    r = c.patch(f"/api/runs/{rid}/settings", json={"run_type": "robot"}, headers=alpha)
    assert r.status_code == 422 and "run_type" in r.json()["detail"]
    assert c.patch(f"/api/runs/{rid}/settings", json={"run_type": "automatic"}, headers=beta).status_code == 403
    r = c.patch(f"/api/runs/{rid}/settings", json={"run_type": "interactive"}, headers=auth(world.tokens["organiser"]))
    assert r.status_code == 200 and r.json()["run_type"] == "interactive"


def test_idempotency_key_compares_the_metadata_too(world: World) -> None:
    c, cid = world.client, world.cid
    h = {**auth(world.tokens["alpha"]), "Idempotency-Key": "meta-1"}
    text = run_file("idem")
    first = c.post(f"/api/collections/{cid}/runs?run_type=manual&priority=3", content=text, headers=h)
    assert first.status_code == 201, first.text
    again = c.post(f"/api/collections/{cid}/runs?run_type=manual&priority=3", content=text, headers=h)
    assert again.status_code == 201 and again.json() == first.json()  # the first answer, warnings included
    for other in ("run_type=automatic&priority=3", "run_type=manual&priority=3&primary=true", ""):
        r = c.post(f"/api/collections/{cid}/runs?{other}", content=text, headers=h)
        assert r.status_code == 422 and "Idempotency-Key" in r.text, (other, r.text)
    # the same form with and without an ir_metadata file
    h2 = {**auth(world.tokens["alpha"]), "Idempotency-Key": "meta-2"}
    files = {"file": ("i.run", run_file("idem2")), "ir_metadata": ("m.yaml", IR_METADATA)}
    first = c.post(f"/api/collections/{cid}/runs", files=files, headers=h2)
    assert first.status_code == 201, first.text
    assert c.post(f"/api/collections/{cid}/runs", files=files, headers=h2).json() == first.json()
    r = c.post(f"/api/collections/{cid}/runs", files={"file": files["file"]}, headers=h2)
    assert r.status_code == 422 and "Idempotency-Key" in r.text
    r = c.post(f"/api/collections/{cid}/runs", headers=h2, files={
        "file": files["file"], "ir_metadata": ("m.yaml", IR_METADATA.replace(b"automatic: false", b"automatic: true"))})
    assert r.status_code == 422 and "Idempotency-Key" in r.text
    assert sum(1 for d in c.get(f"/api/collections/{cid}/runs", headers=h).json()["items"]
               if d["tag"] in ("idem", "idem2")) == 2


ROLES = ("anonymous", "alpha", "beta", "organiser", "other_organiser", "admin", "assessor")


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)  # a question of rules, not of the database
def test_ir_metadata_is_readable_by_whoever_may_see_the_run(world: World) -> None:
    """The role matrix of GET /api/runs/{rid}/ir_metadata over the collection's states, against
    ``policy.may_see_run`` (the agreement test's world has runs without ir_metadata, so the
    endpoint's question is asked here, of a run with one)."""
    c, cid = world.client, world.cid
    r = c.post(f"/api/collections/{cid}/runs", headers=auth(world.tokens["alpha"]),
               files={"file": ("acc.run", run_file("acc", depth=10)), "ir_metadata": ("m.yaml", IR_METADATA)})
    assert r.status_code == 201, r.text
    rid = r.json()["id"]
    with world.factory() as s:
        me_of = {role: access.principal_for(s, f"Bearer {world.tokens[role]}") if role in world.tokens
                 else access.Principal() for role in ROLES}
    seen = set()
    for visibility, released in itertools.product(("private", "public"), (False, True)):
        r = c.patch(f"/api/collections/{cid}", json={"visibility": visibility, "leaderboard_released": released},
                    headers=auth(world.tokens["admin"]))
        assert r.status_code == 200, r.text
        with world.factory() as s:
            coll, run = s.get(Collection, cid), s.get(Run, rid)
            expected = {role: policy.may_see_run(me_of[role], run, coll) for role in ROLES}
        for role in ROLES:
            r = c.get(f"/api/runs/{rid}/ir_metadata", headers=auth(world.tokens.get(role)))
            assert r.status_code in (200, 401, 403), (role, visibility, released, r.status_code)
            assert (r.status_code == 200) == expected[role], (role, visibility, released, r.status_code)
            if r.status_code == 200:
                assert r.text == IR_METADATA.decode()
            seen.add((role, visibility, released, r.status_code))
    # another team's participant before the release: denied; after it: allowed
    assert ("beta", "private", False, 403) in seen and ("beta", "private", True, 200) in seen
    assert ("anonymous", "public", False, 401) in seen and ("assessor", "public", True, 403) in seen


def test_schema_documents_the_metadata(world: World) -> None:
    schema = world.client.get("/schema/openapi.json").json()
    submit = schema["paths"]["/api/collections/{cid}/runs"]["post"]
    params = {p["name"] for p in submit["parameters"]}
    assert {"run_type", "uses_training_data", "uses_external_resources", "priority", "primary",
            "description"} <= params
    form = submit["requestBody"]["content"]["multipart/form-data"]["schema"]["properties"]
    assert {"file", "ir_metadata", "run_type", "priority", "primary"} <= set(form)
    op = schema["paths"]["/api/runs/{rid}/ir_metadata"]["get"]
    assert op["operationId"] == "getRunIrMetadata" and {"401", "403", "404"} <= set(op["responses"])


# ------------------------------------------------------------------------------ portal
def test_portal_submit_with_metadata_shows_the_warnings(world: World) -> None:
    c, cid = world.client, world.cid
    headers, csrf = as_role(world, "alpha"), csrf_of(world, "alpha")
    page = c.get(f"/c/{cid}/submit", headers=headers).text
    for name in ('name="run_type"', 'name="description"', 'name="uses_training_data"',
                 'name="uses_external_resources"', 'name="priority"', 'name="primary"', 'name="ir_metadata"'):
        assert name in page
    # a bad value comes back on the form, with what was entered
    r = c.post(f"/c/{cid}/submit", files={"file": ("p.run", run_file("p"))}, headers=headers,
               data={"csrf": csrf, "priority": "soon", "description": "kept <b>as typed</b>"})
    assert r.status_code == 400 and "priority" in r.text and "kept &lt;b&gt;as typed&lt;/b&gt;" in r.text
    r = c.post(f"/c/{cid}/submit", files={"file": ("p.run", run_file("p")), "ir_metadata": ("m.yaml", b"x: 1\n")},
               data={"csrf": csrf}, headers=headers)
    assert r.status_code == 422 and "m.yaml, line 1" in r.text and "unknown section" in r.text
    # accepted with warnings (two topics left out, one tie at rank 10/11)
    r = c.post(f"/c/{cid}/submit", headers=headers, follow_redirects=False,
               files={"file": ("p.run", run_file("p", TOPICS[:4], tie_at=10)), "ir_metadata": ("m.yaml", IR_METADATA)},
               data={"csrf": csrf, "run_type": "manual", "description": "by hand", "uses_training_data": "true",
                     "uses_external_resources": "", "priority": "1", "primary": "true"})
    assert r.status_code == 303, r.text
    rid = int(r.headers["location"].rsplit("=", 1)[1])
    runs_page = c.get(r.headers["location"], headers=headers).text
    assert "Accepted with 2 warnings" in runs_page
    assert 'data-warning="missing_topics"' in runs_page and "0005, 0006" in runs_page
    assert 'data-warning="ties_at_cutoff"' in runs_page
    assert f'data-run-type="{rid}">manual<' in runs_page and f'data-run-warnings="{rid}">' in runs_page
    doc = c.get(f"/api/runs/{rid}", headers=auth(world.tokens["alpha"])).json()
    assert (doc["run_type"], doc["description"], doc["uses_training_data"], doc["uses_external_resources"],
            doc["priority"], doc["primary"], doc["has_ir_metadata"]) == ("manual", "by hand", True, None, 1, True, True)
    # a clean run: no warnings, said so
    r = c.post(f"/c/{cid}/submit", headers=headers, data={"csrf": csrf}, follow_redirects=False,
               files={"file": ("q.run", run_file("q")), "ir_metadata": ("", b"")})  # a file input left empty
    assert r.status_code == 303, r.text
    runs_page = c.get(r.headers["location"], headers=headers).text
    assert "No warnings" in runs_page and "Accepted with" not in runs_page


def test_portal_primary_runs_marked_by_their_team_or_organisers(world: World) -> None:
    c, cid = world.client, world.cid
    alpha_run, beta_run = world.run_ids["RUN-01"], world.run_ids["RUN-03"]
    alpha_tag = "RUN-01"

    def primary(rid: int) -> bool:
        return bool(c.get(f"/api/runs/{rid}", headers=auth(world.tokens["organiser"])).json()["primary"])

    alpha, alpha_csrf = as_role(world, "alpha"), csrf_of(world, "alpha")
    page = c.get(f"/c/{cid}/runs", headers=alpha).text
    assert f'action="/c/{cid}/runs/{alpha_run}/primary"' in page
    r = c.post(f"/c/{cid}/runs/{alpha_run}/primary", data={"primary": "true"}, headers=alpha, follow_redirects=False)
    assert r.status_code == 403 and not primary(alpha_run)  # no form token
    r = c.post(f"/c/{cid}/runs/{alpha_run}/primary", data={"csrf": alpha_csrf, "primary": "true"}, headers=alpha,
               follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == f"/c/{cid}/runs?notice=primary-on&run={alpha_tag}"
    assert primary(alpha_run)
    answered = c.get(r.headers["location"], headers=alpha).text
    assert "Unmark" in answered and f"Run {alpha_tag} is marked as its team&#39;s primary run." in answered
    # another team's run: refused, unchanged
    r = c.post(f"/c/{cid}/runs/{beta_run}/primary", data={"csrf": alpha_csrf, "primary": "true"}, headers=alpha,
               follow_redirects=False)
    assert r.status_code == 403 and not primary(beta_run)
    # a run of another collection's path: not found
    r = c.post(f"/c/{world.other_cid}/runs/{alpha_run}/primary", data={"csrf": alpha_csrf, "primary": "false"},
               headers=alpha, follow_redirects=False)
    assert r.status_code in (403, 404) and primary(alpha_run)
    # organisers mark any run
    org, org_csrf = as_role(world, "organiser"), csrf_of(world, "organiser")
    r = c.post(f"/c/{cid}/runs/{beta_run}/primary", data={"csrf": org_csrf, "primary": "true"}, headers=org,
               follow_redirects=False)
    assert r.status_code == 303 and primary(beta_run)
    r = c.post(f"/c/{cid}/runs/{alpha_run}/primary", data={"csrf": alpha_csrf, "primary": "false"}, headers=alpha,
               follow_redirects=False)
    assert r.status_code == 303 and not primary(alpha_run)
