"""Judgment sets and a judges track in the portal (issue 16), over HTTP: the pages for each role
(an organiser, an enrolled team with a submitted set, another enrolled team, a stranger,
anonymous), every form's happy path and its refusals on the page, the one-time keys that keep a
re-posted form from acting twice, the CSRF token, and the comparison page taking set references.

The world (conftest.py): a private, unreleased collection "task" (nDCG@10 official; AP and
nDCG@10) with qrels version 1 in the official set, three runs of the enrolled teams alpha and
beta (evaluated in-process), an assessor, and a collection "other" with its own organiser.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.integration.conftest import World, auth
from tests.integration.test_portal import as_role, csrf_of

SQLITE = pytest.mark.parametrize("backend", ["sqlite"], indirect=True)  # rules and pages, not the database


def post(world: World, role: str, path: str, data: dict[str, Any] | None = None, csrf: bool = True,
         files: dict[str, tuple[str, str]] | None = None):  # type: ignore[no-untyped-def]
    """A portal form posted by ``role`` with its own form token (``csrf=False``: without one)."""
    body = {**(data or {}), **({"csrf": csrf_of(world, role)} if csrf else {})}
    return world.client.post(path, data=body, files=files, headers=as_role(world, role), follow_redirects=False)


def page(world: World, role: str, path: str):  # type: ignore[no-untyped-def]
    return world.client.get(path, headers=as_role(world, role), follow_redirects=False)


def api(world: World, role: str, path: str) -> Any:
    r = world.client.get(f"/api/collections/{world.cid}{path}", headers=auth(world.tokens[role]))
    assert r.status_code == 200, r.text
    return r.json()


def once_key(html: str, suffix: str = "") -> str:
    """The page's one-time key of a form (``suffix``: the form's own, e.g. ``-qrels``)."""
    return re.search(rf'name="once" value="([^"]+{re.escape(suffix)})"', html).group(1)


def judged(world: World, share: int = 3) -> str:
    """The official judgments with every ``share``-th level changed (no unjudged entries)."""
    out = []
    for i, line in enumerate(world.qrels.splitlines()):
        topic, docno, label = line.split()
        level = int(label.lstrip("L"))
        if level < 0:
            continue
        out.append(f"{topic} {docno} L{(level + 1) % 3 if i % share == 0 else level}")
    return "\n".join(out) + "\n"


def pooled(world: World) -> dict[str, set[str]]:
    """topic -> the documents of the collection's pools (what a judges track's teams judge)."""
    from sqlalchemy import select

    from service.store.models import Pool, PoolDocument

    found: dict[str, set[str]] = {}
    with world.factory() as s:
        for topic, docno in s.execute(select(PoolDocument.topic, PoolDocument.docno).join(
                Pool, Pool.id == PoolDocument.pool_id).where(Pool.collection_id == world.cid)):
            found.setdefault(topic, set()).add(docno)
    return found


def team_judged(world: World, share: int = 3) -> str:
    """A team's judgments: those of :func:`judged` of the pooled documents (a team judges the
    pool it is given, issue 24)."""
    docs = pooled(world)
    return "".join(line + "\n" for line in judged(world, share).splitlines()
                   if line.split()[1] in docs.get(line.split()[0], ()))


def labels_file(world: World) -> str:
    """Two assessors' labels of the first ten judged documents."""
    docs = [line.split()[:2] for line in world.qrels.splitlines() if not line.endswith("L-1")][:10]
    return "".join(f"{t} {d} {who} {lv}\n" for t, d in docs for who, lv in (("ann", 1), ("bob", 2)))


def sets_listed(html: str) -> list[str]:
    body = html[html.index('id="judgment-sets"'):]
    return re.findall(r'<tr data-set="([^"]+)"', body[: body.index("</table>")])


