"""The pipeline's rules under races, retries, bad settings and deletions, on both databases.

The use cases are called in-process (no worker): each test sets up the exact situation a
review found (a duplicate delivery, a sweep racing a worker, tests that cannot run, ...)."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from sqlalchemy import delete, func, select

from service.errors import InvalidMeasure
from service.evaluation.common.work import Limits, TaskName
from service.evaluation.computing.evaluating import evaluate_item
from service.evaluation.computing.significance_tests import run_tests
from service.evaluation.computing.sweeping import refresh_stale, sweep
from service.evaluation.organising.planning import plan_job
from service.evaluation.organising.setup import ConfigSpec, add_qrels, add_run, ensure_collection, set_config
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


def job_item(factory, item_id: int) -> JobItem:  # type: ignore[no-untyped-def]
    with factory() as s:
        return s.get(JobItem, item_id)


def wait_until(predicate, timeout: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


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


def test_sweeper_requeues_dead_attempts_once_and_never_live_ones(backend: Backend) -> None:
    job_id, items = setup(backend, {"a": run_text("a"), "b": run_text("b", shift=2), "c": run_text("c", shift=1)})
    factory = backend.factory()
    now = utcnow()
    with transaction(factory) as s:
        dead = s.get(JobItem, items[0])  # its worker died: nobody renewed the lease
        dead.status, dead.started_at, dead.attempts = "evaluating", now - timedelta(seconds=60), 1
        dead.lease_expires_at = now - timedelta(seconds=1)
        alive = s.get(JobItem, items[1])  # running for an hour, but its heartbeat renews the lease
        alive.status, alive.started_at, alive.attempts = "evaluating", now - timedelta(hours=1), 1
        alive.lease_expires_at = now + timedelta(seconds=30)
    followups = sweep(factory, lost_after=0.0)
    sent = [(f.task, f.id) for f in followups]
    assert sent.count((TaskName.EVALUATE_ITEM, items[0])) == 1 and (TaskName.EVALUATE_ITEM, items[1]) not in sent
    assert [f for f in sweep(factory) if f.id == items[0]] == []  # just sent: not again
    assert evaluate_item(factory, items[1]) == []  # a redelivery for the live attempt does nothing
    with factory() as s:
        assert (s.get(JobItem, items[1]).status, s.get(JobItem, items[1]).attempts) == ("evaluating", 1)
        assert s.get(JobItem, items[0]).status == "queued"
    with transaction(factory) as s:  # the live attempt finishes after all
        s.get(JobItem, items[1]).status = "queued"
    drain(backend, items)
    assert job(backend, job_id).status == "done"


def test_a_redelivered_message_takes_over_a_dead_attempt(backend: Backend) -> None:
    job_id, items = setup(backend, {"a": run_text("a"), "b": run_text("b", shift=2)})
    factory = backend.factory()
    with transaction(factory) as s:
        item = s.get(JobItem, items[0])
        item.status, item.started_at, item.attempts = "evaluating", utcnow(), 1
        item.lease_expires_at = utcnow() - timedelta(seconds=1)
    drain(backend, items)  # the message comes back (a retry, the broker's redelivery): taken over
    with factory() as s:
        item = s.get(JobItem, items[0])
        assert (item.status, item.attempts, item.lease_expires_at) == ("done", 2, None)
        assert s.scalar(select(func.count()).select_from(RunEvaluation)) == 2
    assert job(backend, job_id).status == "done"


def test_waiting_tests_are_resent_unless_alive_and_fail_after_max_attempts(backend: Backend) -> None:
    _, items = setup(backend, {"a": run_text("a"), "b": run_text("b", shift=2)})
    drain(backend, items)
    factory = backend.factory()
    with transaction(factory) as s:
        coll = s.scalar(select(Collection))
        j, _ = plan_job(s, coll, "manual")  # everything evaluated: a tests-only job
        tests_job = j.id
    assert sweep(factory, lost_after=60.0) == []  # just sent
    assert [(f.task, f.id) for f in sweep(factory, lost_after=0.0)] == [(TaskName.RUN_TESTS, tests_job)]
    with transaction(factory) as s:  # a round claimed it and is alive
        s.get(Job, tests_job).tests_queued_at, s.get(Job, tests_job).tests_attempts = (
            utcnow() + timedelta(seconds=30), 1)
    assert sweep(factory, lost_after=0.0) == [] and run_tests(factory, tests_job) == []
    with transaction(factory) as s:  # three rounds claimed it, and all died
        s.get(Job, tests_job).tests_queued_at, s.get(Job, tests_job).tests_attempts = (
            utcnow() - timedelta(seconds=1), 3)
    assert sweep(factory, lost_after=0.0, max_attempts=3) == []
    j = job(backend, tests_job)
    assert j.status == "failed" and "did not complete after 3 attempts" in j.error


def test_a_long_evaluation_that_renews_its_lease_is_never_taken_over(backend: Backend) -> None:
    """Issue 5: an attempt running long, but alive, keeps its item; sweeps and duplicate
    deliveries meanwhile change nothing."""
    _, items = setup(backend, {"a": run_text("a"), "b": run_text("b", shift=2)})
    factory = backend.factory()
    limits = Limits(lease=0.6, pause=2.5)  # renewed every 0.2 s, "computing" for 2.5 s
    with ThreadPoolExecutor(1) as pool:
        attempt = pool.submit(evaluate_item, factory, items[0], limits)
        wait_until(lambda: job_item(factory, items[0]).status == "evaluating")
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            for f in sweep(factory, lost_after=0.0):
                assert f.id != items[0]
            assert evaluate_item(factory, items[0], limits) == []
            time.sleep(0.1)
        assert attempt.result(timeout=30) == []  # the other item is pending: no tests yet
    with factory() as s:
        item = s.get(JobItem, items[0])
        assert (item.status, item.attempts) == ("done", 1)


def test_a_taken_over_attempt_is_interrupted_and_stores_nothing(backend: Backend) -> None:
    _, items = setup(backend, {"a": run_text("a"), "b": run_text("b", shift=2)})
    factory = backend.factory()
    with ThreadPoolExecutor(1) as pool:
        started = time.monotonic()
        zombie = pool.submit(evaluate_item, factory, items[0], Limits(lease=0.6, pause=20.0))
        wait_until(lambda: job_item(factory, items[0]).status == "evaluating")
        with transaction(factory) as s:  # its lease expired (it was paused, say) and the sweeper re-queued it
            s.get(JobItem, items[0]).status = "queued"
        drain(backend, items)  # another attempt claims and stores it
        assert zombie.result(timeout=30) == [] and time.monotonic() - started < 10  # interrupted at once
    with factory() as s:
        item = s.get(JobItem, items[0])
        assert (item.status, item.attempts) == ("done", 2)
        assert s.scalar(select(func.count()).select_from(RunEvaluation)) == 2


def test_a_run_beyond_the_time_or_size_budget_fails_with_the_reason(backend: Backend) -> None:
    job_id, items = setup(backend, {"a": run_text("a"), "b": run_text("b", shift=2), "c": run_text("c", shift=1)})
    factory = backend.factory()
    started = time.monotonic()
    assert evaluate_item(factory, items[0], Limits(pause=30.0, time_budget=0.5)) == []
    assert time.monotonic() - started < 10  # stopped at the budget, not after the 30 s
    assert evaluate_item(factory, items[1], Limits(max_lines=10)) == []  # runs of 20 lines
    drain(backend, items)  # nothing is retried: the third item alone is evaluated
    with factory() as s:
        a, b = s.get(JobItem, items[0]), s.get(JobItem, items[1])
        assert (a.status, a.attempts) == ("failed", 1) and "time budget of 0.5 s" in a.error
        assert (b.status, b.attempts) == ("failed", 0) and "CRANFIELD_EVAL_MAX_LINES" in b.error
        reasons = {r.tag: r.status_reason for r in s.scalars(select(Run).where(Run.status == "failed"))}
        assert "CRANFIELD_EVAL_TIME_BUDGET" in reasons["a"] and "20 lines" in reasons["b"]
    j = job(backend, job_id)
    assert (j.status, j.done, j.failed) == ("done", 1, 2)


def test_one_round_of_tests_serves_every_job_waiting_for_it(backend: Backend) -> None:
    """Issue 13: jobs of one collection finishing together share one round of tests; a job's
    round waits while another job still has pending items."""
    factory = backend.factory()
    with transaction(factory) as s:
        coll = ensure_collection(s, "c", ConfigSpec(official_metric="AP", metrics=("AP", "P@5")))
        add_qrels(s, coll, QRELS.encode(), "q")
    jobs, tests = [], []
    for i in range(5):  # five submissions, one job each
        with transaction(factory) as s:
            coll = s.scalar(select(Collection))
            add_run(s, coll, run_text(f"r{i}", shift=i).encode(), f"r{i}")
            j, followups = plan_job(s, coll, "submission")
            jobs.append((j.id, followups[0].id))
    for _, item in jobs[:4]:
        tests += evaluate_item(factory, item)
    assert [run_tests(factory, f.id) for f in tests] == [[]] * 4  # the fifth job has a pending item
    tests = evaluate_item(factory, jobs[4][1])
    for f in tests:
        run_tests(factory, f.id)
    with factory() as s:
        done = [s.get(Job, j) for j, _ in jobs]
        assert {j.status for j in done} == {"done"} and len({j.finished_at for j in done}) == 1
        assert all(j.report["meta"] == done[0].report["meta"] for j in done)
        # one round, of all five runs: one test per metric of the collection (AP, P@5)
        assert sorted((x.metric, len(x.run_ids)) for x in s.scalars(select(Significance))) == [("AP", 5), ("P@5", 5)]


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
        tests = [x.test for x in s.scalars(select(Significance).order_by(Significance.id))]
        assert tests == ["bootstrap"] * 2 + ["t"] * 2
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
    from service.evaluation.organising import setup as setup_module
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
        with pytest.raises(InvalidMeasure, match=r"no gain for level 2"):
            set_config(s, coll, ConfigSpec(official_metric="AP", metrics=("AP", "nDCG(gains={1:1})@10")))
        with pytest.raises(InvalidMeasure, match=r"no gain for level 2"):
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
