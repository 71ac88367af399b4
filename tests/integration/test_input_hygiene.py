"""What the service takes in and how it answers (issue 24, items 6 and 9), over HTTP on a real
database:

- every free-text field of the API's bodies, query parameters and forms, and of the portal's
  forms, refuses control characters and bidirectional overrides with a 400 naming the field
  (tests/unit/test_text_hygiene.py has the rule itself and the terminal side);
- booleans are booleans (``topics_revealed: 0`` is a 422 naming the field);
- a label file naming a topic the collection does not have is refused on its line, and no
  version is made;
- the qrels comparison's CSV neutralises topic ids a spreadsheet would run;
- a 405 says which methods the path takes (``Allow``), on the API and the portal;
- the sign-in page renders while the database is down.

Pages, forms and rules: SQLite only (conftest.py), the database-down test on an unreachable
PostgreSQL address.
"""

from __future__ import annotations

import csv
import io
import re
from typing import Any

from litestar.testing import TestClient

from service.evaluation.publishing.exports import FORMULA_STARTS
from service.portal.forms import COOKIE, csrf_for
from tests.integration.conftest import World, auth

SQLITE_ONLY_BUT: set[str] = set()

ESC = "\x1b]0;owned\x07"  # an OSC: retitles the terminal
C1 = "\x9b2J"  # a C1 CSI: clears the screen
RLO = "\u202e"  # shows what follows right to left


def _refused(r: Any, field: str, status: int = 400) -> None:
    assert r.status_code == status, (field, r.status_code, r.text[:300])
    detail = r.json()["detail"]
    assert detail.startswith(f"{field}: U+") or f"{field}: U+" in detail, (field, detail)


# ------------------------------------------------------------------ the API
def test_every_free_text_field_of_the_api_refuses_control_characters(world: World) -> None:
    c, cid = world.client, world.cid
    admin, org, alpha = auth(world.tokens["admin"]), auth(world.tokens["organiser"]), auth(world.tokens["alpha"])
    rid = world.run_ids["RUN-01"]
    cases = [
        ("POST", "/api/collections", admin, {"name": f"evil{ESC}"}, "name"),
        ("POST", "/api/collections", admin, {"name": "fine", "description": f"a{C1}"}, "description"),
        ("PATCH", f"/api/collections/{cid}", org, {"description": f"two\nlines {RLO}"}, "description"),
        ("PATCH", f"/api/collections/{cid}", org, {"levels": [{"level": 1, "label": f"L1{ESC}"}]}, "label"),
        ("PATCH", f"/api/collections/{cid}", org, {"hidden_topics": ["0001", f"0002{RLO}"]}, "hidden_topics[1]"),
        ("POST", f"/api/collections/{cid}/settings-preview", org, {"description": f"{ESC}"}, "description"),
        ("POST", "/api/teams", admin, {"name": f"team\t{ESC}"}, "name"),
        ("POST", "/api/teams", admin, {"name": "tab\there"}, "name"),
        ("POST", "/api/tokens", admin, {"role": "organiser", "name": f"bob{C1}", "collections": [cid]}, "name"),
        ("POST", f"/api/collections/{cid}/topics", org, {"topics": [f"9{ESC}"]}, "topics[0]"),
        ("POST", f"/api/collections/{cid}/topics", org, {"topics": [{"id": "0001", "title": f"t{RLO}"}]}, "title"),
        ("POST", f"/api/collections/{cid}/topics", org,
         {"topics": [{"id": "0001", "description": f"ok\n{C1}"}]}, "description"),
        ("POST", f"/api/collections/{cid}/judgment-sets", org, {"name": "llm", "model": f"gpt{ESC}"}, "model"),
        ("POST", f"/api/collections/{cid}/judgment-sets", org, {"name": "llm", "judged_on": f"2025{RLO}"},
         "judged_on"),
        ("POST", f"/api/collections/{cid}/judgment-sets", org, {"name": "llm", "notes": f"n\n{ESC}"}, "notes"),
        ("POST", f"/api/collections/{cid}/judgment-sets", org, {"name": "llm", "prompt": f"p{C1}"}, "prompt"),
        ("PATCH", f"/api/collections/{cid}/judgment-sets/official", org, {"model": f"m{RLO}"}, "model"),
        ("POST", f"/api/collections/{cid}/judgment-sets/official/official", org, {"reason": f"r{ESC}"}, "reason"),
        ("PATCH", f"/api/runs/{rid}/settings", alpha, {"description": f"mine{ESC}"}, "description"),
        ("POST", f"/api/collections/{cid}/snapshots", org, {"label": f"final{C1}"}, "label"),
    ]
    for method, path, headers, body, field in cases:
        _refused(c.request(method, path, json=body, headers=headers), field)
    # nothing was stored
    assert c.get(f"/api/collections/{cid}", headers=org).json()["description"] == ""
    assert [s["name"] for s in c.get(f"/api/collections/{cid}/judgment-sets", headers=org).json()["items"]] == \
        ["official"]
    # a run's description as a query parameter or a form field (the run is not stored)
    run = world.runs["RUN-01"].replace("RUN-01", "RUN-X")
    _refused(c.post(f"/api/collections/{cid}/runs", content=run, params={"description": f"d{ESC}"}, headers=alpha),
             "description")
    _refused(c.post(f"/api/collections/{cid}/runs", files={"file": ("r.run", run)},
                    data={"description": f"d{RLO}"}, headers=alpha), "description")
    assert "RUN-X" not in {r["tag"] for r in c.get(f"/api/collections/{cid}/runs", headers=org).json()["items"]}
    # multi-line fields keep their line ends and tabs
    r = c.patch(f"/api/runs/{rid}/settings", json={"description": "line one\r\nline\ttwo"}, headers=alpha)
    assert r.status_code == 200 and r.json()["description"] == "line one\r\nline\ttwo"


