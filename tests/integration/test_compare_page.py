"""The comparison of two runs (issue 14, items 2, 5 and 6): the compare page and the API's compare
answer carry the difference's intervals and effect size, the stored test's p with the parameters it
was run with (no "adjusted" unless a correction was applied), the same figures as `cranfield compare`,
and the explanation of a test that disagrees with an interval exactly when they disagree.

The world (conftest.py): a private collection "task" (AP and nDCG@10) with three runs of a generated
collection, evaluated and tested in-process with the default test (bootstrap, B = 10000, alpha 0.05,
no correction, seed 0) on its official metric, nDCG@10.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
from scipy import stats

from service.cli import main
from service.metrics.stats.presentation import format_p
from tests.integration.conftest import World, auth
from tests.integration.test_portal import as_role


def visible_text(page: str) -> str:
    """A page's text without its charts and markup (what a reader sees)."""
    page = re.sub(r"<svg.*?</svg>", " ", page, flags=re.DOTALL)
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))


def api_compare(world: World, a: int, b: int, metric: str = "nDCG@10", cid: int | None = None,
                role: str = "organiser") -> dict:
    r = world.client.get(f"/api/collections/{cid or world.cid}/compare", params={"a": a, "b": b, "metric": metric},
                         headers=auth(world.tokens[role]))
    assert r.status_code == 200, r.text
    return r.json()


def compare_page(world: World, a: int, b: int, metric: str = "nDCG@10", cid: int | None = None,
                 role: str = "organiser") -> str:
    r = world.client.get(f"/c/{cid or world.cid}/compare", params={"a": a, "b": b, "metric": metric},
                         headers=as_role(world, role))
    assert r.status_code == 200, r.text
    return r.text


def set_significance(world: World, **changes: object) -> None:
    r = world.client.patch(f"/api/collections/{world.cid}", json={"significance": changes},
                           headers=auth(world.tokens["organiser"]))
    assert r.status_code == 200, r.text


