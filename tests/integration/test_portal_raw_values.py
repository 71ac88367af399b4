"""No raw value on any portal page (issue 27, item 3): every page an organiser, an admin, a
participant, an assessor and a signed-out reader can reach is crawled from the site's and the
collections' navigation, and its visible text is read for what a program prints and a person
should never see: ``None``, ``nan``, ``True``/``False``, a Python dict (``{'``), an empty
list or dict as a cell.

The state is built once for the module, on SQLite (pages render alike on both databases): the
world of conftest.py ("task": three runs, two teams) given a second qrels version and a pool,
released and public after a settings change and a snapshot; "pending", unreleased, whose newest
job waits for its significance tests (its follow-up work is never done); "fresh", with no qrels
and so no board. The settings preview and the qrels preview are pages answering a form: they
are posted (nothing is stored) and read too.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import pytest

from service.config import settings
from service.portal.forms import COOKIE, csrf_for
from tests.integration.conftest import Templates, _seed_world, _sqlite_backend, auth, run_inline
from tests.support.page_text import raw_values, read_page
from tests.support.sessions import open_portal_session

SQLITE_ONLY_BUT: set[str] = set()  # a question of pages: SQLite only

ROLES = ("organiser", "admin", "alpha", "assessor", "anonymous")
MAX_PAGES = 400  # per role: the crawl stops there (the module's state has about 100 pages per role)
MAX_VARIANTS = 4  # query strings followed per path (a selector's choices, the pages of a listing)
# Links not followed: downloads (not pages), the API and its documentation, sign-out (a form).
SKIPPED = re.compile(r"^/(api|schema|static|health)(/|$)|\.(csv|tex|txt|json|yaml|ico|svg)$|/file$|^/logout$")

def test_the_reader_finds_every_kind_of_raw_value() -> None:
    """The check itself: each raw value a template could print is found, and only in what a
    reader sees (not in scripts, hidden fields, attributes)."""
    for shown in ("team: None", "released: True", "1037798: {'0': 141}", "mean nan", "False", "['AP']"):
        assert raw_values(f"<p>{shown}</p>"), shown
    assert raw_values("<table><tr><td>[]</td></tr></table>")
    clean = ('<p data-x="None" title="True">A run is released: yes; mean –; nuance, Nancy</p>'
             '<script>var x = {"a": null, "b": None};</script><textarea hidden>None</textarea>'
             '<table><tr><td>[0, 1]</td></tr></table>')
    assert raw_values(clean) == []


# ------------------------------------------------------------------------------ the state
@dataclass
class Site:
    client: Any  # litestar.testing.TestClient
    cookies: dict[str, str]  # role -> portal session secret ("" signed out)
    ids: dict[str, int]
    forms: dict[str, str] = field(default_factory=dict)  # pages answering a form: name -> html

    def headers(self, role: str) -> dict[str, str]:
        secret = self.cookies.get(role, "")
        return {"Cookie": f"{COOKIE}={secret}"} if secret else {}

    def csrf(self, role: str) -> str:
        return csrf_for(self.cookies[role])


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory, templates: Templates) -> Iterator[Site]:
    from litestar.testing import TestClient

    from service.api.app import create_app
    from service.store.db import engine_for
    from service.store.migrate import upgrade

    saved = dict(os.environ)
    be = _sqlite_backend(Path(tmp_path_factory.mktemp("raw-values")))
    try:
        if templates.has("sqlite", "world"):  # the session's world, if a test built it already
            templates.restore(be, "world")
            seed = templates.seeds["sqlite"]
        else:
            upgrade(be.database_url)
            be.activate()
            seed = _seed_world(be)
        be.activate()
        factory = be.factory()
        app = create_app(be.database_url, lambda followups: run_inline(factory, followups))
        # the same database, its follow-up work never done: a job stays where it was planned
        stalled = create_app(be.database_url, lambda followups: None)
        with TestClient(app=app) as client, TestClient(app=stalled) as stalled_client:
            yield _build(client, stalled_client, factory, seed)
    finally:
        engine_for(be.database_url).dispose()
        os.environ.clear()
        os.environ.update(saved)
        settings.cache_clear()


def _build(c: Any, stalled: Any, factory: Any, seed: Any) -> Site:
    tokens = dict(seed.tokens)
    admin = auth(tokens["admin"])
    cid = seed.cid
    ids = {"task": cid, "other": seed.other_cid}

    # two more collections: "pending" (evaluated, unreleased, a job waiting for its tests) and
    # "fresh" (no qrels: no board); team alpha enrolled in both
    for name in ("pending", "fresh"):
        r = c.post("/api/collections", json={"name": name, "official_metric": "nDCG@10", "metrics": ["AP", "nDCG@10"]},
                   headers=admin)
        assert r.status_code == 201, r.text
        ids[name] = r.json()["id"]
        assert c.post(f"/api/collections/{ids[name]}/teams", json={"team": "alpha"}, headers=admin).status_code == 201
    r = c.post("/api/tokens", json={"role": "organiser", "name": "organiser",
                                    "collections": [cid, ids["pending"], ids["fresh"]]}, headers=admin)
    assert r.status_code == 201, r.text
    tokens["organiser"] = r.json()["token"]
    org = auth(tokens["organiser"])
    cookies = {role: open_portal_session(factory, tokens[role]) for role in ROLES if role != "anonymous"}
    cookies["anonymous"] = ""
    site = Site(c, cookies, ids)
    as_org, csrf = site.headers("organiser"), site.csrf("organiser")

    # "pending": qrels, alpha's run, then a change of the test whose job never runs its tests
    pid = ids["pending"]
    assert c.post(f"/api/collections/{pid}/qrels", content=seed.qrels, headers=org).status_code == 201
    r = c.post(f"/api/collections/{pid}/runs", content=seed.runs["RUN-01"], headers=auth(tokens["alpha"]))
    assert r.status_code == 201, r.text
    r = stalled.patch(f"/api/collections/{pid}", json={"significance": {"test": "t", "correction": "holm"}},
                      headers=org)
    assert r.status_code == 200, r.text
    jobs = c.get(f"/api/collections/{pid}/jobs", headers=org).json()
    newest = (jobs["items"] if isinstance(jobs, dict) else jobs)[0]
    assert newest["status"] == "testing" and newest["total"] == 0, newest

    # "task": a second qrels version (judgments changed), a pool, a snapshot, a settings change
    # (booleans and None in the audit), released and public
    corrected = seed.qrels.replace(" L0\n", " L2\n", 6)
    r = c.post(f"/c/{cid}/qrels", files={"file": ("v2.qrels", corrected)}, data={"csrf": csrf}, headers=as_org,
               follow_redirects=False)
    assert r.status_code == 303, r.text[:500]
    r = c.post(f"/c/{cid}/pools", data={"csrf": csrf, "action": "pool", "depth": "5"}, headers=as_org,
               follow_redirects=False)
    assert r.status_code == 303, r.text[:500]
    r = c.post(f"/c/{cid}/snapshots", data={"csrf": csrf, "label": "official", "metric": "AP"}, headers=as_org,
               follow_redirects=False)
    assert r.status_code == 303, r.text[:500]
    # a run submitted with what the form asks (a type, stated and unstated flags, a priority)
    r = c.post(f"/c/{cid}/submit", files={"file": ("described.txt", seed.runs["RUN-02"].replace("RUN-02", "described"))},
               data={"csrf": site.csrf("alpha"), "description": "BM25 and a reranker", "run_type": "manual",
                     "uses_training_data": "true", "uses_external_resources": "", "priority": "2"},
               headers=site.headers("alpha"), follow_redirects=False)
    assert r.status_code == 303, r.text[:500]
    # a second judgment set (automatic, some of its fields left empty), judged and evaluated
    r = c.post(f"/api/collections/{cid}/judgment-sets", headers=org, json={
        "name": "umbrela", "source": "automatic", "model": "gpt-4o-2024-08-06", "prompt": "UMBRELA v1"})
    assert r.status_code == 201, r.text
    r = c.post(f"/api/collections/{cid}/qrels", params={"judgment_set": "umbrela"},
               content=seed.qrels.replace(" L1\n", " L0\n", 20), headers=org)
    assert r.status_code == 201, r.text
    r = c.patch(f"/api/collections/{cid}", json={"significance": {"test": "randomisation", "resamples": 200},
                                                 "leaderboard_released": True, "visibility": "public",
                                                 "daily_run_quota": None}, headers=org)
    assert r.status_code == 200, r.text
    # pages answering a form: the settings preview (a change of B, of a flag, of a list and of a
    # time) and the qrels preview, nothing stored
    settings_form = _form_values(c.get(f"/c/{cid}/console/settings", headers=as_org).text)
    settings_form.update({"csrf": csrf, "significance.resamples": "1000", "topics_revealed": "1",
                          "metrics": "AP\nnDCG@10\nP@5", "submission_closes_at": "2031-01-01T00:00"})
    r = c.post(f"/c/{cid}/console/settings", data=settings_form, headers=as_org)
    assert r.status_code == 200 and 'id="changes"' in r.text, r.text[:2000]
    site.forms["settings preview"] = r.text
    r = c.post(f"/c/{cid}/qrels", files={"file": ("v3.qrels", seed.qrels)}, data={"csrf": csrf, "action": "preview"},
               headers=as_org)
    assert r.status_code == 200 and 'id="qrels-preview"' in r.text, r.text[:2000]
    site.forms["qrels preview"] = r.text
    return site


def _form_values(html: str) -> dict[str, str]:
    """The values of a page's form fields as the browser would post them (text fields, checked
    boxes, selected options, text areas)."""
    values: dict[str, str] = {}
    for tag in re.findall(r"<input\b[^>]*>", html):
        name, value = re.search(r'name="([^"]*)"', tag), re.search(r'value="([^"]*)"', tag)
        if name is None or ('type="checkbox"' in tag and " checked" not in tag):
            continue
        values[name.group(1)] = value.group(1) if value else ""
    for name, body in re.findall(r'<select[^>]*name="([^"]*)"[^>]*>(.*?)</select>', html, flags=re.DOTALL):
        chosen = re.search(r'<option value="([^"]*)"[^>]*selected', body) or re.search(r'<option value="([^"]*)"', body)
        values[name] = chosen.group(1) if chosen else ""
    for name, body in re.findall(r'<textarea[^>]*name="([^"]*)"[^>]*>(.*?)</textarea>', html, flags=re.DOTALL):
        values[name] = body
    return values


# ------------------------------------------------------------------------------ the crawl
def crawl(site: Site, role: str) -> tuple[dict[str, str], dict[str, int]]:
    """Every portal page ``role`` reaches from the index and the collections' home pages by
    following links (GET only): (path with query -> html of the pages that answer 200, path
    -> status of those answering a server error)."""
    start = ["/", *(f"/c/{cid}" for cid in site.ids.values()), "/assess", "/tokens", "/collections/new"]
    queue, seen, pages, failed = list(start), set(start), {}, {}
    variants: dict[str, int] = {}
    while queue and len(pages) < MAX_PAGES:
        url = queue.pop(0)
        r = site.client.get(url, headers={**site.headers(role), "Accept": "text/html"}, follow_redirects=False)
        if r.status_code >= 500:
            failed[url] = r.status_code
        if r.status_code != 200 or not r.headers.get("content-type", "").startswith("text/html"):
            continue
        pages[url] = r.text
        for href in read_page(r.text).links:
            target = urlsplit(urljoin(url, href))
            if target.netloc or not target.path.startswith("/") or SKIPPED.search(target.path):
                continue
            link = target.path + (f"?{target.query}" if target.query else "")
            if link in seen:
                continue
            seen.add(link)
            variants[target.path] = variants.get(target.path, 0) + 1
            if variants[target.path] <= MAX_VARIANTS:
                queue.append(link)
    return pages, failed


@pytest.mark.parametrize("role", ROLES)
def test_no_page_shows_a_raw_value(site: Site, role: str) -> None:
    pages, failed = crawl(site, role)
    assert not failed, f"{role}: server errors on {failed}"
    found = {url: raw for url, html in pages.items() if (raw := raw_values(html))}
    assert not found, f"{role}: {len(found)} of {len(pages)} pages show raw values:\n" + "\n".join(
        f"{url}\n  " + "\n  ".join(raw[:5]) for url, raw in found.items())
    # the crawl reached what the role may open (a crawl that stops early finds nothing)
    expected = {
        "organiser": {f"/c/{site.ids['task']}/qrels", f"/c/{site.ids['task']}/console/audit",
                      f"/c/{site.ids['pending']}/qrels", f"/c/{site.ids['fresh']}", f"/c/{site.ids['task']}/pools"},
        "admin": {"/tokens", "/collections/new", f"/c/{site.ids['other']}", f"/c/{site.ids['task']}/console/audit"},
        "alpha": {f"/c/{site.ids['fresh']}", f"/c/{site.ids['pending']}", f"/c/{site.ids['task']}/significance"},
        "assessor": {"/assess"},
        "anonymous": {f"/c/{site.ids['task']}", f"/c/{site.ids['task']}/significance", "/login"},
    }[role]
    assert expected <= set(pages), (role, sorted(expected - set(pages)), sorted(pages))


@pytest.mark.parametrize("name", ["settings preview", "qrels preview"])
def test_no_page_answering_a_form_shows_a_raw_value(site: Site, name: str) -> None:
    assert raw_values(site.forms[name]) == []


def test_the_values_the_issue_named_read_as_words(site: Site) -> None:
    """Issue 27's examples, each as a person now reads it."""
    c, org = site.client, site.headers("organiser")
    task, pending, fresh = site.ids["task"], site.ids["pending"], site.ids["fresh"]
    # the qrels versions: judgments per level over the topics, then per topic in a table
    qrels_page = read_page(c.get(f"/c/{task}/qrels", headers=org).text)
    assert re.search(r"level 0: \d+, level 1: \d+", qrels_page.text) and "Per topic (6 topics)" in qrels_page.text
    # the settings preview: a line per setting with the form's label, values in words
    preview = read_page(site.forms["settings preview"]).text
    assert "Resamples (B) (Significance test) 200 1000" in preview
    assert "Hidden topics revealed no yes" in preview and "Metrics nDCG@10, AP nDCG@10, AP, P@5" in preview
    assert "Submissions close (UTC) never closes 2031-01-01 00:00 UTC" in preview
    assert "until 2031-01-01 00:00 UTC" in preview  # the consequences' sentence too
    # the audit log: no empty detail, flags as yes/no
    audit = read_page(c.get(f"/c/{task}/console/audit", headers=org).text).text
    assert "released: yes" in audit and "team:" in audit and not re.search(r"team: ?(;|\d{4}-)", audit)
    # a board before any qrels, for its organiser and for a participant
    for role in ("organiser", "alpha"):
        board = read_page(c.get(f"/c/{fresh}", headers=site.headers(role)).text).text
        assert "No qrels yet: the runs are ranked by nDCG@10" in board and "Qrels version" not in board, role
        assert "No significance test is stored" not in board and "computed" not in board, role
    # a job whose runs are all evaluated and whose tests are running, on the qrels page, the
    # console and the live progress document
    assert "running the significance tests (no run to re-evaluate)" in read_page(
        c.get(f"/c/{pending}/qrels", headers=org).text).text
    assert re.search(r"Latest job \d+ \(config\): running the significance tests",
                     read_page(c.get(f"/c/{pending}/console", headers=org).text).text)
    job = c.get(f"/c/{pending}/progress.json", headers=org).json()["job"]
    assert job["summary"] == "running the significance tests (no run to re-evaluate)"
