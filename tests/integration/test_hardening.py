"""Hardening (issue items 9, 10, 11, 13 and 14), over HTTP on a real database, for each role
where it matters (anonymous, a participant, an organiser; an assessor for the downloads):

- 9: an unexpected error is a generic 500 page or body with a request id, never the
  exception's text; the traceback is logged with that id (real errors: a dropped table, a
  setting that does not parse, a template that does not exist; nothing is mocked);
- 10: CSV exports neutralise text cells a spreadsheet would run as formulas; numbers stay numbers;
- 11: hostile metric names (tens of thousands of characters, deep ``-`` or ``not`` chains, long runs of
  blanks) are a quick 400 or 422 on the API, the board page and board.csv, never a 500;
- 13: a topic id containing "/" is downloaded from /assess and /api/pools/{id}/topics/{topic};
- 14: the portal's hardening headers; the cookie holds a portal session, never the API token;
  signing out (or revoking the token, or the session's expiry) ends the session on the
  server, so a replayed cookie no longer signs in.
"""

from __future__ import annotations

import csv
import hashlib
import io
import logging
import re
import time
from datetime import UTC, datetime, timedelta

import pytest
from litestar import get
from litestar.response import Template
from sqlalchemy import select, text, update

from service.config import settings
from service.evaluation.publishing.exports import board_csv
from service.portal.app import SECURITY_HEADERS
from service.portal.forms import COOKIE, LEGACY_COOKIE, csrf_for
from service.store.models import ApiToken, PortalSession
from tests.integration.conftest import World, auth

# Run on PostgreSQL too; the module's other tests run on SQLite only (conftest.py):
# sessions are rows; error pages, headers, exports and parsers are the same on both databases.
SQLITE_ONLY_BUT = {"test_the_cookie_holds_a_session_not_the_token_and_sign_out_revokes_it",
                   "test_a_revoked_token_or_an_expired_session_signs_out"}

ROLES = ("anonymous", "alpha", "organiser")  # anonymous, a participant (team alpha), an organiser
POSTGRES = pytest.mark.parametrize("backend", ["postgres"], indirect=True)


def release(world: World) -> None:
    """Make the world's collection public and its board released: every role reads the board."""
    r = world.client.patch(f"/api/collections/{world.cid}", json={"visibility": "public", "leaderboard_released": True},
                           headers=auth(world.tokens["organiser"]))
    assert r.status_code == 200, r.text


def sign_in(world: World, role: str) -> str:
    """Sign in through the portal's form; the cookie's value (the client's jar is left empty)."""
    if role == "anonymous":
        return ""
    c = world.client
    r = c.post("/login", data={"token": world.tokens[role], "next": "/"}, follow_redirects=False)
    assert r.status_code == 303, r.text
    secret = r.cookies[COOKIE]
    c.cookies.clear()
    return secret


def cookie(secret: str) -> dict[str, str]:
    return {"Cookie": f"{COOKIE}={secret}"} if secret else {}


def signed_in_as(world: World, secret: str) -> str | None:
    """Whom the portal takes the bearer of ``secret`` for (None: signed out)."""
    page = world.client.get("/", headers=cookie(secret)).text
    m = re.search(r"Signed in as <strong>[^<]*</strong> \((\w+)", page)
    return m.group(1) if m else None


def failures(caplog: pytest.LogCaptureFixture, request_id: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "cranfield.http" and request_id in r.getMessage()]


def assert_logged_with_traceback(caplog: pytest.LogCaptureFixture, request_id: str, exc_type: str) -> None:
    records = failures(caplog, request_id)
    assert len(records) == 1, f"no log record of request {request_id}"
    formatted = logging.Formatter().format(records[0])
    assert "Traceback (most recent call last)" in formatted and exc_type in formatted, formatted[-2000:]


# ------------------------------------------------------------------ 9: unexpected errors
LEAKS = ("SELECT", "FROM collections", "psycopg", "UndefinedTable", "sqlalche.me", "Traceback", "127.0.0.1", "5432",
         "postgres", "[parameters", "does not exist")