def test_the_compare_page_shows_the_difference_the_effect_size_and_the_test_as_stored(world: World) -> None:
    a, b = world.run_ids["RUN-01"], world.run_ids["RUN-02"]
    doc = api_compare(world, a, b)
    assert doc["metric"] == "nDCG@10"
    d, test = doc["difference"], doc["test"]
    n = len(doc["differences"])  # the topics both runs were scored on (nDCG is undefined without a relevant one)
    assert n >= 2
    assert test == {"test": "bootstrap", "name": "paired bootstrap test (studentised), B = 10000", "alpha": 0.05,
                    "correction": "none", "adjusted": False, "resamples": 10000, "n_topics": n, "comparisons": 3,
                    "p_label": "p-values (no correction for multiple comparisons)", "correction_tag": "no correction",
                    "correction_name": "none: unadjusted"}
    assert doc["p"] == doc["p_adjusted"]  # no correction: the raw p is the p shown
    # the difference's statistics, from the per-topic scores the answer carries
    x, y = (doc["runs"][t]["per_topic"] for t in ("RUN-01", "RUN-02"))
    topics = sorted(doc["differences"])
    ci = stats.ttest_rel([x[t] for t in topics], [y[t] for t in topics]).confidence_interval(0.95)
    assert (d["t_low"], d["t_high"]) == (pytest.approx(ci.low, abs=1e-12), pytest.approx(ci.high, abs=1e-12))
    assert d["n_topics"] == n and d["mean"] == pytest.approx(sum(doc["differences"].values()) / n, abs=1e-12)
    assert d["bootstrap"]["method"] == "bca" and d["bootstrap"]["resamples"] == 10000 and d["bootstrap"]["seed"] == 0
    # the intervals under the board's names too (issue 25, item 5)
    assert (d["t_ci_low"], d["t_ci_high"]) == (d["t_low"], d["t_high"])
    assert (d["boot_ci_low"], d["boot_ci_high"], d["boot_ci_method"], d["boot_ci_resamples"]) == (
        d["bootstrap"]["low"], d["bootstrap"]["high"], "bca", 10000)
    assert api_compare(world, a, b) == doc  # the configured seed: a reload gives the same numbers

    page = compare_page(world, a, b)
    text = visible_text(page)
    assert 'id="difference"' in page and 'id="effect-size"' in page
    assert f"95% Student t interval [{d['t_low']:.4f}, {d['t_high']:.4f}]" in text
    boot = d["bootstrap"]
    assert (f"95% BCa bootstrap interval, B = 10000 [{boot['low']:.4f}, {boot['high']:.4f}] the topics resampled "
            "B = 10000 times, seed 0") in text
    assert f"Effect size {d['effect_size']:.3f}" in text
    assert (f"Stored test: paired bootstrap test (studentised), B = 10000, α = 0.05, over {n} topics; "
            "p-values (no correction for multiple comparisons).") in text
    assert f"p = {format_p(doc['p_adjusted'], 0.05, 4)} (correction: none: unadjusted)" in text
    # no correction was applied: nothing may say "adjusted" (only "unadjusted")
    assert not re.search("(?<!un)adjusted", page.lower())
    sig = world.client.get(f"/c/{world.cid}/significance?metric=nDCG@10", headers=as_role(world, "organiser")).text
    assert "no correction for multiple comparisons" in visible_text(sig) and not re.search("(?<!un)adjusted",
                                                                                            sig.lower())
    assert "correction: none: unadjusted" in visible_text(sig) and 'id="p-raw-matrix"' not in sig

    # a Holm-corrected t-test: the page and the heat map say so, with the number of comparisons
    set_significance(world, test="t", correction="holm", alpha=0.1)
    doc = api_compare(world, a, b)
    assert doc["test"]["adjusted"] and doc["test"]["resamples"] is None  # the t-test does not resample
    assert doc["test"]["correction_name"] == "Holm" and doc["p"] <= doc["p_adjusted"]
    text = visible_text(compare_page(world, a, b))
    # both p, the correction named (issue 25, item 4)
    assert (f"p = {format_p(doc['p'], 0.1, 4)} (raw, before the correction); Holm-adjusted p = "
            f"{format_p(doc['p_adjusted'], 0.1, 4)}") in text
    assert (f"Stored test: paired t-test, α = 0.1, over {n} topics; p-values (Holm-adjusted for the 3 comparisons)."
            in text) and "B = " not in text.split("Stored test:")[1].split(".")[0]
    sig = world.client.get(f"/c/{world.cid}/significance?metric=nDCG@10", headers=as_role(world, "organiser")).text
    assert "p-values (Holm-adjusted for the 3 comparisons)" in visible_text(sig)
    assert "correction: Holm" in visible_text(sig) and 'id="p-raw-matrix"' in sig and 'id="p-matrix"' in sig
    matrix = world.client.get(f"/api/collections/{world.cid}/significance", params={"metric": "nDCG@10"},
                              headers=auth(world.tokens["organiser"])).json()
    assert matrix["correction_name"] == "Holm"
    # Holm over 3 pairs: the adjusted p is at least the raw p, and at most 3 times it
    for raw_row, adj_row in zip(matrix["p"], matrix["p_adjusted"]):
        for raw, adj in zip(raw_row, adj_row):
            assert raw <= adj <= min(1.0, 3 * raw) + 1e-12
    assert "Holm-adjusted" in re.search(r"<svg.*?</svg>", sig, flags=re.DOTALL).group(0)  # the heat map's own labels


