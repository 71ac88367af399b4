"""The one table from a task name to the use case that does the work.

Every task that takes an id runs ``USE_CASES[name](factory, id, limits)`` and returns the
follow-ups to send. The Celery tasks (``workers/tasks.py``) are registered from this table,
and anything that runs the work in-process (tests, a demo) reads it too, so the mapping
exists once. The periodic tasks (:attr:`TaskName.SWEEP`, :attr:`TaskName.REFRESH`,
:attr:`TaskName.PRUNE`) take no id and are not in it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType

from sqlalchemy.orm import Session, sessionmaker

from service.evaluation.analysing import analyses
from service.evaluation.common.work import Followup, Limits, TaskName
from service.evaluation.computing import evaluating, significance_tests
from service.evaluation.judging import judge_track, pools
from service.evaluation.reproducing import measuring

__all__ = ["USE_CASES", "Limits", "UseCase", "run_here", "use_case"]

UseCase = Callable[[sessionmaker[Session], int, Limits], list[Followup]]

USE_CASES: Mapping[TaskName, UseCase] = MappingProxyType({
    TaskName.EVALUATE_ITEM: lambda factory, id_, limits: evaluating.evaluate_item(factory, id_, limits),
    TaskName.RUN_TESTS: lambda factory, id_, limits: significance_tests.run_tests(factory, id_, limits),
    TaskName.RUN_ANALYSIS: lambda factory, id_, limits: analyses.compute(factory, id_, limits.max_attempts,
                                                                         limits.lease),
    TaskName.BUILD_POOL: lambda factory, id_, limits: pools.build_pool(factory, id_, limits.max_attempts,
                                                                         limits.lease),
    TaskName.RANK_JUDGES: lambda factory, id_, limits: judge_track.compute(factory, id_, limits.max_attempts,
                                                                           limits.lease),
    TaskName.MEASURE_REPRODUCTIONS: lambda factory, id_, limits: measuring.compute(factory, id_, limits.max_attempts,
                                                                                   limits.lease),
})


def use_case(task: TaskName | str) -> UseCase:
    """The use case of ``task``; a task name without one is a bug, refused loudly."""
    try:
        return USE_CASES[TaskName(task)]
    except (KeyError, ValueError):
        raise LookupError(f"no use case for the task {task!r}; known: {', '.join(USE_CASES)}") from None


def run_here(factory: sessionmaker[Session], followups: Iterable[Followup], limits: Limits = Limits()) -> None:
    """Do what the workers do, in this process, until no follow-up remains (tests, demos)."""
    queue = list(followups)
    while queue:
        f = queue.pop(0)
        queue += use_case(f.task)(factory, f.id, limits)