def open_track(world: World, **settings: str) -> None:
    """Set the track up (and give the teams a pool to judge if the collection has none: every
    document the runs rank within 10, judged or not, built in-process)."""
    values = {"accepts_judgments": "1", "measure": "tau_ap", "resamples": "200", "level": "0.95", "top_k": "10",
              "max_sets_per_team": "2", **settings}
    r = post(world, "organiser", f"/c/{world.cid}/judges/settings", values)
    assert r.status_code == 303 and "done=saved" in r.headers["location"], r.text
    if not pooled(world):
        r = world.client.post(f"/api/collections/{world.cid}/pools", json={
            "kind": "stratified", "strata": [[1, 10, 1.0]], "seed": 1}, headers=auth(world.tokens["organiser"]))
        assert r.status_code == 202 and pooled(world), r.text


def submit(world: World, role: str, name: str, text: str, once: str | None = None, **fields: str):  # type: ignore[no-untyped-def]
    data = {"name": name, **fields, **({"once": once} if once else {})}
    return post(world, role, f"/c/{world.cid}/judges/submissions", data, files={"file": (f"{name}.qrels", text)})


# ------------------------------------------------------------------------------ the pages, per role
@SQLITE
def test_each_role_sees_the_sets_and_the_judge_board_it_may(world: World) -> None:
    cid = world.cid
    open_track(world)
    r = submit(world, "alpha", "alpha-llm", team_judged(world), model="m-1", prompt="Judge it.", judged_on="2026-11-20")
    assert r.status_code == 303 and "done=submitted" in r.headers["location"] and "version=2" in r.headers["location"]
    assert "Version 2 of your set" in page(world, "alpha", r.headers["location"]).text
    assert post(world, "organiser", f"/c/{cid}/judges/board").status_code == 303  # computed by the in-process worker

    statuses = {
        f"/c/{cid}/judgment-sets": {"organiser": 200, "admin": 200, "alpha": 200, "beta": 200, "anonymous": 401,
                                    "other_organiser": 403, "assessor": 403},
        f"/c/{cid}/judgment-sets/official": {"organiser": 200, "admin": 200, "alpha": 403, "beta": 403,
                                             "anonymous": 401, "other_organiser": 403, "assessor": 403},
        f"/c/{cid}/judgment-sets/alpha-llm": {"organiser": 200, "admin": 200, "alpha": 200, "beta": 403,
                                              "anonymous": 401, "other_organiser": 403, "assessor": 403},
        f"/c/{cid}/judgment-sets/alpha-llm/official": {"organiser": 200, "admin": 200, "alpha": 403, "beta": 403,
                                                       "anonymous": 401, "other_organiser": 403, "assessor": 403},
        f"/c/{cid}/judges": {"organiser": 200, "admin": 200, "alpha": 200, "beta": 200, "anonymous": 401,
                             "other_organiser": 403, "assessor": 403},
        f"/c/{cid}/qrels/compare?a=official&b=alpha-llm": {"organiser": 200, "admin": 200, "alpha": 403, "beta": 403,
                                                          "anonymous": 401, "other_organiser": 403, "assessor": 403},
        f"/c/{cid}/judgment-sets/nope": {"organiser": 404, "alpha": 403, "anonymous": 401, "other_organiser": 403},
    }
    for path, by_role in statuses.items():
        for role, status in by_role.items():
            r = page(world, role, path)
            assert r.status_code == status, (path, role, r.status_code, r.text[:300])
            if status >= 400:
                assert "<h1>" in r.text and 'role="alert"' in r.text  # an HTML error page

    # the organiser: every set with its provenance and evaluation, and the forms
    org = page(world, "organiser", f"/c/{cid}/judgment-sets").text
    assert sets_listed(org) == ["official", "alpha-llm"]
    row = org[org.index('data-set="alpha-llm"'):]
    row = row[: row.index("</tr>")]
    assert "automatic; model m-1; prompt “Judge it.”; judged on 2026-11-20" in row and "<td>alpha</td>" in row
    assert "3 of 3" in row and "Make official…" in row
    for form in ("create-set", "upload-version", "upload-labels", "change-rule"):
        assert f'id="{form}"' in org
    # a team: its own set only, no forms, never the official judgments
    alpha = page(world, "alpha", f"/c/{cid}/judgment-sets").text
    assert sets_listed(alpha) == ["alpha-llm"] and 'id="create-set"' not in alpha and 'name="csrf"' not in alpha.split(
        "</header>")[1]
    beta = page(world, "beta", f"/c/{cid}/judgment-sets").text
    assert 'id="judgment-sets"' not in beta and 'id="no-sets"' in beta and "alpha-llm" not in beta
    one = page(world, "alpha", f"/c/{cid}/judgment-sets/alpha-llm").text
    assert 'id="versions"' in one and 'data-version="2"' in one and "Judge it." in one and "Make it official" not in one

    # the judges track: the organiser every row, the settings and the button; the measure explained
    judges = page(world, "organiser", f"/c/{cid}/judges").text
    assert re.findall(r'<tr data-set="([^"]+)"', judges) == ["alpha-llm"]
    assert 'id="judge-settings"' in judges and 'id="compute-board"' in judges and 'id="submit-judgments"' not in judges
    assert "swap near the top costs more" in judges and "never shown to teams" in judges
    assert re.search(r"\[-?\d\.\d{3}, -?\d\.\d{3}\]", judges) and 'id="stale"' not in judges
    board = api(world, "organiser", "/judge-board")
    assert f"{board['rows'][0]['value']:.3f}" in judges
    # alpha its own row and the submission form; beta no row before the release; no settings for teams
    own = page(world, "alpha", f"/c/{cid}/judges").text
    assert re.findall(r'<tr data-set="([^"]+)"', own) == ["alpha-llm"] and 'id="submit-judgments"' in own
    assert 'id="judge-settings"' not in own and "1 of the 2 judgment sets" in own
    other = page(world, "beta", f"/c/{cid}/judges").text
    assert "alpha-llm" not in other and 'id="no-rows"' in other and 'id="submit-judgments"' in other

    # the board page links to both pages exactly when they open
    for role in ("organiser", "alpha", "beta", "admin"):
        home = page(world, role, f"/c/{cid}").text
        assert f'href="/c/{cid}/judgment-sets"' in home and f'href="/c/{cid}/judges"' in home, role
    # released: every reader of the collection sees every row; closed: no submission form
    open_track(world, accepts_judgments="", released="1")
    released = page(world, "beta", f"/c/{cid}/judges").text
    assert re.findall(r'<tr data-set="([^"]+)"', released) == ["alpha-llm"]
    assert 'id="submit-judgments"' not in released and 'id="track-closed"' in released
    assert page(world, "beta", f"/c/{cid}/judgment-sets/alpha-llm").status_code == 403  # the set stays alpha's
    r = world.client.patch(f"/api/collections/{cid}", json={"visibility": "public"},
                           headers=auth(world.tokens["admin"]))
    assert r.status_code == 200
    for role in ("anonymous", "other_organiser"):  # a public collection's released judge board
        r = page(world, role, f"/c/{cid}/judges")
        assert r.status_code == 200 and "alpha-llm" in r.text and 'id="judge-settings"' not in r.text
        assert f'href="/c/{cid}/judgment-sets/alpha-llm"' not in r.text  # the set itself is not theirs to read
        assert page(world, role, f"/c/{cid}/judgment-sets").status_code in (401, 403)