def test_booleans_are_strict(world: World) -> None:
    c, org = world.client, auth(world.tokens["organiser"])
    for body, field in [({"topics_revealed": 0}, "topics_revealed"), ({"leaderboard_released": "true"},
                                                                      "leaderboard_released"),
                        ({"topics_revealed": 1}, "topics_revealed")]:
        r = c.patch(f"/api/collections/{world.cid}", json=body, headers=org)
        assert r.status_code == 422 and r.json()["detail"].startswith(f"{field}: Expected `bool`"), r.text
    r = c.patch(f"/api/runs/{world.run_ids['RUN-01']}/settings", json={"primary": 1}, headers=org)
    assert r.status_code == 422 and "primary" in r.json()["detail"], r.text
    r = c.patch(f"/api/collections/{world.cid}", json={"topics_revealed": True}, headers=org)
    assert r.status_code == 200 and r.json()["topics_revealed"] is True


# ------------------------------------------------------------------ the portal's forms
def _signed_in(world: World, role: str) -> tuple[dict[str, str], str]:
    c = world.client
    r = c.post("/login", data={"token": world.tokens[role], "next": "/"}, follow_redirects=False)
    assert r.status_code == 303, r.text
    secret = r.cookies[COOKIE]
    c.cookies.clear()
    return {"Cookie": f"{COOKIE}={secret}"}, csrf_for(secret)


def test_the_portals_forms_refuse_control_characters_naming_the_field(world: World) -> None:
    c, cid = world.client, world.cid
    headers, csrf = _signed_in(world, "organiser")
    forms = [
        (f"/c/{cid}/judgment-sets", {"action": "create", "name": "llm", "model": f"gpt{ESC}"}, "model"),
        (f"/c/{cid}/judgment-sets", {"action": "create", "name": "llm", "notes": f"n{C1}"}, "notes"),
        (f"/c/{cid}/topics/texts", {"id": "0001", "title": f"t{RLO}"}, "title"),
        (f"/c/{cid}/teams", {"action": "create", "team": f"evil{ESC}"}, "name"),
    ]
    for path, fields, field in forms:
        r = c.post(path, data={**fields, "csrf": csrf}, headers=headers, follow_redirects=False)
        assert r.status_code == 400, (path, r.status_code)
        assert re.search(rf"{re.escape(field)}[^:<]*: U\+[0-9A-F]{{4}}", r.text), (path, r.text[-2000:])
    assert [s["name"] for s in c.get(f"/api/collections/{cid}/judgment-sets",
                                     headers=auth(world.tokens["organiser"])).json()["items"]] == ["official"]


