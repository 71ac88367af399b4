"""The reproducibility room's pure parts (issue 28): the verdict's rule (docs/reproducibility.md,
"Reading the board") branch by branch, the stored rows of one reproduction against the core's
figures on the same inputs, and the CSV's columns."""

from __future__ import annotations

import math

import numpy as np
import pytest

from service.evaluation.publishing.exports import REPRODUCIBILITY_COLUMNS as CSV_COLUMNS
from service.evaluation.publishing.exports import reproducibility_csv as board_csv
from service.evaluation.publishing.exports import reproducibility_latex
from service.evaluation.reproducing.board import verdict
from service.evaluation.reproducing.measuring import ORDER, measure
from service.metrics.stats import reproducibility as rp


def _pair(er, lo, hi, dri=0.02):  # type: ignore[no-untyped-def]
    return {"effect": {"ER": er, "ER_low": lo, "ER_high": hi, "DeltaRI": dri}, "baseline": None}


@pytest.mark.parametrize(("row", "expected"), [
    (_pair(0.93, 0.71, 1.12), "effect reproduced: ER 0.93 [0.71, 1.12], DeltaRI 0.02"),
    (_pair(0.5, 0.2, 0.8), "smaller effect reproduced: ER 0.50 [0.20, 0.80], DeltaRI 0.02"),
    (_pair(1.6, 1.2, 2.0), "larger effect than the original: ER 1.60 [1.20, 2.00], DeltaRI 0.02"),
    (_pair(0.3, -0.1, 0.7), "effect not reproduced: ER 0.30 [-0.10, 0.70], DeltaRI 0.02"),
    (_pair(0.3, 0.0, 1.1), "effect not reproduced: ER 0.30 [0.00, 1.10], DeltaRI 0.02"),  # lo = 0: no improvement in reach
    (_pair(None, None, None), "effect undefined: the original pair shows no improvement on AP"),
    ({"effect": None, "baseline": {"RMSE": 0.0312, "p_value": 0.41, "test": "paired t"}},
     "scores reproduced: RMSE 0.031, paired t p 0.410"),
    ({"effect": None, "baseline": {"RMSE": 0.2, "p_value": 0.001, "test": "paired t"}},
     "scores differ: RMSE 0.200, paired t p 0.001"),
    ({"effect": None, "baseline": {"RMSE": None, "mean_original": 0.35, "mean_reproduction": 0.41,
                                   "p_value": 0.2, "test": "Student t"}},
     "means reproduced: 0.350 (original) and 0.410 (reproduction), Student t p 0.200"),
    ({"effect": None, "baseline": None, "note": "waiting for the evaluation of runs 4"},
     "waiting for the evaluation of runs 4"),
])
def test_the_verdicts_rule(row, expected) -> None:  # type: ignore[no-untyped-def]
    assert verdict(row, "AP") == expected


def _scores(rng: np.random.Generator, topics: list[str], shift: float = 0.0) -> dict[str, float]:
    return {t: float(np.clip(rng.uniform(0, 0.6) + shift, 0, 1)) for t in topics}


def test_the_stored_rows_are_the_cores_figures() -> None:
    rng = np.random.default_rng(28)
    topics = [f"t{i}" for i in range(12)]
    ob, oa = _scores(rng, topics), _scores(rng, topics, 0.2)
    rb, ra = _scores(rng, topics), _scores(rng, topics, 0.15)
    docs = [f"d{i}" for i in range(30)]
    rank = {t: list(rng.permutation(docs)) for t in topics}
    rank_r = {t: list(rng.permutation(docs)) for t in topics}
    rows = measure([{"AP": ob}, {"AP": oa}], [{"AP": rb}, {"AP": ra}], ["AP"], True,
                   ([rank, rank], [rank_r, rank]))
    by = {(r["metric"], r["part"]): r for r in rows}
    assert set(by) == {(ORDER, "baseline"), (ORDER, "advanced"), ("AP", "baseline"), ("AP", "advanced"),
                       ("AP", "effect")}
    d = rp.document_order(rank, rank_r)
    assert by[(ORDER, "baseline")]["summary"]["KTU"] == d.ktu_mean
    assert by[(ORDER, "advanced")]["summary"]["KTU"] == 1.0  # the same lists
    assert by[(ORDER, "baseline")]["values"].shape == (2, 12)
    c = rp.compare_run(oa, ra, same_collection=True)
    assert by[("AP", "advanced")]["summary"]["RMSE"] == c.rmse and by[("AP", "advanced")]["summary"]["p_value"] == c.p_value
    assert by[("AP", "advanced")]["summary"]["delta"] == c.reproduction_mean - c.original_mean
    assert by[("AP", "advanced")]["summary"]["relative_delta"] == pytest.approx(
        (c.reproduction_mean - c.original_mean) / c.original_mean)
    e = rp.compare_effect(ob, oa, rb, ra, same_collection=True)
    s = by[("AP", "effect")]["summary"]
    assert (s["ER"], s["DeltaRI"], s["ER_low"], s["DeltaRI_high"]) == (e.er, e.delta_ri, e.intervals.er_low,
                                                                       e.intervals.dri_high)
    gains = by[("AP", "effect")]["values"]
    assert gains[0, 3] == pytest.approx(oa["t3"] - ob["t3"]) and gains[1, 3] == pytest.approx(ra["t3"] - rb["t3"])


