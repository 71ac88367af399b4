"""No reproducibility or longitudinal read shows a figure of a run that the run's own board would
not show the caller (issue 34, item 4).

The state, built once for the module on SQLite (a question of rules, answered alike on both
databases): "snap1", private, invite-only, with an unrevealed topic split (topics 013-016
hidden), teams t1 and t3 enrolled, t1's pair of runs (the original pair O2); "snap2", private,
teams t0, t1 and t2 enrolled, t1's run (the original O1) reproduced by t0's run, and O2
reproduced by t2's pair (reproducibility on another collection: the longitudinal view follows
t2's runs back to snap1). Topic ids are the same in both collections.

The oracle is each run's own collection, asked as the caller: ``GET /api/runs/{id}/scores``
(which topics' scores the caller may see) and the collection's leaderboard (the mean it shows
the caller: over the visible topics under the split). Every reproducibility read of every role
(board JSON, CSV and LaTeX, per-topic values, longitudinal view, their portal pages) is checked
against it in four states: both boards unreleased; snap2 released; snap1 released too (its
split still unrevealed); both public. The three probes of the issue each have a test of their
own (they failed before the fix).
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from service.config import settings
from service.evaluation.permissions import access
from service.portal.forms import COOKIE
from tests.integration.conftest import _sqlite_backend, auth, run_inline
from tests.support.collections import generate

SQLITE_ONLY_BUT: set[str] = set()  # a question of rules: SQLite only

TOPICS = 16
HIDDEN = ["013", "014", "015", "016"]
METRIC = "AP"
TOL = 1e-12
ROLES = ("admin", "organiser", "organiser_snap2", "organiser_snap1", "assessor", "t0", "t1", "t2", "t3",
         "anonymous")
#: the states of the two collections: (snap2 released, snap1 released, both public)
STATES = {"unreleased": (False, False, False), "snap2 released": (True, False, False),
          "both released": (True, True, False), "public": (True, True, True)}


@dataclass
class Site:
    client: Any
    tokens: dict[str, str]
    cookies: dict[str, str]
    snap1: int
    snap2: int
    runs: dict[str, int]  # tag -> id
    reps: dict[str, int] = field(default_factory=dict)  # "single" (t0's of O1), "pair" (t2's of O2) -> id

    def api(self, role: str) -> dict[str, str]:
        return auth(self.tokens.get(role))

    def portal(self, role: str) -> dict[str, str]:
        secret = self.cookies.get(role)
        return {"Cookie": f"{COOKIE}={secret}"} if secret else {}

    def get(self, role: str, path: str) -> Any:
        return self.client.get(path, headers=self.portal(role) if path.startswith("/c/") else self.api(role),
                               follow_redirects=False)


def _texts(seed: int, tags: list[str]) -> tuple[str, dict[str, str]]:
    """Qrels and runs of TOPICS topics (ids 001...), every topic judged with a relevant document
    and retrieved by every run (so that every mean is over the same topics everywhere)."""
    g = generate(np.random.default_rng(seed), topics=TOPICS, runs=len(tags), missing_rate=0.0,
                 no_relevant_topics=0)
    qrels = "".join(f"{t} 0 {d} {max(level, 0)}\n" for t, docs in g.judgments.items() for d, level in docs.items())
    runs = {}
    for tag, generated in zip(tags, g.rankings):
        text = g.run_text(generated)
        runs[tag] = "\n".join(" ".join([*line.split()[:5], tag]) for line in text.splitlines()) + "\n"
    return qrels, runs


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    from litestar.testing import TestClient

    from service.api.app import create_app
    from service.store.db import engine_for, transaction
    from service.store.migrate import upgrade

    saved = dict(os.environ)
    be = _sqlite_backend(Path(tmp_path_factory.mktemp("repro-secrecy")))
    try:
        upgrade(be.database_url)
        be.activate()
        factory = be.factory()
        with transaction(factory) as s:
            admin, _ = access.create_token(s, "admin", name="root")
        app = create_app(be.database_url, lambda followups: run_inline(factory, followups))
        with TestClient(app=app) as c:
            yield _build(c, factory, admin)
    finally:
        engine_for(be.database_url).dispose()
        os.environ.clear()
        os.environ.update(saved)
        settings.cache_clear()


def _ok(r: Any, status: int = 201) -> Any:
    assert r.status_code == status, r.text
    return r.json()


def _build(c: Any, factory: Any, admin: str) -> Site:
    a = auth(admin)
    for team in ("t0", "t1", "t2", "t3"):
        _ok(c.post("/api/teams", json={"name": team}, headers=a))
    spec = {"official_metric": METRIC, "metrics": [METRIC, "P@10"]}
    snap1 = _ok(c.post("/api/collections", json={"name": "snap1", **spec}, headers=a))["id"]
    snap2 = _ok(c.post("/api/collections", json={"name": "snap2", **spec}, headers=a))["id"]
    _ok(c.patch(f"/api/collections/{snap1}", json={"visibility": "private", "hidden_topics": HIDDEN}, headers=a), 200)
    _ok(c.patch(f"/api/collections/{snap2}", json={"visibility": "private"}, headers=a), 200)
    for cid, teams in ((snap1, ("t1", "t3")), (snap2, ("t0", "t1", "t2"))):
        for team in teams:
            _ok(c.post(f"/api/collections/{cid}/teams", json={"team": team}, headers=a))
    tokens = {"admin": admin}
    for role, colls in (("organiser", [snap1, snap2]), ("organiser_snap2", [snap2]), ("organiser_snap1", [snap1])):
        tokens[role] = _ok(c.post("/api/tokens", json={"role": "organiser", "collections": colls}, headers=a))["token"]
    for team in ("t0", "t1", "t2", "t3"):
        tokens[team] = _ok(c.post("/api/tokens", json={"role": "participant", "team": team}, headers=a))["token"]
    org = auth(tokens["organiser"])
    runs: dict[str, int] = {}
    for cid, seed, owners in ((snap1, 11, {"t1-old-b": "t1", "t1-old-a": "t1"}),
                              (snap2, 12, {"t1-orig": "t1", "t0-rep": "t0", "t2-b": "t2", "t2-a": "t2"})):
        qrels, texts = _texts(seed, list(owners))
        _ok(c.post(f"/api/collections/{cid}/qrels", content=qrels, headers=org))
        for tag, text in texts.items():
            runs[tag] = _ok(c.post(f"/api/collections/{cid}/runs", content=text, headers=auth(tokens[owners[tag]])))["id"]
    tokens["assessor"] = _ok(c.post("/api/tokens", json={"role": "assessor", "collections": [snap2],
                                                         "topics": ["001"]}, headers=a))["token"]
    _ok(c.post(f"/api/collections/{snap2}/reproduction-originals", json={"run": runs["t1-orig"]}, headers=org))
    _ok(c.post(f"/api/collections/{snap2}/reproduction-originals",
               json={"run": runs["t1-old-b"], "advanced_run": runs["t1-old-a"]}, headers=org))
    reps = {"single": _ok(c.post(f"/api/runs/{runs['t0-rep']}/reproduction", json={"original_run": runs["t1-orig"]},
                                 headers=auth(tokens["t0"])))["id"],
            "pair": _ok(c.post(f"/api/runs/{runs['t2-b']}/reproduction",
                               json={"original_run": runs["t1-old-b"], "advanced_run": runs["t2-a"],
                                     "original_advanced_run": runs["t1-old-a"]}, headers=auth(tokens["t2"])))["id"]}
    cookies = {}
    for role, token in tokens.items():
        with factory() as s:
            me = access.principal_for(s, f"Bearer {token}")
            cookies[role] = access.open_session(s, me.token_id, settings().web.session_cookie_lifetime)
            s.commit()
    site = Site(c, tokens, cookies, snap1, snap2, runs, reps)
    board = _ok(site.get("organiser", f"/api/collections/{snap2}/reproducibility?metric={METRIC}"), 200)
    assert not board["stale"] and len(board["rows"]) == 2
    assert all(r["baseline"]["RMSE" if r["same_collection"] else "p_value"] is not None for r in board["rows"])
    return site


def _state(site: Site, name: str) -> None:
    snap2_released, snap1_released, public = STATES[name]
    org = site.api("organiser")
    for cid, released in ((site.snap2, snap2_released), (site.snap1, snap1_released)):
        _ok(site.client.patch(f"/api/collections/{cid}", json={
            "leaderboard_released": released, "visibility": "public" if public else "private"}, headers=org), 200)


# ------------------------------------------------------------------------------ the oracle
@dataclass
class Seen:
    """What the run's own collection shows the caller of it: its per-topic scores (None: not
    shown) and the mean its board shows (over the visible topics under the split)."""

    per_topic: dict[str, float | None] | None
    mean: float | None


def _oracle(site: Site, role: str) -> dict[int, Seen]:
    """Run id -> what its own collection shows ``role`` of it: its run page's per-topic scores
    and its leaderboard's mean (tags are unique across the two collections)."""
    means: dict[str, float] = {}
    for cid in (site.snap1, site.snap2):
        lb = site.get(role, f"/api/collections/{cid}/leaderboard?metric={METRIC}")
        means.update({r["run"]: r["mean"] for r in lb.json()["rows"]} if lb.status_code == 200 else {})
    out = {}
    for tag, rid in site.runs.items():
        r = site.get(role, f"/api/runs/{rid}/scores?metric={METRIC}")
        out[rid] = Seen(r.json()["runs"][tag]["per_topic"], means.get(tag)) if r.status_code == 200 \
            else Seen(None, None)
    return out


