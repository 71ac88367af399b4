"""Every action of the portal answers (issue 27, item 4), over HTTP: each state-changing form of
every template posted by a role that may use it, and the page it lands on read for what was
done; baseline and primary marks in the audit log; destructive buttons in the danger style, and
the irreversible actions (deleting a run, removing a team, revoking a token) acting only from
their confirmation step, the token of the visitor's own session only when they say they will be
signed out; a snapshot freezing every metric of the board.

The list of forms is read from the templates (every ``<form method="post">``): a form added
without its answer being checked here fails :func:`test_every_form_of_the_templates_is_answered`.

The world (conftest.py): a private, unreleased collection "task" (nDCG@10 official; AP and
nDCG@10) with qrels, three runs of the enrolled teams alpha and beta, an assessor of topic 0001,
and a second collection "other".
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from service.portal import notices
from service.store.models import LeaderboardSnapshot, Pool
from tests.integration.conftest import World, auth
from tests.integration.test_judgment_sets_portal import judged, labels_file, once_key, open_track, submit, team_judged
from tests.integration.test_portal import as_role, csrf_of, forget_session

TEMPLATES = Path(__file__).resolve().parents[2] / "service" / "portal" / "templates"
SQLITE = pytest.mark.parametrize("backend", ["sqlite"], indirect=True)  # pages and forms, not the database
# Run on PostgreSQL too; the module's other tests run on SQLite only (conftest.py): a snapshot's JSON content
SQLITE_ONLY_BUT = {"test_a_snapshot_freezes_every_metric_of_the_board"}


def post(world: World, role: str, path: str, data: dict[str, Any] | None = None,
         files: dict[str, tuple[str, str]] | None = None):  # type: ignore[no-untyped-def]
    """A portal form posted by ``role`` with its own form token."""
    body = {**(data or {}), "csrf": csrf_of(world, role)}
    return world.client.post(path, data=body, files=files, headers=as_role(world, role), follow_redirects=False)


def get(world: World, role: str, path: str) -> str:
    r = world.client.get(path, headers=as_role(world, role), follow_redirects=False)
    assert r.status_code == 200, (path, r.status_code, r.text[:300])
    return r.text


def text_of(page: str) -> str:
    """The page's text, tags dropped and whitespace folded (what a reader reads)."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def status_notes(page: str) -> list[str]:
    """The text of every notice the page shows (``role="status"`` or the new-token section)."""
    blocks = re.findall(r'<(div|section|p)\b[^>]*(?:role="status"|id="new-token-notice")[^>]*>(.*?)</\1>', page,
                        re.DOTALL)
    return [text_of(body) for _, body in blocks if text_of(body)]


# ---------------------------------------------------------------------------- the forms, listed
FORM = re.compile(r"<form\b([^>]*)>(.*?)</form>", re.DOTALL)


def template_forms() -> set[tuple[str, str]]:
    """Every state-changing form of the templates as (template, the form's id, or its action
    path with the value of its ``action`` field and its ``kind``)."""
    found = set()
    for path in sorted(TEMPLATES.glob("*.html")):
        for attrs, body in FORM.findall(path.read_text()):
            if 'method="post"' not in attrs:
                continue
            form_id = re.search(r'\bid="([^"]+)"', attrs)
            action = re.sub(r"\{\{.*?\}\}", "{}", re.search(r'action="([^"]*)"', attrs).group(1))
            sub = re.search(r'name="action" value="([^"]*)"', body)
            kind = re.search(r'name="kind" value="([^"]*)"', body)
            name = form_id.group(1) if form_id else " ".join(
                x for x in (action, sub and re.sub(r"\{\{.*?\}\}", "{}", sub.group(1)), kind and kind.group(1)) if x)
            found.add((path.name, name))
    return found


