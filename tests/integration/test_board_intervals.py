"""Issue 14, item 3: intervals of a run's mean that stay in the metric's range.

A collection is built so that the t interval of a run's mean reciprocal rank leaves [0, 1]
above (RR 1, 1, 1, 1, 0.5: mean 0.9, t interval [0.6224, 1.1776]) and another run's below
(RR 0.02, 0, 0, 0, 0: t interval [-0.0071, 0.0151]). The worker stores the BCa bootstrap
interval beside the t interval; the peer for its figures is scipy.stats.bootstrap on the stored
per-topic values. The API returns both intervals raw with the metric's bounds; the portal, the
CSV and the LaTeX table never print a value outside [0, 1].
"""

from __future__ import annotations

import html
import inspect
import math
import re

import numpy as np
import pytest
from scipy import stats
from sqlalchemy import select, update

from service.store.arrays import unpack
from service.store.models import Run, RunEvaluation, Score
from tests.integration.conftest import World, auth

# Run on PostgreSQL too; the module's other tests run on SQLite only (conftest.py):
# what the worker stores; drawing and printing on SQLite.
SQLITE_ONLY_BUT = {"test_the_worker_stores_the_bootstrap_interval_scipy_computes",
                   "test_a_topic_split_stores_and_serves_the_public_topics_bootstrap_interval"}

TOPICS = ("0001", "0002", "0003", "0004", "0005")
QRELS = "".join(f"{t} R{t} L1\n" + "".join(f"{t} N{t}-{i:02d} L0\n" for i in range(60)) for t in TOPICS)


def _run(tag: str, first_relevant: dict[str, int | None]) -> str:
    """A run of 60 documents per topic with the relevant one at the given rank (None: absent)."""
    lines = []
    for t in TOPICS:
        docs = [f"N{t}-{i:02d}" for i in range(60)]
        rank = first_relevant.get(t)
        if rank is not None:
            docs[rank - 1] = f"R{t}"
        lines += [f"{t} Q0 {d} {r} {100 - r} {tag}" for r, d in enumerate(docs, start=1)]
    return "\n".join(lines) + "\n"


RUNS = {  # tag -> (team, rank of the relevant document per topic)
    "HIGH": ("alpha", {"0001": 1, "0002": 1, "0003": 1, "0004": 1, "0005": 2}),  # RR 1, 1, 1, 1, 0.5
    "LOW": ("beta", {"0001": 50}),  # RR 0.02, 0, 0, 0, 0
    "MID": ("alpha", {"0001": 2, "0002": 3, "0003": 1, "0004": 4, "0005": 2}),
}
T_975_4 = 2.7764451051977987  # scipy.stats.t.ppf(0.975, 4)


@pytest.fixture
def bounded(world: World) -> int:
    """A public, released collection ranked by RR, with the three runs evaluated."""
    c, admin = world.client, auth(world.tokens["admin"])
    cid = c.post("/api/collections", json={"name": "bounded", "official_metric": "RR",
                                           "metrics": ["RR", "nDCG@10", "DCG@10"]}, headers=admin).json()["id"]
    for team in ("alpha", "beta"):
        assert c.post(f"/api/collections/{cid}/teams", json={"team": team}, headers=admin).status_code == 201
    r = c.post(f"/api/collections/{cid}/qrels", content=QRELS, headers=admin)
    assert r.status_code == 201, r.text
    for tag, (team, ranks) in RUNS.items():
        r = c.post(f"/api/collections/{cid}/runs", content=_run(tag, ranks), headers=auth(world.tokens[team]))
        assert r.status_code == 201, r.text
    r = c.patch(f"/api/collections/{cid}", json={"leaderboard_released": True, "visibility": "public"},
                headers=admin)
    assert r.status_code == 200, r.text
    return cid