def _close(ours: float | None, theirs: float | None, what: str) -> None:
    assert ours is not None and theirs is not None and abs(ours - theirs) <= TOL * max(1.0, abs(theirs)), (
        what, ours, theirs)


def _runs_of(row: dict[str, Any]) -> tuple[list[int], list[int]]:
    orig = [row["original"]["run"]["id"]] + ([row["original"]["advanced_run"]["id"]]
                                             if row["kind"] == "pair" else [])
    rep = [row["run"]["id"]] + ([row["advanced_run"]["id"]] if row["kind"] == "pair" else [])
    return orig, rep


# ------------------------------------------------------------------------------ the checks
def _check_board_row(row: dict[str, Any], seen: dict[int, Seen], what: str) -> None:
    """Each figure of the row: shown exactly as the runs' own boards show it, or null with a reason."""
    orig, rep = _runs_of(row)
    for i, part in enumerate(("baseline", "advanced")[:len(orig)]):
        o, r, fig = seen[orig[i]], seen[rep[i]], row[part] or {}
        for run_seen, key in ((o, "mean_original"), (r, "mean_reproduction")):
            if run_seen.per_topic is None:
                assert fig.get(key) is None, (what, part, key, "a mean the run's own board does not show")
            else:
                _close(fig.get(key), run_seen.mean, f"{what} {part} {key} (the run's own board's mean)")
        if o.per_topic is None or r.per_topic is None:
            for key in ("RMSE", "nRMSE", "p_value", "delta", "relative_delta"):
                assert fig.get(key) is None, (what, part, key, "a figure of a run the caller may not see")
            assert ((row.get("order") or {}).get(part) or {}).get("KTU") is None, (what, part, "KTU")
            assert row.get("withheld") and row["verdict"].startswith("withheld: "), (what, row["verdict"])
        else:
            assert fig.get("p_value") is not None, (what, part, "p withheld though both runs are seen")
    if row["kind"] == "pair" and any(seen[x].per_topic is None for x in (*orig, *rep)):
        assert row["effect"] is None, (what, "ER/DeltaRI of runs the caller may not see")
    if all(seen[x].per_topic is not None for x in (*orig, *rep)):
        assert not row.get("withheld"), (what, row.get("withheld"))


