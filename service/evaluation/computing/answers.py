"""Scoring one answer run of a collection of answers on a ``rag`` version (issue 35), in the
shape :func:`service.metrics.evaluate` gives a ranked run's scores, so that storing, boards,
intervals and the pairwise tests read them unchanged.

* The RAG metrics (family ``rag``: the six nugget scores, citation support) come from the
  whole version's evaluation (:func:`service.metrics.rag_scoring.evaluate_rag`, cached on the
  version's judgments: a worker scores every run of a version from one), the run's row picked
  by its tag (the answer file's ``run_id``, which the assignments and, as ``team.run``, the
  support files name). A run the judgments do not know is not evaluated on their metrics (NaN).
* Every other metric scores the answer's ``references``, ranked in the order listed, against
  the version's retrieval qrels (the R of RAG), as a ranked run is scored.

Every run's scores have the same topics (every topic any part judges, sorted); a metric's
value is NaN on a topic its judgments do not cover.
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np

from service.evaluation.organising import answers
from service.evaluation.organising.answer_bundle import AnswerJudgments
from service.formats.rag_answers import references_run
from service.metrics import evaluate
from service.metrics.rag import is_rag
from service.metrics.rag_scoring import evaluate_rag
from service.metrics.scoring import EvalSettings, Evaluation, parse_measures


def _whole(judged: AnswerJudgments, measures: tuple[Any, ...], missing: str) -> Any:
    """The version's evaluation of every judged run on ``measures`` (computed once per worker)."""
    key = (tuple(str(m) for m in measures), missing)
    if key not in judged.cache:
        judged.cache[key] = evaluate_rag(measures, judged.assignments, judged.support, missing=missing)
    return judged.cache[key]


def evaluate_answers(judged: AnswerJudgments, blob: bytes, source: str, tag: str, metrics: list[str],
                     settings: EvalSettings) -> Evaluation:
    """The run's per-topic scores on every metric (one row), NaN where not evaluated."""
    ms = parse_measures(metrics)
    topics = tuple(judged.topics())
    column = {t: j for j, t in enumerate(topics)}
    scores = {m: np.full((1, len(topics)), np.nan) for m in ms}
    rag = tuple(m for m in ms if is_rag(m) and (m.name.startswith("nugget") and judged.assignments is not None
                                                 or m.name.startswith("support") and judged.support))
    if rag:
        whole = _whole(judged, rag, settings.missing)
        ev = whole.evaluation
        if tag in ev.runs:
            i = ev.runs.index(tag)
            cols = [column[t] for t in ev.topics]
            for m in rag:
                evaluated = whole.evaluated[m][i]
                scores[m][0, cols] = np.where(evaluated, ev.per_topic(m)[i], np.nan)
    ranked = [m for m in ms if not is_rag(m)]
    if ranked and judged.qrels.topics:
        answer_run = answers.read_stored(zlib.decompress(blob), source)
        if any(a.references for a in answer_run.answers):
            ev = evaluate(judged.qrels, [references_run(answer_run, source)], ranked, settings)
            cols = [column[t] for t in ev.topics]
            for m in ranked:
                scores[m][0, cols] = ev.per_topic(m)[0]
    return Evaluation(topics, (tag,), ms, scores, settings)