def scipy_bca(values: np.ndarray) -> tuple[float, float]:
    key = "rng" if "rng" in inspect.signature(stats.bootstrap).parameters else "random_state"
    res = stats.bootstrap((values,), np.mean, method="BCa", n_resamples=1000, vectorized=True,
                          **{key: np.random.default_rng(0)})
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def stored(world: World, cid: int, metric: str) -> dict[str, Score]:
    with world.factory() as s:
        rows = s.execute(select(Run.tag, Score).join(RunEvaluation, RunEvaluation.id == Score.run_evaluation_id)
                         .join(Run, Run.id == RunEvaluation.run_id)
                         .where(Run.collection_id == cid, Score.metric == metric)).all()
        s.expunge_all()
    return {tag: score for tag, score in rows}


def test_the_worker_stores_the_bootstrap_interval_scipy_computes(world: World, bounded: int) -> None:
    scores = stored(world, bounded, "RR")
    assert set(scores) == set(RUNS)
    high = scores["HIGH"]
    assert high.mean == pytest.approx(0.9) and high.n_topics == 5
    assert high.ci_high == pytest.approx(0.9 + T_975_4 * math.sqrt(0.05) / math.sqrt(5))  # 1.1776: leaves [0, 1]
    for tag, score in scores.items():
        values = unpack(score.values)
        values = values[~np.isnan(values)]
        low, high_end = scipy_bca(values)
        assert (score.boot_method, score.boot_resamples) == ("bca", 1000)
        assert score.boot_low == pytest.approx(low, abs=1e-12) and score.boot_high == pytest.approx(high_end, abs=1e-12)
        assert 0.0 <= score.boot_low <= score.mean <= score.boot_high <= 1.0, tag
        assert score.public_boot_low is None and score.public_boot_high is None  # no topic split
    assert scores["LOW"].ci_low == pytest.approx(0.004 - T_975_4 * math.sqrt(8e-5) / math.sqrt(5))  # -0.0071 < 0


def test_the_api_returns_both_intervals_raw_with_the_bounds(world: World, bounded: int) -> None:
    board = world.client.get(f"/api/collections/{bounded}/leaderboard", params={"metric": "RR"}).json()
    assert board["bounds"] == {"low": 0.0, "high": 1.0}
    assert board["interval"] == "95% BCa bootstrap interval, B = 1000"
    rows = {r["run"]: r for r in board["rows"]}
    scores = stored(world, bounded, "RR")
    for tag, r in rows.items():
        assert (r["ci_low"], r["ci_high"]) == (scores[tag].ci_low, scores[tag].ci_high)  # raw, not clipped
        assert (r["boot_low"], r["boot_high"]) == (scores[tag].boot_low, scores[tag].boot_high)
        assert (r["boot_method"], r["boot_resamples"]) == ("bca", 1000)
    assert rows["HIGH"]["ci_high"] > 1 and rows["LOW"]["ci_low"] < 0
    unbounded = world.client.get(f"/api/collections/{bounded}/leaderboard", params={"metric": "DCG@10"}).json()
    assert unbounded["bounds"] == {"low": 0.0, "high": None}


def _numbers(text: str) -> list[float]:
    return [float(x) for x in re.findall(r"(?<![\w.])-?\d+\.\d+", text)]


def _table(page: str) -> str:
    body = page[page.index('id="leaderboard"'):]
    return html.unescape(re.sub(r"<[^>]+>", " ", body[: body.index("</table>")]))


