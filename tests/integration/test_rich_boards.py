"""Richer boards and analyses: every metric side by side, board filters by run metadata, the
downloads (trec_eval -q scores, the run x topic matrix, snapshots), the topic analysis and the
run page's fixes, with what each role may see of them before and after the release.

The world (conftest.py): a private, unreleased collection "task" (nDCG@10 official, AP) in which
team alpha has RUN-01 and RUN-02 and team beta RUN-03. Figures are checked against the stored
per-topic scores the API serves, recomputed independently with numpy.
"""

from __future__ import annotations

import csv
import io
import re
from typing import Any

import numpy as np
import pytest

from service.store.models import Run
from tests.integration.conftest import World, auth
from tests.integration.test_portal import as_role

# Run on PostgreSQL too; the module's other tests run on SQLite only (conftest.py):
# the stored scores' order statistics in SQL; pages, files and roles on SQLite.
SQLITE_ONLY_BUT = {"test_topic_analysis_figures_are_the_stored_scores_order_statistics"}

METRICS = ["nDCG@10", "AP", "MSnDCG@10", "P@5", "NumRet"]


def api(world: World, role: str, path: str, **params: Any) -> Any:
    r = world.client.get(path, params=params, headers=auth(world.tokens.get(role)))
    assert r.status_code == 200, (path, role, r.status_code, r.text[:300])
    return r.json() if r.headers["content-type"].startswith("application/json") else r.text


def patch_collection(world: World, **body: Any) -> None:
    r = world.client.patch(f"/api/collections/{world.cid}", json=body, headers=auth(world.tokens["admin"]))
    assert r.status_code == 200, r.text


def describe(world: World, tag: str, **body: Any) -> None:
    r = world.client.patch(f"/api/runs/{world.run_ids[tag]}/settings", json=body, headers=auth(world.tokens["admin"]))
    assert r.status_code == 200, r.text


def per_topic(world: World, role: str, tag: str, metric: str) -> dict[str, float | None]:
    doc = api(world, role, f"/api/runs/{world.run_ids[tag]}/scores", metric=metric)
    return doc["runs"][tag]["per_topic"]


def parse_trec(text: str, tag: str | None = None) -> list[tuple[str, str, float]]:
    """The measure lines of a trec layout; its first line names the run (``runid<TAB>all<TAB>TAG``)."""
    first, *rest = text.splitlines()
    assert first.startswith("runid\tall\t") and (tag is None or first == f"runid\tall\t{tag}"), first
    out = []
    for line in rest:
        measure, topic, value = line.split("\t")
        assert re.fullmatch(r"-?\d+\.\d{4}", value), line
        out.append((measure, topic, float(value)))
    return out


def table_rows(html: str, table_id: str, attribute: str = "data-run") -> list[str]:
    body = html[html.index(f'id="{table_id}"'):]
    body = body[: body.index("</table>")]
    return re.findall(rf'<tr {attribute}="([^"]+)"', body)


