"""The organisers' console (portal) and the API endpoints behind it: every form posted by every
role (the allowed ones succeed and their effect is visible, the others are refused and nothing
changes), CSRF, the settings form against the typed schema, the preview's numbers against what
saving then does, the qrels upload's dry run and its large-removal confirmation, a new token
shown once, topics with their texts, and the audit log of it all.

The world (conftest.py): a private, unreleased collection "task" (nDCG@10 official; AP and
nDCG@10) with qrels, three runs of the enrolled teams alpha and beta, an assessor of topic
0001, and a second collection "other" with its own organiser.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec.inspect as mi
import pytest

from service.api.schemas.collections import CollectionSettings
from tests.integration.conftest import World, auth
from tests.integration.test_portal import as_role, csrf_of

# Run on PostgreSQL too; the module's other tests run on SQLite only (conftest.py):
# the preview's SAVEPOINT, the one-time keys and the audit rows on both databases; pages and forms on SQLite.
SQLITE_ONLY_BUT = {"test_the_preview_announces_what_saving_then_does", "test_a_resent_token_form_makes_no_second_token",
                   "test_the_audit_log_lists_what_was_done"}

ROLES = ("anonymous", "alpha", "assessor", "other_organiser", "organiser", "admin")
STAFF = ("organiser", "admin")


def api(world: World, role: str) -> dict[str, str]:
    return auth(world.tokens.get(role))


def post(world: World, role: str, path: str, data: dict[str, Any] | None = None,  # type: ignore[no-untyped-def]
         csrf: bool = True, **kw: Any):
    """A portal form posted by ``role`` with its own form token (``csrf=False``: without one)."""
    body = {**(data or {}), **({"csrf": csrf_of(world, role)} if csrf else {})}
    return world.client.post(path, data=body, headers=as_role(world, role), follow_redirects=False, **kw)


def refused(status: int) -> bool:
    return status in (401, 403)


def collection(world: World, role: str = "admin") -> dict[str, Any]:
    return world.client.get(f"/api/collections/{world.cid}", headers=api(world, role)).json()


def audit_actions(world: World) -> list[str]:
    log = world.client.get(f"/api/collections/{world.cid}/audit?limit=500", headers=api(world, "organiser")).json()
    return [e["action"] for e in log["items"]]


def schema_fields(t: Any = None, prefix: str = "") -> set[str]:
    """Every setting of the typed schema, nested ones dotted (a level row as ``levels.0.level``)."""
    names: set[str] = set()
    for f in mi.type_info(t or CollectionSettings).fields:
        ty = f.type
        while isinstance(ty, (mi.Metadata, mi.UnionType)):
            ty = ty.type if isinstance(ty, mi.Metadata) else next(
                a for a in ty.types if not isinstance(a, mi.NoneType))
        name = f"{prefix}{f.name}"
        if isinstance(ty, mi.StructType):
            names |= schema_fields(ty.cls, f"{name}.")
        elif isinstance(ty, mi.ListType) and isinstance(ty.item_type, mi.StructType):
            names |= schema_fields(ty.item_type.cls, f"{name}.0.")
        else:
            names.add(name)
    return names


# ------------------------------------------------------------------------------ the settings form
@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_every_setting_of_the_schema_has_a_form_control(world: World) -> None:
    """A setting added to CollectionSettings appears in the console's form (and the new
    collection's form) by itself; this fails if one has no control."""
    fields = schema_fields()
    assert {"evaluation.order", "significance.resamples", "levels.0.gain", "daily_run_quota",
            "topics_revealed"} <= fields
    for path, role in ((f"/c/{world.cid}/console/settings", "organiser"), ("/collections/new", "admin")):
        html = world.client.get(path, headers=as_role(world, role)).text
        for name in fields:
            control = "hidden_topics" if name == "evaluation.hidden_topics" else name  # the API's shorthand
            assert f'name="{control}"' in html, f"{path}: no form control for the setting {name}"
            assert re.search(rf'<label for="s-{re.escape(control.replace(".", "-"))}"', html) or \
                name.startswith("levels."), f"{path}: the control of {name} has no label"


def test_saving_an_untouched_settings_form_changes_nothing(world: World) -> None:
    c, cid = world.client, world.cid
    html = c.get(f"/c/{cid}/console/settings", headers=as_role(world, "organiser")).text
    form = _form_values(html, "settings")
    version = collection(world)["config_version"]
    preview = post(world, "organiser", f"/c/{cid}/console/settings", form)
    assert preview.status_code == 200 and "Nothing changes." in preview.text, preview.text[:2000]
    saved = post(world, "organiser", f"/c/{cid}/console/settings", {**form, "confirm": "1"})
    assert saved.status_code == 303
    assert collection(world)["config_version"] == version