def test_the_portal_draws_the_bootstrap_interval_and_clips_the_t_interval(world: World, bounded: int) -> None:
    page = world.client.get(f"/c/{bounded}", params={"metric": "RR"})
    assert page.status_code == 200
    text = page.text
    table = _table(text)
    assert _numbers(table) and all(0.0 <= x <= 1.0 for x in _numbers(table)), table
    for impossible in ("1.1776", "-0.0071", "−0.0071"):
        assert impossible not in text
    assert "95% BCa bootstrap interval, B = 1000" in html.unescape(text)
    assert "t interval truncated at the metric's range" in html.unescape(text)
    row = re.search(r'<tr data-run="HIGH">.*?</tr>', text, re.DOTALL).group(0)
    t_cell = re.search(r'<td class="interval-t">(.*?)</td>', row, re.DOTALL).group(1)
    assert "1.0000" in t_cell and "†" in t_cell  # the t interval's upper end, at the bound, marked
    drawn = _numbers(re.sub(r"<[^>]+>", " ", re.search(r'<td class="interval">(.*?)</td>', row, re.DOTALL).group(1)))
    score = stored(world, bounded, "RR")["HIGH"]
    assert drawn == [round(score.boot_low, 4), round(score.boot_high, 4)]
    low_row = re.search(r'<tr data-run="LOW">.*?</tr>', text, re.DOTALL).group(0)
    assert "0.0000" in low_row and "†" in low_row
    # the figure says which interval it draws (no truncated end is drawn: the bootstrap interval is)
    assert "over topics, with its 95% BCa bootstrap interval, B = 1000; baselines are drawn as squares." in \
        html.unescape(text)
    # the group letters say what they mean, with the stored test's own parameters
    sig = world.client.get(f"/api/collections/{bounded}/leaderboard", params={"metric": "RR"}).json()["significance"]
    assert sig is not None
    assert (f"runs that share a letter are not significantly different ({sig['test']}, the test's B = "
            f"{sig['resamples']}, α = {sig['alpha']}, correction: none: unadjusted, {sig['n_topics']} topics); runs "
            "with no letter in common are.") in html.unescape(text)
    # the drawn interval's B is told apart from the test's (issue 25, item 5)
    assert (f"95% BCa bootstrap interval, B = 1000 (its own B, apart from the significance test's B = "
            f"{sig['resamples']})") in html.unescape(text)


def test_files_never_print_an_impossible_value(world: World, bounded: int) -> None:
    c = world.client
    csv_text = c.get(f"/c/{bounded}/board.csv", params={"metric": "RR"}).text
    lines = [line.split(",") for line in csv_text.strip().splitlines()]
    header, rows = lines[0], {r[1]: dict(zip(lines[0], r)) for r in lines[1:]}
    assert header[4:6] == ["t_ci_low", "t_ci_high"] and "t_ci_truncated" in header  # named by kind (issue 25.5)
    assert rows["HIGH"]["t_ci_high"] == "1.0" and rows["HIGH"]["t_ci_truncated"] == "high"
    assert rows["LOW"]["t_ci_low"] == "0.0" and rows["LOW"]["t_ci_truncated"] == "low"
    assert {r["boot_ci_method"] for r in rows.values()} == {"bca"} and {r["boot_ci_resamples"] for r in rows.values()} == {"1000"}
    for r in rows.values():
        for key in ("mean", "t_ci_low", "t_ci_high", "boot_ci_low", "boot_ci_high"):
            assert 0.0 <= float(r[key]) <= 1.0, (key, r)
    tex = c.get(f"/c/{bounded}/board.tex", params={"metric": "RR"}).text
    assert "1.1776" not in tex and "$^\\dagger$" in tex and "95\\% BCa bootstrap interval, B = 1000" in tex
    assert "& Bootstrap interval & 95\\% t interval" in tex and "correction: none: unadjusted" in tex
    assert all(0.0 <= x <= 1.0 for x in _numbers(tex.split("\\end{tabular}")[0]))