# ---------------------------------------------------------------------------- every metric
def test_every_metric_side_by_side_agrees_with_the_single_metric_boards(world: World) -> None:
    patch_collection(world, metrics=METRICS)
    for role in ("organiser", "alpha", "beta"):
        doc = api(world, role, f"/api/collections/{world.cid}/leaderboard/metrics")
        assert [m["metric"] for m in doc["metrics"]] == METRICS and doc["metrics"][0]["official"]
        assert doc["sort"] == "nDCG@10"
        for metric in METRICS:
            board = api(world, role, f"/api/collections/{world.cid}/leaderboard", metric=metric)
            single = {r["run"]: (r["mean"], r["rank"]) for r in board["rows"]}
            assert {r["run"]: (r["means"][metric], r["ranks"][metric]) for r in doc["rows"]} == single, (role, metric)
            assert doc["ranked_among"] == board["ranked_among"]
        # sorted by any column: by a metric as that metric's board orders its runs, by run or team by name
        for metric in METRICS:
            by = api(world, role, f"/api/collections/{world.cid}/leaderboard/metrics", sort=metric)
            board = api(world, role, f"/api/collections/{world.cid}/leaderboard", metric=metric)
            assert [r["run"] for r in by["rows"]] == [r["run"] for r in board["rows"]]
            assert [r["rank"] for r in by["rows"]] == [r["rank"] for r in board["rows"]]
        by_run = api(world, role, f"/api/collections/{world.cid}/leaderboard/metrics", sort="run")
        assert [r["run"] for r in by_run["rows"]] == sorted(r["run"] for r in doc["rows"])
    teams = {r["team"] for r in api(world, "alpha", f"/api/collections/{world.cid}/leaderboard/metrics")["rows"]}
    assert teams == {"alpha"}  # before the release: the own team's rows, as on the board
    # the columns say which nDCG, the direction and the range
    columns = {m["metric"]: m for m in doc["metrics"]}
    ndcg = columns["nDCG@10"]["description"]
    assert "Järvelin & Kekäläinen" in ndcg and "rank 10" in ndcg
    assert "trec_eval ndcg_cut" in columns["MSnDCG@10"]["description"]
    assert columns["AP"]["direction"] == "higher" and columns["NumRet"]["direction"] == "none"
    assert columns["AP"]["bounds"] == {"low": 0.0, "high": 1.0} and columns["NumRet"]["bounds"]["high"] is None
    # CSV: the same means, official metric first
    text = api(world, "organiser", f"/api/collections/{world.cid}/leaderboard/metrics", format="csv", sort="AP")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert list(rows[0])[-len(METRICS):] == METRICS
    by_ap = api(world, "organiser", f"/api/collections/{world.cid}/leaderboard/metrics", sort="AP")
    assert [(r["run"], float(r["AP"])) for r in rows] == [(r["run"], r["means"]["AP"]) for r in by_ap["rows"]]
    # refusals: a metric the collection does not have, an unknown sort
    for bad in ("RR", "nonsense"):
        r = world.client.get(f"/api/collections/{world.cid}/leaderboard/metrics", params={"sort": bad},
                             headers=auth(world.tokens["organiser"]))
        assert r.status_code == 400, r.text
    # the portal's page: header links sort on the server, the definitions are on the page
    page = world.client.get(f"/c/{world.cid}/metrics?sort=AP", headers=as_role(world, "organiser")).text
    assert table_rows(page, "metrics-board") == [r["run"] for r in by_ap["rows"]]
    assert 'aria-sort="descending"' in page and "data-sortable" in page and 'id="metric-notes"' in page
    assert "Järvelin &amp; Kekäläinen" in page and 'href="?sort=MSnDCG%4010"' in page
    assert table_rows(world.client.get(f"/c/{world.cid}/metrics?sort=team", headers=as_role(world, "beta")).text,
                      "metrics-board") == ["RUN-03"]
    csv_page = world.client.get(f"/c/{world.cid}/metrics.csv?sort=AP", headers=as_role(world, "organiser"))
    assert csv_page.text == text and "attachment" in csv_page.headers["content-disposition"]
    assert world.client.get(f"/c/{world.cid}/metrics?sort=RR", headers=as_role(world, "organiser")).status_code == 400