def _check_per_topic(doc: dict[str, Any], row: dict[str, Any], seen: dict[int, Seen], what: str) -> None:
    """Every value of a run: on a topic its own run page shows the caller, and equal to it."""
    orig, rep = _runs_of(row)
    for p in doc["parts"]:
        if p["metric"] != METRIC:
            continue
        if p["part"] == "effect":
            deps = {"improvement_original": orig, "improvement_reproduction": rep}
        else:
            i = ("baseline", "advanced").index(p["part"])
            deps = {"original": [orig[i]], "reproduction": [rep[i]]}
        for name, runs in deps.items():
            for t in p["topics"]:
                v = t["values"].get(name)
                if v is None:
                    continue
                for rid in runs:
                    per = seen[rid].per_topic
                    assert per is not None and t["topic"] in per, (what, p["part"], name, t["topic"], "unseen")
                    if len(runs) == 1:
                        assert v == per[t["topic"]], (what, p["part"], name, t["topic"])
            if any(seen[rid].per_topic is None for rid in runs):
                assert name in p.get("withheld", {}), (what, p["part"], name, "withheld without saying so")


def _check_longitudinal(doc: dict[str, Any], seen: dict[int, Seen], what: str) -> None:
    for system in doc["systems"]:
        for point in system["points"]:
            s = seen[point["id"]]
            if s.per_topic is None:
                assert point["mean"] is None and point.get("withheld"), (what, point["tag"], point["mean"])
            else:
                _close(point["mean"], s.mean, f"{what} longitudinal {point['tag']}")
        points = [p["id"] for p in system["points"]]
        for k, step in enumerate(system["steps"]):
            if any(seen[x].per_topic is None for x in points[k:k + 2]):
                assert step["delta"] is None and step["p_value"] is None and step["ER"] is None, (what, step)
                assert step.get("withheld"), (what, step)


