"""Issue 37, item 2: every CSV export is data: booleans ``true``/``false`` (Python's ``True``
printed before), a run's stated fields likewise, empty where not stated; numbers unrounded."""

from __future__ import annotations

import csv
import io

import numpy as np

from service.evaluation.publishing.exports import _csv, metrics_board_csv


def test_booleans_are_true_and_false() -> None:
    text = _csv(["run", "baseline", "same_collection", "mean"],
                [["a", True, np.bool_(False), 0.123456789012], ["b", False, None, None], ["=cmd", True, True, 1]])
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[1] == ["a", "true", "false", "0.123456789012"]
    assert rows[2] == ["b", "false", "", ""]
    assert rows[3][:3] == ["'=cmd", "true", "true"]  # text still neutralised for spreadsheets
    assert "True" not in text and "False" not in text


def test_a_runs_stated_fields_are_true_false_or_empty() -> None:
    doc = {"metrics": [{"metric": "AP"}], "rows": [
        {"rank": 1, "run": "r1", "team": "t", "run_type": "automatic", "uses_training_data": True,
         "uses_external_resources": False, "means": {"AP": 0.5}},
        {"rank": 2, "run": "r2", "team": "t", "run_type": None, "uses_training_data": None,
         "uses_external_resources": None, "means": {}}]}
    rows = list(csv.DictReader(io.StringIO(metrics_board_csv(doc))))
    assert (rows[0]["uses_training_data"], rows[0]["uses_external_resources"]) == ("true", "false")
    assert (rows[1]["uses_training_data"], rows[1]["uses_external_resources"], rows[1]["AP"]) == ("", "", "")