# ---------------------------------------------------------------------------- filters
def test_board_filters_by_run_metadata_rank_among_the_filtered_runs(world: World) -> None:
    describe(world, "RUN-01", run_type="manual", uses_training_data=True, uses_external_resources=False)
    describe(world, "RUN-02", run_type="automatic", uses_training_data=False)
    describe(world, "RUN-03", run_type="automatic")
    path = f"/api/collections/{world.cid}/leaderboard"
    full = api(world, "organiser", path)
    assert full["ranked_among"] == "all" and full["filters"]["run_type"] is None
    meta = {r["run"]: (r["run_type"], r["uses_training_data"], r["uses_external_resources"]) for r in full["rows"]}
    assert meta == {"RUN-01": ("manual", True, False), "RUN-02": ("automatic", False, None),
                    "RUN-03": ("automatic", None, None)}

    def shown(role: str, **filters: str) -> list[tuple[str, int]]:
        doc = api(world, role, path, **filters)
        assert doc["ranked_among"] == ("team" if role in ("alpha", "beta") else "filtered")
        return [(r["run"], r["rank"]) for r in doc["rows"]]

    order = [r["run"] for r in full["rows"]]
    automatic = [t for t in order if t != "RUN-01"]
    assert shown("organiser", run_type="automatic") == [(t, i + 1) for i, t in enumerate(automatic)]
    assert shown("organiser", run_type="manual") == [("RUN-01", 1)]
    assert shown("organiser", training_data="no") == [("RUN-02", 1)]
    assert shown("organiser", training_data="unstated") == [("RUN-03", 1)]
    assert shown("organiser", external_resources="unstated") == [(t, i + 1) for i, t in enumerate(automatic)]
    assert shown("organiser", run_type="interactive") == []
    assert shown("alpha", run_type="automatic") == [("RUN-02", 1)]  # the own team's, before the release
    # the board cache keeps each filter's board apart
    assert [r["run"] for r in api(world, "organiser", path)["rows"]] == order
    # the multi-metric board filters alike
    doc = api(world, "organiser", f"{path}/metrics", run_type="automatic")
    assert [r["run"] for r in doc["rows"]] == automatic and doc["ranked_among"] == "filtered"
    for bad in ({"run_type": "robotic"}, {"training_data": "maybe"}):
        assert world.client.get(path, params=bad, headers=auth(world.tokens["organiser"])).status_code == 422
    # the portal's board: columns and a form that works without JavaScript
    page = world.client.get(f"/c/{world.cid}?run_type=automatic", headers=as_role(world, "organiser")).text
    assert 'name="run_type"' in page and 'name="training_data"' in page and 'name="external_resources"' in page
    assert [t for t in re.findall(r'<tr data-run="([^"]+)"', page)] == automatic
    assert "<th scope=\"col\">Type</th>" in page and "ranked among themselves" in page
    assert "Freeze a snapshot" not in page  # a filtered board is not what a snapshot freezes
    csv_text = world.client.get(f"/c/{world.cid}/board.csv?training_data=yes", headers=as_role(world, "organiser")).text
    assert [r["run"] for r in csv.DictReader(io.StringIO(csv_text))] == ["RUN-01"]
    assert world.client.get(f"/c/{world.cid}?run_type=robotic", headers=as_role(world, "organiser")).status_code == 400


# ---------------------------------------------------------------------------- downloads
def test_trec_scores_match_the_json_scores_and_parse_back(world: World) -> None:
    tag, rid = "RUN-01", world.run_ids["RUN-01"]
    text = world.client.get(f"/api/runs/{rid}/scores", params={"format": "trec"}, headers=auth(world.tokens["alpha"]))
    assert text.status_code == 200 and text.headers["content-type"].startswith("text/plain")
    lines = parse_trec(text.text, tag)  # the file names its run (issue 37, item 9)
    metrics = api(world, "alpha", f"/api/collections/{world.cid}")["metrics"]  # the collection's order
    assert sorted(metrics) == ["AP", "nDCG@10"]
    topics = list(per_topic(world, "alpha", tag, "AP"))
    expected = []
    for t in topics:
        for m in metrics:
            v = per_topic(world, "alpha", tag, m)[t]
            if v is not None:
                expected.append((m, t, float(f"{v:.4f}")))
    means = {m: api(world, "alpha", f"/api/runs/{rid}/scores", metric=m)["runs"][tag]["mean"] for m in metrics}
    expected += [(m, "all", float(f"{means[m]:.4f}")) for m in metrics]
    assert lines == expected
    only = parse_trec(api(world, "alpha", f"/api/runs/{rid}/scores", format="trec", metric="AP"))
    assert {m for m, _, _ in only} == {"AP"} and only[-1] == ("AP", "all", float(f"{means['AP']:.4f}"))
    # the same file from the run page's link (the portal's cookie)
    assert world.client.get(f"/runs/{rid}/scores.txt", headers=as_role(world, "alpha")).text == text.text
    # an unrevealed split: hidden topics left out for the team, the mean the visible topics'
    patch_collection(world, hidden_topics=["0001", "0002"])
    hidden = parse_trec(api(world, "alpha", f"/api/runs/{rid}/scores", format="trec", metric="AP"))
    assert not {t for _, t, _ in hidden} & {"0001", "0002"}
    board = api(world, "alpha", f"/api/collections/{world.cid}/leaderboard", metric="AP")
    assert hidden[-1] == ("AP", "all", float(f"{next(r['mean'] for r in board['rows'] if r['run'] == tag):.4f}"))
    organiser = parse_trec(api(world, "organiser", f"/api/runs/{rid}/scores", format="trec", metric="AP"))
    assert {"0001", "0002"} <= {t for _, t, _ in organiser}