# ------------------------------------------------------------------------------ the organisers' forms
@pytest.mark.parametrize("backend", ["sqlite", "postgres"], indirect=True)  # uploads in their own transactions
def test_organisers_create_upload_evaluate_and_change_sets_through_the_forms(world: World) -> None:
    path = f"/c/{world.cid}/judgment-sets"
    listing = page(world, "organiser", path).text

    # create: refusals on the page with what was typed; a re-posted form makes nothing twice
    bad = post(world, "organiser", path, {"action": "create", "name": "7up", "model": "kept"})
    assert bad.status_code == 400 and 'id="server-error"' in bad.text and "begins with a letter" in bad.text
    assert 'value="kept"' in bad.text
    create = {"action": "create", "name": "auto", "source": "automatic", "model": "gpt-x", "prompt": "p",
              "judged_on": "2026-11-20", "notes": "zero-shot", "rule": "latest", "auto_evaluate": "1",
              "once": once_key(listing, "-create")}
    r = post(world, "organiser", path, create)
    assert r.status_code == 303 and r.headers["location"] == f"{path}?done=created&name=auto"
    assert "Judgment set <strong>auto</strong> created" in page(world, "organiser", r.headers["location"]).text
    again = post(world, "organiser", path, create)  # the browser re-posting the form
    assert again.status_code == 303 and again.headers["location"] == r.headers["location"]
    dup = post(world, "organiser", path, {**create, "once": "another-key"})
    assert dup.status_code == 409 and "already has a judgment set" in dup.text
    r = post(world, "organiser", path, {"action": "create", "name": "manual", "auto_evaluate": "0"})
    assert r.status_code == 303
    sets = {s["name"]: s for s in api(world, "organiser", "/judgment-sets")["items"]}
    assert list(sets) == ["official", "auto", "manual"]
    assert (sets["auto"]["model"], sets["auto"]["source"], sets["manual"]["auto_evaluate"]) == ("gpt-x", "automatic",
                                                                                              False)

    # a qrels version into a set: the file's line on a refusal, once per form, evaluated automatically
    upload = {"action": "qrels", "set": "auto"}
    r = post(world, "organiser", path, upload, files={"file": ("broken.qrels", "t 0 d\n")})
    assert r.status_code == 422 and "broken.qrels, line 1" in r.text and '<option value="auto" selected>' in r.text
    r = post(world, "organiser", path, {"action": "qrels"}, files={"file": ("v.qrels", world.qrels)})
    assert r.status_code == 400 and "choose the judgment set" in r.text
    r = post(world, "organiser", path, upload)
    assert r.status_code == 422 and "choose a file" in r.text
    key = once_key(listing, "-qrels")
    r = post(world, "organiser", path, {**upload, "once": key}, files={"file": ("auto.qrels", judged(world))})
    assert r.status_code == 303 and "done=uploaded" in r.headers["location"] and "version=2" in r.headers["location"]
    assert "job=" in r.headers["location"]
    again = post(world, "organiser", path, {**upload, "once": key}, files={"file": ("auto.qrels", judged(world))})
    assert again.status_code == 303 and again.headers["location"] == r.headers["location"]
    assert [v["version"] for v in api(world, "organiser", "/qrels")["items"]] == [1, 2]
    listed = page(world, "organiser", r.headers["location"]).text
    assert "Version 2 of <strong>auto</strong> stored" in listed
    row = listed[listed.index('data-set="auto"'):]
    assert "3 of 3" in row[: row.index("</tr>")]
    # a version removing most of the set's judgments needs the box ticked
    half = "\n".join(judged(world).splitlines()[:20]) + "\n"
    r = post(world, "organiser", path, upload, files={"file": ("half.qrels", half)})
    assert r.status_code == 409 and "removes" in r.text
    r = post(world, "organiser", path, {**upload, "confirm_removal": "1"}, files={"file": ("half.qrels", half)})
    assert r.status_code == 303 and "version=3" in r.headers["location"]
    # into a set evaluated on request: no job until asked
    r = post(world, "organiser", path, {"action": "qrels", "set": "manual"}, files={"file": ("m.qrels", world.qrels)})
    assert r.status_code == 303 and "job=" not in r.headers["location"]
    assert "not evaluated automatically" in page(world, "organiser", r.headers["location"]).text

    # evaluate now: once per form; a set without judgments is refused on the page
    r = post(world, "organiser", path, {"action": "create", "name": "empty"})
    assert r.status_code == 303
    r = post(world, "organiser", path, {"action": "evaluate", "set": "empty"})
    assert r.status_code == 409 and "no judgments yet" in r.text
    listing = page(world, "organiser", path).text
    key = re.search(r'name="once" value="([^"]+)"><input type="hidden" name="set" value="manual"', listing).group(1)
    r = post(world, "organiser", path, {"action": "evaluate", "set": "manual", "once": key})
    assert r.status_code == 303 and "done=evaluating" in r.headers["location"] and "job=" in r.headers["location"]
    assert post(world, "organiser", path, {"action": "evaluate", "set": "manual", "once": key}).headers[
        "location"] == r.headers["location"]
    manual = api(world, "organiser", "/judgment-sets/manual")
    assert manual["evaluation"]["evaluated"] == 3

    # assessors' labels: validated whole first, then derived by the set's rule into a new version
    r = post(world, "organiser", path, {"action": "labels", "set": "manual"},
             files={"file": ("labels.txt", labels_file(world) + "0001 X carl 9\n")})
    assert r.status_code == 422 and "labels.txt, line 21" in r.text and "outside the collection&#39;s scale" in r.text
    assert api(world, "organiser", "/judgment-sets/manual")["labels"] == 0
    r = post(world, "organiser", path, {"action": "labels", "set": "manual", "once": "labels-1"},
             files={"file": ("labels.txt", labels_file(world))})
    assert r.status_code == 303 and "done=labelled" in r.headers["location"], r.text
    assert api(world, "organiser", "/judgment-sets/manual")["labels"] == 20

    # the rule: a new one re-derives the labelled documents into a new version
    r = post(world, "organiser", path, {"action": "rule", "set": "manual"})
    assert r.status_code == 400 and "choose a new rule" in r.text
    r = post(world, "organiser", path, {"action": "rule", "set": "manual", "rule": "loudest"})
    assert r.status_code == 400 and "rule is one of" in r.text
    before = api(world, "organiser", "/judgment-sets/manual")["current_version"]
    r = post(world, "organiser", path, {"action": "rule", "set": "manual", "rule": "min", "auto_evaluate": "1"})
    assert r.status_code == 303 and f"version={before + 1}" in r.headers["location"]
    manual = api(world, "organiser", "/judgment-sets/manual")
    assert (manual["rule"], manual["auto_evaluate"], manual["current_version"]) == ("min", True, before + 1)

    # the one set's page: every version, its provenance
    one = page(world, "organiser", f"{path}/auto").text
    assert re.findall(r'data-version="(\d+)"', one) == ["3", "2"] and "zero-shot" in one and "gpt-x" in one