def _form_values(html: str, form_id: str) -> dict[str, str]:
    """The values a browser would post from the form ``form_id`` (inputs, selects, text areas)."""
    body = html[html.index(f'id="{form_id}"'):]
    body = body[: body.index("</form>")]
    values: dict[str, str] = {}
    for tag in re.findall(r"<input[^>]*>", body):
        name = re.search(r'name="([^"]+)"', tag)
        if not name or name.group(1) == "csrf":
            continue
        value = re.search(r'value="([^"]*)"', tag)
        if 'type="checkbox"' in tag and "checked" not in tag:
            continue
        values[name.group(1)] = _unescape(value.group(1)) if value else ""
    for name, options in re.findall(r'<select[^>]*name="([^"]+)"[^>]*>(.*?)</select>', body, flags=re.DOTALL):
        chosen = re.search(r'<option value="([^"]*)" selected', options) or re.search(r'<option value="([^"]*)"',
                                                                                       options)
        values[name] = _unescape(chosen.group(1))
    for name, text in re.findall(r'<textarea[^>]*name="([^"]+)"[^>]*>(.*?)</textarea>', body, flags=re.DOTALL):
        values[name] = _unescape(text)
    return values


def _unescape(text: str) -> str:
    return (text.replace("&#34;", '"').replace("&#39;", "'").replace("&lt;", "<").replace("&gt;", ">")
            .replace("&amp;", "&"))


def test_the_preview_announces_what_saving_then_does(world: World) -> None:
    """Gains: the preview's count of re-evaluated runs is the total of the job saving makes, and
    nothing is stored by the preview; the official metric: the preview's board order is the
    board's order afterwards."""
    c, cid = world.client, world.cid
    org = api(world, "organiser")
    before = collection(world)
    audit_before = audit_actions(world)
    levels = [{"level": 1, "label": "L1", "gain": 1}, {"level": 2, "label": "L2", "gain": 3},
              {"level": 3, "label": "L3", "gain": 7}]
    r = c.post(f"/api/collections/{cid}/settings-preview", json={"levels": levels}, headers=org)
    assert r.status_code == 200, r.text
    preview = r.json()
    assert preview["reevaluated_runs"] == 3 and preview["runs"] == 3 and preview["tests_rerun"]
    assert preview["config_version"] == {"current": before["config_version"], "new": before["config_version"] + 1}
    assert [ch["setting"] for ch in preview["changes"]] == ["levels"]
    assert any("re-evaluates 3 of 3 runs" in line for line in preview["consequences"])
    assert collection(world)["config_version"] == before["config_version"]  # the preview stored nothing
    assert audit_actions(world) == audit_before
    jobs_before = c.get(f"/api/collections/{cid}/jobs", headers=org).json()["items"]
    # the same change through the portal: the preview page, then its confirmation
    html = c.get(f"/c/{cid}/console/settings", headers=as_role(world, "organiser")).text
    form = _form_values(html, "settings")
    form.update({f"levels.{i}.{k}": str(lv[k]) for i, lv in enumerate(levels) for k in ("level", "label", "gain")})
    page = post(world, "organiser", f"/c/{cid}/console/settings", form)
    assert page.status_code == 200 and 'id="consequences"' in page.text
    assert "Runs re-evaluated: <strong>3</strong> of 3" in page.text
    assert collection(world)["config_version"] == before["config_version"]
    confirm = _form_values(page.text, "confirm")
    assert confirm["confirm"] == "1" and confirm["levels.2.gain"] == "7"
    saved = post(world, "organiser", f"/c/{cid}/console/settings", confirm)
    assert saved.status_code == 303 and "saved=1" in saved.headers["location"]
    after = collection(world)
    assert after["config_version"] == before["config_version"] + 1
    assert [(lv["level"], lv["gain"]) for lv in after["levels"]] == [(1, 1.0), (2, 3.0), (3, 7.0)]
    jobs = c.get(f"/api/collections/{cid}/jobs", headers=org).json()["items"]
    assert len(jobs) == len(jobs_before) + 1 and jobs[0]["total"] == preview["reevaluated_runs"]
    assert "config.update" in audit_actions(world)

    # the official metric: the preview's order is the board's order once saved
    r = c.post(f"/api/collections/{cid}/settings-preview", json={"official_metric": "AP"}, headers=org).json()
    board = r["board_order"]
    assert board["metric_before"] == "nDCG@10" and board["metric_after"] == "AP" and board["after"] is not None
    assert r["reevaluated_runs"] == 0 and r["tests_rerun"]  # the same scores, tested again
    assert board["before"] == [row["run"] for row in c.get(f"/api/collections/{cid}/leaderboard",
                                                           headers=org).json()["rows"]]
    assert c.patch(f"/api/collections/{cid}", json={"official_metric": "AP"}, headers=org).status_code == 200
    rows = c.get(f"/api/collections/{cid}/leaderboard", headers=org).json()
    assert rows["metric"] == "AP" and [row["run"] for row in rows["rows"]] == board["after"]
    # a change the update refuses is refused by the preview alike
    bad = c.post(f"/api/collections/{cid}/settings-preview", json={"official_metric": "NoSuch@x"}, headers=org)
    assert bad.status_code == 400
    refused_page = post(world, "organiser", f"/c/{cid}/console/settings", {**form, "official_metric": "NoSuch@x"})
    assert refused_page.status_code == 400 and 'id="settings"' in refused_page.text


