"""Runs x topics score matrices of the RAG metrics (service/metrics/rag.py), as
:class:`~service.metrics.scoring.Evaluation` holds them for ranked lists, so that means,
output and significance work on them unchanged (docs/rag.md).

Rules:

* The nugget metrics are evaluated on the assignments' topics (with a nuggets file: its
  topics), the support metrics on the topics of the support files.
* A run is judged by the assignments when it has a row there, by the support files when it
  has a line there; a run a judgment file does not know is not evaluated on its metrics (its
  cells are not evaluated, and it is named in :attr:`RagEvaluation.not_judged`).
* A topic a judged run did not answer scores 0 (``missing="zero"``, as ``--missing zero``) or
  is left out of its mean (``missing="skip"``).
* An undefined value (Vital on a topic without vital nuggets; precision of an answer without
  a judged pair) is NaN and left out of the run's mean; :attr:`RagEvaluation.undefined` lists them.
* A support file's ``team.run`` id is matched to an assignments run ``run`` by
  :func:`match_runs`; ids left unmatched keep their own name and are listed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from service.errors import InvalidInput, InvalidMeasure
from service.formats.rag_judgments import Assignments, SupportAnswer
from service.metrics.rag import NUGGET_METRICS, SUPPORT_METRICS, is_rag, nugget_score, support_scores
from service.metrics.scoring import EvalSettings, Evaluation, parse_measures
from service.metrics.spec import Measure


@dataclass(frozen=True)
class RagEvaluation:
    evaluation: Evaluation
    #: Per metric, whether each (run, topic) cell is evaluated (its value may still be NaN: undefined).
    evaluated: dict[Measure, np.ndarray] = field(repr=False)
    #: Per metric (canonical name), the (run, topic) cells whose value is undefined, with why.
    undefined: dict[str, list[tuple[str, str, str]]]
    #: Per (run, topic) of the support files: unjudged pairs and sentences left out (first, every).
    unjudged: dict[tuple[str, str], dict[str, tuple[int, int]]]
    #: Support-file run ids matched to no assignments run (kept under their own name).
    unmatched: tuple[str, ...]
    #: Per family ("nuggets", "support"), the runs its judgments do not cover.
    not_judged: dict[str, tuple[str, ...]]


def match_runs(support_ids: Iterable[str], runs: Sequence[str], aliases: Mapping[str, str] | None = None
               ) -> tuple[dict[str, str], tuple[str, ...]]:
    """Each support-file run id's assignments run: ``aliases`` first (support id -> run), then
    the id itself, then the id without its team (``team.run`` -> ``run``: the text after the
    first dot). Returns the mapping of the matched ids and the ids matched to none (sorted).
    Two ids matched to one run are refused."""
    known = set(runs)
    aliases = dict(aliases or {})
    for sid, run in aliases.items():
        if run not in known:
            raise InvalidInput("--run-map", None, f"{sid}={run}: no run {run!r} in the assignments")
    matched: dict[str, str] = {}
    unmatched: list[str] = []
    for sid in sorted(set(support_ids)):
        if sid in aliases:
            matched[sid] = aliases[sid]
        elif sid in known:
            matched[sid] = sid
        elif "." in sid and sid.split(".", 1)[1] in known:
            matched[sid] = sid.split(".", 1)[1]
        else:
            unmatched.append(sid)
    by_run: dict[str, str] = {}
    for sid, run in matched.items():
        if run in by_run:
            raise InvalidInput("--support", None, f"the support runs {by_run[run]!r} and {sid!r} both match run {run!r}")
        by_run[run] = sid
    return matched, tuple(unmatched)


def support_by_answer(support: Iterable[SupportAnswer], runs: Sequence[str],
                      aliases: Mapping[str, str] | None = None,
                      ) -> tuple[dict[tuple[str, str], SupportAnswer], tuple[str, ...]]:
    """The support judgments keyed by (assignments run, topic) (:func:`match_runs`; an id
    matched to none keeps its own name), and the ids matched to none. Two ids matched to one
    run, or an answer judged in two places, are refused (file and line of both)."""
    support = list(support)
    matched, unmatched = match_runs((a.run for a in support), runs, aliases)
    by_answer: dict[tuple[str, str], SupportAnswer] = {}
    for a in support:
        key = (matched.get(a.run, a.run), a.topic)
        if key in by_answer:
            other = by_answer[key]
            raise InvalidInput(a.source, a.line, f"run {a.run!r} on topic {a.topic!r} is judged again "
                                                 f"({other.source}:{other.line})")
        by_answer[key] = a
    return by_answer, unmatched


def evaluate_rag(measures: Iterable[str | Measure], assignments: Assignments | None = None,
                 support: Sequence[SupportAnswer] = (), *, missing: str = "zero",
                 run_map: Mapping[str, str] | None = None) -> RagEvaluation:
    """Score every run on every RAG metric per topic."""
    settings = EvalSettings(missing=missing)  # type: ignore[arg-type]
    ms = parse_measures(measures)
    for m in ms:
        if not is_rag(m):
            raise InvalidMeasure(f"{m} is not a RAG metric (nugget_*, support_*: `cranfield metrics`)")
    nugget_ms = [m for m in ms if m.name in NUGGET_METRICS]
    support_ms = [m for m in ms if m.name in SUPPORT_METRICS]
    if nugget_ms and assignments is None:
        raise InvalidMeasure(f"{nugget_ms[0]} needs nugget assignments (--assignments)")
    if support_ms and not support:
        raise InvalidMeasure(f"{support_ms[0]} needs citation-support judgments (--support)")

    assigned_runs = assignments.runs if assignments is not None else ()
    by_answer, unmatched = support_by_answer(support, assigned_runs, run_map)
    support_runs = sorted({run for run, _ in by_answer})
    support_topics = sorted({t for _, t in by_answer})
    nugget_topics = sorted(assignments.topics) if assignments is not None else []
    runs = tuple(sorted(set(assigned_runs) | set(support_runs)))
    topics = tuple(sorted(set(nugget_topics) | set(support_topics)))
    ri = {r: i for i, r in enumerate(runs)}
    ti = {t: j for j, t in enumerate(topics)}
    shape = (len(runs), len(topics))
    scores = {m: np.full(shape, np.nan) for m in ms}
    evaluated = {m: np.zeros(shape, dtype=bool) for m in ms}
    undefined: dict[str, list[tuple[str, str, str]]] = {str(m): [] for m in ms}
    fill = 0.0 if settings.missing == "zero" else np.nan

    if assignments is not None and nugget_ms:
        for run in assigned_runs:
            for qid in nugget_topics:
                topic = assignments.topics[qid]
                codes = assignments.labels.get((run, qid))
                vital = np.array(topic.vital, dtype=bool)
                for m in nugget_ms:
                    cell = (ri[run], ti[qid])
                    if m.name == "nugget_vital" and not vital.any():
                        evaluated[m][cell] = True  # undefined whether answered or not
                        undefined[str(m)].append((run, qid, "the topic has no vital nugget"))
                        continue
                    if codes is None:
                        evaluated[m][cell] = settings.missing == "zero"
                        scores[m][cell] = fill
                        continue
                    evaluated[m][cell] = True
                    scores[m][cell] = nugget_score(m, codes, vital)

    def answered(run: str, topic: str) -> bool:
        return assignments is not None and (run, topic) in assignments.labels

    unjudged: dict[tuple[str, str], dict[str, tuple[int, int]]] = {}
    if support_ms:
        for run in support_runs:
            for topic in support_topics:
                cell = (ri[run], ti[topic])
                answer = by_answer.get((run, topic))
                counts = {mode: support_scores(answer.sentences, mode) for mode in ("first", "every")} \
                    if answer is not None else {}
                if counts:
                    unjudged[(run, topic)] = {mode: (c.unjudged_pairs, c.unjudged_sentences)
                                              for mode, c in counts.items()}
                for m in support_ms:
                    if answer is None and m.name == "support_precision" and answered(run, topic):
                        # an answer (the assignments have it) that no support file judged: it has
                        # no judged pair, so no precision (never 0: docs/rag.md); left out of the
                        # means, listed as undefined. A topic not answered at all is `missing`'s.
                        evaluated[m][cell] = True
                        undefined[str(m)].append((run, topic, "no judged citation (not in the support judgments)"))
                        continue
                    evaluated[m][cell] = answer is not None or settings.missing == "zero"
                    if answer is None:
                        scores[m][cell] = fill
                        continue
                    c = counts[str(m.get("citations"))]
                    value = c.precision if m.name == "support_precision" else c.recall
                    scores[m][cell] = value
                    if math.isnan(value):
                        why = "no judged citation" if m.name == "support_precision" else "no sentence to count"
                        undefined[str(m)].append((run, topic, why))

    not_judged = {
        "nuggets": tuple(r for r in runs if r not in set(assigned_runs)) if nugget_ms else (),
        "support": tuple(r for r in runs if r not in set(support_runs)) if support_ms else (),
    }
    evaluation = Evaluation(topics, runs, ms, scores, settings)
    return RagEvaluation(evaluation, evaluated, undefined, unjudged, unmatched, not_judged)


@dataclass(frozen=True)
class RunInputs:
    """What :func:`evaluate_rag` reads of each run, as digests: two judgments whose digests of a
    run are equal give that run the same scores on every RAG metric, whatever else changed (so
    a service re-scores only the runs a new version changed, docs/rag.md). ``unjudged`` is the
    digest of a run the judgments do not name (its cells depend only on the shared part)."""

    runs: dict[str, str]
    unjudged: str

    def of(self, run: str) -> str:
        return self.runs.get(run, self.unjudged)


def run_inputs(assignments: Assignments | None = None, support: Sequence[SupportAnswer] = (), *,
               run_map: Mapping[str, str] | None = None) -> RunInputs:
    """Per run, a digest of everything :func:`evaluate_rag` reads to score it: the parts every
    run shares (the nugget topics with each nugget's importance, the support topics, the
    grades) and the run's own rows (its assignment codes per topic, its matched support
    judgments per topic). Nugget texts and queries are left out: no score reads them. Keep in
    step with :func:`evaluate_rag` (tests/unit/test_rag_partial.py checks that a run whose
    digest is unchanged keeps its scores)."""
    import hashlib

    assigned_runs = assignments.runs if assignments is not None else ()
    by_answer, _ = support_by_answer(support, assigned_runs, run_map)
    support_topics = sorted({t for _, t in by_answer})
    nugget_topics = sorted(assignments.topics) if assignments is not None else []
    shared = hashlib.sha256()
    shared.update(repr(("grades", assignments.grades if assignments is not None else None)).encode())
    for qid in nugget_topics:
        shared.update(repr(("nuggets", qid, assignments.topics[qid].vital)).encode())  # type: ignore[union-attr]
    shared.update(repr(("support topics", support_topics)).encode())
    base = shared.digest()
    assigned = set(assigned_runs)

    def digest(run: str) -> str:
        h = hashlib.sha256(base)
        h.update(repr(("run", run)).encode())
        if assignments is not None and run in assigned:
            for qid in nugget_topics:
                codes = assignments.labels.get((run, qid))
                h.update(repr(("assigned", qid, None if codes is None else codes.tobytes())).encode())
        for topic in support_topics:
            answer = by_answer.get((run, topic))
            if answer is not None:
                h.update(repr(("support", topic, answer.sentences)).encode())
        return h.hexdigest()

    runs = sorted(assigned | {run for run, _ in by_answer})
    unjudged = hashlib.sha256(base + b"not judged").hexdigest()
    return RunInputs({run: digest(run) for run in runs}, unjudged)