@SQLITE
def test_making_a_set_official_goes_through_a_confirmation(world: World) -> None:
    cid, path = world.cid, f"/c/{world.cid}/judgment-sets"
    assert post(world, "organiser", path, {"action": "create", "name": "auto", "auto_evaluate": "1"}).status_code == 303
    assert post(world, "organiser", path, {"action": "create", "name": "empty"}).status_code == 303
    r = page(world, "organiser", f"{path}/empty/official")
    assert r.status_code == 200 and 'id="no-judgments"' in r.text and 'id="make-official"' not in r.text
    r = post(world, "organiser", f"{path}/empty/official", {"confirm": "1"})
    assert r.status_code == 409 and "no judgments yet" in r.text
    r = post(world, "organiser", path, {"action": "qrels", "set": "auto"}, files={"file": ("a.qrels", judged(world))})
    assert r.status_code == 303
    confirm = page(world, "organiser", f"{path}/auto/official").text
    assert 'id="make-official"' in confirm and "now <strong>official</strong> (version 1" in confirm
    assert "Every run (3) is evaluated under it already" in confirm and "Teams never see the official judgments" in confirm
    assert post(world, "organiser", f"{path}/auto/official").status_code == 400  # not confirmed: nothing changes
    assert api(world, "organiser", "/leaderboard")["judgment_set"] == "official"
    for role in ("alpha", "other_organiser"):
        assert post(world, role, f"{path}/auto/official", {"confirm": "1"}).status_code == 403
    r = post(world, "organiser", f"{path}/auto/official", {"confirm": "1"})
    assert r.status_code == 303 and "done=official&name=auto" in r.headers["location"]
    assert "the board ranks by its newest version once its evaluation completes" in page(
        world, "organiser", r.headers["location"]).text
    board = api(world, "organiser", "/leaderboard")
    assert (board["judgment_set"], board["qrels_version"]) == ("auto", 2)
    sets = page(world, "organiser", path).text
    assert f'<a href="/c/{cid}/judgment-sets/auto">auto</a> <span class="badge official">' in sets
    already = page(world, "organiser", f"{path}/auto/official").text
    assert 'id="already-official"' in already and 'id="make-official"' not in already
    r = post(world, "organiser", f"{path}/auto/official", {"confirm": "1"})
    assert r.status_code == 303 and "done=unchanged" in r.headers["location"]