class Answers:
    """The forms posted by the walk through the portal, each with what its landing page said."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.posted: dict[tuple[str, str], str] = {}

    def landed(self, form: tuple[str, str], role: str, response: Any, *expected: str) -> str:
        """The page a form's answer shows (after the redirect of a post), which must say each
        of ``expected`` in a notice; recorded as ``form`` answered."""
        if response.status_code == 303:
            page = get(self.world, role, response.headers["location"])
        else:
            assert response.status_code == 200, (form, response.status_code, response.text[:400])
            page = response.text
        said = " | ".join(status_notes(page)) or text_of(page)
        for words in expected:
            assert words in said, (form, words, said[:600])
        self.posted[form] = said
        return page


@SQLITE
def test_every_form_of_the_templates_is_answered(world: World) -> None:
    """A walk through every form of the portal, each answered by a notice on the page it lands
    on (or by the next step's page: a preview, a confirmation, a new token's secret)."""
    c, cid, other = world.client, world.cid, world.other_cid
    a = Answers(world)
    org, admin = auth(world.tokens["organiser"]), auth(world.tokens["admin"])
    run_ids = world.run_ids

    # ----------------------------------------------------------------- sign in (the header says who)
    r = c.post("/login", data={"token": world.tokens["beta"], "next": f"/c/{cid}"}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == f"/c/{cid}"
    page = c.get(r.headers["location"], headers={"Cookie": f"cranfield_session={r.cookies['cranfield_session']}"}).text
    c.cookies.clear()
    assert "Signed in as" in text_of(page) and "team beta" in text_of(page)
    a.posted[("login.html", "/login")] = "Signed in as"

    # ----------------------------------------------------------------- the organisers' console
    a.landed(("console.html", "/c/{}/console/release"), "organiser",
             post(world, "organiser", f"/c/{cid}/console/release", {"released": "1"}), "The board is released")
    a.landed(("console.html", "/c/{}/console/reveal"), "organiser",
             post(world, "organiser", f"/c/{cid}/console/reveal", {"revealed": "1"}), "hidden topics are revealed")
    c.post(f"/api/collections/{cid}/qrels", content=judged(world), headers=org)  # something to re-evaluate
    c.patch(f"/api/collections/{cid}", json={"leaderboard_released": False}, headers=org)
    a.landed(("console.html", "/c/{}/console/reevaluate"), "organiser",
             post(world, "organiser", f"/c/{cid}/console/reevaluate"), "evaluates the runs lacking current results")
    settings = post(world, "organiser", f"/c/{cid}/console/settings", _settings_form(world, description="Now."))
    a.landed(("console_settings.html", "settings"), "organiser", settings, "Confirm and save")
    values = _form_values(settings.text, "confirm")
    assert values["metrics"] == "nDCG@10\nAP" and values["confirm"] == "1"
    a.landed(("console_preview.html", "confirm"), "organiser",
             post(world, "organiser", f"/c/{cid}/console/settings", values), "Settings saved (configuration version")
    a.landed(("console_topics.html", "topic-form"), "organiser",
             post(world, "organiser", f"/c/{cid}/topics/texts", {"id": "0001", "title": "A title", "description": "D"}),
             "Topics saved: 0 new, 1 updated, 0 unchanged.")
    a.landed(("console_topics.html", "topic-ids-form"), "organiser",
             post(world, "organiser", f"/c/{cid}/topics/texts", {"ids": "0001 0100 0101"}),
             "Topics saved: 2 new, 0 updated, 1 unchanged.")
    a.landed(("console_runs.html", "/c/{}/console/runs/{} {}"), "organiser",
             post(world, "organiser", f"/c/{cid}/console/runs/{run_ids['RUN-01']}",
                  {"action": "baseline", "value": "1"}),
             "Run RUN-01 is marked as a baseline")
    assessor = c.get("/api/tokens?role=assessor", headers=admin).json()["items"][0]
    a.landed(("console_assessors.html", "/c/{}/console/assessors/{}"), "organiser",
             post(world, "organiser", f"/c/{cid}/console/assessors/{assessor['id']}", {"topics": "0001 0002"}),
             f"Assessor {assessor['prefix']} now judges these topics of this collection: 0001, 0002.")
    a.landed(("console_assessors.html", "new-assessor"), "organiser",
             post(world, "organiser", f"/c/{cid}/console/assessors", {"name": "carol", "topics": "0003"}),
             "New assessor token for carol")
    confirm = get(world, "organiser", f"/c/{cid}/console/runs/{run_ids['RUN-03']}/delete")
    assert 'class="danger"' in confirm
    a.landed(("console_delete.html", "delete-run"), "organiser",
             post(world, "organiser", f"/c/{cid}/console/runs/{run_ids['RUN-03']}/delete", {"confirm": "1"}),
             "Run RUN-03 is deleted")

    # ----------------------------------------------------------------- runs, the board, snapshots
    a.landed(("submit.html", "/c/{}/submit"), "alpha",
             post(world, "alpha", f"/c/{cid}/submit", files={"file": ("x.run", world.runs["RUN-01"].replace(
                 "RUN-01", "fresh"))}), "Run fresh received")
    a.landed(("runs.html", "/c/{}/runs/{}/primary"), "alpha",
             post(world, "alpha", f"/c/{cid}/runs/{run_ids['RUN-02']}/primary", {"primary": "true"}),
             "Run RUN-02 is marked as its team's primary run.")
    a.landed(("board.html", "/c/{}/snapshots"), "organiser",
             post(world, "organiser", f"/c/{cid}/snapshots", {"label": "final", "metric": "nDCG@10"}),
             "Snapshot frozen: the board on every metric (nDCG@10, AP)")
    a.landed(("analysis.html", "/c/{}/analysis"), "organiser", post(world, "organiser", f"/c/{cid}/analysis"),
             "The reduced-judgment experiment is being computed by the workers")
    a.landed(("reproducibility.html", "register-original"), "organiser",
             post(world, "organiser", f"/c/{cid}/reproducibility/originals",
                  {"run": str(run_ids["RUN-01"]), "label": "the original"}), "The original is registered")

    # ----------------------------------------------------------------- qrels: preview, its pages, upload
    qrels = f"/c/{cid}/qrels"
    preview = a.landed(("qrels.html", "/c/{}/qrels preview"), "organiser",
                       post(world, "organiser", qrels, {"action": "preview"}, files={"file": ("v.qrels", world.qrels)}),
                       "What v.qrels would change")
    staged = {"source": "v.qrels", "format": "adhoc",
              "staged": html.unescape(re.search(r'<textarea name="staged"[^>]*>(.*?)</textarea>', preview,
                                                re.DOTALL)[1])}
    a.landed(("qrels.html", "preview-next"), "organiser",
             post(world, "organiser", qrels, {"action": "preview", "offset": "0", **staged}), "would change")
    a.landed(("qrels.html", "confirm-qrels"), "organiser",
             post(world, "organiser", qrels, {"action": "upload", **staged}),
             "stored; every run is being re-evaluated on it")

    # ----------------------------------------------------------------- pools and the assessors
    a.landed(("pools.html", "/c/{}/pools pool"), "organiser",
             post(world, "organiser", f"/c/{cid}/pools", {"action": "pool", "depth": "40"}), "The pool is being built")
    a.landed(("pools.html", "stratified-form"), "organiser",
             post(world, "organiser", f"/c/{cid}/pools", {"action": "pool", "kind": "stratified",
                                                          "strata": "1-10:1", "seed": "1"}), "The pool is being built")
    a.landed(("pools.html", "/c/{}/pools analyse"), "organiser",
             post(world, "organiser", f"/c/{cid}/pools", {"action": "analyse", "metric": "AP"}),
             "The reusability analysis is being computed")
    with world.factory() as s:
        pool = s.scalars(select(Pool.id).where(Pool.collection_id == cid).order_by(Pool.id)).first()
    lines = c.get(f"/assess/{pool}/0001", headers=as_role(world, "assessor")).text.splitlines()
    a.landed(("assess.html", "/assess/{}"), "assessor",
             post(world, "assessor", f"/assess/{pool}", files={"file": ("j.txt", "".join(f"{x} L1\n" for x in lines))}),
             "Judgments of 1 topic accepted")

    # ----------------------------------------------------------------- judgment sets and the judges track
    sets = f"/c/{cid}/judgment-sets"
    listing = get(world, "organiser", sets)
    a.landed(("judgment_sets.html", "create-set"), "organiser",
             post(world, "organiser", sets, {"action": "create", "name": "auto", "auto_evaluate": "0",
                                             "once": once_key(listing, "-create")}), "Judgment set auto created")
    a.landed(("judgment_sets.html", "upload-version"), "organiser",
             post(world, "organiser", sets, {"action": "qrels", "set": "auto"},
                  files={"file": ("a.qrels", judged(world))}),
             "of auto stored")
    a.landed(("judgment_sets.html", "upload-labels"), "organiser",
             post(world, "organiser", sets, {"action": "labels", "set": "auto"},
                  files={"file": ("labels.txt", labels_file(world))}), "Labels kept in auto")
    a.landed(("judgment_sets.html", "change-rule"), "organiser",
             post(world, "organiser", sets, {"action": "rule", "set": "auto", "rule": "min"}), "auto changed")
    a.landed(("judgment_sets.html", "/c/{}/judgment-sets evaluate"), "organiser",
             post(world, "organiser", sets, {"action": "evaluate", "set": "auto"}), "evaluates every run under version")
    assert 'id="make-official"' in get(world, "organiser", f"{sets}/auto/official")
    a.landed(("judgment_sets_official.html", "make-official"), "organiser",
             post(world, "organiser", f"{sets}/auto/official", {"confirm": "1"}),
             "auto is the official judgment set now")
    open_track(world)  # the judges track's settings form, checked below
    a.landed(("judges.html", "judge-settings"), "organiser",
             post(world, "organiser", f"/c/{cid}/judges/settings", {"accepts_judgments": "1", "measure": "tau_ap",
                                                                    "resamples": "300", "level": "0.95", "top_k": "10",
                                                                    "max_sets_per_team": "2"}),
             "The judges track's settings are saved")
    a.landed(("judges.html", "submit-judgments"), "alpha", submit(world, "alpha", "alpha-llm", team_judged(world)),
             "of your set alpha-llm is stored")
    a.landed(("judges.html", "compute-board"), "organiser", post(world, "organiser", f"/c/{cid}/judges/board"),
             "judge board")

    # ----------------------------------------------------------------- teams, enrolment, tokens
    teams = f"/c/{cid}/teams"
    assert c.post("/api/teams", json={"name": "gamma"}, headers=admin).status_code == 201
    a.landed(("teams.html", "/c/{}/teams enrol"), "organiser", post(world, "organiser", teams, {"team": "gamma"}),
             "Team gamma is enrolled")
    assert "Team gamma was enrolled already: nothing changed." in status_notes(
        get(world, "organiser", post(world, "organiser", teams, {"team": "gamma"}).headers["location"]))
    a.landed(("teams.html", "create-team"), "organiser",
             post(world, "organiser", teams, {"action": "create", "team": "delta"}),
             "Team delta is created and enrolled")
    a.landed(("teams.html", "/c/{}/teams token"), "organiser",
             post(world, "organiser", teams, {"action": "token", "team": "delta", "name": "dee"}),
             "New participant token for dee")
    step = a.landed(("teams.html", "/c/{}/teams remove"), "organiser",
                    post(world, "organiser", teams, {"action": "remove", "team": "gamma"}), "Remove team gamma")
    assert 'id="confirm-step"' in step
    a.landed(("confirm.html", "confirm-step"), "organiser",
             post(world, "organiser", teams, {"action": "remove", "team": "gamma", "confirm": "1"}),
             "Team gamma is removed from this collection")
    r = c.patch(f"/api/collections/{other}", json={"visibility": "public", "enrolment": "open",
                                                   "leaderboard_released": True},
                headers=auth(world.tokens["other_organiser"]))  # its board open to every reader, with the button
    assert r.status_code == 200, r.text
    assert 'id="enrol"' in get(world, "alpha", f"/c/{other}")
    a.landed(("base.html", "enrol"), "alpha", post(world, "alpha", f"/c/{other}/enrolment"),
             "Your team alpha is enrolled")
    assert f'action="/c/{other}/enrolment"' in get(world, "beta", "/")
    a.landed(("index.html", "/c/{}/enrolment"), "beta", post(world, "beta", f"/c/{other}/enrolment"),
             "Your team beta is enrolled")
    a.landed(("tokens.html", "new-token-form"), "admin",
             post(world, "admin", "/tokens", {"role": "participant", "name": "eve", "team": "delta"}),
             "New participant token for eve")
    victim = c.post("/api/tokens", json={"role": "participant", "team": "delta", "name": "victim"},
                    headers=admin).json()
    step = a.landed(("tokens.html", "/tokens/{}/revoke"), "admin",
                    post(world, "admin", f"/tokens/{victim['id']}/revoke"),
                    f"Token {victim['prefix']}")
    assert 'id="confirm-step"' in step and 'id="understand"' not in step  # not the admin's own token
    assert c.get("/api/collections", headers=auth(victim["token"])).status_code == 200  # not yet
    a.landed(("tokens.html", "/tokens/{}/revoke"), "admin",
             post(world, "admin", f"/tokens/{victim['id']}/revoke", {"confirm": "1"}),
             f"Token {victim['prefix']} is revoked")
    assert c.get("/api/collections", headers=auth(victim["token"])).status_code == 401
    new = _new_collection_form(world)
    a.landed(("console_new.html", "new-collection"), "admin",
             post(world, "admin", "/collections/new", {**new, "name": "made here"}), "Collection created")

    # ----------------------------------------------------------------- a collection of answers, assessed
    acid = c.post("/api/collections", json={"name": "answers", "task_kind": "answers"}, headers=admin).json()["id"]
    nuggets = [{"text": "a fact", "importance": "vital"}]
    assert c.post(f"/api/collections/{acid}/answer-judgments/assignments", headers=admin, content=json.dumps(
        {"qid": "T1", "query": "q", "run_id": "other", "nuggets": [{**nuggets[0], "assignment": "support"}]}
    ).encode()).status_code == 201
    assert c.post(f"/api/collections/{acid}/teams", json={"team": "alpha"}, headers=admin).status_code == 201
    assert c.post(f"/api/collections/{acid}/runs", headers=auth(world.tokens["alpha"]), content=json.dumps(
        {"run_id": "tiny", "topic_id": "T1", "topic": "q", "references": ["d1"], "response_length": 3,
         "answer": [{"text": "A short answer.", "citations": [0]}]}).encode()).status_code == 201
    assert c.post(f"/api/collections/{acid}/judgment-sets", json={"name": "people"}, headers=admin).status_code == 201
    a.landed(("answer_assess.html", "/c/{}/answers/assess"), "admin",
             post(world, "admin", f"/c/{acid}/answers/assess",
                  {"topic": "T1", "position": "1", "set": "people", "n0": "2", "s0_0": "1"}),
             "Answer 1 saved", "You have assessed 1 of 1 answers")
    a.landed(("judgment_sets.html", "/c/{}/judgment-sets/{}/derive"), "admin",
             post(world, "admin", f"/c/{acid}/judgment-sets/people/derive"), "Labels kept in people")

    # ----------------------------------------------------------------- sign out, last
    a.landed(("base.html", "/logout"), "alpha", post(world, "alpha", "/logout"), "You are signed out")
    forget_session(world, "alpha")

    assert set(a.posted) == template_forms(), (
        f"forms whose answer is not checked (post them in this walk and read what their landing page says): "
        f"{sorted(template_forms() - set(a.posted))}; "
        f"no longer in the templates: {sorted(set(a.posted) - template_forms())}")


def _settings_form(world: World, **changed: str) -> dict[str, str]:
    """The console's settings form as the page fills it, with ``changed`` values."""
    page = get(world, "organiser", f"/c/{world.cid}/console/settings")
    return {**_form_values(page, "settings"), **changed}