def test_hiding_topics_is_previewed_and_hides_their_texts(world: World) -> None:
    c, cid = world.client, world.cid
    org = api(world, "organiser")
    r = c.post(f"/api/collections/{cid}/topics", headers=org, json={"topics": [
        {"id": "0001", "title": "Cranfield aerodynamics", "description": "Boundary layers."},
        {"id": "0002", "title": "Second topic"}, "0099"]})
    assert r.status_code == 201, r.text
    assert {"0001", "0002", "0099"} <= set(r.json()["topics"])
    preview = c.post(f"/api/collections/{cid}/settings-preview", json={"hidden_topics": ["0001", "0002"]},
                     headers=org).json()
    hiding = [line for line in preview["consequences"] if line.startswith("Hiding topics 0001, 0002")]
    assert hiding and "5 visible topics" in hiding[0], preview["consequences"]  # 0003-0006 and 0099
    assert c.patch(f"/api/collections/{cid}", json={"hidden_topics": ["0001", "0002"]}, headers=org).status_code == 200

    def texts(role: str) -> dict[str, Any]:
        r = c.get(f"/api/collections/{cid}/topics", headers=api(world, role))
        assert r.status_code == 200, (role, r.text)
        return {t["id"]: t for t in r.json()["items"]}

    # a change of the evaluation settings through the form keeps the split
    form = _form_values(c.get(f"/c/{cid}/console/settings", headers=as_role(world, "organiser")).text, "settings")
    assert form["hidden_topics"].split() == ["0001", "0002"]
    r = post(world, "organiser", f"/c/{cid}/console/settings", {**form, "evaluation.depth": "10", "confirm": "1"})
    assert r.status_code == 303
    evaluation = collection(world)["evaluation"]
    assert evaluation["depth"] == 10 and evaluation["hidden_topics"] == ["0001", "0002"]

    mine = texts("organiser")
    assert mine["0001"] == {"id": "0001", "title": "Cranfield aerodynamics", "description": "Boundary layers.",
                            "hidden": True}
    theirs = texts("alpha")
    assert theirs["0001"]["title"] is None and "hidden" not in theirs["0001"]
    assert theirs["0003"]["title"] == ""
    assessed = texts("assessor")  # its topic (hidden or not: it judges it), and no other
    assert list(assessed) == ["0001"] and assessed["0001"]["title"] == "Cranfield aerodynamics"
    assert c.get(f"/api/collections/{cid}/topics", headers=api(world, "other_organiser")).status_code == 403
    assert c.get(f"/api/collections/{cid}/topics").status_code == 401
    page = c.get(f"/c/{cid}/topics/texts", headers=as_role(world, "alpha")).text
    assert "Cranfield aerodynamics" not in page and "Withheld until the hidden topics are revealed" in page
    page = c.get(f"/c/{cid}/topics/texts", headers=as_role(world, "assessor"))
    # (its row, not the bare "0003", which the page's random form token can hold by chance)
    assert page.status_code == 200 and "Cranfield aerodynamics" in page.text and 'data-topic="0003"' not in page.text
    assert 'data-topic="0001"' in page.text
    # revealing the split shows the texts
    r = post(world, "organiser", f"/c/{cid}/console/reveal", {"revealed": "1"})
    assert r.status_code == 303 and collection(world)["topics_revealed"]
    assert texts("alpha")["0001"]["title"] == "Cranfield aerodynamics"
    # the portal's topic forms: one topic with its texts, several ids
    r = post(world, "organiser", f"/c/{cid}/topics/texts", {"id": "0002", "title": "Renamed", "description": "D"})
    assert r.status_code == 303
    r = post(world, "organiser", f"/c/{cid}/topics/texts", {"ids": "0100 0101\n0102"})
    assert r.status_code == 303 and "new=3" in r.headers["location"]
    assert texts("organiser")["0002"]["title"] == "Renamed" and "0102" in texts("organiser")
    r = post(world, "organiser", f"/c/{cid}/topics/texts", {"id": "has space"})
    assert r.status_code == 400 and 'id="topic-form"' in r.text
    assert {"topics.add", "topics.texts"} <= set(audit_actions(world))


# ------------------------------------------------------------------------------ every form, every role
PAGES = {
    "/c/{cid}/console": STAFF,
    "/c/{cid}/console/settings": STAFF,
    "/c/{cid}/console/runs": STAFF,
    "/c/{cid}/console/runs/{rid}/delete": STAFF,
    "/c/{cid}/console/assessors": STAFF,
    "/c/{cid}/console/audit": STAFF,
    "/c/{cid}/topics/texts": ("alpha", "assessor", "organiser", "admin"),
    "/c/{cid}/teams": STAFF,
    "/tokens": ("admin",),
    "/collections/new": ("admin",),
}


def test_every_console_page_for_every_role(world: World) -> None:
    ids = {"cid": world.cid, "rid": world.run_ids["RUN-01"]}
    for path, allowed in PAGES.items():
        for role in ROLES:
            r = world.client.get(path.format(**ids), headers=as_role(world, role), follow_redirects=False)
            if role in allowed:
                assert r.status_code == 200, (path, role, r.status_code, r.text[:300])
            else:
                assert r.status_code == (401 if role == "anonymous" else 403), (path, role, r.status_code)
    # the console is linked exactly for those who may open it
    for role in ("alpha", "organiser", "admin"):
        board = world.client.get(f"/c/{world.cid}", headers=as_role(world, role)).text
        assert (f'href="/c/{world.cid}/console"' in board) == (role in STAFF), role
        assert ('href="/tokens"' in board) == (role == "admin"), role