def test_rows_stored_before_bootstrap_intervals_draw_the_clipped_t_interval(world: World, bounded: int) -> None:
    with world.factory() as s, s.begin():  # as a row stored before revision 0012 reads
        s.execute(update(Score).where(Score.metric == "RR").values(
            boot_low=None, boot_high=None, boot_method=None, boot_resamples=None))
    page = world.client.get(f"/c/{bounded}", params={"metric": "RR"}).text
    table = _table(page)
    assert all(0.0 <= x <= 1.0 for x in _numbers(table)) and "1.1776" not in page
    row = re.search(r'<tr data-run="HIGH">.*?</tr>', page, re.DOTALL).group(0)
    drawn = re.search(r'<td class="interval">(.*?)</td>', row, re.DOTALL).group(1)
    assert "1.0000" in drawn and "†" in drawn  # the t interval is drawn, clipped and marked
    assert "scored topics: the 95% t interval." in html.unescape(page)
    assert "a bar marks a t interval truncated at the metric's range." in html.unescape(page)
    csv_text = world.client.get(f"/c/{bounded}/board.csv", params={"metric": "RR"}).text
    assert "1.1776" not in csv_text


def test_a_topic_split_stores_and_serves_the_public_topics_bootstrap_interval(world: World, bounded: int) -> None:
    c = world.client
    r = c.patch(f"/api/collections/{bounded}", json={"hidden_topics": ["0005"]}, headers=auth(world.tokens["admin"]))
    assert r.status_code == 200, r.text
    scores = stored(world, bounded, "RR")
    for tag, score in scores.items():
        values = unpack(score.values)[:4]  # topics 0001-0004, in the evaluation's topic order
        if np.ptp(values) == 0:  # HIGH: RR 1 on every visible topic, a point interval
            assert (score.public_boot_low, score.public_boot_high) == (values[0], values[0])
            continue
        low, high = scipy_bca(values)
        assert score.public_boot_low == pytest.approx(low, abs=1e-12), tag
        assert score.public_boot_high == pytest.approx(high, abs=1e-12), tag
    # a visitor under the unrevealed split is served the public side (the API: raw, with both intervals)
    board = c.get(f"/api/collections/{bounded}/leaderboard", params={"metric": "RR"}).json()
    assert board["topics"].startswith("visible only")
    rows = {row["run"]: row for row in board["rows"]}
    for tag, score in scores.items():
        assert (rows[tag]["boot_low"], rows[tag]["boot_high"]) == (score.public_boot_low, score.public_boot_high)
        assert (rows[tag]["ci_low"], rows[tag]["ci_high"]) == (score.public_ci_low, score.public_ci_high)


def test_run_and_snapshot_pages_never_print_an_impossible_value(world: World, bounded: int) -> None:
    """The run page's metric table and a frozen snapshot show the same bounded intervals."""
    c, admin = world.client, auth(world.tokens["admin"])
    board = c.get(f"/api/collections/{bounded}/leaderboard", params={"metric": "RR"}, headers=admin).json()
    ids = {r["run"]: r["run_id"] for r in board["rows"]}
    for tag in ("HIGH", "LOW"):
        page = c.get(f"/runs/{ids[tag]}", headers=admin)
        assert page.status_code == 200
        text = html.unescape(page.text)
        start = text.index('id="metrics"')
        table = re.sub(r"<[^>]+>", " ", text[start:text.index("</table>", start)])
        rr = next(line for line in table.splitlines() if line.strip().startswith("RR"))
        assert all(0.0 <= x <= 1.0 for x in _numbers(rr)), rr
        assert "BCa bootstrap interval" in table
        assert "1.1776" not in text and "-0.0071" not in text
    r = c.post(f"/api/collections/{bounded}/snapshots", json={"metric": "RR", "label": "frozen"}, headers=admin)
    assert r.status_code == 201, r.text
    snap = c.get(f"/snapshots/{r.json()['id']}", headers=admin)
    assert snap.status_code == 200
    text = html.unescape(snap.text)
    start = text.index('id="snapshot"')
    body = re.sub(r"<[^>]+>", " ", text[start:text.index("</table>", start)])
    assert _numbers(body) and all(0.0 <= x <= 1.0 for x in _numbers(body)), body
    assert "BCa bootstrap interval" in text and "not significantly different" in text
