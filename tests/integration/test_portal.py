"""The web portal over HTTP (no browser): every page and every form for every role, enrolment,
the navigation against the pages' answers, the error pages, the secrets.

The browser tests (tests/browser) drive the same pages in Chromium; these check the access
rules and the server-side behaviour on both databases, quickly. The world (conftest.py): a
private, unreleased collection "task" in which teams alpha and beta are enrolled, and a
private collection "other" in which no team is.
"""

from __future__ import annotations

import re

import pytest
from sqlalchemy import select

from service.config import settings
from service.evaluation.permissions import access
from service.portal.forms import COOKIE, csrf_for
from service.store.models import Pool
from tests.integration.conftest import World, auth

# Run on PostgreSQL too; the module's other tests run on SQLite only (conftest.py):
# pages and forms render the same on both databases; these touch sessions and uploads.
SQLITE_ONLY_BUT = {"test_sign_in_submit_and_see_the_run_ranked", "test_the_sign_in_cookie_lasts_as_configured",
                   "test_organiser_uploads_qrels_sees_the_diff_progress_and_rank_changes"}

ROLES = ("anonymous", "alpha", "beta", "organiser", "other_organiser", "admin", "assessor")


def session_of(world: World, role: str) -> str:
    """The secret of a portal session signed in with ``role``'s token (one per role and world,
    opened as the sign-in form opens it; "" for anonymous). A session closed by signing out is
    forgotten with :func:`forget_session`."""
    token = world.tokens.get(role)
    if not token:
        return ""
    sessions = world.__dict__.setdefault("portal_sessions", {})
    if role not in sessions:
        with world.factory() as s:
            me = access.principal_for(s, f"Bearer {token}")
            sessions[role] = access.open_session(s, me.token_id, settings().web.session_cookie_lifetime)
            s.commit()
    return sessions[role]


def forget_session(world: World, role: str) -> None:
    world.__dict__.get("portal_sessions", {}).pop(role, None)


def as_role(world: World, role: str) -> dict[str, str]:
    secret = session_of(world, role)
    return {"Cookie": f"{COOKIE}={secret}"} if secret else {}


def csrf_of(world: World, role: str) -> str:
    """The form token of ``role``'s portal session ("" for anonymous)."""
    secret = session_of(world, role)
    return csrf_for(secret) if secret else ""


def expect(**by_role: int) -> dict[str, int]:
    default = by_role.pop("default")
    return {role: by_role.get(role, default) for role in ROLES}


# The pages of a collection's navigation (the leaderboard, /c/{id}, is its home page).
NAV_PAGES = ("significance", "changes", "analysis", "snapshots", "compare", "runs", "submit", "qrels", "pools", "teams")


def nav_links(html: str, cid: int) -> set[str]:
    """The pages the collection navigation of a page links to."""
    nav = html[html.index('<nav class="collection"'):]
    return set(re.findall(rf'href="/c/{cid}/([a-z]+)"', nav[: nav.index("</nav>")]))


def assert_navigation_matches_the_pages(world: World, cid: int) -> None:
    """For every role that can open the collection: a page is linked exactly when it answers 200."""
    for role in ROLES:
        headers = as_role(world, role)
        home = world.client.get(f"/c/{cid}", headers=headers)
        if home.status_code != 200:
            continue
        links = nav_links(home.text, cid)
        for page in NAV_PAGES:
            status = world.client.get(f"/c/{cid}/{page}", headers=headers, follow_redirects=False).status_code
            assert (page in links) == (status == 200), (role, page, status, sorted(links))


def listed_collections(world: World, role: str) -> list[str]:
    """The collection names the index shows a role."""
    return re.findall(r'<tr data-collection="([^"]+)">', world.client.get("/", headers=as_role(world, role)).text)


def table_runs(html: str, table_id: str = "leaderboard") -> list[str]:
    """The run tags of a page's table, in order."""
    body = html[html.index(f'id="{table_id}"'):]
    body = body[: body.index("</table>")]
    return re.findall(r'<tr data-run="([^"]+)"', body)