@SQLITE
def test_teams_and_strangers_cannot_use_the_organisers_forms(world: World) -> None:
    path = f"/c/{world.cid}/judgment-sets"
    forms: list[tuple[dict[str, str], dict[str, tuple[str, str]] | None]] = [
        ({"action": "create", "name": "mine"}, None), ({"action": "evaluate", "set": "official"}, None),
        ({"action": "rule", "set": "official", "rule": "max"}, None),
        ({"action": "qrels", "set": "official"}, {"file": ("q.qrels", world.qrels)}),
        ({"action": "qrels"}, {"file": ("q.qrels", world.qrels)}),
        ({"action": "labels", "set": "official"}, {"file": ("l.txt", labels_file(world))})]
    for role in ("alpha", "assessor", "other_organiser", "anonymous"):
        for data, files in forms:
            r = post(world, role, path, data, files=files)
            assert r.status_code in (401, 403), (role, data, r.status_code)
        for p in (f"/c/{world.cid}/judges/settings", f"/c/{world.cid}/judges/board"):
            assert post(world, role, p, {"accepts_judgments": "1"}).status_code in (401, 403), (role, p)
    assert [s["name"] for s in api(world, "organiser", "/judgment-sets")["items"]] == ["official"]
    assert api(world, "organiser", "/qrels")["current"] == 1 and not api(world, "organiser",
                                                                          "/judge-track")["accepts_judgments"]
    assert post(world, "organiser", path, {"action": "drop"}).status_code == 400


