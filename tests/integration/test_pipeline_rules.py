"""The pipeline's rules under races, retries, bad settings and deletions, on both databases.

The use cases are called in-process (no worker): each test sets up the exact situation a
review found (a duplicate delivery, a sweep racing a worker, tests that cannot run, ...)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import delete, func, select

from service.errors import InvalidMeasure
from service.evaluation.evaluating import evaluate_item
from service.evaluation.planning import plan_job
from service.evaluation.significance_tests import run_tests
from service.evaluation.setup import ConfigSpec, add_qrels, add_run, ensure_collection, set_config
from service.evaluation.sweeping import refresh_stale, sweep
from service.evaluation.work import TaskName
from service.store.db import transaction
from service.store.models import Collection, Job, JobItem, Run, RunEvaluation, Score, Significance, utcnow
from tests.integration.conftest import Backend

QRELS = "".join(f"{t} 0 d{i} {i % 3}\n" for t in ("t1", "t2", "t3", "t4") for i in range(6))


def run_text(tag: str, topics: tuple[str, ...] = ("t1", "t2", "t3", "t4"), shift: int = 0) -> str:
    return "".join(f"{t} Q0 d{(i + shift) % 6} {i + 1} {10 - i} {tag}\n" for t in topics for i in range(5))


def setup(be: Backend, runs: dict[str, str], **spec: object) -> tuple[int, list[int]]:
    """A collection with the given runs and a planned job; returns (job id, item ids)."""
    with transaction(be.factory()) as s:
        coll = ensure_collection(s, "c", ConfigSpec(official_metric="AP", metrics=("AP", "P@5"), **spec))
        add_qrels(s, coll, QRELS.encode(), "q")
        for tag, text in runs.items():
            add_run(s, coll, text.encode(), tag)
        job, followups = plan_job(s, coll, "load")
        return job.id, [f.id for f in followups]


def drain(be: Backend, item_ids: list[int]) -> None:
    """Run every item and, when they trigger them, the tests (what the workers would do)."""
    factory = be.factory()
    for item_id in item_ids:
        for f in evaluate_item(factory, item_id):
            assert f.task == TaskName.RUN_TESTS
            run_tests(factory, f.id)


def job(be: Backend, job_id: int) -> Job:
    with be.factory()() as s:
        return s.get(Job, job_id)


def test_tests_that_cannot_run_are_reported_and_the_job_finishes(backend: Backend) -> None:
    # missing=skip with runs missing different topics: every topic is incomplete for some run.
    runs = {"a": run_text("a", ("t1", "t2")), "b": run_text("b", ("t3", "t4"), 1)}
    job_id, items = setup(backend, runs, evaluation={"missing": "skip"})
    drain(backend, items)
    j = job(backend, job_id)
    assert j.status == "done" and "AP" in j.report["test_errors"] and "tests not run for AP" in j.error
    with transaction(backend.factory()) as s:  # nothing stays stuck: a new plan is possible
        coll = s.scalar(select(Collection))
        again, followups = plan_job(s, coll, "manual")
        assert again.id != job_id and [f.task for f in followups] == [TaskName.RUN_TESTS]
    assert refresh_stale(backend.factory()) == []  # and the refresh does not loop on it


def test_a_run_with_one_scored_topic_is_stored_with_an_undefined_interval(backend: Backend) -> None:
    runs = {"a": run_text("a", ("t1",)), "b": run_text("b")}
    job_id, items = setup(backend, runs, evaluation={"missing": "skip"})
    drain(backend, items)
    with backend.factory()() as s:
        score = s.scalar(select(Score).join(RunEvaluation).join(Run).where(Run.tag == "a", Score.metric == "AP"))
        assert score.n_topics == 1 and score.mean is not None and score.ci_low is None and score.ci_high is None
        assert {r.status for r in s.scalars(select(Run))} == {"evaluated"}


def test_duplicate_deliveries_neither_count_twice_nor_use_up_attempts(backend: Backend) -> None:
    job_id, items = setup(backend, {"a": run_text("a"), "b": run_text("b", shift=2)})
    factory = backend.factory()
    with transaction(factory) as s:  # another worker holds item 0 ("evaluating")
        s.get(JobItem, items[0]).status = "evaluating"
    for _ in range(5):
        assert evaluate_item(factory, items[0]) == []
    with factory() as s:
        item = s.get(JobItem, items[0])
        assert (item.status, item.attempts) == ("evaluating", 0)
    drain(backend, [items[1], items[1]])  # item 1 twice: evaluated and counted once
    assert (job(backend, job_id).done, job(backend, job_id).status) == (1, "running")
    with factory() as s:
        assert s.scalar(select(func.count()).select_from(RunEvaluation)) == 1


def test_sweeper_requeues_stuck_items_once_and_gives_up_on_tests(backend: Backend) -> None:
    job_id, items = setup(backend, {"a": run_text("a"), "b": run_text("b", shift=2)})
    factory = backend.factory()
    with transaction(factory) as s:  # its worker died mid-task
        item = s.get(JobItem, items[0])
        item.status, item.started_at, item.attempts = "evaluating", utcnow() - timedelta(seconds=60), 1
    followups = sweep(factory, timeout=30.0)
    assert [(f.task, f.id) for f in followups].count((TaskName.EVALUATE_ITEM, items[0])) == 1
    drain(backend, items)
    assert job(backend, job_id).status == "done"
    # Tests that never complete: re-sent up to max_attempts, then the job fails with a reason.
    with transaction(factory) as s:
        coll = s.scalar(select(Collection))
        j, _ = plan_job(s, coll, "manual")  # everything evaluated: a tests-only job
        tests_job = j.id
    for _ in range(3):
        assert [f.task for f in sweep(factory, timeout=0.0, max_attempts=3)] == [TaskName.RUN_TESTS]
    assert sweep(factory, timeout=0.0, max_attempts=3) == []
    j = job(backend, tests_job)
    assert j.status == "failed" and "did not complete after 3 attempts" in j.error


def test_changed_test_settings_make_the_tests_stale(backend: Backend) -> None:
    _, items = setup(backend, {"a": run_text("a"), "b": run_text("b", shift=2)})
    drain(backend, items)
    assert refresh_stale(backend.factory()) == []
    with transaction(backend.factory()) as s:
        coll = s.scalar(select(Collection))
        set_config(s, coll, ConfigSpec(official_metric="AP", metrics=("AP", "P@5"),
                                       significance={"test": "t", "correction": "holm"}))
    followups = refresh_stale(backend.factory())
    assert [f.task for f in followups] == [TaskName.RUN_TESTS]  # scores are current; only the tests are not
    run_tests(backend.factory(), followups[0].id)
    with backend.factory()() as s:
        assert [x.test for x in s.scalars(select(Significance).order_by(Significance.id))] == ["bootstrap", "t"]
    assert refresh_stale(backend.factory()) == []


def test_runs_added_during_an_active_job_get_a_job_of_their_own(backend: Backend) -> None:
    job_id, items = setup(backend, {"a": run_text("a"), "b": run_text("b", shift=2)})
    with transaction(backend.factory()) as s:
        coll = s.scalar(select(Collection))
        add_run(s, coll, run_text("late", shift=4).encode(), "late")
        second, followups = plan_job(s, coll, "manual")
        assert second.id != job_id and second.total == 1 and len(followups) == 1
        same, none = plan_job(s, coll, "manual")  # nothing new: the active job is returned
        assert (same.id, none) == (second.id, [])


def test_a_failed_run_is_not_replanned_by_every_refresh(backend: Backend) -> None:
    _, items = setup(backend, {"a": run_text("a"), "b": run_text("b", shift=2)})
    with transaction(backend.factory()) as s:
        s.scalar(select(Run).where(Run.tag == "a")).file = b"corrupt"
    drain(backend, items)
    assert refresh_stale(backend.factory()) == []
    with backend.factory()() as s:
        assert s.scalar(select(Run.status).where(Run.tag == "a")) == "failed"


def test_gains_are_checked_on_the_stored_level_counts_without_parsing_the_qrels(
        backend: Backend, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Changing gains is a request: the judged levels come from the version's stored counts."""
    from service.evaluation import setup as setup_module
    from service.formats import readers

    with transaction(backend.factory()) as s:
        coll = ensure_collection(s, "g", ConfigSpec(official_metric="AP", metrics=("AP",)))
        add_qrels(s, coll, QRELS.encode(), "q")  # levels 0, 1 and 2

    def no_parsing(*args: object, **kwargs: object) -> None:
        raise AssertionError("the qrels were parsed")

    monkeypatch.setattr(setup_module, "parse_qrels", no_parsing)
    monkeypatch.setattr(readers, "parse_qrels", no_parsing)
    with transaction(backend.factory()) as s:
        coll = s.scalar(select(Collection).where(Collection.name == "g"))
        with pytest.raises(InvalidMeasure, match=r"no gain for level\(s\) 2"):
            set_config(s, coll, ConfigSpec(official_metric="AP", metrics=("AP", "nDCG(gains={1:1})@10")))
        with pytest.raises(InvalidMeasure, match=r"no gain for level\(s\) 2"):
            set_config(s, coll, ConfigSpec(official_metric="AP", levels=({"level": 1, "gain": 1},)))
        accepted = set_config(s, coll, ConfigSpec(official_metric="AP", metrics=("AP", "nDCG(gains={1:1,2:5})@10")))
        assert "nDCG(gains={1:1,2:5})@10" in accepted.metrics