def test_every_page_for_every_role_on_an_unreleased_private_collection(world: World) -> None:
    c, cid, other = world.client, world.cid, world.other_cid
    alpha_run, alpha_run2, beta_run = (world.run_ids[t] for t in ("RUN-01", "RUN-02", "RUN-03"))
    participant_or_staff = expect(default=200, anonymous=401, other_organiser=403, assessor=403)
    staff_only = expect(default=403, anonymous=401, organiser=200, admin=200)
    cases = [
        ("/", expect(default=200)),
        (f"/c/{cid}", participant_or_staff),
        (f"/c/{cid}/board.csv", participant_or_staff),
        (f"/c/{cid}/board.tex", participant_or_staff),
        (f"/runs/{alpha_run}", expect(default=200, anonymous=401, beta=403, other_organiser=403, assessor=403)),
        (f"/runs/{beta_run}", expect(default=200, anonymous=401, alpha=403, other_organiser=403, assessor=403)),
        (f"/c/{cid}/compare", participant_or_staff),
        (f"/c/{cid}/compare?a={alpha_run}&b={alpha_run2}", expect(default=200, anonymous=401, beta=403,
                                                                  other_organiser=403, assessor=403)),
        (f"/c/{cid}/compare?a={alpha_run}&b={beta_run}", staff_only),
        (f"/c/{cid}/significance", staff_only),  # results beyond the board: once released (as the API)
        (f"/c/{cid}/changes", staff_only),
        (f"/c/{cid}/analysis", staff_only),
        (f"/c/{cid}/snapshots", staff_only),
        (f"/c/{cid}/submit", participant_or_staff),
        (f"/c/{cid}/runs", participant_or_staff),
        (f"/c/{cid}/progress.json", participant_or_staff),
        (f"/c/{cid}/qrels", staff_only),
        (f"/c/{cid}/pools", staff_only),
        (f"/c/{cid}/teams", staff_only),
        # no team is enrolled in "other": a private collection its teams' participants cannot open
        (f"/c/{other}", expect(default=403, anonymous=401, other_organiser=200, admin=200)),
        (f"/c/{other}/runs", expect(default=403, anonymous=401, other_organiser=200, admin=200)),
        (f"/c/{other}/submit", expect(default=403, anonymous=401, other_organiser=200, admin=200)),
        ("/c/999", expect(default=404)),
        ("/runs/999", expect(default=404)),
        ("/snapshots/999", expect(default=404)),
    ]
    for path, statuses in cases:
        for role in ROLES:
            r = c.get(path, headers=as_role(world, role), follow_redirects=False)
            assert r.status_code == statuses[role], (path, role, r.status_code, r.text[:300])
            if r.status_code < 300 and not path.endswith((".csv", ".tex", ".json")):
                assert r.headers["content-type"].startswith("text/html"), (path, role)
            if r.status_code >= 400 and not path.endswith((".csv", ".tex", ".json")):
                assert "<h1>" in r.text and 'role="alert"' in r.text  # an HTML error page, not JSON
    # what each participant sees of the unreleased board: its own team's runs only
    beta_board = c.get(f"/c/{cid}", headers=as_role(world, "beta")).text
    assert table_runs(beta_board) == ["RUN-03"] and "RUN-01" not in beta_board
    assert "RUN-01" not in c.get(f"/c/{cid}/board.csv", headers=as_role(world, "beta")).text
    # the index lists what each role may open
    assert listed_collections(world, "alpha") == ["task"] and listed_collections(world, "anonymous") == []
    assert listed_collections(world, "other_organiser") == ["other"] and listed_collections(world, "assessor") == []
    assert listed_collections(world, "admin") == ["task", "other"]


def test_the_navigation_links_exactly_the_pages_that_open(world: World) -> None:
    """Every link of the collection navigation comes from the policy predicate its page asks:
    checked for every role on the states that change the answers."""
    c, cid, org = world.client, world.cid, auth(world.tokens["organiser"])
    assert_navigation_matches_the_pages(world, cid)  # private, unreleased
    assert_navigation_matches_the_pages(world, world.other_cid)
    assert c.patch(f"/api/collections/{cid}", json={"leaderboard_released": True}, headers=org).status_code == 200
    # released: participants see the significance page, and its link (the API serves them the same matrix)
    assert "significance" in nav_links(c.get(f"/c/{cid}", headers=as_role(world, "alpha")).text, cid)
    assert c.get(f"/api/collections/{cid}/significance", headers=auth(world.tokens["alpha"])).status_code == 200
    assert_navigation_matches_the_pages(world, cid)
    assert c.patch(f"/api/collections/{cid}", json={"visibility": "public", "hidden_topics": ["0006"]},
                   headers=org).status_code == 200
    # an unrevealed topic split: results over the visible topics, no analyses (they include hidden topics)
    links = nav_links(c.get(f"/c/{cid}", headers=as_role(world, "beta")).text, cid)
    assert "significance" in links and "analysis" not in links and "snapshots" not in links
    assert_navigation_matches_the_pages(world, cid)
    assert c.patch(f"/api/collections/{cid}", json={"topics_revealed": True}, headers=org).status_code == 200
    assert_navigation_matches_the_pages(world, cid)


def test_qrels_and_other_teams_runs_stay_secret(world: World) -> None:
    c, cid = world.client, world.cid
    judged = [line.split()[1] for line in world.qrels.splitlines()[:20]]
    for role in ("anonymous", "alpha", "beta"):
        for path in ("/", f"/c/{cid}", f"/c/{cid}/runs", f"/c/{cid}/submit", f"/c/{cid}/qrels",
                     f"/runs/{world.run_ids['RUN-01']}"):
            text = c.get(path, headers=as_role(world, role)).text
            assert not any(docno in text for docno in judged), (role, path)
    # organisers see versions and the judgments' level counts, but the page is theirs only
    assert "Versions" in c.get(f"/c/{cid}/qrels", headers=as_role(world, "organiser")).text


def test_released_public_board_is_readable_signed_out(world: World) -> None:
    c, cid = world.client, world.cid
    assert c.patch(f"/api/collections/{cid}", json={"leaderboard_released": True, "visibility": "public"},
                   headers=auth(world.tokens["organiser"])).status_code == 200
    board = c.get(f"/c/{cid}")
    assert board.status_code == 200 and table_runs(board.text) and "<svg" in board.text
    for path in (f"/c/{cid}/significance", f"/c/{cid}/analysis", f"/c/{cid}/snapshots", f"/c/{cid}/changes",
                 f"/runs/{world.run_ids['RUN-01']}"):
        assert c.get(path).status_code == 200, path
    run_page = c.get(f"/runs/{world.run_ids['RUN-01']}").text
    # a released board's readers see a run's per-topic scores (policy.may_see_run_topics), never its file
    assert 'id="metrics"' in run_page and 'id="per-topic"' in run_page and "/file\"" not in run_page
    for page in ("compare", "runs", "submit", "qrels", "pools", "teams"):  # sign in first, then come back
        r = c.get(f"/c/{cid}/{page}", follow_redirects=False)
        assert r.status_code == 401 and f'<a href="/login?next=/c/{cid}/{page}">Sign in</a>' in r.text, page