def leaks(text: str, request_id: str) -> list[str]:
    """The LEAKS found in ``text`` with its random request id taken out first (an id such as
    ``28b1e973e5f5432e`` holds "5432" by chance: issue 26)."""
    assert request_id in text
    rest = text.replace(request_id, "")
    return [leak for leak in LEAKS if leak in rest]


@POSTGRES
def test_an_unexpected_error_is_a_generic_500_and_its_traceback_is_logged_with_the_request_id(
        world: World, caplog: pytest.LogCaptureFixture) -> None:
    """A real database error (a table dropped in this throwaway database) on the API and on the
    portal, for every role: the caller sees a request id only; the log has the traceback."""
    c = world.client
    sessions = {role: sign_in(world, role) for role in ROLES}
    with world.factory() as s:
        s.execute(text("DROP TABLE collections CASCADE"))
        s.commit()
    caplog.set_level(logging.ERROR, logger="cranfield.http")
    for role in ROLES:
        r = c.get("/api/collections", headers=auth(world.tokens.get(role)))
        assert r.status_code == 500 and r.headers["content-type"].startswith("application/problem+json"), role
        doc = r.json()
        assert doc["code"] == "internal_error" and re.fullmatch(r"[0-9a-f]{16}", doc["request_id"]), doc
        assert not leaks(r.text, doc["request_id"]), (role, r.text)
        assert_logged_with_traceback(caplog, doc["request_id"], "UndefinedTable")

        page = c.get("/", headers=cookie(sessions[role]))
        assert page.status_code == 500 and "<h1>Internal error</h1>" in page.text, role
        request_id = re.search(r'<code id="request-id">([0-9a-f]{16})</code>', page.text).group(1)  # type: ignore[union-attr]
        assert not leaks(page.text, request_id), (role, page.text)
        assert_logged_with_traceback(caplog, request_id, "UndefinedTable")
        assert page.headers["content-security-policy"] == SECURITY_HEADERS["Content-Security-Policy"]