def _new_collection_form(world: World) -> dict[str, str]:
    return _form_values(get(world, "admin", "/collections/new"), "new-collection")


def _form_values(page: str, form_id: str) -> dict[str, str]:
    """The values a browser would post from the form ``form_id`` (text, selects, checked boxes, text areas)."""
    body = page[page.index(f'id="{form_id}"'):]
    body = body[: body.index("</form>")]
    values: dict[str, str] = {}
    for tag in re.findall(r"<input\b[^>]*>", body):
        name = re.search(r'name="([^"]+)"', tag)
        if not name or name[1] == "csrf":
            continue
        kind = (re.search(r'type="([^"]+)"', tag) or [None, "text"])[1]
        if kind == "checkbox" and "checked" not in tag:
            continue
        value = re.search(r'value="([^"]*)"', tag)
        values[name[1]] = html.unescape(value[1]) if value else ("1" if kind == "checkbox" else "")
    for name, inner in re.findall(r'<select\b[^>]*name="([^"]+)"[^>]*>(.*?)</select>', body, re.DOTALL):
        chosen = (re.search(r'<option value="([^"]*)"[^>]*selected', inner)
                  or re.search(r'<option value="([^"]*)"', inner))
        values[name] = html.unescape(chosen[1]) if chosen else ""
    for name, inner in re.findall(r'<textarea\b[^>]*name="([^"]+)"[^>]*>(.*?)</textarea>', body, re.DOTALL):
        values[name] = html.unescape(inner)
    return values