def test_every_page_has_the_site_icon_and_the_sign_in_page_says_what_the_cookie_holds(world: World) -> None:
    c = world.client
    icon = c.get("/favicon.ico")
    assert icon.status_code == 200 and icon.headers["content-type"] == "image/x-icon"
    assert icon.content[:4] == b"\x00\x00\x01\x00" and b"PNG" in icon.content[:40]  # an ICO holding a PNG
    svg = c.get("/static/favicon.svg")
    assert svg.status_code == 200 and svg.text.startswith("<svg")
    for path in ("/", "/login", f"/c/{world.cid}", "/no-such-page"):
        assert '<link rel="icon" href="/static/favicon.svg"' in c.get(path, headers={"Accept": "text/html"}).text, path
    # a mistyped address is a page for a browser, a problem document for a client
    lost = c.get("/no-such-page", headers={"Accept": "text/html,application/xhtml+xml"})
    assert lost.status_code == 404 and lost.headers["content-type"].startswith("text/html") and "<h1" in lost.text
    assert c.get("/no-such-page").headers["content-type"] == "application/problem+json"
    assert c.get("/api/no-such-thing", headers={"Accept": "text/html"}).headers["content-type"] == \
        "application/problem+json"
    login = c.get("/login").text
    assert "kept in a cookie" not in login and "only the session" in login and "never stored" in login


def test_metric_selector_orders_by_the_chosen_metric(world: World) -> None:
    c, cid = world.client, world.cid
    org = as_role(world, "organiser")
    for metric in ("nDCG@10", "AP"):
        page = c.get(f"/c/{cid}", params={"metric": metric}, headers=org).text
        api = c.get(f"/api/collections/{cid}/leaderboard", params={"metric": metric},
                    headers=auth(world.tokens["organiser"])).json()
        assert table_runs(page) == [r["run"] for r in api["rows"]]
        assert f'<option value="{metric}" selected>' in page
    assert c.get(f"/c/{cid}", params={"metric": "P@5"}, headers=org).status_code == 400  # not configured
    # the form's "default" choices arrive as empty strings
    empty = c.get(f"/c/{cid}?metric=AP&test=&qrels_version=", headers=org)
    assert empty.status_code == 200 and table_runs(empty.text)
    assert c.get(f"/c/{cid}?qrels_version=x", headers=org).status_code == 400


def test_a_sign_in_posted_by_another_site_is_refused(world: World) -> None:
    """Login CSRF (issue 34, item 6): besides a foreign ``Origin``, ``Origin: null`` (what a page
    with ``Referrer-Policy: no-referrer`` or a sandboxed frame sends) and, without ``Origin``, a
    foreign ``Referer`` are refused, and nothing is signed in. This site's origin or referer
    signs in; so does a client sending neither (no browser does: curl, scripts)."""
    c, token = world.client, world.tokens["beta"]
    host = c.base_url.netloc.decode()
    for headers in ({"Origin": "null"}, {"Origin": "http://evil.example"}, {"Origin": ""},
                    {"Referer": "http://evil.example/phish"}, {"Referer": "about:blank"},
                    {"Origin": "null", "Referer": f"http://{host}/login"}):
        r = c.post("/login", data={"token": token}, headers=headers, follow_redirects=False)
        assert r.status_code == 403 and "set-cookie" not in r.headers, headers
        assert "own form" in r.text
        c.cookies.clear()
    for headers in ({"Origin": f"http://{host}"}, {"Referer": f"http://{host}/login?next=/"},
                    {"Origin": f"http://{host}", "Referer": "http://evil.example/"}, {}):
        r = c.post("/login", data={"token": token}, headers=headers, follow_redirects=False)
        assert r.status_code == 303 and "cranfield_session=" in r.headers["set-cookie"], headers
        c.cookies.clear()


