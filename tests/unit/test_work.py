"""Task names: one enum, one table of use cases, the Celery tasks made from it."""

from __future__ import annotations

import pytest

from service.evaluation.common.work import Followup, Outcome, TaskName
from service.evaluation.computing.task_table import USE_CASES, Limits, run_here, use_case


def test_the_celery_task_names_do_not_change() -> None:
    """They are in brokers' queues and beat schedules: renaming one loses messages."""
    assert {n.name: n.value for n in TaskName} == {
        "EVALUATE_ITEM": "cranfield.evaluate_item", "RUN_TESTS": "cranfield.run_tests",
        "RUN_ANALYSIS": "cranfield.run_analysis", "BUILD_POOL": "cranfield.build_pool",
        "RANK_JUDGES": "cranfield.rank_judges", "MEASURE_REPRODUCTIONS": "cranfield.measure_reproductions",
        "SWEEP": "cranfield.sweep", "REFRESH": "cranfield.refresh",
        "PRUNE": "cranfield.prune"}


def test_every_task_with_an_id_has_one_use_case_and_a_celery_task() -> None:
    from workers.app import app
    from workers.tasks import TASKS

    assert set(USE_CASES) == set(TaskName) - {TaskName.SWEEP, TaskName.REFRESH, TaskName.PRUNE}
    assert set(TASKS) == set(USE_CASES)
    assert {n.value for n in TaskName} <= set(app.tasks)
    # the sweep is beat's own work (workers.beat), never a message behind the evaluations
    assert {entry["task"] for entry in app.conf.beat_schedule.values()} == {TaskName.REFRESH, TaskName.PRUNE}
    assert app.conf.beat_scheduler == "workers.beat:Scheduler"


def test_an_unknown_task_fails_loudly_instead_of_running_something_else() -> None:
    with pytest.raises(LookupError, match="no use case for the task 'cranfield.nope'"):
        use_case("cranfield.nope")
    with pytest.raises(LookupError, match="cranfield.sweep"):
        use_case(TaskName.SWEEP)  # periodic: no id, not in the table
    with pytest.raises(LookupError):
        run_here(None, [Followup("run_tests", 1)])  # type: ignore[arg-type]  (the old short names are gone)


def test_the_send_uses_the_enum_value_as_the_celery_name() -> None:
    from workers.tasks import send

    sent: list[tuple[str, list[int]]] = []

    class App:
        def send_task(self, name: str, args: list[int], queue: str) -> None:
            sent.append((name, args))

    send([Followup(TaskName.EVALUATE_ITEM, 3), Followup(TaskName.BUILD_POOL, 4)], App())  # type: ignore[arg-type]
    assert sent == [("cranfield.evaluate_item", [3]), ("cranfield.build_pool", [4])]


def test_background_work_is_sent_with_the_priority_redis_serves_last() -> None:
    """kombu's Redis transport pops priority 0 first (its lists in the order of its steps 0, 3,
    6, 9); a message without a priority is 0. tests/integration/test_judge_track.py shows the
    order on real workers."""
    from kombu.transport.redis import PRIORITY_STEPS

    from workers.tasks import BACKGROUND, send

    sent: list[tuple[int, dict[str, object]]] = []

    class App:
        def send_task(self, name: str, args: list[int], queue: str, **options: object) -> None:
            sent.append((args[0], options))

    send([Followup(TaskName.EVALUATE_ITEM, 3, background=True), Followup(TaskName.EVALUATE_ITEM, 4)],
         App())  # type: ignore[arg-type]
    assert sent == [(3, {"priority": BACKGROUND}), (4, {})]
    assert BACKGROUND == max(PRIORITY_STEPS) and min(PRIORITY_STEPS) == 0


def test_only_a_submissions_tests_round_waits_for_the_debounce(monkeypatch: pytest.MonkeyPatch) -> None:
    """A submission's tests are sent with the countdown (a burst of them costs one round); a
    whole collection's re-evaluation sends its round at once (issue 38)."""
    from service.config import settings
    from workers.tasks import send

    monkeypatch.setenv("CRANFIELD_TESTS_DEBOUNCE", "5")
    settings.cache_clear()

    sent: list[tuple[int, dict[str, object]]] = []

    class App:
        def send_task(self, name: str, args: list[int], queue: str, **options: object) -> None:
            sent.append((args[0], options))

    try:
        send([Followup(TaskName.RUN_TESTS, 1, debounce=True), Followup(TaskName.RUN_TESTS, 2),
              Followup(TaskName.EVALUATE_ITEM, 3, debounce=True)], App())  # type: ignore[arg-type]
    finally:
        settings.cache_clear()  # the next read sees the environment monkeypatch restores
    assert sent == [(1, {"countdown": 5.0}), (2, {}), (3, {})]


def test_outcome_and_limits_defaults() -> None:
    assert Outcome(1).followups == () and Limits() == Limits(max_attempts=3, pause=0.0)