def _float(cell: str) -> float | None:
    return float(cell) if cell else None


def _check_everything(site: Site, role: str, state: str) -> None:
    """Every reproducibility read of ``role`` against the oracle (API JSON, CSV, LaTeX, per topic,
    longitudinal; the portal's pages and CSV)."""
    seen = _oracle(site, role)
    base = f"/api/collections/{site.snap2}"
    board_r = site.get(role, f"{base}/reproducibility?metric={METRIC}")
    readers = board_r.status_code == 200
    for path in (f"{base}/reproducibility?metric={METRIC}&format=csv",
                 f"{base}/reproducibility?metric={METRIC}&format=latex", f"{base}/longitudinal?metric={METRIC}",
                 *(f"{base}/reproducibility/{x}?metric={METRIC}" for x in site.reps.values())):
        r = site.get(role, path)
        if not readers:
            assert r.status_code in (401, 403), (role, state, path, r.status_code)
    for path in (f"/c/{site.snap2}/reproducibility?metric={METRIC}", f"/c/{site.snap2}/reproducibility.csv",
                 f"/c/{site.snap2}/reproducibility.tex", f"/c/{site.snap2}/reproducibility/longitudinal?metric={METRIC}"):
        r = site.get(role, path)
        assert (r.status_code == 200) == readers, (role, state, path, r.status_code)
    if not readers:
        return
    what = f"{role} ({state})"
    board = board_r.json()
    table = list(csv.DictReader(io.StringIO(site.get(role, f"{base}/reproducibility?metric={METRIC}&format=csv")
                                            .text)))
    assert site.get(role, f"/c/{site.snap2}/reproducibility.csv?metric={METRIC}").text == \
        site.get(role, f"{base}/reproducibility?metric={METRIC}&format=csv").text
    assert site.get(role, f"/c/{site.snap2}/reproducibility.tex?metric={METRIC}").text == \
        site.get(role, f"{base}/reproducibility?metric={METRIC}&format=latex").text
    page = site.get(role, f"/c/{site.snap2}/reproducibility?metric={METRIC}").text
    for row in board["rows"]:
        _check_board_row(row, seen, what)
        line = next(x for x in table if x["reproduction"] == str(row["id"]))
        part = "advanced" if row["kind"] == "pair" else "baseline"
        for key, col in (("mean_original", "mean_original"), ("mean_reproduction", "mean_reproduction"),
                         ("RMSE", "RMSE"), ("p_value", "p")):
            assert _float(line[f"{col}_{part}"]) == row[part][key], (what, "CSV", key)
        assert line.get("withheld", "") == (row.get("withheld") or "") and line["verdict"] == row["verdict"]
        # a pair on two rows, its baseline's and its advanced run's (issue 37, item 8)
        parts = ["baseline", "advanced"] if row["kind"] == "pair" else ["run"]
        assert all(f'<tr data-reproduction="{row["id"]}" data-part="{p}">' in page for p in parts), (what, row["id"])
        doc = _ok(site.get(role, f"{base}/reproducibility/{row['id']}?metric={METRIC}"), 200)
        _check_per_topic(doc, row, seen, what)
        portal = site.get(role, f"/c/{site.snap2}/reproducibility/{row['id']}?metric={METRIC}").text
        for p in doc["parts"]:
            for name in p.get("withheld", {}):
                assert f'class="withheld" data-row="{name}"' in portal, (what, "portal per topic", name)
    lon = _ok(site.get(role, f"{base}/longitudinal?metric={METRIC}"), 200)
    _check_longitudinal(lon, seen, what)
    lon_page = site.get(role, f"/c/{site.snap2}/reproducibility/longitudinal?metric={METRIC}").text
    for system in lon["systems"]:
        for point in system["points"]:
            if point.get("withheld"):
                assert "Withheld: " + point["withheld"].replace("'", "&#39;") in lon_page, (what, point["tag"])