@POSTGRES
def test_a_configuration_error_is_a_logged_500_not_its_message(world: World, caplog: pytest.LogCaptureFixture,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A setting that does not parse (a CranfieldError outside the error table): a 500 with a
    request id, logged; the page does not show the setting's name or value."""
    monkeypatch.setenv("CRANFIELD_SESSION_LIFETIME", "fortnight")
    settings.cache_clear()
    caplog.set_level(logging.ERROR, logger="cranfield.http")
    try:
        for role in ("alpha", "organiser"):
            r = world.client.post("/login", data={"token": world.tokens[role]}, follow_redirects=False)
            assert r.status_code == 500 and COOKIE not in r.headers.get("set-cookie", ""), role
            assert "CRANFIELD_SESSION_LIFETIME" not in r.text and "fortnight" not in r.text
            request_id = re.search(r'<code id="request-id">([0-9a-f]{16})</code>', r.text).group(1)  # type: ignore[union-attr]
            assert_logged_with_traceback(caplog, request_id, "SettingsError")
    finally:
        monkeypatch.undo()
        settings.cache_clear()


@POSTGRES
def test_the_frameworks_own_500_is_generic_and_logged(world: World, caplog: pytest.LogCaptureFixture) -> None:
    """A route only this test registers renders a template that does not exist: Litestar's own
    500 (its text names the template) is shown as any other bug."""

    @get("/test-only/missing-template", sync_to_thread=False)
    def missing_template() -> Template:
        return Template(template_name="no-such-template.html")

    world.client.app.register(missing_template)
    caplog.set_level(logging.ERROR, logger="cranfield.http")
    for role in ROLES:
        r = world.client.get("/test-only/missing-template", headers=auth(world.tokens.get(role)))
        assert r.status_code == 500 and "no-such-template" not in r.text, (role, r.text)
        assert_logged_with_traceback(caplog, r.json()["request_id"], "TemplateNotFoundException")


# ------------------------------------------------------------------ 10: CSV formula injection
def test_csv_exports_neutralise_formulas_for_every_role(world: World) -> None:
    c, cid, admin = world.client, world.cid, auth(world.tokens["admin"])
    evil_team = "=HYPERLINK(\"evil.example\",\"x\")"
    assert c.post("/api/teams", json={"name": evil_team}, headers=admin).status_code == 201
    assert c.post(f"/api/collections/{cid}/teams", json={"team": evil_team}, headers=admin).status_code == 201
    tags = ["=1+2", "+SUM(1,2)", "-2+3", "@SUM(A1)"]
    for tag in tags:  # the organiser submits for the team
        run = world.runs["RUN-01"].replace("RUN-01", tag)
        r = c.post(f"/api/collections/{cid}/runs", content=run, params={"team": evil_team},
                   headers=auth(world.tokens["organiser"]))
        assert r.status_code == 201, r.text
    release(world)
    for role in ROLES:
        files = {"API ?format=csv": c.get(f"/api/collections/{cid}/leaderboard", params={"format": "csv"},
                                         headers=auth(world.tokens.get(role))),
                 "portal board.csv": c.get(f"/c/{cid}/board.csv", headers=cookie(sign_in(world, role)))}
        for where, r in files.items():
            assert r.status_code == 200 and r.headers["content-type"].startswith("text/csv"), (role, where)
            rows = list(csv.DictReader(io.StringIO(r.text)))
            runs = {row["run"] for row in rows}
            assert {f"'{tag}" for tag in tags} <= runs and not runs & set(tags), (role, where, runs)
            assert {row["team"] for row in rows} == {"alpha", "beta", f"'{evil_team}"}, (role, where)
            assert all(float(row["mean"]) >= 0 for row in rows)  # numbers are written as numbers
            for row in rows:
                assert not row["run"].startswith(("=", "+", "-", "@", "\t", "\r")), (role, where, row)
    # numbers stay numbers: a negative score is not quoted
    doc = {"rows": [{"rank": 1, "run": "-x", "team": "\tt", "mean": -0.5, "ci_low": -0.75, "ci_high": None,
                     "n_topics": 3, "baseline": False, "groups": "a"}]}
    assert board_csv(doc).splitlines()[1] == "1,'-x,'\tt,-0.5,-0.75,,3,false,a,,,,,"  # booleans as data: true/false (issue 37)


# ------------------------------------------------------------------ 11: hostile metric names
HOSTILE = {
    "50,000 minus signs": "Q(beta=" + "-" * 50_000 + "1)",
    "15,000 nots": "Q(beta=" + "not " * 15_000 + "1)",  # (httpx sends URLs of up to 64 KiB)
    "2,000 blanks": "Q" + " " * 2_000 + "x",  # cubic backtracking in the former regular expression
    "190 minus signs": "Q(beta=" + "-" * 190 + "1)",  # within 200 characters: the parser itself
    "45 nots": "Q(beta=" + "not " * 45 + "1)",
    "a NUL": "Q(beta=\x001)",
    "198 blanks": "Q" + " " * 198 + "x",
}


def test_hostile_metric_names_are_a_quick_400_for_every_role(world: World) -> None:
    c, cid = world.client, world.cid
    release(world)
    for role in ROLES:
        session = sign_in(world, role)
        for what, metric in HOSTILE.items():
            long = len(metric) > 200
            requests = {
                # the API's parameter is at most 200 characters (422 by its schema); shorter names reach the parser
                "API": (f"/api/collections/{cid}/leaderboard", auth(world.tokens.get(role)), 422 if long else 400),
                "board page": (f"/c/{cid}", cookie(session), 400),
                "board.csv": (f"/c/{cid}/board.csv", cookie(session), 400),
            }
            for where, (path, headers, status) in requests.items():
                # The CPU seconds of this process (the test client runs the application in it),
                # not the wall: a busy machine delays a request without making it more work.
                # A backtracking parser spends minutes on these names; a linear one milliseconds.
                started = time.process_time()
                r = c.get(path, params={"metric": metric}, headers=headers)
                cpu = time.process_time() - started
                assert r.status_code == status, (role, what, where, r.status_code, r.text[:300])
                assert cpu < 2, (role, what, where, cpu)
                if where != "API" or not long:
                    message = "at most 200 characters" if long else "cannot read"
                    assert message in r.text, (role, what, where, r.text[:300])


def test_the_parser_is_bounded(world: World) -> None:
    """The parser alone: long names are refused before any work, short ones cost little."""
    from service.errors import InvalidMeasure
    from service.metrics import parse_measure

    for what, metric in HOSTILE.items():
        started = time.thread_time()  # this thread's CPU seconds: a busy machine's delays are not the parser's
        with pytest.raises(InvalidMeasure):
            parse_measure(metric)
        assert time.thread_time() - started < 0.2, what
    assert str(parse_measure(" nDCG ( gains={1:1,2:5} ) @ 10 ")) == "nDCG(gains={1:1,2:5})@10"
    assert str(parse_measure("Q'@5")) == "Q(judged_only=true)@5"


# ------------------------------------------------------------------ 13: topic ids with "/"
def test_a_topic_id_with_a_slash_is_downloaded_from_the_api_and_the_portal(world: World) -> None:
    c, cid, org = world.client, world.cid, auth(world.tokens["organiser"])
    topic = "2019/7"
    assert c.post(f"/api/collections/{cid}/topics", json={"topics": [topic]}, headers=org).status_code == 201
    run = "".join(f"{topic} Q0 SLASH-{i:03d} {i} {100 - i} slash-run\n" for i in range(1, 8))
    r = c.post(f"/api/collections/{cid}/runs", content=run, headers=auth(world.tokens["alpha"]))
    assert r.status_code == 201, r.text
    build = c.post(f"/api/collections/{cid}/pools", json={"depth": 5}, headers=org)
    assert build.status_code == 202, build.text
    pid = c.get(f"/api/pool-builds/{build.json()['id']}", headers=org).json()["pool"]  # built in-process
    r = c.post("/api/tokens", json={"role": "assessor", "name": "slasher", "collections": [cid], "topics": [topic]},
               headers=org)
    assert r.status_code == 201, r.text
    assessor = r.json()["token"]
    expected = {f"{topic} SLASH-{i:03d}" for i in range(1, 6)}

    listed = c.get("/api/assessments", headers=auth(assessor)).json()["items"]
    link = next(item["download"] for item in listed if item["topic"] == topic)
    for url in (link, f"/api/pools/{pid}/topics/{topic}", f"/api/pools/{pid}/topics/2019%2F7"):
        for who in (assessor, world.tokens["organiser"]):
            r = c.get(url, headers=auth(who))
            assert r.status_code == 200 and set(r.text.splitlines()) == expected, (url, r.status_code, r.text[:200])
        assert c.get(url, headers=auth(world.tokens["alpha"])).status_code == 403
        assert c.get(url).status_code == 401
    assert c.get(f"/api/pools/{pid}/topics/2019/8", headers=org).status_code == 404

    session = sign_in_token(world, assessor)
    page = c.get("/assess", headers=cookie(session)).text
    href = re.search(rf'<tr data-topic="{re.escape(topic)}">.*?<a href="([^"]+)">download</a>', page).group(1)  # type: ignore[union-attr]
    for url in (href, f"/assess/{pid}/{topic}", f"/assess/{pid}/2019%2F7"):
        r = c.get(url, headers=cookie(session))
        assert r.status_code == 200 and set(r.text.splitlines()) == expected, (url, r.status_code, r.text[:200])
        assert 'filename="pool' in r.headers["content-disposition"]
        assert c.get(url, headers=cookie(sign_in(world, "alpha"))).status_code == 403
        assert c.get(url).status_code == 401


def sign_in_token(world: World, token: str) -> str:
    r = world.client.post("/login", data={"token": token}, follow_redirects=False)
    assert r.status_code == 303, r.text
    world.client.cookies.clear()
    return r.cookies[COOKIE]


# ------------------------------------------------------------------ 14: headers and sessions
def assert_hardened(r, where: str) -> None:  # type: ignore[no-untyped-def]
    for name, value in SECURITY_HEADERS.items():
        assert r.headers.get(name) == value, (where, name, r.headers.get(name))
    policy = dict(part.strip().split(" ", 1) for part in r.headers["content-security-policy"].split(";"))
    assert policy["default-src"] == "'self'" and policy["script-src"] == "'self'", policy
    assert policy["frame-ancestors"] == "'none'" and policy["object-src"] == "'none'", policy


def test_portal_responses_carry_the_hardening_headers_and_pages_have_no_inline_script(world: World) -> None:
    c, cid = world.client, world.cid
    release(world)
    for role in ROLES:
        h = cookie(sign_in(world, role))
        pages = {path: c.get(path, headers=h, follow_redirects=False) for path in (
            "/", f"/c/{cid}", f"/runs/{world.run_ids['RUN-01']}", "/login", f"/c/{cid}/board.csv",
            f"/c/{cid}/board.tex", "/c/999", f"/c/{cid}/qrels", f"/c/{cid}?metric=nope")}
        assert [pages[p].status_code for p in pages] == [
            200, 200, 200, 200, 200, 200, 404, {"anonymous": 401, "alpha": 403}.get(role, 200), 400], role
        for path, r in pages.items():
            assert_hardened(r, f"{role} {path}")
            if r.headers["content-type"].startswith("text/html"):
                # the policy allows no inline script: the pages have none (no <script> without src,
                # no event-handler attribute, no javascript: URL)
                assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", r.text), path
                assert not re.search(r"\son[a-z]+\s*=", r.text, re.I) and "javascript:" not in r.text, path
                assert re.findall(r"<script[^>]*\bsrc=\"([^\"]+)\"", r.text) == ["/static/portal.js"], path
    r = c.post("/login", data={"token": world.tokens["alpha"]}, follow_redirects=False)  # a redirect
    assert r.status_code == 303
    assert_hardened(r, "sign-in redirect")
    c.cookies.clear()
    assert_hardened(c.post("/login", data={"token": "cf_wrong"}), "refused sign-in")
    # the API documentation page the portal links to keeps working (it is not the portal's: its own scripts)
    assert '<a href="/schema">API</a>' in c.get("/").text
    docs = c.get("/schema")
    assert docs.status_code == 200 and "swagger" in docs.text.lower()
    assert "frame-ancestors" not in docs.headers.get("content-security-policy", "")


def test_api_responses_are_not_sniffed(world: World) -> None:
    c = world.client
    for path in ("/api/collections", f"/api/runs/{world.run_ids['RUN-01']}/file", "/api/nothing-here"):
        assert c.get(path, headers=auth(world.tokens["organiser"])).headers.get("x-content-type-options") == "nosniff"


def test_the_cookie_holds_a_session_not_the_token_and_sign_out_revokes_it(world: World) -> None:
    c, cid = world.client, world.cid
    for role in ("alpha", "organiser", "assessor"):
        token = world.tokens[role]
        r = c.post("/login", data={"token": token, "next": f"/c/{cid}"}, follow_redirects=False)
        c.cookies.clear()
        assert r.status_code == 303 and r.headers["location"] == f"/c/{cid}"
        header = r.headers["set-cookie"]
        secret = r.cookies[COOKIE]
        assert token not in header and token[:10] not in header and secret != token
        assert "httponly" in header.lower() and "samesite=strict" in header.lower()
        assert f"{LEGACY_COOKIE}=" in header  # an earlier version's cookie (the token itself) is expired
        with world.factory() as s:
            row = s.scalar(select(PortalSession).where(
                PortalSession.secret_hash == hashlib.sha256(secret.encode()).hexdigest()))
            assert row is not None and row.revoked_at is None
            assert s.get(ApiToken, row.token_id).token_hash == hashlib.sha256(token.encode()).hexdigest()
            assert secret not in {row.secret_hash, str(row.id)}  # only its hash is stored
        assert signed_in_as(world, secret) == role.replace("alpha", "participant")
        # the API token itself no longer signs in to the portal as a cookie, in either name
        assert signed_in_as(world, token) is None
        assert "Sign out" not in c.get("/", headers={"Cookie": f"{LEGACY_COOKIE}={token}"}).text

        r = c.post("/logout", data={"csrf": csrf_for(secret)}, headers=cookie(secret), follow_redirects=False)
        assert r.status_code == 303 and "max-age=0" in r.headers["set-cookie"].lower()
        # the old cookie, replayed: signed out, private pages ask to sign in, its form token is refused
        assert signed_in_as(world, secret) is None
        assert c.get(f"/c/{cid}", headers=cookie(secret)).status_code == 401
        r = c.post(f"/c/{cid}/snapshots", data={"csrf": csrf_for(secret), "label": "replayed"}, headers=cookie(secret))
        assert r.status_code in (401, 403)
        with world.factory() as s:
            assert s.scalar(select(PortalSession.revoked_at).where(
                PortalSession.secret_hash == hashlib.sha256(secret.encode()).hexdigest())) is not None
        # the token still works, for the API and for a new sign-in
        assert c.get(f"/api/collections/{cid}", headers=auth(token)).status_code in (200, 403)
        assert signed_in_as(world, sign_in(world, role)) is not None
    # anonymous: nothing to sign out of (no cookie, no form token)
    assert c.post("/logout", data={"csrf": ""}, follow_redirects=False).status_code == 403


def test_a_revoked_token_or_an_expired_session_signs_out(world: World) -> None:
    c, admin = world.client, auth(world.tokens["admin"])
    first, second = sign_in(world, "alpha"), sign_in(world, "alpha")  # two browsers
    organiser = sign_in(world, "organiser")
    assert signed_in_as(world, first) == signed_in_as(world, second) == "participant"
    with world.factory() as s:
        alpha_id = s.scalar(select(ApiToken.id).where(
            ApiToken.token_hash == hashlib.sha256(world.tokens["alpha"].encode()).hexdigest()))
    assert c.delete(f"/api/tokens/{alpha_id}", headers=admin).status_code == 200
    assert signed_in_as(world, first) is None and signed_in_as(world, second) is None
    assert signed_in_as(world, organiser) == "organiser"  # other tokens' sessions go on
    # a session past its lifetime
    with world.factory() as s:
        s.execute(update(PortalSession).where(PortalSession.secret_hash == hashlib.sha256(
            organiser.encode()).hexdigest()).values(expires_at=datetime.now(UTC) - timedelta(seconds=1)))
        s.commit()
    assert signed_in_as(world, organiser) is None


def test_a_session_lasts_the_configured_lifetime(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRANFIELD_SESSION_LIFETIME", "3600")
    settings.cache_clear()
    try:
        before = datetime.now(UTC)
        secret = sign_in(world, "organiser")
        with world.factory() as s:
            row = s.scalar(select(PortalSession).where(
                PortalSession.secret_hash == hashlib.sha256(secret.encode()).hexdigest()))
            created, expires = row.created_at, row.expires_at  # type: ignore[union-attr]
        from service.store.db import as_utc

        assert as_utc(expires) - as_utc(created) == timedelta(seconds=3600)  # type: ignore[operator]
        assert before - timedelta(seconds=5) <= as_utc(created) <= datetime.now(UTC)  # type: ignore[operator]
    finally:
        monkeypatch.undo()
        settings.cache_clear()