# ---------------------------------------------------------------------------- the audit log
@SQLITE
def test_baseline_and_primary_changes_are_in_the_audit_log(world: World) -> None:
    c, cid, rid = world.client, world.cid, world.run_ids["RUN-01"]
    org = auth(world.tokens["organiser"])
    r = post(world, "organiser", f"/c/{cid}/console/runs/{rid}", {"action": "baseline", "value": "1"})
    assert r.status_code == 303
    assert post(world, "alpha", f"/c/{cid}/runs/{rid}/primary", {"primary": "true"}).status_code == 303
    assert post(world, "alpha", f"/c/{cid}/runs/{rid}/primary", {"primary": "true"}).status_code == 303  # no change
    assert c.patch(f"/api/runs/{rid}/settings", json={"baseline": False}, headers=org).status_code == 200
    log = c.get(f"/api/collections/{cid}/audit?limit=50", headers=org).json()["items"]
    marks = [(e["action"], e["actor"], e["details"]) for e in log if e["action"] in ("run.baseline", "run.primary")]
    tokens = c.get("/api/tokens", headers=auth(world.tokens["admin"])).json()["items"]
    name_of = {t["prefix"]: t["name"] or t["prefix"] for t in tokens}  # a principal is named by its token
    alpha_name = next(name for prefix, name in name_of.items() if world.tokens["alpha"].startswith(prefix))
    organiser_name = next(name for prefix, name in name_of.items() if world.tokens["organiser"].startswith(prefix))
    # newest first; a mark that changes nothing is not logged
    assert [(action, details) for action, _, details in marks] == [
        ("run.baseline", {"run": "RUN-01", "baseline": False}),
        ("run.primary", {"run": "RUN-01", "primary": True}),
        ("run.baseline", {"run": "RUN-01", "baseline": True})]
    assert [actor for _, actor, _ in marks] == [organiser_name, alpha_name, organiser_name]  # who marked it
    page = get(world, "organiser", f"/c/{cid}/console/audit")
    assert page.count('data-action="run.baseline"') == 2 and page.count('data-action="run.primary"') == 1