@SQLITE
def test_every_form_needs_the_form_token(world: World) -> None:
    cid = world.cid
    forms = [(f"/c/{cid}/judgment-sets", {"action": "create", "name": "csrf"}),
             (f"/c/{cid}/judgment-sets", {"action": "evaluate", "set": "official"}),
             (f"/c/{cid}/judgment-sets", {"action": "rule", "set": "official", "rule": "max"}),
             (f"/c/{cid}/judgment-sets", {"action": "qrels", "set": "official"}),
             (f"/c/{cid}/judgment-sets", {"action": "labels", "set": "official"}),
             (f"/c/{cid}/judgment-sets/official/official", {"confirm": "1"}),
             (f"/c/{cid}/judges/settings", {"accepts_judgments": "1"}), (f"/c/{cid}/judges/board", {}),
             (f"/c/{cid}/judges/submissions", {"name": "csrf"})]
    for path, data in forms:
        for role, token in (("organiser", None), ("organiser", "0" * 32), ("alpha", None)):
            body = {**data, **({"csrf": token} if token else {})}
            r = world.client.post(path, data=body, files={"file": ("f.qrels", world.qrels)},
                                  headers=as_role(world, role), follow_redirects=False)
            may_use = (role == "alpha") == path.endswith("/judges/submissions")  # its token is checked after that
            assert r.status_code == 403 and ("stale or from another site" in r.text or not may_use), (path, role)
    assert [s["name"] for s in api(world, "organiser", "/judgment-sets")["items"]] == ["official"]
    assert api(world, "organiser", "/qrels")["current"] == 1
    assert not api(world, "organiser", "/judge-track")["accepts_judgments"]