def test_sign_in_submit_and_see_the_run_ranked(world: World) -> None:
    c, cid = world.client, world.cid
    r = c.post("/login", data={"token": "cf_wrong", "next": f"/c/{cid}"}, follow_redirects=False)
    assert r.status_code == 401 and "unknown or revoked" in r.text
    r = c.post("/login", data={"token": world.tokens["beta"]}, headers={"Origin": "http://evil.example"},
               follow_redirects=False)
    assert r.status_code == 403 and "set-cookie" not in r.headers  # no sign-in posted by another site
    r = c.post("/login", data={"token": world.tokens["beta"], "next": "//evil.example/"}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/"  # no open redirect
    cookie = r.headers["set-cookie"]
    assert "httponly" in cookie.lower() and "samesite=strict" in cookie.lower()
    assert f"max-age={settings().web.session_cookie_lifetime}" in cookie.lower()
    headers = as_role(world, "beta")
    csrf = csrf_of(world, "beta")
    text = world.runs["RUN-03"].replace("RUN-03", "beta-new")
    # without the form token: refused, nothing stored
    r = c.post(f"/c/{cid}/submit", files={"file": ("beta-new.txt", text)}, headers=headers)
    assert r.status_code == 403
    # a bad file: the page shows the file name and the line, nothing stored
    bad = "0001 Q0 a 1 1 bad\n0001 Q0 b 2 x bad\n"
    r = c.post(f"/c/{cid}/submit", files={"file": ("bad.txt", bad)}, data={"csrf": csrf}, headers=headers)
    assert r.status_code == 422 and "bad.txt, line 2" in r.text and "not a number" in r.text
    r = c.post(f"/c/{cid}/submit", files={"file": ("beta-new.txt", text)},
               data={"csrf": csrf, "description": "BM25 + <b>rerank</b>"}, headers=headers, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"].startswith(f"/c/{cid}/runs?submitted=")
    runs_page = c.get(r.headers["location"], headers=headers).text
    assert table_runs(runs_page, "runs") == ["RUN-03", "beta-new"]
    board = c.get(f"/c/{cid}", headers=as_role(world, "organiser")).text
    assert "beta-new" in table_runs(board)
    progress = c.get(f"/c/{cid}/progress.json", headers=headers).json()
    new = next(run for run in progress["runs"] if run["status"] == "evaluated" and run["rank"] is not None
               and run["id"] == int(r.headers["location"].rsplit("=", 1)[1]))
    assert new["mean"] is not None
    run_page = c.get(f"/runs/{new['id']}", headers=headers).text
    assert "BM25 + &lt;b&gt;rerank&lt;/b&gt;" in run_page and "<b>rerank</b>" not in run_page  # escaped
    # before the release a team sees its own per-topic scores, not the topics' median and best
    assert 'id="per-topic"' in run_page and "median of all runs" not in run_page and ">Median<" not in run_page
    c.patch(f"/api/collections/{cid}", json={"leaderboard_released": True}, headers=auth(world.tokens["organiser"]))
    assert "median of all runs" in c.get(f"/runs/{new['id']}", headers=headers).text


def test_the_sign_in_cookie_lasts_as_configured(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRANFIELD_SESSION_LIFETIME", "3600")
    settings.cache_clear()
    try:
        r = world.client.post("/login", data={"token": world.tokens["alpha"]}, follow_redirects=False)
        assert r.status_code == 303 and "max-age=3600" in r.headers["set-cookie"].lower()
    finally:
        monkeypatch.undo()
        settings.cache_clear()


def test_script_in_a_run_tag_is_escaped_in_pages_and_charts(world: World) -> None:
    c, cid = world.client, world.cid
    tag = "<script>alert(1)</script>$\\frac$"  # also TeX-like: charts must not parse it as math
    text = world.runs["RUN-01"].replace("RUN-01", tag)
    r = c.post(f"/api/collections/{cid}/runs", content=text, headers=auth(world.tokens["alpha"]))
    assert r.status_code == 201, r.text
    for path in (f"/c/{cid}", f"/c/{cid}/runs", f"/runs/{r.json()['id']}", f"/c/{cid}/significance"):
        r = c.get(path, headers=as_role(world, "organiser"))
        assert r.status_code == 200 and "&lt;script&gt;alert(1)" in r.text, (path, r.status_code)
        assert "<script>alert(1)" not in r.text, path


def test_organiser_uploads_qrels_sees_the_diff_progress_and_rank_changes(world: World) -> None:
    c, cid = world.client, world.cid
    org = as_role(world, "organiser")
    csrf = csrf_of(world, "organiser")
    r = c.post(f"/c/{cid}/qrels", files={"file": ("broken.qrels", "t 0 d\n")}, data={"csrf": csrf}, headers=org)
    assert r.status_code == 422 and "broken.qrels, line 1" in r.text
    corrected = world.qrels.replace(" L0\n", " L2\n", 4)
    r = c.post(f"/c/{cid}/qrels", files={"file": ("v2.qrels", corrected)}, data={"csrf": csrf}, headers=org,
               follow_redirects=False)
    assert r.status_code == 303 and "old=1&new=2" in r.headers["location"]
    page = c.get(r.headers["location"], headers=org).text
    assert "0 added, 0 removed, 4 changed judgments." in page
    assert re.search(r'<progress id="job-progress"[^>]*max="(\d+)" value="\1"', page)  # finished: full bar
    changes = c.get(f"/c/{cid}/changes", headers=org).text
    assert "qrels version 1 → 2" in changes and sorted(table_runs(changes, "rank-changes")) == ["RUN-01", "RUN-02", "RUN-03"]
    assert 'id="sig-changes"' in changes or 'id="no-sig-changes"' in changes
    # participants cannot upload even with a form token of their own
    r = c.post(f"/c/{cid}/qrels", files={"file": ("x.qrels", corrected)},
               data={"csrf": csrf_of(world, "alpha")}, headers=as_role(world, "alpha"))
    assert r.status_code == 403


def test_snapshots_analysis_and_significance_pages(world: World) -> None:
    c, cid = world.client, world.cid
    org = as_role(world, "organiser")
    r = c.post(f"/c/{cid}/snapshots", data={"csrf": csrf_of(world, "organiser"), "label": "official",
                                            "metric": "AP"}, headers=org, follow_redirects=False)
    assert r.status_code == 303
    snap = c.get(r.headers["location"], headers=org).text
    assert "Snapshot: official" in snap and "AP on qrels version <strong>1</strong>" in snap
    assert "official" in c.get(f"/c/{cid}/snapshots", headers=org).text
    analysis = c.get(f"/c/{cid}/analysis", headers=org).text
    assert 'id="power"' in analysis and "AP" in analysis and "Kendall" in analysis
    assert analysis.count("<svg") == 2  # the ASL curves and the tau heat map
    # Sakai's topic set size design from the stored scores, per metric, with its citation
    assert 'id="topicsize"' in analysis and "doi:10.1007/s10791-015-9273-z" in analysis
    sig = c.get(f"/c/{cid}/significance", headers=org).text
    assert 'id="p-matrix"' in sig and "<svg" in sig and 'aria-label="heat map' in sig


@pytest.mark.parametrize("page", ["board", "run"])
def test_charts_are_labelled_svg(world: World, page: str) -> None:
    c = world.client
    path = f"/c/{world.cid}" if page == "board" else f"/runs/{world.run_ids['RUN-01']}"
    html = c.get(path, headers=as_role(world, "organiser")).text
    svgs = re.findall(r"<svg.*?</svg>", html, flags=re.S)
    assert svgs and all('role="img"' in s and "aria-label=" in s for s in svgs)
    if page == "board":  # drawn for a laptop and for a phone (issue 37, item 10)
        assert len(svgs) == 2 and all("with 95% interval" in s for s in svgs)  # the axis label, as text
    else:  # the per-topic chart twice, then the curves
        assert len(svgs) == 3 and "rank" in svgs[2] and "ideal ranking" in svgs[2]
    wide, narrow = (re.search(rf'<div class="chart-{w}">\s*<svg[^>]*width="([\d.]+)pt"', html) for w in ("wide", "narrow"))
    assert wide and narrow and float(narrow.group(1)) < 274 < float(wide.group(1))  # 274 pt: the 366 px of a 390 px screen


def test_every_form_for_every_role(world: World) -> None:
    """The portal's state-changing forms, each role posting with its own valid form token."""
    c, cid = world.client, world.cid
    assert c.post("/api/teams", json={"name": "gamma"}, headers=auth(world.tokens["admin"])).status_code == 201
    run_text = world.runs["RUN-01"].replace("RUN-01", "form-{role}")
    for role in ROLES:
        headers = as_role(world, role)
        token = world.tokens.get(role)
        csrf = csrf_of(world, role)
        refused = 403 if token else 401  # (anonymous: asked to sign in, before the form is read)
        # runs: participants for their team, organisers for a team they name
        data = {"csrf": csrf, **({"team": "beta"} if role in ("organiser", "admin") else {})}
        r = c.post(f"/c/{cid}/submit", files={"file": ("run.txt", run_text.format(role=role))}, data=data,
                   headers=headers, follow_redirects=False)
        allowed = role in ("alpha", "beta", "organiser", "admin")
        assert r.status_code == (303 if allowed else refused), (role, r.status_code, r.text[:300])
        # snapshots and qrels: organisers of this collection and admins only
        r = c.post(f"/c/{cid}/snapshots", data={"csrf": csrf, "label": role}, headers=headers,
                   follow_redirects=False)
        assert r.status_code == (303 if role in ("organiser", "admin") else refused), (role, r.status_code)
        r = c.post(f"/c/{cid}/qrels", files={"file": ("q.txt", world.qrels)}, data={"csrf": csrf}, headers=headers,
                   follow_redirects=False)
        assert r.status_code == (303 if role in ("organiser", "admin") else refused), (role, r.status_code)
        r = c.post(f"/c/{cid}/pools", data={"csrf": csrf, "action": "pool", "depth": "5"}, headers=headers,
                   follow_redirects=False)
        assert r.status_code == (303 if role in ("organiser", "admin") else refused), (role, r.status_code)
        # enrolment: organisers enrol and remove teams; a participant enrols itself only where it is open
        staff = 303 if role in ("organiser", "admin") else refused
        r = c.post(f"/c/{cid}/teams", data={"csrf": csrf, "team": "gamma"}, headers=headers, follow_redirects=False)
        assert r.status_code == staff, (role, r.status_code)
        r = c.post(f"/c/{cid}/teams", data={"csrf": csrf, "team": "gamma", "action": "remove", "confirm": "1"},
                   headers=headers, follow_redirects=False)
        assert r.status_code == staff, (role, r.status_code)
        r = c.post(f"/c/{cid}/enrolment", data={"csrf": csrf}, headers=headers, follow_redirects=False)
        assert r.status_code == refused, (role, r.status_code)  # "task" is invite-only
        r = c.post("/logout", data={"csrf": csrf}, headers=headers, follow_redirects=False)
        assert r.status_code == (303 if token else 403)
        if token:
            assert f"{COOKIE}=" in r.headers["set-cookie"] and "max-age=0" in r.headers["set-cookie"].lower()
            assert c.get("/", headers=headers).text.count("Sign out") == 0  # the session is closed
            forget_session(world, role)
    org = as_role(world, "organiser")
    runs = table_runs(c.get(f"/c/{cid}/runs", headers=org).text, "runs")
    assert sorted(tag for tag in runs if tag.startswith("form-")) == [
        "form-admin", "form-alpha", "form-beta", "form-organiser"]
    versions = re.findall(r'<th scope="row" class="num">(\d+)', c.get(f"/c/{cid}/qrels", headers=org).text)
    assert versions == ["3", "2", "1"]  # the organiser's and the admin's uploads
    teams = re.findall(r'<tr data-team="([^"]+)">', c.get(f"/c/{cid}/teams", headers=org).text)
    assert teams == ["alpha", "beta"]  # gamma enrolled and removed twice


def test_a_team_that_is_not_enrolled_neither_sees_nor_opens_a_private_collection(world: World) -> None:
    c, cid = world.client, world.cid
    org, csrf = as_role(world, "organiser"), csrf_of(world, "organiser")
    page = c.get(f"/c/{cid}/teams", headers=org).text
    assert re.findall(r'<tr data-team="([^"]+)">', page) == ["alpha", "beta"] and "teams" in nav_links(page, cid)
    r = c.post(f"/c/{cid}/teams", data={"csrf": csrf, "team": "beta", "action": "remove"}, headers=org,
               follow_redirects=False)  # first the confirmation step: nothing changes yet
    assert r.status_code == 200 and 'id="confirm-step"' in r.text and listed_collections(world, "beta") == ["task"]
    r = c.post(f"/c/{cid}/teams", data={"csrf": csrf, "team": "beta", "action": "remove", "confirm": "1"},
               headers=org, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == f"/c/{cid}/teams?notice=team-removed&team=beta"
    assert re.findall(r'<tr data-team="([^"]+)">', c.get(f"/c/{cid}/teams", headers=org).text) == ["alpha"]
    # beta's participants lose the collection: not listed, every page refused; its run stays
    beta, beta_csrf = as_role(world, "beta"), csrf_of(world, "beta")
    assert listed_collections(world, "beta") == []
    for path in (f"/c/{cid}", f"/c/{cid}/board.csv", f"/c/{cid}/submit", f"/c/{cid}/runs", f"/c/{cid}/compare",
                 f"/c/{cid}/significance", f"/c/{cid}/progress.json"):
        r = c.get(path, headers=beta)
        assert r.status_code == 403, (path, r.status_code)
    r = c.post(f"/c/{cid}/submit", files={"file": ("late.txt", world.runs["RUN-03"].replace("RUN-03", "late"))},
               data={"csrf": beta_csrf}, headers=beta)
    assert r.status_code == 403 and 'role="alert"' in r.text
    assert "RUN-03" in table_runs(c.get(f"/c/{cid}", headers=org).text)
    assert 'data-team="beta"' not in c.get(f"/c/{cid}/submit", headers=org).text  # organisers submit for enrolled teams
    # alpha, still enrolled, keeps today's behaviour
    alpha = as_role(world, "alpha")
    assert listed_collections(world, "alpha") == ["task"]
    assert sorted(table_runs(c.get(f"/c/{cid}", headers=alpha).text)) == ["RUN-01", "RUN-02"]
    assert all(c.get(f"/c/{cid}/{p}", headers=alpha).status_code == 200 for p in ("submit", "runs", "compare"))
    # enrolled again by name: beta is back
    r = c.post(f"/c/{cid}/teams", data={"csrf": csrf, "team": "beta"}, headers=org, follow_redirects=False)
    assert r.status_code == 303
    assert listed_collections(world, "beta") == ["task"] and c.get(f"/c/{cid}/submit", headers=beta).status_code == 200
    # mistakes: an unknown team, no name, a team that is not enrolled
    r = c.post(f"/c/{cid}/teams", data={"csrf": csrf, "team": "nobody"}, headers=org)
    assert r.status_code == 404 and "nobody" in r.text and "<h1>Not found</h1>" in r.text
    assert c.post(f"/c/{cid}/teams", data={"csrf": csrf, "team": " "}, headers=org).status_code == 400
    assert c.post(f"/c/{cid}/teams", data={"csrf": csrf, "team": "nobody", "action": "remove"},
                  headers=org).status_code == 404
    assert c.post(f"/c/{cid}/teams", data={"csrf": csrf, "team": "beta", "action": "drop"},
                  headers=org).status_code == 400
    # nobody but the organisers reads or changes the teams
    assert c.get(f"/c/{cid}/teams", headers=alpha).status_code == 403
    r = c.post(f"/c/{cid}/teams", data={"csrf": csrf_of(world, "alpha"), "team": "beta", "action": "remove"},
               headers=alpha)
    assert r.status_code == 403 and listed_collections(world, "beta") == ["task"]


def test_a_participant_enrols_its_team_with_the_button_where_enrolment_is_open(world: World) -> None:
    c, other = world.client, world.other_cid
    owner = auth(world.tokens["other_organiser"])
    alpha, csrf = as_role(world, "alpha"), csrf_of(world, "alpha")
    button = f'action="/c/{other}/enrolment"'
    r = c.post(f"/c/{other}/enrolment", data={"csrf": csrf}, headers=alpha)
    assert r.status_code == 403 and "invite" in r.text  # invite-only: organisers enrol teams
    assert c.patch(f"/api/collections/{other}", json={"visibility": "public", "enrolment": "open"},
                   headers=owner).status_code == 200
    # public, open, unreleased: listed with the button, its board closed to teams that are not enrolled
    index = c.get("/", headers=alpha).text
    assert button in index and f'<a href="/c/{other}">' not in index and listed_collections(world, "alpha") == [
        "task", "other"]
    assert c.get(f"/c/{other}", headers=alpha).status_code == 403
    assert c.get(f"/c/{other}/submit", headers=alpha).status_code == 403
    for role in ("anonymous", "other_organiser", "admin", "assessor"):  # the button is a participant's
        assert button not in c.get("/", headers=as_role(world, role)).text, role
    assert c.post(f"/c/{other}/enrolment", data={}, headers=alpha).status_code == 403  # no form token
    r = c.post(f"/c/{other}/enrolment", data={"csrf": csrf}, headers=alpha, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == f"/c/{other}?notice=self-enrolled&team=alpha"
    page = c.get(r.headers["location"], headers=alpha).text
    assert "Your team alpha is enrolled" in page
    assert 'id="enrol"' not in page and {"submit", "runs"} <= nav_links(page, other)
    assert c.get(f"/c/{other}/submit", headers=alpha).status_code == 200
    index = c.get("/", headers=alpha).text
    assert button not in index and f'<a href="/c/{other}">' in index
    assert_navigation_matches_the_pages(world, other)
    # released: beta, not enrolled, reads the board, with the button on the collection's pages
    assert c.patch(f"/api/collections/{other}", json={"leaderboard_released": True}, headers=owner).status_code == 200
    beta, beta_csrf = as_role(world, "beta"), csrf_of(world, "beta")
    page = c.get(f"/c/{other}", headers=beta).text
    assert 'id="enrol"' in page and button in page and "submit" not in nav_links(page, other)
    assert 'id="enrol"' not in c.get(f"/c/{other}", headers=alpha).text
    assert_navigation_matches_the_pages(world, other)
    # open but private: ids are no secret, so only its organisers enrol teams in a private collection
    assert c.patch(f"/api/collections/{other}", json={"visibility": "private"}, headers=owner).status_code == 200
    assert c.get(f"/c/{other}", headers=beta).status_code == 403 and listed_collections(world, "beta") == ["task"]
    r = c.post(f"/c/{other}/enrolment", data={"csrf": beta_csrf}, headers=beta, follow_redirects=False)
    assert r.status_code == 403 and c.get(f"/c/{other}", headers=beta).status_code == 403
    assert c.patch(f"/api/collections/{other}", json={"visibility": "public"}, headers=owner).status_code == 200
    r = c.post(f"/c/{other}/enrolment", data={"csrf": beta_csrf}, headers=beta, follow_redirects=False)
    assert r.status_code == 303
    assert c.get(f"/c/{other}", headers=beta).status_code == 200
    assert listed_collections(world, "beta") == ["task", "other"]
    teams = c.get(f"/c/{other}/teams", headers=as_role(world, "other_organiser")).text
    assert re.findall(r'<tr data-team="([^"]+)">', teams) == ["alpha", "beta"]


def test_error_pages_come_from_the_one_error_table(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    from service.evaluation.organising import collections

    c, cid, org = world.client, world.cid, as_role(world, "organiser")
    r = c.get(f"/c/{cid}/analysis")  # anonymous: sign in, then come back
    assert r.status_code == 401 and "<h1>Sign-in required</h1>" in r.text
    assert f'<a href="/login?next=/c/{cid}/analysis">Sign in</a> to see this page' in r.text
    r = c.get(f"/c/{cid}/analysis", headers=as_role(world, "alpha"))
    assert r.status_code == 403 and "<h1>Not allowed</h1>" in r.text and "to see this page" not in r.text
    assert "<h1>Not found</h1>" in c.get("/c/999", headers=org).text
    r = c.get(f"/c/{cid}/compare?a={world.run_ids['RUN-01']}&b={world.run_ids['RUN-01']}", headers=org)
    assert r.status_code == 400 and "choose two different runs" in r.text
    # a bug (here a bare ValueError) is a 500 with a request id, never its text, and never a 400
    def broken(*args: object, **kwargs: object) -> None:
        raise ValueError("secret internals")

    monkeypatch.setattr(collections, "visible", broken)
    r = c.get("/", headers=org)
    assert r.status_code == 500 and "<h1>Internal error</h1>" in r.text and "secret internals" not in r.text
    assert re.search(r'<code id="request-id">[0-9a-f]{16}</code>', r.text)
    assert r.headers["content-type"].startswith("text/html")


def test_pools_page_builds_a_pool_and_shows_the_workers_reusability_analysis(world: World) -> None:
    c, cid = world.client, world.cid
    org = as_role(world, "organiser")
    csrf = csrf_of(world, "organiser")
    r = c.post(f"/c/{cid}/pools", data={"csrf": csrf, "action": "pool", "depth": "10", "selection": "all"},
               headers=org, follow_redirects=False)
    assert r.status_code == 303
    r = c.post(f"/c/{cid}/pools", data={"csrf": csrf, "action": "pool", "depth": "x"}, headers=org)
    assert r.status_code == 400 and "depth" in r.text
    r = c.post(f"/c/{cid}/pools", data={"csrf": csrf, "action": "analyse", "metric": "AP"}, headers=org,
               follow_redirects=False)
    assert r.status_code == 303
    page = c.get(f"/c/{cid}/pools", headers=org).text
    assert 'id="pools"' in page and "judged in qrels version 1" in page
    # the build went to the workers (in-process here): its status is on the page and in progress.json
    builds = c.get(f"/c/{cid}/progress.json", headers=org).json()["pool_builds"]
    assert [b["status"] for b in builds] == ["done"]
    assert f'data-build-status="{builds[0]["id"]}">done</span>' in page
    assert "pool_builds" not in c.get(f"/c/{cid}/progress.json", headers=as_role(world, "alpha")).json()
    assert "<strong>done</strong>" in page and 'id="loto"' in page and 'id="topics"' in page
    loto = page[page.index('id="loto"'):]
    loto = loto[: loto.index("</table>")]
    assert all(f'<th scope="row">{tag}</th>' in loto for tag in world.run_ids)  # every run, with its team's test
    api = c.get(f"/api/collections/{cid}/leaderboard", headers=auth(world.tokens["organiser"])).json()
    assert all(row["judged_at_10"] is not None for row in api["rows"])
    board = c.get(f"/c/{cid}", headers=org).text
    assert "Judged@10" in board


def test_reduced_judgment_experiment_is_computed_by_the_workers_and_shown(world: World) -> None:
    c, cid = world.client, world.cid
    org = as_role(world, "organiser")
    r = c.post(f"/c/{cid}/analysis", data={"csrf": csrf_of(world, "alpha")}, headers=as_role(world, "alpha"))
    assert r.status_code == 403
    r = c.post(f"/c/{cid}/analysis", data={"csrf": csrf_of(world, "organiser")}, headers=org,
               follow_redirects=False)
    assert r.status_code == 303
    page = c.get(f"/c/{cid}/analysis", headers=org).text
    assert 'id="reduction"' in page and page.count("<svg") == 3
    body = page[page.index('id="reduction"'):]
    body = body[: body.index("</table>")]
    kept = re.findall(r'<td class="num">(\d+)</td><th scope="row">AP</th>', body)
    assert kept == ["100", "90", "70", "50", "30", "10"]
    # over the API: organisers queue it; participants read it only once the board is released
    r = c.post(f"/api/collections/{cid}/analyses", json={"kind": "reduction", "kept": [50]},
               headers=auth(world.tokens["organiser"]))
    assert r.status_code == 202 and r.json()["params"]["kept"] == [50.0]
    aid = r.json()["id"]
    done = c.get(f"/api/analyses/{aid}", headers=auth(world.tokens["organiser"])).json()
    assert done["status"] == "done" and {row["kept"] for row in done["result"]["rows"]} == {100.0, 50.0}
    full_ap = next(row for row in done["result"]["rows"] if row["kept"] == 100.0 and row["metric"] == "AP")
    assert full_ap["tau_vs_full"] == 1.0
    assert c.get(f"/api/analyses/{aid}", headers=auth(world.tokens["alpha"])).status_code == 403
    assert c.post(f"/api/collections/{cid}/analyses", json={"kind": "reduction", "kept": [150]},
                  headers=auth(world.tokens["organiser"])).status_code == 422  # out of the schema's range
    c.patch(f"/api/collections/{cid}", json={"leaderboard_released": True}, headers=auth(world.tokens["organiser"]))
    assert c.get(f"/api/analyses/{aid}", headers=auth(world.tokens["alpha"])).status_code == 200



def test_assessor_pages_download_and_upload(world: World) -> None:
    c, cid = world.client, world.cid
    r = c.post(f"/c/{cid}/pools", data={"csrf": csrf_of(world, "organiser"), "action": "pool", "depth": "40"},
               headers=as_role(world, "organiser"), follow_redirects=False)
    assert r.status_code == 303  # built by the workers (in-process here)
    with world.factory() as s:
        row = s.scalars(select(Pool).where(Pool.collection_id == cid)).one()
        pool = {"id": row.id, "counts": row.counts}
    assert pool["counts"]["0001"]["new"] > 0
    for role in ROLES:
        r = c.get("/assess", headers=as_role(world, role), follow_redirects=False)
        assert r.status_code == {"assessor": 200, "anonymous": 401}.get(role, 403), (role, r.status_code)
    h = as_role(world, "assessor")
    page = c.get("/assess", headers=h).text
    assert '<tr data-topic="0001">' in page and "RUN-" not in page and "alpha" not in page
    text = c.get(f"/assess/{pool['id']}/0001", headers=h).text
    assert len(text.splitlines()) == pool["counts"]["0001"]["new"]
    assert c.get(f"/assess/{pool['id']}/0002", headers=h).status_code == 403
    csrf = csrf_of(world, "assessor")
    judged = "".join(f"{line} L1\n" for line in text.splitlines())
    r = c.post(f"/assess/{pool['id']}", files={"file": ("mine.txt", judged.splitlines(True)[0])},
               data={"csrf": csrf}, headers=h)
    assert r.status_code == 422 and "mine.txt" in r.text and "not judged" in r.text
    r = c.post(f"/assess/{pool['id']}", files={"file": ("mine.txt", judged)}, data={"csrf": csrf}, headers=h,
               follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/assess?accepted=1"
    qrels_page = c.get(f"/c/{cid}/qrels", headers=as_role(world, "organiser")).text
    assert '<th scope="row" class="num">2 (current)</th>' in qrels_page


def test_review_fixes_significance_labels_empty_pages_compare_default_and_latex(world: World) -> None:
    from service.evaluation.publishing.exports import board_latex

    c, cid, org = world.client, world.cid, auth(world.tokens["organiser"])
    # a board over an older test keeps that test's own alpha and correction
    r = c.patch(f"/api/collections/{cid}", json={"significance": {"test": "t", "correction": "holm", "alpha": 0.1}},
                headers=org)
    assert r.status_code == 200
    now = c.get(f"/api/collections/{cid}/leaderboard", headers=org).json()["significance"]
    assert now == {"test": "t", "alpha": 0.1, "correction": "holm", "resamples": None, "n_topics": 5}
    old = c.get(f"/api/collections/{cid}/leaderboard?test=bootstrap", headers=org).json()["significance"]
    assert old == {"test": "bootstrap", "alpha": 0.05, "correction": "none", "resamples": 10000,
                   "n_topics": 5}  # as that test was run
    # the significance page of a collection with no stored test is a notice, not a 404
    other_org = as_role(world, "other_organiser")
    page = c.get(f"/c/{world.other_cid}/significance", headers=other_org)
    assert page.status_code == 200 and "Nothing to show yet" in page.text
    # "compare this run with another" preselects two different runs
    page = c.get(f"/c/{cid}/compare?a={world.run_ids['RUN-02']}", headers=as_role(world, "organiser")).text
    chosen = re.findall(r'<option value="(\d+)" selected>', page)
    assert len(chosen) == 2 and chosen[0] != chosen[1]
    tex = board_latex({"metric": "AP", "significance": None, "rows": [
        {"rank": 1, "run": "bm25^rm3~v2\\new", "team": "t", "mean": 0.5, "ci_low": None, "baseline": False}]})
    assert "bm25\\^{}rm3\\~{}v2\\textbackslash{}new" in tex



def test_gains_that_miss_a_judged_level_are_refused_at_configuration(world: World) -> None:
    """Review finding: such a configuration used to be accepted and then fail every run."""
    c, cid, org = world.client, world.cid, auth(world.tokens["organiser"])
    r = c.patch(f"/api/collections/{cid}", json={"metrics": ["AP", "nDCG(gains={1:1,2:5})@10"]}, headers=org)
    assert r.status_code == 400 and "no gain for level 3" in r.json()["error"]["message"]
    r = c.patch(f"/api/collections/{cid}", json={"metrics": ["AP", "nDCG(gains={1:1,2:5,3:10})@10"]}, headers=org)
    assert r.status_code == 200
    board = c.get(f"/api/collections/{cid}/leaderboard?metric=nDCG(gains={{1:1,2:5,3:10}})@10", headers=org).json()
    assert len(board["rows"]) == 3 and all(row["mean"] is not None for row in board["rows"])