# ---------------------------------------------------------------------------- destructive actions
@SQLITE
def test_destructive_buttons_look_it_and_irreversible_ones_act_only_once_confirmed(world: World) -> None:
    c, cid = world.client, world.cid
    admin = auth(world.tokens["admin"])
    rid = world.run_ids["RUN-03"]
    runs = get(world, "organiser", f"/c/{cid}/console/runs")
    assert re.search(rf'<a class="button danger" href="/c/{cid}/console/runs/{rid}/delete"[^>]*>Delete…</a>', runs)
    teams = get(world, "organiser", f"/c/{cid}/teams")
    removes = r'<button type="submit" class="danger" aria-label="Remove team (\w+)">Remove…</button>'
    assert re.findall(removes, teams) == ["alpha", "beta"]
    tokens = get(world, "admin", "/tokens")
    assert tokens.count('class="danger"') == tokens.count(">Revoke…</button>") > 0
    for page in (runs, teams, tokens):  # nothing else there is styled as destructive
        assert page.count("danger") == len(re.findall(r">(?:Delete|Remove|Revoke)…<", page))
    assert ".danger" in c.get("/static/portal.css").text

    # a run: a post without the confirmation is refused and deletes nothing
    r = post(world, "organiser", f"/c/{cid}/console/runs/{rid}/delete")
    assert r.status_code == 400 and "confirm" in r.text
    assert c.get(f"/api/runs/{rid}", headers=admin).status_code == 200
    # a team: the confirmation step, nothing removed until it is confirmed
    r = post(world, "organiser", f"/c/{cid}/teams", {"action": "remove", "team": "beta"})
    assert r.status_code == 200 and 'id="confirm-step"' in r.text and 'name="confirm" value="1"' in r.text
    assert "Remove team beta" in r.text and 'class="danger"' in r.text and "runs and their evaluations stay" in r.text
    enrolled = c.get(f"/api/collections/{cid}/teams", headers=admin).json()["items"]
    assert [t["team"] for t in enrolled] == ["alpha", "beta"]
    assert post(world, "organiser", f"/c/{cid}/teams", {"action": "remove", "team": "nobody"}).status_code == 404
    assert post(world, "alpha", f"/c/{cid}/teams", {"action": "remove", "team": "beta"}).status_code == 403
    # a token: the confirmation step, the token works until it is confirmed
    victim = c.post("/api/tokens", json={"role": "participant", "team": "alpha", "name": "v"}, headers=admin).json()
    r = post(world, "admin", f"/tokens/{victim['id']}/revoke")
    assert r.status_code == 200 and "cannot be undone" in r.text and f'action="/tokens/{victim["id"]}/revoke"' in r.text
    assert c.get("/api/collections", headers=auth(victim["token"])).status_code == 200
    assert post(world, "organiser", f"/tokens/{victim['id']}/revoke", {"confirm": "1"}).status_code == 403