# ------------------------------------------------------------------------------ the judges track's forms
@SQLITE
def test_the_judges_track_settings_submissions_and_board(world: World) -> None:
    path = f"/c/{world.cid}/judges"
    # a closed track refuses a submission on the page
    r = submit(world, "alpha", "early", judged(world))
    assert r.status_code == 409 and "does not accept judgment sets" in r.text
    # settings: refusals on the page with what was typed, an untouched form changes nothing
    r = post(world, "organiser", f"{path}/settings", {"accepts_judgments": "1", "resamples": "many"})
    assert r.status_code == 400 and "Resamples is a whole number" in r.text
    r = post(world, "organiser", f"{path}/settings", {"accepts_judgments": "1", "resamples": "5"})
    assert r.status_code == 400 and "resamples is a whole number from 100" in r.text and 'value="5"' in r.text
    r = post(world, "organiser", f"{path}/settings", {"accepts_judgments": "1", "metric": "P@5"})
    assert r.status_code == 400 and "not among the collection&#39;s metrics" in r.text
    assert not api(world, "organiser", "/judge-track")["accepts_judgments"]
    open_track(world, metric="AP", measure="kendall", level="0.9", max_sets_per_team="1")
    track = api(world, "organiser", "/judge-track")
    assert (track["accepts_judgments"], track["metric"], track["measure"], track["resamples"], track["level"],
            track["max_sets_per_team"], track["released"]) == (True, "AP", "kendall", 200, 0.9, 1, False)
    settings = page(world, "organiser", path).text
    assert '<option value="AP" selected>' in settings and '<option value="kendall" selected>' in settings
    assert 'id="j-accepts" name="accepts_judgments" value="1" checked' in settings
    values = dict(re.findall(r'name="([a-z_]+)" (?:min="[^"]*" max="[^"]*" step="[^"]*" )?value="([^"]*)"',
                             settings))
    r = post(world, "organiser", f"{path}/settings", {"accepts_judgments": "1", "metric": "AP", "measure": "kendall",
                                                      **{k: values[k] for k in ("resamples", "level", "top_k",
                                                                                "max_sets_per_team")}})
    assert r.status_code == 303 and "done=unchanged" in r.headers["location"]

    # a submission: checked line by line, once per form, within the team's limit
    page_html = page(world, "alpha", path).text
    key = once_key(page_html)
    first = world.qrels.splitlines()[0].split()
    r = submit(world, "alpha", "a1", f"{first[0]} NOT-POOLED L1\n")
    assert r.status_code == 422 and "a1.qrels, line 1" in r.text and "not in the pool" in r.text
    assert 'value="a1"' in r.text  # what was typed comes back
    r = submit(world, "alpha", "9lives", judged(world))
    assert r.status_code == 400 and "begins with a letter" in r.text
    r = submit(world, "alpha", "a1", team_judged(world), once=key, model="m")
    assert r.status_code == 303 and "name=alpha-a1&version=2" in r.headers["location"]  # the team's namespace
    again = submit(world, "alpha", "a1", team_judged(world), once=key, model="m")
    assert again.status_code == 303 and again.headers["location"] == r.headers["location"]
    assert [s["current_version"] for s in api(world, "alpha", "/judgment-sets")["items"]] == [2]
    r = submit(world, "alpha", "a2", team_judged(world, 2))
    assert r.status_code == 409 and "the limit of this track" in r.text
    r = submit(world, "beta", "a1", team_judged(world, 2))  # a name is the team's own: no news of alpha's "a1"
    assert r.status_code == 303 and "name=beta-a1&version=" in r.headers["location"]
    r = submit(world, "alpha", "a1", team_judged(world, 2))  # the team's own set again: its next version
    assert r.status_code == 303 and "version=4" in r.headers["location"]  # (beta's set took version 3)
    assert submit(world, "organiser", "org", judged(world)).status_code == 403  # teams submit, not organisers

    # computed by the workers when the sets' evaluations complete (in-process here: at once), then
    # up to date: "compute now" has nothing to do (issue 25)
    board = page(world, "organiser", path).text
    assert sorted(re.findall(r'<tr data-set="([^"]+)"', board)) == ["alpha-a1", "beta-a1"] and "(version 4)" in board
    assert 'id="board-computed"' in board and "Judges ranked by kendall with the official set (AP)" in board
    assert "90% percentile interval, B = " in board and re.search(r"[+-]\d\.\d{4} \((more lenient|stricter|no bias)\)", board)
    r = post(world, "organiser", f"{path}/board")
    assert r.status_code == 303 and "done=current" in r.headers["location"]
    # a new version: its evaluation computes the board again
    assert submit(world, "alpha", "a1", team_judged(world, 4)).status_code == 303
    board = page(world, "organiser", path).text
    assert "(version 5)" in board and 'id="stale"' not in board
    # another setting makes the stored board stale until it is computed again
    assert post(world, "organiser", f"{path}/settings", {"accepts_judgments": "1", "metric": "AP", "measure": "spearman",
                                                          **{k: values[k] for k in ("resamples", "level", "top_k",
                                                                                    "max_sets_per_team")}}
                ).status_code == 303
    assert 'id="stale"' in page(world, "organiser", path).text
    r = post(world, "organiser", f"{path}/board")
    assert r.status_code == 303 and "done=computing" in r.headers["location"]
    assert 'id="stale"' not in page(world, "organiser", path).text