def test_another_collection_keeps_each_runs_topics() -> None:
    rng = np.random.default_rng(5)
    orig = _scores(rng, ["a", "b", "c"])
    rep = _scores(rng, ["x", "y"])
    rows = measure([{"AP": orig}], [{"AP": rep}], ["AP"], False)
    assert len(rows) == 1 and rows[0]["summary"]["RMSE"] is None and rows[0]["summary"]["test"] == "Student t"
    assert rows[0]["topics"] == ["a", "b", "c", "x", "y"]
    assert math.isnan(rows[0]["values"][0, 3]) and math.isnan(rows[0]["values"][1, 0])
    # a metric one side lacks is left out, not an error
    assert measure([{"AP": orig}], [{"P@10": rep}], ["AP", "P@10"], False) == []


def test_csv_has_a_line_per_reproduction_and_empty_cells_for_undefined() -> None:
    row = {"id": 3, "kind": "run", "run": {"tag": "r", "team": "t"}, "advanced_run": None,
           "original": {"run": {"tag": "o"}, "advanced_run": None}, "same_collection": False, "order": None,
           "baseline": {"mean_original": 0.5, "mean_reproduction": 0.4, "RMSE": None, "nRMSE": None,
                        "p_value": 0.25, "test": "Student t"}, "advanced": None, "effect": None,
           "verdict": "means reproduced: x"}
    text = board_csv({"metric": "AP", "rows": [row]})
    header, line = text.splitlines()
    assert header.split(",") == list(CSV_COLUMNS)
    cells = dict(zip(CSV_COLUMNS, line.split(",")))
    assert cells["RMSE_baseline"] == "" and cells["p_baseline"] == "0.25" and cells["ER"] == ""


def test_latex_has_a_row_per_reproduction_escaped_with_its_intervals_and_verdict() -> None:
    row = {"id": 4, "kind": "pair", "run": {"tag": "b_rep", "team": "team_1"}, "advanced_run": {"tag": "a&rep"},
           "original": {"run": {"tag": "bm25base_p"}, "advanced_run": {"tag": "p_exp_rm3_bert"}},
           "same_collection": True, "order": {"advanced": {"KTU": 0.5, "RBO": 0.75}},
           "baseline": {"mean_original": 0.3, "mean_reproduction": 0.31, "RMSE": 0.1, "nRMSE": 0.2, "p_value": 0.5},
           "advanced": {"mean_original": 0.4, "mean_reproduction": 0.39, "RMSE": 0.05, "nRMSE": 0.1, "p_value": 0.6},
           "effect": {"ER": 0.93, "ER_low": 0.71, "ER_high": 1.12, "DeltaRI": 0.02, "DeltaRI_low": -0.1,
                      "DeltaRI_high": 0.1},
           "verdict": "effect reproduced: ER 0.93 [0.71, 1.12], DeltaRI 0.02"}
    text = reproducibility_latex({"metric": "nDCG@10", "rows": [row]})
    assert text.startswith("\\begin{tabular}") and "\\end{tabular}" in text
    assert "team\\_1 & b\\_rep + a\\&rep & bm25base\\_p + p\\_exp\\_rm3\\_bert & 0.500 & 0.750 & 0.3900 (0.4000)" in text
    assert "0.930 [0.710, 1.120]" in text and "0.020 [-0.100, 0.100]" in text and "ER 0.93 [0.71, 1.12]" in text
