"""The portal's values in words (service.portal.presenters; issue 27, item 3)."""

from __future__ import annotations

import pytest

from service.portal.controllers.console_forms import LABELS
from service.portal.presenters import audit_details, job_summary, level_totals, setting_changes, shown


def test_settings_changes_are_lines_with_the_forms_labels() -> None:
    changes = [
        {"setting": "significance", "old": {"test": "bootstrap", "resamples": 1000, "alpha": 0.05},
         "new": {"test": "bootstrap", "resamples": 10000, "alpha": 0.05, "metrics": ["AP"]}},
        {"setting": "leaderboard_released", "old": False, "new": True},
        {"setting": "daily_run_quota", "old": None, "new": 5},
        {"setting": "evaluation", "old": {"order": "score"}, "new": {"order": "score", "depth": None}},
        {"setting": "levels", "old": [], "new": [{"level": 0, "label": "L0", "gain": 0.0},
                                                 {"level": 2, "label": "", "gain": None}]},
        {"setting": "submission_closes_at", "old": None, "new": "2031-01-01T12:30:00+00:00"},
    ]
    lines = [(c["label"], c["group"], c["old"], c["new"]) for c in setting_changes(changes, LABELS)]
    assert lines == [
        ("Resamples (B)", "Significance test", "1000", "10000"),
        ("Metrics tested", "Significance test", "the official metric only", "AP"),
        ("Board released", "", "no", "yes"),
        ("Daily run quota per team", "", "no limit", "5"),
        ("Relevance levels and gains", "", "as judged (gain = level)", "0 L0 (gain 0), 2"),
        ("Submissions close (UTC)", "", "never closes", "2031-01-01 12:30 UTC"),
    ]  # (evaluation: depth None either way, nothing changes)


@pytest.mark.parametrize(("value", "key", "words"), [
    (None, "team", "not set"), (True, "released", "yes"), (float("nan"), "mean", "not set"),
    (0.5, "alpha", "0.5"), ([], "hidden_topics", "none"), ({"a": 1, "b": None}, "", "a: 1"),
    ("", "description", "none"), ("x" * 300, "description", "x" * 199 + "…"),
])
def test_a_value_in_words(value: object, key: str, words: str) -> None:
    assert shown(value, key) == words


def test_audit_details_leave_out_what_has_no_value() -> None:
    assert audit_details({"token": "cf_abc", "role": "organiser", "name": "", "team": None, "released": True}) == [
        ("token", "cf_abc"), ("role", "organiser"), ("released", "yes")]
    assert audit_details(None) == []


def test_judgments_per_level_over_the_topics() -> None:
    assert level_totals({"t1": {"0": 141, "1": 6}, "t2": {"-1": 1, "1": 2, "10": 3}}) == [
        (-1, 1), (0, 141), (1, 8), (10, 3)]
    assert level_totals({}) == []


@pytest.mark.parametrize(("job", "words"), [
    ({"status": "running", "total": 15, "done": 3, "failed": 0}, "evaluating: 3 of 15 runs"),
    ({"status": "running", "total": 15, "done": 3, "failed": 1}, "evaluating: 4 of 15 runs, 1 failed"),
    ({"status": "running", "total": 0, "done": 0, "failed": 0}, "starting"),
    ({"status": "testing", "total": 0, "done": 0, "failed": 0},
     "running the significance tests (no run to re-evaluate)"),
    ({"status": "testing", "total": 1, "done": 1, "failed": 0}, "runs evaluated (1 of 1 run); running the significance tests"),
    ({"status": "done", "total": 15, "done": 15, "failed": 0}, "done: 15 of 15 runs evaluated"),
    ({"status": "done", "total": 0, "done": 0, "failed": 0},
     "done: the significance tests were run again (no run to re-evaluate)"),
    ({"status": "failed", "total": 4, "done": 2, "failed": 2}, "failed after 4 of 4 runs, 2 failed"),
])
def test_a_job_in_words(job: dict[str, object], words: str) -> None:
    assert job_summary(job) == words