def test_bad_significance_settings_are_refused() -> None:
    with pytest.raises(InvalidMeasure, match="significance test must be one of"):
        ConfigSpec(significance={"test": "nope"}).normalised()
    with pytest.raises(InvalidMeasure, match="alpha"):
        ConfigSpec(significance={"alpha": 2}).normalised()


def test_deleting_a_collection_removes_everything(backend: Backend) -> None:
    _, items = setup(backend, {"a": run_text("a"), "b": run_text("b", shift=2)})
    drain(backend, items)
    with transaction(backend.factory()) as s:
        coll = s.scalar(select(Collection))
        coll.current_config_id = coll.current_qrels_id = None
        s.flush()
        s.execute(delete(Collection))
    with backend.factory()() as s:
        for model in (Run, RunEvaluation, Score, Job, JobItem, Significance):
            assert s.scalar(select(func.count()).select_from(model)) == 0, model.__name__


def test_db_downgrade_needs_confirmation_for_base(backend: Backend, capsys) -> None:  # type: ignore[no-untyped-def]
    from service.cli import main

    assert main(["db", "downgrade", "--revision", "base"]) == 2
    assert "add --yes" in capsys.readouterr().err
    assert main(["db", "upgrade"]) == 0


def test_filesystem_broker_keeps_its_control_files_in_its_folder(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from service.config import settings
    from workers.app import make_app

    monkeypatch.setenv("CRANFIELD_BROKER_URL", "filesystem://")
    monkeypatch.setenv("CRANFIELD_BROKER_FOLDER", str(tmp_path / "broker"))
    settings.cache_clear()
    try:
        options = make_app().conf.broker_transport_options
    finally:
        monkeypatch.undo()
        settings.cache_clear()
    assert options["control_folder"] == str(tmp_path / "broker" / "control")
    assert options["data_folder_in"] == options["data_folder_out"] == str(tmp_path / "broker")