def test_the_matrix_csv_holds_the_stored_scores_and_neutralises_formulas(world: World) -> None:
    # a run whose tag a spreadsheet would read as a formula
    text = world.runs["RUN-03"].replace(" RUN-03\n", " =SUM(1)\n")
    r = world.client.post(f"/api/collections/{world.cid}/runs", content=text, headers=auth(world.tokens["beta"]))
    assert r.status_code == 201, r.text
    world.run_ids["=SUM(1)"] = r.json()["id"]
    doc = api(world, "organiser", f"/api/collections/{world.cid}/matrix", metric="AP")
    board = api(world, "organiser", f"/api/collections/{world.cid}/leaderboard", metric="AP")
    assert [row["run"] for row in doc["rows"]] == [row["run"] for row in board["rows"]]
    for row in doc["rows"]:
        stored = per_topic(world, "organiser", row["run"], "AP")
        assert dict(zip(doc["topics"], row["scores"])) == stored
    rows = list(csv.reader(io.StringIO(api(world, "organiser", f"/api/collections/{world.cid}/matrix", metric="AP",
                                           format="csv"))))
    assert rows[0] == ["run", "team", *doc["topics"]] and len(rows) == len(doc["rows"]) + 1
    for line, row in zip(rows[1:], doc["rows"]):
        assert line[0] == ("'=SUM(1)" if row["run"] == "=SUM(1)" else row["run"]) and line[1] == row["team"]
        assert [float(x) if x else None for x in line[2:]] == row["scores"]
    assert "'=SUM(1)" in [r[0] for r in rows]
    page = world.client.get(f"/c/{world.cid}/matrix.csv?metric=AP", headers=as_role(world, "organiser"))
    assert list(csv.reader(io.StringIO(page.text))) == rows
    for path in (f"/c/{world.cid}/topics.csv?metric=AP", f"/c/{world.cid}/metrics.csv"):
        got = world.client.get(path, headers=as_role(world, "organiser")).text
        cells = [cell for row in csv.reader(io.StringIO(got)) for cell in row]
        assert not any(cell.startswith("=") for cell in cells), path
    assert "'=SUM(1)" in world.client.get(f"/c/{world.cid}/metrics.csv", headers=as_role(world, "organiser")).text


def test_snapshot_downloads(world: World) -> None:
    org = auth(world.tokens["organiser"])
    sid = world.client.post(f"/api/collections/{world.cid}/snapshots", json={"label": "s"}, headers=org).json()["id"]
    board_csv = world.client.get(f"/api/collections/{world.cid}/leaderboard", params={"format": "csv"}, headers=org)
    snap_csv = world.client.get(f"/api/snapshots/{sid}", params={"format": "csv"}, headers=org)
    assert snap_csv.status_code == 200 and snap_csv.text == board_csv.text
    # data (issue 37, item 2): the baseline column is true/false, never Python's True/False
    rows = list(csv.DictReader(io.StringIO(board_csv.text)))
    assert rows and {r["baseline"] for r in rows} <= {"true", "false"}
    assert "True" not in board_csv.text and "False" not in board_csv.text
    latex = world.client.get(f"/api/snapshots/{sid}", params={"format": "latex"}, headers=org).text
    assert latex.startswith("\\begin{tabular}")
    assert world.client.get(f"/snapshots/{sid}/board.csv", headers=as_role(world, "organiser")).text == snap_csv.text
    assert world.client.get(f"/snapshots/{sid}/board.tex", headers=as_role(world, "organiser")).text == latex
    assert f'href="/snapshots/{sid}/board.csv?metric=nDCG%4010"' in world.client.get(f"/snapshots/{sid}",
                                                                     headers=as_role(world, "organiser")).text
    for role, status in (("anonymous", 401), ("alpha", 403)):  # a snapshot is the organisers' until released
        assert world.client.get(f"/snapshots/{sid}/board.csv", headers=as_role(world, role)).status_code == status
        assert world.client.get(f"/api/snapshots/{sid}", params={"format": "csv"},
                                headers=auth(world.tokens.get(role))).status_code == status