def test_every_console_form_for_every_role(world: World) -> None:
    """Each form: the roles that may post it succeed and its effect shows; the others get
    401/403 and nothing changes."""
    c, cid, admin = world.client, world.cid, api(world, "admin")
    assert c.post("/api/teams", json={"name": "gamma"}, headers=admin).status_code == 201
    assessor_id = c.get(f"/api/collections/{cid}/assessors", headers=admin).json()["items"][0]["token_id"]
    rid = world.run_ids["RUN-02"]
    for role in ROLES:
        allowed = role in STAFF
        expect = (lambda r: r.status_code == 303) if allowed else (lambda r: refused(r.status_code))

        # release and withdraw the board
        r = post(world, role, f"/c/{cid}/console/release", {"released": "1"})
        assert expect(r), (role, r.status_code)
        assert collection(world)["leaderboard_released"] == allowed
        r = post(world, role, f"/c/{cid}/console/release", {"released": "0"})
        assert expect(r) and not collection(world)["leaderboard_released"]
        # re-evaluate now
        jobs = len(c.get(f"/api/collections/{cid}/jobs", headers=admin).json()["items"])
        r = post(world, role, f"/c/{cid}/console/reevaluate")
        assert expect(r), (role, r.status_code)
        after = c.get(f"/api/collections/{cid}/jobs", headers=admin).json()["items"]
        assert len(after) == jobs + (1 if allowed else 0)
        if allowed:
            assert f"job={after[0]['id']}" in r.headers["location"]
        # settings (confirmed)
        r = post(world, role, f"/c/{cid}/console/settings",
                 {**_form_values(c.get(f"/c/{cid}/console/settings", headers=as_role(world, "admin")).text,
                                 "settings"), "description": f"by {role}", "confirm": "1"})
        assert expect(r), (role, r.status_code)
        assert (collection(world)["description"] == f"by {role}") == allowed
        # topics
        r = post(world, role, f"/c/{cid}/topics/texts", {"id": f"t-{role}", "title": role})
        assert expect(r), (role, r.status_code)
        topics = {t["id"] for t in c.get(f"/api/collections/{cid}/topics", headers=admin).json()["items"]}
        assert (f"t-{role}" in topics) == allowed
        # baselines and primary runs
        for flag in ("baseline", "primary"):
            r = post(world, role, f"/c/{cid}/console/runs/{rid}", {"action": flag, "value": "1"})
            assert expect(r), (role, flag, r.status_code)
            assert c.get(f"/api/runs/{rid}", headers=admin).json()[flag] == allowed
            c.patch(f"/api/runs/{rid}/settings", json={flag: False}, headers=admin)
        # assessors
        r = post(world, role, f"/c/{cid}/console/assessors/{assessor_id}", {"topics": "0001 0002"})
        assert expect(r), (role, r.status_code)
        topics = c.get(f"/api/collections/{cid}/assessors", headers=admin).json()["items"][0]["topics"]
        assert topics == (["0001", "0002"] if allowed else ["0001"])
        c.put(f"/api/collections/{cid}/assessors/{assessor_id}", json={"topics": ["0001"]}, headers=admin)
        r = post(world, role, f"/c/{cid}/console/assessors", {"name": f"assessor-{role}", "topics": "0003"})
        assert (r.status_code == 200 and "cf_" in r.text) if allowed else refused(r.status_code), (role, r.status_code)
        names = [a["name"] for a in c.get(f"/api/collections/{cid}/assessors", headers=admin).json()["items"]]
        assert (f"assessor-{role}" in names) == allowed
        # teams: create one, make a participant token of an enrolled team
        r = post(world, role, f"/c/{cid}/teams", {"action": "create", "team": f"team-{role}"})
        assert expect(r), (role, r.status_code)
        enrolled = [t["team"] for t in c.get(f"/api/collections/{cid}/teams", headers=admin).json()["items"]]
        assert (f"team-{role}" in enrolled) == allowed
        r = post(world, role, f"/c/{cid}/teams", {"action": "token", "team": "alpha", "name": f"alpha-by-{role}"})
        assert (r.status_code == 200 and "cf_" in r.text) if allowed else refused(r.status_code), (role, r.status_code)
        listed = c.get("/api/tokens?team=alpha", headers=admin).json()["items"]
        assert any(t["name"] == f"alpha-by-{role}" for t in listed) == allowed
        # the admins' forms: tokens of any role, revocation, new collections
        only_admin = role == "admin"
        expect_admin = (lambda r: r.status_code in (200, 303)) if only_admin else (lambda r: refused(r.status_code))
        r = post(world, role, "/tokens", {"role": "organiser", "name": f"org-by-{role}", "collections": str(cid)})
        assert expect_admin(r), (role, r.status_code)
        made = [t for t in c.get("/api/tokens?role=organiser", headers=admin).json()["items"]
                if t["name"] == f"org-by-{role}"]
        assert bool(made) == only_admin and (not made or made[0]["collections"] == [cid])
        victim = c.post("/api/tokens", json={"role": "participant", "team": "gamma", "name": f"victim-{role}"},
                        headers=admin).json()
        r = post(world, role, f"/tokens/{victim['id']}/revoke", {"confirm": "1"})
        assert expect_admin(r), (role, r.status_code)
        assert (c.get("/api/collections", headers=auth(victim["token"])).status_code == 401) == only_admin
        new = _form_values(c.get("/collections/new", headers=as_role(world, "admin")).text, "new-collection")
        r = post(world, role, "/collections/new", {**new, "name": f"made-by-{role}", "visibility": "public"})
        assert expect_admin(r), (role, r.status_code)
        names = {x["name"]: x for x in c.get("/api/collections", headers=admin).json()["items"]}
        assert (f"made-by-{role}" in names) == only_admin
        if only_admin:
            assert names[f"made-by-{role}"]["visibility"] == "public"
            assert names[f"made-by-{role}"]["official_metric"] == "AP"
    # deleting a run: the confirmation page, then the post
    for role in ROLES:
        allowed = role in STAFF
        r = post(world, role, f"/c/{cid}/console/runs/{rid}/delete", {"confirm": "1"})
        if role == "organiser":
            assert r.status_code == 303 and "deleted=RUN-02" in r.headers["location"]
            assert c.get(f"/api/runs/{rid}", headers=admin).status_code == 404
            assert "run.delete" in audit_actions(world)
            break
        assert refused(r.status_code), (role, r.status_code)
        assert c.get(f"/api/runs/{rid}", headers=admin).status_code == 200
    # without confirm=1 nothing is deleted
    other = world.run_ids["RUN-03"]
    assert post(world, "admin", f"/c/{cid}/console/runs/{other}/delete").status_code == 400
    assert c.get(f"/api/runs/{other}", headers=admin).status_code == 200