# ------------------------------------------------------------------ labels of unknown topics
def test_a_label_file_for_a_topic_not_in_the_collection_is_refused_on_its_line(world: World) -> None:
    c, org = world.client, auth(world.tokens["organiser"])
    base = f"/api/collections/{world.cid}/judgment-sets"
    assert c.post(base, json={"name": "crowd"}, headers=org).status_code == 201
    docno = next(line.split()[-2] for line in world.qrels.splitlines() if line.startswith("0001"))
    labels = f"0001 {docno} alice 1\n# a comment\n9999 {docno} alice 2\n"
    r = c.post(f"{base}/crowd/labels", content=labels, headers=org)
    assert r.status_code == 422, r.text
    problem = r.json()
    assert problem["line"] == 3 and "'9999' is not a topic of collection" in problem["detail"], problem
    crowd = c.get(f"{base}/crowd", headers=org).json()
    assert crowd["current_version"] is None and crowd["labels"] == 0
    assert "9999" not in {t["id"] for t in c.get(f"/api/collections/{world.cid}/topics", headers=org).json()["items"]}
    r = c.post(f"{base}/crowd/labels", content=f"0001 {docno} alice 1\n", headers=org)
    assert r.status_code == 201, r.text


# ------------------------------------------------------------------ the qrels comparison's CSV
EVIL_TOPICS = {"0001": "=1+1", "0002": "+SUM(1,2)", "0003": "-2+3", "0004": "@SUM(A1)"}


def _renamed(text: str) -> str:
    for old, new in EVIL_TOPICS.items():
        text = re.sub(rf"^{old}(?=\s)", new, text, flags=re.M)
    return text


def test_the_qrels_comparison_csv_neutralises_formula_topic_ids(world: World) -> None:
    c, admin = world.client, auth(world.tokens["admin"])
    cid = c.post("/api/collections", json={"name": "sheets", "official_metric": "nDCG@10",
                                           "metrics": ["AP", "nDCG@10"]}, headers=admin).json()["id"]
    assert c.post(f"/api/collections/{cid}/teams", json={"team": "alpha"}, headers=admin).status_code == 201
    first = _renamed(world.qrels)
    assert c.post(f"/api/collections/{cid}/qrels", content=first, headers=admin).status_code == 201
    for text in world.runs.values():
        r = c.post(f"/api/collections/{cid}/runs", content=_renamed(text), params={"team": "alpha"}, headers=admin)
        assert r.status_code == 201, r.text
    second = "".join(re.sub(r" L(\d+)$", lambda m: f" L{(int(m.group(1)) + 1) % 3}", line) + "\n"
                     if i % 2 else line + "\n" for i, line in enumerate(first.splitlines()))  # labels changed
    r = c.post(f"/api/collections/{cid}/qrels", content=second, headers=admin)
    assert r.status_code == 201, r.text
    headers, _ = _signed_in(world, "admin")
    r = c.get(f"/c/{cid}/qrels/compare.csv?a=1&b=2", headers=headers)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/csv"), r.text[:500]
    rows = list(csv.reader(io.StringIO(r.text)))
    topics = [row[0] for row in rows[1:]]
    assert set(topics) >= {f"'{t}" for t in EVIL_TOPICS.values()}, topics
    assert not any(cell.startswith(FORMULA_STARTS) for row in rows for cell in row if not _number(cell)), rows


def _number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


# ------------------------------------------------------------------ 405 and Allow
def test_a_405_names_the_methods_the_path_takes() -> None:
    from service.api.app import create_app

    with TestClient(app=create_app("sqlite://", lambda followups: None)) as c:  # routing: no database read
        for method, path, allowed in [("DELETE", "/api/teams", {"POST"}),
                                      ("PUT", "/api/collections/1", {"GET", "PATCH"}),
                                      ("DELETE", "/login", {"GET", "POST"}), ("PUT", "/c/1/board.csv", {"GET"}),
                                      ("POST", "/static/portal.css", {"GET"}), ("DELETE", "/health/live", {"GET"})]:
            r = c.request(method, path)
            assert r.status_code == 405 and r.json()["code"] == "method_not_allowed", (method, path, r.status_code)
            named = {m.strip() for m in r.headers.get("allow", "").split(",") if m.strip()}
            assert allowed <= named and method not in named, (method, path, r.headers)


# ------------------------------------------------------------------ sign in while the database is down
def test_the_sign_in_page_needs_no_database() -> None:
    from service.api.app import create_app

    app = create_app("postgresql+psycopg://postgres@127.0.0.1:1/cranfield", lambda followups: None)
    with TestClient(app=app) as client:
        for cookie in ({}, {"Cookie": f"{COOKIE}=a-session-from-before-the-outage"}):
            r = client.get("/login?next=/c/1", headers=cookie)
            assert r.status_code == 200 and 'name="token"' in r.text and 'value="/c/1"' in r.text, r.text[:500]
        # sending the form needs the database: a 503 with Retry-After, not a hang
        r = client.post("/login", data={"token": "cf_whatever"}, follow_redirects=False)
        assert r.status_code == 503 and r.headers.get("retry-after"), r.status_code