@pytest.mark.parametrize("state", list(STATES))
def test_every_figure_follows_its_runs_board_for_every_role(site: Site, state: str) -> None:
    """The role matrix: every role's every reproducibility read in each state of the boards."""
    _state(site, state)
    for role in ROLES:
        _check_everything(site, role, state)
    # the oracle is not vacuous: the organisers of both see everything, a team its own runs
    assert all(s.per_topic is not None for s in _oracle(site, "organiser").values())
    t0 = _oracle(site, "t0")
    assert t0[site.runs["t0-rep"]].per_topic is not None
    assert (t0[site.runs["t1-orig"]].per_topic is not None) == STATES[state][0]
    t2 = _oracle(site, "t2")
    assert (t2[site.runs["t1-old-b"]].per_topic is not None) == STATES[state][2]  # snap1 is private until public
    if state == "public":  # a signed-out reader: snap1's original pair on its visible topics
        pair = next(r for r in _ok(site.get("anonymous", f"/api/collections/{site.snap2}/reproducibility"
                                                         f"?metric={METRIC}"), 200)["rows"] if r["kind"] == "pair")
        assert pair["topics"].startswith("visible only") and pair["effect"] is not None and not pair["withheld"]


# ------------------------------------------------------------------------------ the three probes
def test_a_team_reads_no_other_teams_scores_before_the_release(site: Site) -> None:
    """Probe 1: before the release t0 reads its own reproduction of t1's run, but none of t1's
    scores (which /api/runs/{id}/scores refuses it) for any metric."""
    _state(site, "unreleased")
    o1 = site.runs["t1-orig"]
    assert site.get("t0", f"/api/runs/{o1}/scores?metric={METRIC}").status_code == 403
    org = _ok(site.get("organiser", f"/api/collections/{site.snap2}/reproducibility/{site.reps['single']}"
                                    f"?metric={METRIC}"), 200)
    assert any(t["values"]["original"] is not None for p in org["parts"] if p["metric"] for t in p["topics"])
    for metric in (METRIC, "P@10"):
        doc = _ok(site.get("t0", f"/api/collections/{site.snap2}/reproducibility/{site.reps['single']}"
                                 f"?metric={metric}"), 200)
        for p in doc["parts"]:
            rows = ["original"] if p["metric"] else ["KTU", "RBO"]
            assert all(t["values"].get(name) is None for t in p["topics"] for name in rows), (metric, p["part"])
            assert set(rows) <= set(p["withheld"]) and "t1-orig" in p["withheld"][rows[0]]
        mine = [t["values"]["reproduction"] for p in doc["parts"] if p["metric"] for t in p["topics"]]
        assert mine and any(v is not None for v in mine)  # its own run's scores it reads
        row = _ok(site.get("t0", f"/api/collections/{site.snap2}/reproducibility?metric={metric}"), 200)["rows"][0]
        assert row["baseline"]["mean_original"] is None and row["baseline"]["RMSE"] is None
        assert row["baseline"]["mean_reproduction"] is not None and row["verdict"].startswith("withheld: ")