def test_console_forms_need_the_form_token(world: World) -> None:
    cid = world.cid
    forms = [(f"/c/{cid}/console/release", {"released": "1"}), (f"/c/{cid}/console/reevaluate", {}),
             (f"/c/{cid}/console/settings", {"description": "csrf", "confirm": "1"}),
             (f"/c/{cid}/topics/texts", {"id": "csrf"}),
             (f"/c/{cid}/console/runs/{world.run_ids['RUN-01']}/delete", {"confirm": "1"}),
             (f"/c/{cid}/teams", {"action": "token", "team": "alpha"}),
             ("/tokens", {"role": "admin"}), ("/collections/new", {"name": "csrf"})]
    for path, data in forms:
        for token in (None, "0" * 32):
            body = {**data, **({"csrf": token} if token else {})}
            r = world.client.post(path, data=body, headers=as_role(world, "admin"), follow_redirects=False)
            assert r.status_code == 403 and "stale or from another site" in r.text, (path, r.status_code)
    assert not collection(world)["leaderboard_released"] and collection(world)["description"] != "csrf"
    assert world.client.get(f"/api/runs/{world.run_ids['RUN-01']}", headers=api(world, "admin")).status_code == 200
    assert "csrf" not in {c["name"] for c in world.client.get("/api/collections", headers=api(world, "admin"))
                          .json()["items"]}


# ------------------------------------------------------------------------------ qrels
def test_qrels_dry_run_is_the_diff_of_the_upload(world: World) -> None:
    c, cid, org = world.client, world.cid, api(world, "organiser")
    lines = world.qrels.splitlines()
    changed = [line.rsplit(" ", 1)[0] + " L3" for line in lines[:5] if not line.endswith(" L3")]
    corrected = "\n".join(changed + lines[5:-3] + ["0001 NEW-DOC L2", "0009 OTHER-DOC L1"]) + "\n"
    preview = c.post(f"/api/collections/{cid}/qrels/preview", content=corrected, headers=org)
    assert preview.status_code == 200, preview.text
    summary = preview.json()
    assert summary["from"] == 1 and not summary["large_removal"] and summary["new_topics"] == ["0009"]
    assert summary["totals"] == {"added": 2, "removed": 3, "changed": len(changed)}
    assert summary["current_judgments"] == len(lines) and summary["judgments"] == len(lines) - 3 - 5 + len(changed) + 2
    assert c.get(f"/api/collections/{cid}/qrels", headers=org).json()["current"] == 1  # nothing stored
    r = c.post(f"/api/collections/{cid}/qrels", content=corrected, headers=org)
    assert r.status_code == 201 and r.json()["version"] == 2
    diff = c.get(f"/api/collections/{cid}/qrels/diff?old=1&new=2", headers=org).json()
    assert diff["topics"] == summary["topics"] and diff["totals"] == summary["totals"]
    # invalid files are refused with their line, as uploads are; others than organisers cannot preview
    bad = c.post(f"/api/collections/{cid}/qrels/preview", content="t 0 d\n", headers=org)
    assert bad.status_code == 422 and bad.json()["line"] == 1
    for role in ("alpha", "assessor", "other_organiser", "anonymous"):
        assert refused(c.post(f"/api/collections/{cid}/qrels/preview", content=corrected,
                              headers=api(world, role)).status_code), role
    # the portal's preview button shows the same, stores nothing
    r = world.client.post(f"/c/{cid}/qrels", files={"file": ("v3.qrels", world.qrels)},
                          data={"csrf": csrf_of(world, "organiser"), "action": "preview"},
                          headers=as_role(world, "organiser"))
    assert r.status_code == 200 and 'id="qrels-preview"' in r.text and "from version 2" in r.text
    back = c.get(f"/api/collections/{cid}/qrels/diff?old=2&new=1", headers=org).json()["totals"]
    assert f"{back['added']} added, {back['removed']} removed, {back['changed']} changed judgments" in r.text
    assert c.get(f"/api/collections/{cid}/qrels", headers=org).json()["current"] == 2


