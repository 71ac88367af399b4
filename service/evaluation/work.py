"""Work for the workers: the task names, a follow-up, and a use case's outcome.

A use case never talks to the broker. It returns its result together with the follow-up
work (``Followup``: a task name and an id) that must be sent once its transaction has
committed; whoever committed sends them (the request's unit of work, a Celery task, the
CLI). The Celery task names are the values of :class:`TaskName`; which use case each one
runs is the table of :mod:`service.evaluation.task_table`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Generic, TypeVar

T = TypeVar("T")


class TaskName(StrEnum):
    """Every task the workers run, by its Celery name (stored in brokers' messages: never rename)."""

    EVALUATE_ITEM = "cranfield.evaluate_item"  # one job item: a run on a qrels version
    RUN_TESTS = "cranfield.run_tests"  # a job's pairwise tests, once its items are done
    RUN_ANALYSIS = "cranfield.run_analysis"  # a reusability or reduced-judgment analysis
    BUILD_POOL = "cranfield.build_pool"  # a requested pool (an Analysis row of kind "pool")
    SWEEP = "cranfield.sweep"  # periodic, no id: re-queue stuck work
    REFRESH = "cranfield.refresh"  # periodic, no id: re-evaluate stale results


@dataclass(frozen=True)
class Followup:
    """Work to send to the workers once the current transaction has committed."""

    task: TaskName
    id: int


@dataclass(frozen=True)
class Outcome(Generic[T]):
    """What a use case returns: its result and the work to send after the commit."""

    result: T
    followups: tuple[Followup, ...] = ()