def test_an_original_of_a_private_collection_shows_nothing_to_teams_not_enrolled_there(site: Site) -> None:
    """Probe 2: t2 is not enrolled in snap1, whose runs are the original pair O2: none of their
    scores reaches t2, on the hidden topics (013-016) or any other."""
    _state(site, "unreleased")
    assert site.get("t2", f"/api/runs/{site.runs['t1-old-b']}/scores").status_code == 403
    doc = _ok(site.get("t2", f"/api/collections/{site.snap2}/reproducibility/{site.reps['pair']}"
                             f"?metric={METRIC}"), 200)
    for p in doc["parts"]:
        name = "improvement_original" if p["part"] == "effect" else "original"
        assert all(t["values"].get(name) is None for t in p["topics"]), p["part"]
        assert name in p["withheld"] and "snap1" in p["withheld"][name]
    row = next(r for r in _ok(site.get("t2", f"/api/collections/{site.snap2}/reproducibility?metric={METRIC}"),
                              200)["rows"] if r["id"] == site.reps["pair"])
    assert row["effect"] is None and row["advanced"]["mean_original"] is None and row["withheld"]
    # once snap1's board is released (its split unrevealed), a reader of snap1 sees O2 on its
    # visible topics only; t2 (not enrolled there, snap1 private) still nothing
    _state(site, "both released")
    assert _ok(site.get("t2", f"/api/collections/{site.snap2}/reproducibility/{site.reps['pair']}"
                              f"?metric={METRIC}"), 200)["parts"][0]["withheld"]
    t1 = _ok(site.get("t1", f"/api/collections/{site.snap2}/reproducibility/{site.reps['pair']}"
                            f"?metric={METRIC}"), 200)
    shown = {t["topic"] for p in t1["parts"] if p["part"] != "effect" for t in p["topics"]
             if t["values"].get("original") is not None}
    assert shown and not shown & set(HIDDEN)
    assert all(p["left_out"] and "snap1" in p["left_out"] for p in t1["parts"] if p["metric"])


def test_no_mean_over_hidden_topics_after_the_release(site: Site) -> None:
    """Probe 3: after snap2's release, O2's mean over all 16 topics (its hidden ones included)
    shows on neither the board nor the longitudinal view to anyone but snap1's organisers; once
    snap1 is released too its readers get the mean over the visible topics its board shows."""
    _state(site, "snap2 released")
    lon_org = _ok(site.get("organiser", f"/api/collections/{site.snap2}/longitudinal?metric={METRIC}"), 200)
    every = {p["id"]: p["mean"] for s in lon_org["systems"] for p in s["points"]}
    o2 = site.runs["t1-old-b"]
    row_org = next(r for r in _ok(site.get("organiser", f"/api/collections/{site.snap2}/reproducibility"
                                                        f"?metric={METRIC}"), 200)["rows"] if r["kind"] == "pair")
    assert every[o2] is not None and row_org["baseline"]["mean_original"] is not None
    for role in ("t0", "t2", "organiser_snap2"):
        row = next(r for r in _ok(site.get(role, f"/api/collections/{site.snap2}/reproducibility?metric={METRIC}"),
                                  200)["rows"] if r["kind"] == "pair")
        assert row["baseline"]["mean_original"] is None and row["advanced"]["mean_original"] is None, role
        lon = _ok(site.get(role, f"/api/collections/{site.snap2}/longitudinal?metric={METRIC}"), 200)
        means = {p["id"]: p["mean"] for s in lon["systems"] for p in s["points"]}
        assert means[o2] is None, role
        text = site.get(role, f"/c/{site.snap2}/reproducibility/longitudinal?metric={METRIC}").text
        assert f"{every[o2]:.4f}" not in text, role
    _state(site, "both released")
    lb = _ok(site.get("t1", f"/api/collections/{site.snap1}/leaderboard?metric={METRIC}"), 200)
    assert lb["topics"].startswith("visible only")
    visible = next(r["mean"] for r in lb["rows"] if r["run"] == "t1-old-b")
    assert not math.isclose(visible, every[o2])
    row = next(r for r in _ok(site.get("t1", f"/api/collections/{site.snap2}/reproducibility?metric={METRIC}"),
                              200)["rows"] if r["kind"] == "pair")
    _close(row["baseline"]["mean_original"], visible, "the visible topics' mean")
    assert row["topics"].startswith("visible only") and row["effect"] is not None
    lon = _ok(site.get("t1", f"/api/collections/{site.snap2}/longitudinal?metric={METRIC}"), 200)
    _close(next(p["mean"] for s in lon["systems"] for p in s["points"] if p["id"] == o2), visible,
           "the longitudinal view's mean")
    tex = site.get("t1", f"/api/collections/{site.snap2}/reproducibility?metric={METRIC}&format=latex").text
    # (a pair's line shows its advanced run's means: the original's over the visible topics)
    assert f"({row_org['advanced']['mean_original']:.4f})" not in tex
    assert f"({row['advanced']['mean_original']:.4f})" in tex
    assert re.search(r"\* & ", tex) and "visible topics" in tex
