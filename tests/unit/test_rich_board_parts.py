"""The pure parts of the richer boards: how a metric column explains itself, the run filters,
the CSV files (formula cells neutralised) and the topic and per-topic charts."""

from __future__ import annotations

import csv
import io

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from service.errors import BadRequest
from service.evaluation.publishing.boards import RunFilter, RunMeta, metric_column
from service.evaluation.publishing.exports import matrix_csv, metrics_board_csv, topics_csv
from service.portal import charts


def test_metric_columns_say_which_ndcg_the_direction_and_the_range() -> None:
    jk, ms = metric_column("nDCG@10", official=True), metric_column("MSnDCG@10")
    assert jk["official"] and "Järvelin & Kekäläinen" in jk["description"] and "cut at rank 10" in jk["description"]
    assert "trec_eval ndcg_cut" in ms["description"] and not ms["official"]
    based = metric_column("nDCG(base=10)@5")
    assert "base=10: log base a of J&K's discount" in based["description"]
    assert metric_column("Q'")["description"].count("condensed list") == 1
    assert metric_column("AP")["direction"] == "higher" and metric_column("AP")["bounds"] == {"low": 0.0, "high": 1.0}
    for descriptive in ("NumRet", "NumRel", "Judged@10", "RBPresidual@10"):
        assert metric_column(descriptive)["direction"] == "none", descriptive
    assert metric_column("DCG@10")["bounds"]["high"] is None


def test_run_filters_admit_runs_by_their_metadata() -> None:
    manual = RunMeta(1, True, "manual", True, None)
    automatic = RunMeta(2, False, "automatic", False, True)
    assert RunFilter().admits(manual) and not RunFilter().active
    assert RunFilter(run_type="manual").admits(manual) and not RunFilter(run_type="manual").admits(automatic)
    assert RunFilter(primary_only=True).admits(manual) and not RunFilter(primary_only=True).admits(automatic)
    assert RunFilter(training_data="yes").admits(manual) and RunFilter(training_data="no").admits(automatic)
    assert RunFilter(external_resources="unstated").admits(manual)
    assert not RunFilter(external_resources="unstated").admits(automatic)
    assert not RunFilter(run_type="manual").admits(None) and RunFilter().admits(None)
    for bad in ({"run_type": "robotic"}, {"training_data": "maybe"}, {"external_resources": "true"}):
        with pytest.raises(BadRequest):
            RunFilter(**bad)  # type: ignore[arg-type]


def test_csv_files_neutralise_formula_cells_and_keep_numbers() -> None:
    matrix = {"topics": ["=T1", "0002"], "rows": [{"run": "=HYPERLINK(1)", "team": "@team", "scores": [-0.5, None]}]}
    assert list(csv.reader(io.StringIO(matrix_csv(matrix)))) == [
        ["run", "team", "'=T1", "0002"], ["'=HYPERLINK(1)", "'@team", "-0.5", ""]]
    topics = {"items": [{"topic": "1", "runs": 2, "median": 0.5, "q1": 0.25, "q3": 0.75, "min": 0.0, "best": 1.0,
                         "best_runs": ["+A", "B"]}]}
    assert list(csv.reader(io.StringIO(topics_csv(topics))))[1][7] == "'+A B"
    board = {"metrics": [{"metric": "AP"}, {"metric": "P@5"}],
             "rows": [{"rank": 1, "run": "-x", "team": "t", "run_type": "manual", "uses_training_data": None,
                       "uses_external_resources": False, "means": {"AP": 0.5, "P@5": None}}]}
    assert list(csv.reader(io.StringIO(metrics_board_csv(board)))) == [
        ["rank", "run", "team", "run_type", "uses_training_data", "uses_external_resources", "AP", "P@5"],
        ["1", "'-x", "t", "manual", "", "false", "0.5", ""]]


@pytest.fixture
def drawn(monkeypatch: pytest.MonkeyPatch) -> list[Figure]:
    figures: list[Figure] = []

    def keep(fig: Figure, label: str) -> str:
        FigureCanvasAgg(fig).draw()
        figures.append(fig)
        return f"<svg aria-label='{label}'></svg>"

    monkeypatch.setattr(charts, "_to_svg", keep)
    monkeypatch.setattr(charts, "_CACHE", type(charts._CACHE)())
    return figures


def test_topic_chart_draws_a_box_per_topic_in_order_and_the_own_runs(drawn: list[Figure]) -> None:
    items = [{"topic": t, "min": 0.1 * k, "q1": 0.2, "median": 0.3 + 0.1 * k, "q3": 0.6, "best": 0.9,
              "own": {"A": 0.5, "B": None}} for k, t in enumerate(["0003", "0001", "0002"])]
    svg = charts.topic_difficulty_chart(items, ["A", "B"], "AP")
    assert "aria-label" in svg and "AP per topic" in svg
    ax = drawn[0].axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0003", "0001", "0002"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["A (yours)", "B (yours)"]
    assert ax.get_ylabel() == "AP"


def test_per_topic_chart_tells_a_missing_topic_from_a_zero(drawn: list[Figure]) -> None:
    charts.per_topic_chart(["1", "2", "3"], [0.0, 0.0, None], [None] * 3, [None] * 3, "run", "AP",
                           marks=[None, "missing", "unscored"])
    legend = [t.get_text() for t in drawn[0].axes[0].get_legend().get_texts()]
    assert "missing from the run" in legend and "not scored" in legend
    charts.per_topic_chart(["1"], [0.0], [None], [None], "run", "AP")  # marks are optional
    assert [t.get_text() for t in drawn[1].axes[0].get_legend().get_texts()] == ["run"]