# ---------------------------------------------------------------------------- topic analysis
def recomputed(world: World, role: str, runs: list[str], metric: str) -> dict[str, dict[str, Any]]:
    """Per topic, the figures recomputed with numpy from the per-topic scores the API serves."""
    scores = {tag: per_topic(world, role, tag, metric) for tag in runs}
    out: dict[str, dict[str, Any]] = {}
    for t in next(iter(scores.values())):
        have = {tag: s[t] for tag, s in scores.items() if s.get(t) is not None}
        v = np.array(list(have.values()))
        out[t] = {"runs": len(v), "median": float(np.median(v)), "q1": float(np.quantile(v, 0.25)),
                  "q3": float(np.quantile(v, 0.75)), "min": float(v.min()), "best": float(v.max()),
                  "best_runs": sorted(tag for tag, x in have.items() if x == v.max())}
    return out


def check_topic_figures(doc: dict[str, Any], expected: dict[str, dict[str, Any]]) -> None:
    assert [i["topic"] for i in doc["items"]] == sorted(expected, key=lambda t: (expected[t]["median"], t))
    for item in doc["items"]:
        want = expected[item["topic"]]
        for key in ("median", "q1", "q3", "min", "best"):
            assert item[key] == pytest.approx(want[key]), (item["topic"], key)
        assert item["runs"] == want["runs"] and sorted(item["best_runs"]) == want["best_runs"]


def test_topic_analysis_figures_are_the_stored_scores_order_statistics(world: World) -> None:
    every = ["RUN-01", "RUN-02", "RUN-03"]
    doc = api(world, "organiser", f"/api/collections/{world.cid}/topic-analysis", metric="AP")
    assert doc["runs_from"] == "all" and doc["own_runs"] == []
    check_topic_figures(doc, recomputed(world, "organiser", every, "AP"))
    # a participant before the release: over its own team's runs only, its runs highlighted
    mine = api(world, "alpha", f"/api/collections/{world.cid}/topic-analysis")
    assert mine["runs_from"] == "team" and sorted(mine["own_runs"]) == ["RUN-01", "RUN-02"]
    assert {r["run"] for r in mine["runs"]} == {"RUN-01", "RUN-02"}
    check_topic_figures(mine, recomputed(world, "alpha", ["RUN-01", "RUN-02"], "nDCG@10"))
    for item in mine["items"]:
        assert item["own"] == {t: per_topic(world, "alpha", t, "nDCG@10")[item["topic"]] for t in mine["own_runs"]}
    # the page: a chart, the table hardest first, the CSV the same figures
    page = world.client.get(f"/c/{world.cid}/topics?metric=AP", headers=as_role(world, "organiser")).text
    assert "<svg" in page and table_rows(page, "topics", "data-topic") == [i["topic"] for i in doc["items"]]
    rows = list(csv.DictReader(io.StringIO(
        world.client.get(f"/c/{world.cid}/topics.csv?metric=AP", headers=as_role(world, "organiser")).text)))
    assert [(r["topic"], float(r["median"]), float(r["best"]), r["best_runs"]) for r in rows] == \
        [(i["topic"], i["median"], i["best"], " ".join(i["best_runs"])) for i in doc["items"]]
    assert api(world, "organiser", f"/api/collections/{world.cid}/topic-analysis", metric="AP", format="csv") == \
        world.client.get(f"/c/{world.cid}/topics.csv?metric=AP", headers=as_role(world, "organiser")).text
    alpha_page = world.client.get(f"/c/{world.cid}/topics", headers=as_role(world, "alpha")).text
    assert "your team&#39;s runs only" in alpha_page or "your team's runs only" in alpha_page
    assert "RUN-01 <small>(yours)</small>" in alpha_page


# ---------------------------------------------------------------------------- secrecy by role
SECRET_PAGES = ("/c/{cid}/metrics", "/c/{cid}/metrics.csv", "/c/{cid}/topics", "/c/{cid}/topics.csv",
                "/c/{cid}/matrix.csv")
SECRET_API = ("/api/collections/{cid}/leaderboard/metrics", "/api/collections/{cid}/topic-analysis",
              "/api/collections/{cid}/matrix", "/api/collections/{cid}/matrix?format=csv",
              "/api/collections/{cid}/topic-analysis?format=csv")


