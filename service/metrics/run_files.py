"""Evaluating many run files on every core: read and score them in worker processes.

``cranfield eval`` on a shared task's runs is one job per run file: each is read and scored
on its own (a run's per-topic scores do not depend on the other runs: the evaluator's batches
are rows of independent lists), so the files are split into groups, in order, and each group
is read and evaluated by one of ``processes`` forked workers, which inherit the parsed qrels.
Memory stays bounded whatever the number of runs: a worker holds one group's runs at a time
and sends back only their per-topic scores (runs x topics floats per metric). The scores are
the floats :func:`service.metrics.scoring.evaluate` gives for all the runs in one call
(tests/unit/test_run_files.py checks bit for bit).

Processes rather than threads: the reader's many short numpy calls hold the GIL (two reading
threads were slower than one), whereas processes share nothing but the qrels, inherited at
fork. Where ``fork`` is not available, or with one process or few runs, everything happens
in this process.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from service.formats.diversity import IntentQrels
from service.formats.readers import read_run
from service.formats.sampled import SampledQrels
from service.formats.types import Qrels, Run
from service.metrics.scoring import EvalSettings, Evaluation, evaluate, parse_measures
from service.metrics.spec import Measure

#: Runs a worker reads and evaluates at a time: few enough that memory stays small (a run of
#: 50 topics x 1000 documents is about 5 MB parsed), enough that a group costs more than its
#: round trip to the worker.
GROUP = 4

# What the forked workers inherit (set in the parent just before the pool is made).
_SHARED: dict[str, Any] = {}


def available_processes() -> int:
    """The cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def evaluate_run_files(
    qrels: Qrels,
    paths: Sequence[str],
    measures: Sequence[str | Measure],
    settings: EvalSettings | None = None,
    *,
    extra: IntentQrels | SampledQrels | None = None,
    order: str = "score",
    processes: int | None = None,
) -> Evaluation:
    """Read the run files ``paths`` and score them, as ``evaluate(qrels, [read_run(p) ...])``
    does, with ``processes`` workers (default: every available core)."""
    settings = settings or EvalSettings()
    ms = parse_measures(measures)
    processes = available_processes() if processes is None else max(1, processes)
    groups = [list(paths[i:i + GROUP]) for i in range(0, len(paths), GROUP)]
    parts: list[tuple[tuple[str, ...], tuple[str, ...], list[np.ndarray]]] = []
    if processes == 1 or len(groups) < 2 or "fork" not in multiprocessing.get_all_start_methods():
        parts = [_evaluate_group(qrels, group, ms, settings, extra, order) for group in groups]
    else:
        _SHARED.update(qrels=qrels, measures=ms, settings=settings, extra=extra, order=order)
        try:
            with multiprocessing.get_context("fork").Pool(min(processes, len(groups))) as pool:
                for outcome in pool.imap(_evaluate_shared_group, groups):
                    if isinstance(outcome, BaseException):
                        raise outcome
                    parts.append(outcome)
        finally:
            _SHARED.clear()
    if not parts:
        return evaluate(qrels, [], ms, settings, extra=extra)
    topics = parts[0][1]
    tags = tuple(tag for part in parts for tag in part[0])
    scores = {m: np.concatenate([part[2][i] for part in parts], axis=0) for i, m in enumerate(ms)}
    return Evaluation(topics, tags, ms, scores, settings)


def _evaluate_group(qrels: Qrels, group: list[str], ms: tuple[Measure, ...], settings: EvalSettings,
                    extra: IntentQrels | SampledQrels | None,
                    order: str) -> tuple[tuple[str, ...], tuple[str, ...], list[np.ndarray]]:
    runs: list[Run] = [read_run(path, order) for path in group]
    result = evaluate(qrels, runs, ms, settings, extra=extra)
    return result.runs, result.topics, [result.per_topic(m) for m in ms]


def _evaluate_shared_group(group: list[str]) -> Any:
    """In a worker: one group, with the qrels and settings inherited from the parent; an error
    is sent back to be raised there (as the same exception)."""
    try:
        return _evaluate_group(_SHARED["qrels"], group, _SHARED["measures"], _SHARED["settings"], _SHARED["extra"],
                               _SHARED["order"])
    except Exception as exc:  # noqa: BLE001  (re-raised by the parent)
        return exc