def _cli_compare(world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> dict:
    qrels = tmp_path / "qrels.ntcir"
    qrels.write_text(world.qrels)
    runs = []
    for tag, text in world.runs.items():
        path = tmp_path / f"{tag}.run"
        path.write_text(text)
        runs.append(str(path))
    capsys.readouterr()
    assert main(["compare", "--qrels", str(qrels), *runs, "-m", "nDCG@10", "--format", "json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_api_compare_answer_carries_the_figures_of_cranfield_compare(
        world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The same statistic, the same number: means, difference, effect size and the test's p (the
    stored test has the defaults of stored tests, which the CLI is given: bootstrap, B = 10000 with the
    sequential rule, seed 0; then a Holm-corrected t-test)."""
    cli = _cli_compare(world, tmp_path, capsys, "--B", "10000", "--sequential")["metrics"]["nDCG@10"]
    for pair in cli["pairs"]:
        doc = api_compare(world, world.run_ids[pair["run_a"]], world.run_ids[pair["run_b"]])
        assert doc["runs"][pair["run_a"]]["mean"] == pytest.approx(pair["mean_a"], abs=1e-12)
        assert doc["runs"][pair["run_b"]]["mean"] == pytest.approx(pair["mean_b"], abs=1e-12)
        assert doc["difference"]["mean"] == pytest.approx(pair["diff"], abs=1e-12)
        assert doc["difference"]["effect_size"] == pytest.approx(pair["effect_size"], rel=1e-9)
        assert doc["difference"]["t_statistic"] == pytest.approx(pair["statistic"], rel=1e-9)  # bootstrap's t
        assert doc["p_adjusted"] == pytest.approx(pair["p_adjusted"], abs=1e-12)
    set_significance(world, test="t", correction="holm")
    cli = _cli_compare(world, tmp_path, capsys, "--test", "t", "--correction", "holm")["metrics"]["nDCG@10"]
    for pair in cli["pairs"]:
        doc = api_compare(world, world.run_ids[pair["run_a"]], world.run_ids[pair["run_b"]])
        assert doc["p_adjusted"] == pytest.approx(pair["p_adjusted"], rel=1e-9)
        assert doc["test"]["correction"] == "holm" and doc["test"]["comparisons"] == len(cli["pairs"])


def _bimodal_collection(world: World) -> tuple[int, dict[str, int]]:
    """19 topics with one relevant document each: run A finds it at rank 1 on 17 topics and not at
    all on two, where run B has it at rank 1; elsewhere B has it at rank 2 or 3. A's AP is higher
    by 0.5 or 0.667 on 17 topics and lower by 1 on two: the studentised bootstrap's ASL exceeds
    0.05 while both intervals of the mean difference exclude 0. Run C has it at ranks 2 to 5 where
    A has it and misses it where A does: below A on 17 topics, tied on two; the test and the
    intervals agree."""
    c, admin = world.client, auth(world.tokens["admin"])
    cid = c.post("/api/collections", json={"name": "bimodal", "official_metric": "AP", "metrics": ["AP"]},
                 headers=admin).json()["id"]
    assert c.post(f"/api/collections/{cid}/teams", json={"team": "alpha"}, headers=admin).status_code == 201
    topics = [f"T{i:02d}" for i in range(1, 20)]
    qrels = "".join(f"{t} REL L1\n" + "".join(f"{t} N{k} L0\n" for k in range(1, 6)) for t in topics)
    assert c.post(f"/api/collections/{cid}/qrels", content=qrels, headers=admin).status_code == 201

    def run(tag: str, rank_of_rel) -> str:  # type: ignore[no-untyped-def]
        lines = []
        for i, t in enumerate(topics):
            docs = [f"N{k}" for k in range(1, 6)]
            rank = rank_of_rel(i)
            if rank is not None:
                docs.insert(rank - 1, "REL")
            lines += [f"{t} Q0 {doc} {r} {100 - r} {tag}" for r, doc in enumerate(docs, start=1)]
        return "\n".join(lines) + "\n"

    texts = {"A": run("A", lambda i: None if i >= 17 else 1), "B": run("B", lambda i: 1 if i >= 17 else 2 + i % 2),
             "C": run("C", lambda i: None if i >= 17 else 2 + i % 4)}
    # D: A's ranking where A finds the document, and no line at all for T18 and T19 (scored 0 as missing)
    texts["D"] = "".join(line + "\n" for line in texts["A"].replace(" A\n", " D\n").splitlines()
                         if not line.startswith(("T18 ", "T19 ")))
    ids = {}
    for tag, text in texts.items():
        r = c.post(f"/api/collections/{cid}/runs", content=text, headers=auth(world.tokens["alpha"]))
        assert r.status_code == 201, r.text
        ids[tag] = r.json()["id"]
    return cid, ids


def test_the_disagreement_is_explained_where_it_occurs_and_only_there(world: World) -> None:
    cid, ids = _bimodal_collection(world)
    doc = api_compare(world, ids["A"], ids["B"], metric="AP", cid=cid, role="admin")
    d = doc["difference"]
    assert doc["p_adjusted"] >= 0.05 and d["t_low"] > 0 and d["bootstrap"]["low"] > 0, doc
    assert d["other_way"] == ["T18", "T19"]
    assert doc["explanation"] is not None and "2 of 19" not in doc["explanation"]  # two groups: 17 and 2
    assert "17 of 19 topics go one way" in doc["explanation"] and "heavy tails" in doc["explanation"]
    page = compare_page(world, ids["A"], ids["B"], metric="AP", cid=cid, role="admin")
    text = visible_text(page)
    assert 'id="disagreement"' in page and "The test and the intervals disagree." in text
    assert doc["explanation"] in text
    # the per-topic differences are open beside it, the two topics going the other way marked
    assert "<details open>" in page and page.count('class="other-way"') == 2
    assert re.search(r'<tr data-topic="T18" class="other-way"><th scope="row">T18</th>', page)

    agree = api_compare(world, ids["A"], ids["C"], metric="AP", cid=cid, role="admin")
    assert agree["p_adjusted"] < 0.05 and agree["difference"]["t_low"] > 0 and agree["explanation"] is None
    page = compare_page(world, ids["A"], ids["C"], metric="AP", cid=cid, role="admin")
    assert 'id="disagreement"' not in page and "disagree" not in page and "other-way" not in page


def test_topics_a_run_never_submitted_are_no_wins_or_losses(world: World) -> None:
    """Issue 25, item 6: run D has the same scores as run A, but no line for T18 and T19 (scored 0
    as missing, where A scored a real 0). Against B, A loses on T18 and T19 and they go the other
    way; D's two topics are marked missing, counted as neither wins nor losses, and never listed
    as going the other way, on the page and in the API."""
    cid, ids = _bimodal_collection(world)
    real = api_compare(world, ids["A"], ids["B"], metric="AP", cid=cid, role="admin")
    gone = api_compare(world, ids["D"], ids["B"], metric="AP", cid=cid, role="admin")
    assert gone["differences"] == real["differences"] and gone["p_adjusted"] == real["p_adjusted"]  # same scores
    assert (real["wins"], real["ties"], real["losses"], real["not_counted"]) == (17, 0, 2, 0)
    assert real["missing"] == {"A": [], "B": []} and real["difference"]["other_way"] == ["T18", "T19"]
    assert (gone["wins"], gone["ties"], gone["losses"], gone["not_counted"]) == (17, 0, 0, 2)
    assert gone["missing"] == {"D": ["T18", "T19"], "B": []}
    assert gone["difference"]["other_way"] == []  # missing is not "the other way"
    assert "T18 (missing from D)" in gone["explanation"]  # the explanation names it for what it is
    page = compare_page(world, ids["D"], ids["B"], metric="AP", cid=cid, role="admin")
    text = visible_text(page)
    assert "17 wins, 0 ties, 0 losses for D over the 17 topics both runs submitted; 2 topics missing from a run " \
           "are not counted (2 missing from D" in text
    assert "goes the other way" not in text and 'class="other-way"' not in page
    chart = re.search(r"<svg.*?</svg>", page, flags=re.DOTALL).group(0)  # the bars marked too
    assert "T18 (missing)" in chart and "T19 (missing)" in chart and "T01 (missing)" not in chart
    for t in ("T18", "T19"):
        row = re.search(rf'<tr data-topic="{t}" data-state="missing">.*?</tr>', page).group(0)
        assert "(missing from the run)" in row and "not counted: missing from D" in visible_text(row)
    # A's real zeros stay losses going the other way
    assert 'data-state="missing"' not in compare_page(world, ids["A"], ids["B"], metric="AP", cid=cid, role="admin")


def test_the_topic_page_tells_a_missing_topic_from_a_real_zero(world: World) -> None:
    """Issue 25, item 6: on T18 and T19, A scores a real 0 and D (no line for them) a 0 by the
    missing-topic rule; the topic analysis counts D as missing there and gives the least score of
    the runs that submitted the topic, in the API, the CSV and the page."""
    cid, _ = _bimodal_collection(world)
    admin = auth(world.tokens["admin"])
    doc = world.client.get(f"/api/collections/{cid}/topic-analysis", params={"metric": "AP"}, headers=admin).json()
    items = {i["topic"]: i for i in doc["items"]}
    for t in ("T18", "T19"):
        assert (items[t]["runs"], items[t]["min"], items[t]["missing"]) == (4, 0.0, 1)
        assert items[t]["min_submitted"] == 0.0  # A and C submitted it and found nothing: real zeros
    assert all(i["missing"] == 0 and i["min_submitted"] == i["min"] for t, i in items.items() if t not in ("T18", "T19"))
    csv = world.client.get(f"/api/collections/{cid}/topic-analysis", params={"metric": "AP", "format": "csv"},
                           headers=admin).text.splitlines()
    assert csv[0].endswith(",missing_runs,min_submitted")
    assert sum(line.startswith(("T18,", "T19,")) and line.endswith(",1,0.0") for line in csv) == 2
    page = world.client.get(f"/c/{cid}/topics", params={"metric": "AP"}, headers=as_role(world, "admin")).text
    row = re.search(r'<tr data-topic="T18">.*?</tr>', page, flags=re.DOTALL).group(0)
    assert "(1 run missing the topic)" in visible_text(row)
    row = re.search(r'<tr data-topic="T01">.*?</tr>', page, flags=re.DOTALL).group(0)
    assert "missing" not in row


def test_the_counts_on_the_compare_page_agree_with_their_nouns(world: World) -> None:
    """Issue 37, item 7: one win, one tie and one loss read "1 win, 1 tie, 1 loss", not "1 wins,
    1 ties, 1 losses"; no "(s)" on the page."""
    c, admin = world.client, auth(world.tokens["admin"])
    cid = c.post("/api/collections", json={"name": "plurals", "official_metric": "AP", "metrics": ["AP"]},
                 headers=admin).json()["id"]
    assert c.post(f"/api/collections/{cid}/teams", json={"team": "alpha"}, headers=admin).status_code == 201
    topics = ["T1", "T2", "T3"]
    qrels = "".join(f"{t} REL L1\n{t} N1 L0\n{t} N2 L0\n" for t in topics)
    assert c.post(f"/api/collections/{cid}/qrels", content=qrels, headers=admin).status_code == 201
    ranks = {"A": [1, 1, 2], "B": [2, 1, 1]}  # A wins T1, ties T2, loses T3
    ids = {}
    for tag, where in ranks.items():
        lines = []
        for t, rank in zip(topics, where):
            docs = ["N1", "N2"]
            docs.insert(rank - 1, "REL")
            lines += [f"{t} Q0 {doc} {r} {100 - r} {tag}" for r, doc in enumerate(docs, start=1)]
        r = c.post(f"/api/collections/{cid}/runs", content="\n".join(lines) + "\n", headers=auth(world.tokens["alpha"]))
        assert r.status_code == 201, r.text
        ids[tag] = r.json()["id"]
    doc = api_compare(world, ids["A"], ids["B"], metric="AP", cid=cid, role="admin")
    assert (doc["wins"], doc["ties"], doc["losses"]) == (1, 1, 1)
    text = visible_text(compare_page(world, ids["A"], ids["B"], metric="AP", cid=cid, role="admin"))
    assert "1 win, 1 tie, 1 loss for A over the 3 topics both runs submitted" in text
    assert "Student t, 2 degrees of freedom" in text
    assert "1 wins" not in text and "1 losses" not in text and "(s)" not in text