@SQLITE
def test_revoking_the_token_of_ones_own_session_needs_saying_so_and_signs_out(world: World) -> None:
    c = world.client
    admin = auth(world.tokens["admin"])
    me = c.get("/api/tokens?role=admin", headers=admin).json()["items"]
    own = next(t for t in me if t["name"] == "root")
    path = f"/tokens/{own['id']}/revoke"
    step = post(world, "admin", path)  # the button: the confirmation step says what will happen
    assert step.status_code == 200 and 'id="understand"' in step.text and "signs you out" in step.text
    assert 'name="sign_me_out"' in step.text and " required" in step.text
    again = post(world, "admin", path, {"confirm": "1"})  # confirmed, but the box not ticked: refused, nothing changes
    assert again.status_code == 409 and "tick the box" in again.text and 'id="confirm-step"' in again.text
    assert c.get("/api/tokens", headers=admin).status_code == 200
    assert "Signed in as" in get(world, "admin", "/tokens")
    r = post(world, "admin", path, {"confirm": "1", "sign_me_out": "1"})
    assert r.status_code == 303 and r.headers["location"].startswith("/?notice=own-token-revoked")
    assert "max-age=0" in r.headers["set-cookie"].lower()
    landing = c.get(r.headers["location"], headers=as_role(world, "admin")).text
    assert f"Token {own['prefix']} is revoked. It was the token you signed in with, so you are signed out." in \
        status_notes(landing)
    assert "Sign out" not in landing and c.get("/api/tokens", headers=admin).status_code == 401
    forget_session(world, "admin")