# ------------------------------------------------------------------------------ comparisons by set
@SQLITE
def test_the_comparison_page_takes_set_references(world: World) -> None:
    cid, path = world.cid, f"/c/{world.cid}/judgment-sets"
    assert post(world, "organiser", path, {"action": "create", "name": "auto", "auto_evaluate": "1"}).status_code == 303
    assert post(world, "organiser", path, {"action": "qrels", "set": "auto"},
                files={"file": ("a.qrels", judged(world))}).status_code == 303
    assert post(world, "organiser", path, {"action": "labels", "set": "auto"},
                files={"file": ("l.txt", labels_file(world))}).status_code == 303
    compare = f"/c/{cid}/qrels/compare"
    by_name = page(world, "organiser", f"{compare}?a=official&b=auto")
    assert by_name.status_code == 200 and "Labels: version 1 (official) against version 3 (auto)" in by_name.text
    assert 'id="ranking"' in by_name.text and 'value="official"' in by_name.text
    assert '<option value="auto">' in by_name.text  # the references offered
    api_doc = api(world, "organiser", "/judgment-sets/compare?a=official&b=auto")
    assert f"{api_doc['labels']['overall']['kappa']:.3f}" in by_name.text
    # the version numbers as before; a set named alone is compared with the official set
    assert "Labels: version 1 (official) against version 2 (auto)" in page(world, "organiser",
                                                                           f"{compare}?a=1&b=2").text
    assert "Labels: version 1 (official) against version 3 (auto)" in page(world, "organiser", f"{compare}?b=auto").text
    assert "version 2 (auto)" in page(world, "organiser", f"{compare}?a=official&b=auto:2").text
    # one assessor's labels: the label figures only
    r = page(world, "organiser", f"{compare}?a=auto&b=ann@auto")
    assert r.status_code == 200 and "assessor ann's labels in auto" in r.text and 'id="ranking"' not in r.text
    assert "only the label figures compare them" in r.text
    # what is not there is said on the form
    r = page(world, "organiser", f"{compare}?a=nope&b=1")
    assert r.status_code == 404 and 'id="server-error"' in r.text and "its sets: official, auto" in r.text
    assert 'id="compare-form"' in r.text
    assert page(world, "organiser", f"{compare}?a=official:2&b=1").status_code == 404
    assert page(world, "organiser", f"{compare}?a=0&b=1").status_code == 400
    csv = page(world, "organiser", f"{compare}.csv?a=official&b=auto")
    assert csv.status_code == 200 and csv.text.startswith("topic,tau,")
    for role in ("alpha", "beta"):
        assert page(world, role, f"{compare}?a=official&b=auto").status_code == 403