def test_what_each_role_learns_before_and_after_the_release(world: World) -> None:
    c, cid = world.client, world.cid
    rid = world.run_ids["RUN-01"]  # team alpha's
    # before the release, private: participants learn nothing of the other team's runs
    roles = {"anonymous": 401, "alpha": 200, "beta": 200, "organiser": 200, "admin": 200, "other_organiser": 403,
             "assessor": 403}
    runs_of = {"alpha": {"RUN-01", "RUN-02"}, "beta": {"RUN-03"}}
    for role, status in roles.items():
        for path in SECRET_PAGES:
            r = c.get(path.format(cid=cid), headers=as_role(world, role), follow_redirects=False)
            assert r.status_code == status, (role, path, r.status_code)
            if role in runs_of:
                others = {"RUN-01", "RUN-02", "RUN-03"} - runs_of[role]
                assert not any(t in r.text for t in others), (role, path)
        for path in SECRET_API:
            r = c.get(path.format(cid=cid), headers=auth(world.tokens.get(role)))
            assert r.status_code == status, (role, path, r.status_code)
            if role in runs_of:
                assert not any(t in r.text for t in {"RUN-01", "RUN-02", "RUN-03"} - runs_of[role]), (role, path)
        if status == 200 and role not in runs_of:
            assert "RUN-03" in c.get(f"/api/collections/{cid}/matrix", headers=auth(world.tokens[role])).text
    # beta's figures are over beta's run alone: the topic medians are its scores
    beta = api(world, "beta", f"/api/collections/{cid}/topic-analysis")
    assert beta["items"] and all(i["runs"] == 1 and i["median"] == i["best"] and i["best_runs"] == ["RUN-03"]
                                 for i in beta["items"])
    # a run's file: its team and the organisers, before and after the release; its trec_eval
    # scores too before the release, and every reader of the released (public) board's after it
    team_only = {"anonymous": 401, "alpha": 200, "beta": 403, "organiser": 200, "admin": 200, "other_organiser": 403,
                 "assessor": 403}
    released_readers = {**team_only, "anonymous": 200, "beta": 200, "other_organiser": 200}
    for released in (False, True):
        patch_collection(world, leaderboard_released=released, visibility="public" if released else "private")
        for role, status in team_only.items():
            scores_status = released_readers[role] if released else status
            assert c.get(f"/api/runs/{rid}/scores?format=trec", headers=auth(world.tokens.get(role))).status_code \
                == scores_status, (role, released)
            assert c.get(f"/runs/{rid}/scores.txt", headers=as_role(world, role)).status_code == scores_status, \
                (role, released)
            assert c.get(f"/runs/{rid}/file", headers=as_role(world, role)).status_code == status, (role, released)
    # released and public: everyone compares with every released run
    for role in ("anonymous", "alpha", "beta"):
        doc = api(world, role, f"/api/collections/{cid}/topic-analysis")
        assert doc["runs_from"] == "all" and len(doc["runs"]) == 3
        check_topic_figures(doc, recomputed(world, "organiser", ["RUN-01", "RUN-02", "RUN-03"], "nDCG@10"))
        matrix = api(world, role, f"/api/collections/{cid}/matrix")
        assert {r["run"] for r in matrix["rows"]} == {"RUN-01", "RUN-02", "RUN-03"}
        assert {r["run"] for r in api(world, role, f"/api/collections/{cid}/leaderboard/metrics")["rows"]} == \
            {"RUN-01", "RUN-02", "RUN-03"}
    # an unrevealed topic split: the hidden topics stay hidden for all but the organisers
    patch_collection(world, hidden_topics=["0001", "0002"])
    for role in ("anonymous", "alpha", "beta", "organiser"):
        hidden_shown = role == "organiser"
        topics = {i["topic"] for i in api(world, role, f"/api/collections/{cid}/topic-analysis")["items"]}
        matrix = api(world, role, f"/api/collections/{cid}/matrix")
        assert ({"0001", "0002"} <= topics) == hidden_shown and bool({"0001", "0002"} & topics) == hidden_shown
        assert bool({"0001", "0002"} & set(matrix["topics"])) == hidden_shown, role
        header = next(csv.reader(io.StringIO(c.get(f"/c/{cid}/matrix.csv", headers=as_role(world, role)).text)))
        assert bool({"0001", "0002"} & set(header)) == hidden_shown, role
        page = c.get(f"/c/{cid}/topics", headers=as_role(world, role)).text
        assert ('data-topic="0001"' in page) == hidden_shown, role
        metrics = api(world, role, f"/api/collections/{cid}/leaderboard/metrics")
        board = api(world, role, f"/api/collections/{cid}/leaderboard")
        assert {r["run"]: r["means"]["nDCG@10"] for r in metrics["rows"]} == \
            {r["run"]: r["mean"] for r in board["rows"]}
    patch_collection(world, topics_revealed=True)
    revealed = api(world, "alpha", f"/api/collections/{cid}/topic-analysis")
    assert {"0001", "0002"} <= {i["topic"] for i in revealed["items"]}