# ---------------------------------------------------------------------------- notices
def test_a_notice_is_only_ever_one_of_the_fixed_sentences() -> None:
    assert notices.notice_of({"notice": "team-removed", "team": "<b>x</b>"}) == (
        "Team <b>x</b> is removed from this collection: its runs stay; its participants no longer see the collection.")
    assert notices.notice_of({"notice": "you-won", "team": "x"}) is None  # an unknown key shows nothing
    assert notices.notice_of({"notice": "team-removed"}) is None  # nor a sentence without its value
    assert notices.notice_of({"notice": "team-enrolled", "team": "y" * 1000}).count("y") == notices.MAX_VALUE
    assert notices.answered("/c/1/runs#run-2", "primary-on", run="a&b") == "/c/1/runs?notice=primary-on&run=a%26b#run-2"
    with pytest.raises(KeyError):
        notices.answered("/", "primary-on")


@SQLITE
def test_a_crafted_notice_is_shown_as_text(world: World) -> None:
    page = get(world, "organiser", f"/c/{world.cid}/teams?notice=team-enrolled&team=%3Cscript%3Ex%3C/script%3E")
    assert "<script>x</script>" not in page and "Team &lt;script&gt;x&lt;/script&gt; is enrolled" in page


# ---------------------------------------------------------------------------- snapshots
def test_a_snapshot_freezes_every_metric_of_the_board(world: World) -> None:
    c, cid = world.client, world.cid
    org = auth(world.tokens["organiser"])
    made = c.post(f"/api/collections/{cid}/snapshots", json={"label": "all", "metric": "AP"}, headers=org)
    assert made.status_code == 201, made.text
    sid = made.json()["id"]
    assert made.json()["metrics"] == ["AP", "nDCG@10"]  # its own first, then the official one
    doc = c.get(f"/api/snapshots/{sid}", headers=org).json()
    assert (doc["metric"], doc["frozen_metric"], doc["metrics"], doc["every_metric"]) == (
        "AP", "AP", ["AP", "nDCG@10"], True)
    boards = {b["metric"]: b for b in doc["boards"]}
    for metric in ("AP", "nDCG@10"):  # each metric's ranked rows, as the board served them when frozen
        live = c.get(f"/api/collections/{cid}/leaderboard", params={"metric": metric}, headers=org).json()
        assert [(r["run"], r["rank"], r["mean"]) for r in boards[metric]["rows"]] == [
            (r["run"], r["rank"], r["mean"]) for r in live["rows"]]
        assert len(boards[metric]["rows"]) == 3
    ndcg = c.get(f"/api/snapshots/{sid}", params={"metric": "nDCG@10"}, headers=org).json()
    assert ndcg["metric"] == "nDCG@10" and ndcg["rows"] == boards["nDCG@10"]["rows"]
    assert c.get(f"/api/snapshots/{sid}", params={"metric": "P@5"}, headers=org).status_code == 404
    csv_ap = c.get(f"/api/snapshots/{sid}", params={"format": "csv"}, headers=org).text
    csv_ndcg = c.get(f"/api/snapshots/{sid}", params={"format": "csv", "metric": "nDCG@10"}, headers=org).text
    assert csv_ap != csv_ndcg and csv_ndcg == c.get(f"/snapshots/{sid}/board.csv?metric=nDCG%4010",
                                                    headers=as_role(world, "organiser")).text
    # the page: a selector of the frozen metrics, each metric's rows
    page = get(world, "organiser", f"/snapshots/{sid}")
    assert re.findall(r'<option value="([^"]+)"', page[page.index('id="metric"'):]) == ["AP", "nDCG@10"]
    assert 'id="one-metric"' not in page
    shown = get(world, "organiser", f"/snapshots/{sid}?metric=nDCG%4010")
    assert '<option value="nDCG@10" selected>' in shown and "nDCG@10" in shown[shown.index('id="snapshot"'):][:400]
    # the live board moves on (a run deleted); the snapshot does not
    c.delete(f"/api/runs/{world.run_ids['RUN-03']}", headers=org)
    again = c.get(f"/api/snapshots/{sid}", headers=org).json()
    assert again["boards"] == doc["boards"]

    # a snapshot frozen before every metric was kept: readable, holding its own metric only, and saying so
    with world.factory() as s:
        content = {k: v for k, v in s.get(LeaderboardSnapshot, sid).content.items() if k not in ("metrics", "boards")}
        s.add(LeaderboardSnapshot(collection_id=cid, qrels_version=1, metric="AP", label="old", content=content,
                                  created_by="test"))
        s.commit()
        old = s.scalars(select(LeaderboardSnapshot.id).where(LeaderboardSnapshot.label == "old")).one()
    old_doc = c.get(f"/api/snapshots/{old}", headers=org).json()
    assert (old_doc["metrics"], old_doc["every_metric"], [b["metric"] for b in old_doc["boards"]]) == (
        ["AP"], False, ["AP"])
    assert old_doc["rows"] == doc["rows"]
    old_page = get(world, "organiser", f"/snapshots/{old}")
    assert "holds AP only" in text_of(old_page) and 'id="metric"' not in old_page
    r = c.get(f"/api/snapshots/{old}", params={"metric": "nDCG@10"}, headers=org)
    assert r.status_code == 404 and "frozen before snapshots kept every metric" in r.text