def test_a_large_removal_needs_a_confirmation(world: World) -> None:
    c, cid, org = world.client, world.cid, api(world, "organiser")
    lines = world.qrels.splitlines()
    half = "\n".join(lines[: len(lines) // 2]) + "\n"
    r = c.post(f"/api/collections/{cid}/qrels?max_removal=0.2", content=half, headers=org)
    assert r.status_code == 409 and "removes" in r.json()["detail"] and "confirm" in r.json()["detail"]
    assert "0006 (-" in r.json()["detail"]  # the topics that lose the most are named
    assert c.get(f"/api/collections/{cid}/qrels", headers=org).json()["current"] == 1
    preview = c.post(f"/api/collections/{cid}/qrels/preview", content=half, headers=org).json()
    assert preview["large_removal"] and preview["removed_share"] == pytest.approx(
        (len(lines) - len(lines) // 2) / len(lines))
    # the portal: a direct upload shows the change and asks; the confirmation needs the box ticked
    r = c.post(f"/c/{cid}/qrels", files={"file": ("half.qrels", half)}, data={"csrf": csrf_of(world, "organiser")},
               headers=as_role(world, "organiser"))
    assert r.status_code == 409 and 'id="large-removal"' in r.text and 'name="confirm_removal"' in r.text
    confirm = _form_values(r.text, "confirm-qrels")
    assert confirm["source"] == "half.qrels" and confirm["staged"]
    r = post(world, "organiser", f"/c/{cid}/qrels", confirm)
    assert r.status_code == 409 and c.get(f"/api/collections/{cid}/qrels", headers=org).json()["current"] == 1
    r = post(world, "organiser", f"/c/{cid}/qrels", {**confirm, "staged": "not base64!"})
    assert r.status_code == 400
    r = post(world, "organiser", f"/c/{cid}/qrels", {**confirm, "confirm_removal": "1"})
    assert r.status_code == 303 and "uploaded=2" in r.headers["location"]
    versions = c.get(f"/api/collections/{cid}/qrels", headers=org).json()
    assert versions["current"] == 2 and versions["items"][-1]["judgments"] == len(lines) // 2
    # the API without a limit (as before: scripts replace whole files): the whole file back
    r = c.post(f"/api/collections/{cid}/qrels", content=world.qrels, headers=org)
    assert r.status_code == 201 and r.json()["version"] == 3
    # removing less than the limit's share is no large removal
    fewer = "\n".join(lines[: len(lines) - len(lines) // 5]) + "\n"
    assert c.post(f"/api/collections/{cid}/qrels?max_removal=0.2", content=fewer, headers=org).status_code == 201
    assert c.post(f"/api/collections/{cid}/qrels?max_removal=1.5", content=fewer, headers=org).status_code == 422


# ------------------------------------------------------------------------------ tokens
def test_a_new_token_is_shown_once(world: World) -> None:
    c, cid = world.client, world.cid
    r = post(world, "organiser", f"/c/{cid}/teams", {"action": "token", "team": "beta", "name": "beta-2"})
    assert r.status_code == 200 and r.headers["cache-control"] == "no-store"
    secret = re.search(r'id="new-token" value="(cf_[^"]+)"', r.text).group(1)
    assert 'data-copy="new-token"' in r.text  # the script's copy button (hidden without JavaScript)
    assert c.get(f"/api/collections/{cid}/runs", headers=auth(secret)).status_code == 200  # it works
    again = c.get(f"/c/{cid}/teams", headers=as_role(world, "organiser")).text
    assert secret not in again and 'id="new-token"' not in again
    listed = c.get("/api/tokens?team=beta", headers=api(world, "admin")).json()
    assert secret not in str(listed) and any(t["name"] == "beta-2" and secret.startswith(t["prefix"])
                                             for t in listed["items"])
    tokens_page = c.get(f"/tokens?prefix={secret[:8]}", headers=as_role(world, "admin")).text
    assert secret[:10] in tokens_page and secret not in tokens_page
    # the organiser cannot make an admin token nor a token of a team it does not enrol
    r = post(world, "organiser", f"/c/{cid}/teams", {"action": "token", "team": "gamma-none"})
    assert r.status_code == 400
    assert refused(post(world, "organiser", "/tokens", {"role": "admin"}).status_code)


def test_the_tokens_api_lists_by_prefix_team_and_role(world: World) -> None:
    c, admin = world.client, api(world, "admin")
    every = c.get("/api/tokens", headers=admin).json()
    assert every["total"] == len(every["items"]) >= 6
    assert all("token" not in t and "token_hash" not in t for t in every["items"])
    alpha = c.get("/api/tokens?team=alpha&role=participant", headers=admin).json()["items"]
    assert [t["team"] for t in alpha] == ["alpha"]
    org = c.get("/api/tokens?role=organiser", headers=admin).json()["items"]
    assert sorted(t["collections"] for t in org) == sorted([[world.cid], [world.other_cid]])
    one = alpha[0]["prefix"]
    assert [t["prefix"] for t in c.get(f"/api/tokens?prefix={one[:7]}", headers=admin).json()["items"]
            if t["prefix"] == one] == [one]
    assert c.get("/api/tokens?prefix=%25", headers=admin).json()["items"] == []  # LIKE wildcards are text
    assert c.get("/api/tokens?role=boss", headers=admin).status_code == 422
    for role in ("alpha", "assessor", "organiser", "other_organiser", "anonymous"):
        assert c.get("/api/tokens", headers=api(world, role)).status_code == (401 if role == "anonymous" else 403)
    r = c.get("/api/tokens?limit=2&offset=1", headers=admin).json()
    assert len(r["items"]) == 2 and r["items"][0]["id"] == every["items"][1]["id"]


# ------------------------------------------------------------------------------ the API per role
def test_the_console_api_per_role(world: World) -> None:
    c, cid = world.client, world.cid
    for role in ROLES:
        allowed = role in STAFF
        h = api(world, role)
        r = c.post(f"/api/collections/{cid}/settings-preview", json={"description": "x"}, headers=h)
        assert r.status_code == 200 if allowed else refused(r.status_code), (role, r.status_code)
        r = c.post(f"/api/collections/{cid}/reevaluate", json={}, headers=h)
        assert r.status_code == 202 if allowed else refused(r.status_code), (role, r.status_code)
        if allowed:
            job = c.get(f"/api/jobs/{r.json()['job']}", headers=h).json()
            assert job["total"] == r.json()["runs"] and job["kind"] == "manual"
        r = c.get(f"/api/collections/{cid}/audit", headers=h)
        assert r.status_code == 200 if allowed else refused(r.status_code), (role, r.status_code)
        r = c.post(f"/api/collections/{cid}/topics", json={"topics": [{"id": f"api-{role}", "title": "T"}]}, headers=h)
        assert r.status_code == 201 if allowed else refused(r.status_code), (role, r.status_code)
        r = c.get(f"/api/collections/{cid}/topics", headers=h)
        assert (r.status_code == 200) == (role in ("alpha", "assessor", "organiser", "admin")), (role, r.status_code)
    # re-evaluating a collection without qrels is a conflict
    r = c.post(f"/api/collections/{world.other_cid}/reevaluate", json={}, headers=api(world, "admin"))
    assert r.status_code == 409
    r = c.post(f"/api/collections/{cid}/reevaluate", json={"nope": 1}, headers=api(world, "admin"))
    assert r.status_code == 422


# ------------------------------------------------------------------------------ the audit log
def test_the_audit_log_lists_what_was_done(world: World) -> None:
    c, cid, org = world.client, world.cid, api(world, "organiser")
    post(world, "organiser", f"/c/{cid}/console/release", {"released": "1"})
    post(world, "organiser", f"/c/{cid}/console/release", {"released": "0"})
    c.patch(f"/api/collections/{cid}", json={"official_metric": "AP"}, headers=org)
    post(world, "organiser", f"/c/{cid}/topics/texts", {"id": "0050", "title": "T"})
    post(world, "organiser", f"/c/{cid}/teams", {"action": "token", "team": "alpha", "name": "a-3"})
    post(world, "organiser", f"/c/{cid}/console/runs/{world.run_ids['RUN-03']}/delete", {"confirm": "1"})
    log = c.get(f"/api/collections/{cid}/audit", headers=org).json()
    actions = [e["action"] for e in log["items"]]
    assert actions[:7] == ["run.delete", "token.create", "topics.add", "config.update", "config.official_metric",
                           "leaderboard.release", "leaderboard.release"], actions
    first = log["items"][0]
    assert first["actor"] and first["details"]["run"] == "RUN-03" and first["at"]
    assert log["items"][5]["details"] == {"released": False}
    page = c.get(f"/api/collections/{cid}/audit?offset=1&limit=2", headers=org).json()
    assert [e["id"] for e in page["items"]] == [e["id"] for e in log["items"][1:3]] and page["total"] == log["total"]
    html = c.get(f"/c/{cid}/console/audit", headers=as_role(world, "organiser")).text
    assert re.findall(r'<tr data-action="([^"]+)"', html)[:3] == ["run.delete", "token.create", "topics.add"]
    assert "qrels.upload" in html and "run.submit" in html


def test_an_evaluation_change_keeps_the_topic_split_unless_cleared(world: World) -> None:
    """``evaluation`` without ``hidden_topics`` (the API omits an empty list) keeps the split;
    the ``hidden_topics: []`` shorthand clears it."""
    c, cid, org = world.client, world.cid, api(world, "organiser")
    assert c.patch(f"/api/collections/{cid}", json={"hidden_topics": ["0001"]}, headers=org).status_code == 200
    r = c.patch(f"/api/collections/{cid}", json={"evaluation": {"depth": 100}}, headers=org)
    assert r.status_code == 200, r.text
    assert r.json()["evaluation"]["hidden_topics"] == ["0001"] and r.json()["evaluation"]["depth"] == 100
    assert r.json()["topic_split"] is True
    r = c.patch(f"/api/collections/{cid}", json={"hidden_topics": []}, headers=org)
    assert r.status_code == 200 and r.json()["topic_split"] is False
    assert r.json()["evaluation"].get("hidden_topics", []) == [] and r.json()["evaluation"]["depth"] == 100


def test_a_private_open_collection_is_previewed_as_enrolled_by_organisers(world: World) -> None:
    """Self-enrolment needs a public collection (policy.may_enrol_self): the preview says so,
    and a participant of a team not enrolled is refused with the reason."""
    c, cid, org = world.client, world.cid, api(world, "organiser")
    preview = c.post(f"/api/collections/{cid}/settings-preview", json={"visibility": "private", "enrolment": "open"},
                     headers=org).json()
    assert any(line.startswith("Warning: open enrolment applies to public collections only")
               for line in preview["consequences"]), preview["consequences"]
    assert c.patch(f"/api/collections/{cid}", json={"visibility": "private", "enrolment": "open"},
                   headers=org).status_code == 200
    admin = api(world, "admin")
    assert c.post("/api/teams", json={"name": "newcomers"}, headers=admin).status_code == 201
    token = c.post("/api/tokens", json={"role": "participant", "team": "newcomers"}, headers=admin).json()["token"]
    r = c.post(f"/api/collections/{cid}/enrolment", headers=auth(token))
    assert r.status_code == 403 and "private" in r.text, r.text


@pytest.mark.parametrize("form", ["teams", "tokens", "assessors"])
def test_a_resent_token_form_makes_no_second_token(world: World, form: str) -> None:
    """Reloading the page that shows a new token re-posts its form (the same ``once`` key): no
    second token is made, and the first one's secret is not shown again (its prefix is)."""
    c, cid = world.client, world.cid
    role, path, data, listing = {
        "teams": ("organiser", f"/c/{cid}/teams", {"action": "token", "team": "beta", "name": "reload-1"},
                  "/api/tokens?team=beta"),
        "tokens": ("admin", "/tokens", {"role": "participant", "team": "beta", "name": "reload-1"},
                   "/api/tokens?team=beta"),
        "assessors": ("organiser", f"/c/{cid}/console/assessors", {"name": "reload-1", "topics": "0001"},
                      "/api/tokens?role=assessor"),
    }[form]
    page = c.get(path, headers=as_role(world, role)).text
    once = re.search(r'name="once" value="([^"]+)"', page).group(1)

    def made() -> list[dict[str, Any]]:
        items = c.get(listing + "&limit=500", headers=api(world, "admin")).json()["items"]
        return [t for t in items if t["name"] == "reload-1"]

    first = post(world, role, path, {**data, "once": once})
    assert first.status_code == 200, first.text
    secret = re.search(r'id="new-token" value="(cf_[^"]+)"', first.text).group(1)
    assert len(made()) == 1
    again = post(world, role, path, {**data, "once": once})  # the browser's re-post on reload
    assert again.status_code == 200 and len(made()) == 1
    assert "This form was already sent" in again.text and secret not in again.text and secret[:8] in again.text
    other = post(world, role, path, {**data, "once": once, "name": "reload-1"})  # same fields: same answer
    assert "already sent" in other.text and len(made()) == 1
    changed = post(world, role, path, {**data, "once": once, "name": "reload-2"})  # the key with other fields
    assert changed.status_code == 422 and len(made()) == 1
    fresh = post(world, role, path, data)  # a form without a key (an older page): a new token, as before
    assert fresh.status_code == 200 and len(made()) == 2


def test_two_token_forms_of_one_page_each_make_their_token(world: World) -> None:
    """The teams page has a token form per team: each has a key of its own, so using one and
    then another (e.g. after going back to the page) makes both tokens."""
    c, cid = world.client, world.cid
    page = c.get(f"/c/{cid}/teams", headers=as_role(world, "organiser")).text
    keys = dict(re.findall(r'name="once" value="([^"]+)"><input type="hidden" name="team" value="([^"]+)"', page))
    by_team = {team: key for key, team in keys.items()}
    assert {"alpha", "beta"} <= set(by_team) and by_team["alpha"] != by_team["beta"]
    for team in ("alpha", "beta"):
        r = post(world, "organiser", f"/c/{cid}/teams",
                 {"action": "token", "team": team, "name": "same-page", "once": by_team[team]})
        assert r.status_code == 200 and 'id="new-token"' in r.text, (team, r.status_code)
    items = c.get("/api/tokens?limit=500", headers=api(world, "admin")).json()["items"]
    assert sorted(t["team"] for t in items if t["name"] == "same-page") == ["alpha", "beta"]