# ---------------------------------------------------------------------------- the run page
def test_run_page_shows_metadata_downloads_missing_topics_and_the_right_best_run(world: World) -> None:
    c, cid = world.client, world.cid
    lines = world.runs["RUN-02"].replace(" RUN-02\n", " GAPS\n").splitlines()
    # topic 0003 missing from the run; on 0004 the run retrieves only unjudged documents (a true 0)
    text = "\n".join(line if not line.startswith("0004 ") else line.replace(" NTC-", " NOPE-", 1)
                     for line in lines if not line.startswith("0003 ")) + "\n"
    r = c.post(f"/api/collections/{cid}/runs", content=text, headers=auth(world.tokens["alpha"]))
    assert r.status_code == 201, r.text
    rid = world.run_ids["GAPS"] = r.json()["id"]
    describe(world, "RUN-01", run_type="manual", uses_training_data=True, description="BM25 with a twist")
    with world.factory() as s:  # a stored warning, as the submission check stores them
        s.get(Run, world.run_ids["RUN-01"]).warnings = [{"code": "short_lists", "message": "lists shorter than the "
                                                         "evaluation depth", "topics": ["0002"], "count": 1}]
        s.commit()
    page = c.get(f"/runs/{rid}?metric=AP", headers=as_role(world, "alpha")).text
    evaluated = per_topic(world, "alpha", "GAPS", "AP")
    in_file = {line.split()[0] for line in text.splitlines()}
    missing = sorted(set(evaluated) - in_file)
    assert "0003" in missing and "0004" in in_file and evaluated["0004"] == 0.0
    for t in missing:
        assert re.search(rf'<tr data-topic="{t}" data-state="missing">', page), t
    assert re.search(r'<tr data-topic="0004"><th scope="row">0004</th><td class="num">0\.0000</td>', page)
    assert page.count('data-state="missing"') == len(missing) and "missing from the run" in page
    # the counts agree: the header's are the file's, the table's the evaluated topics
    assert f"{len(evaluated)} topics evaluated" in page and f"{len(in_file)} topics in the file" in page
    assert f"{len(missing)} missing from the run" in page and page.count('<tr data-topic="') == len(evaluated)
    metrics_row = re.search(r'<th scope="row"><a href="[^"]+">AP</a></th>.*?</tr>', page).group()
    assert metrics_row.endswith(f'<td class="num">{len(evaluated)}</td></tr>')
    # metadata, warnings (the team's), downloads (the team's and the organisers')
    own = c.get(f"/runs/{world.run_ids['RUN-01']}", headers=as_role(world, "alpha")).text
    assert "<dd>manual</dd>" in own and "BM25 with a twist" in own and 'id="run-warnings"' in own
    assert "lists shorter than the evaluation depth" in own and "topic 0002" in own
    assert f'href="/runs/{world.run_ids["RUN-01"]}/file"' in own
    assert c.get(f"/runs/{world.run_ids['RUN-01']}/file", headers=as_role(world, "alpha")).text == world.runs["RUN-01"]
    patch_collection(world, leaderboard_released=True, visibility="public")
    public = c.get(f"/runs/{world.run_ids['RUN-01']}").text
    assert "<dd>manual</dd>" in public and 'id="run-warnings"' not in public and "/file" not in public
    # the curves: the best run, or on the best run's own page the runner-up, each labelled so
    board = [r["run"] for r in api(world, "organiser", f"/api/collections/{cid}/leaderboard")["rows"]]
    ids = world.run_ids
    best = c.get(f"/runs/{ids[board[0]]}", headers=as_role(world, "organiser")).text
    assert f"runner-up ({board[1]})" in best and "best run (" not in best
    other = c.get(f"/runs/{ids[board[2]]}", headers=as_role(world, "organiser")).text
    assert f"best run ({board[0]})" in other and "runner-up (" not in other
