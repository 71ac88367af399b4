"""``rag_scoring.run_inputs``: the digest of what each run's RAG scores read, on which a service
re-scores only the runs a new version changed (issue 35). Two properties on NIST's TREC 2024
RAG files under corrections of every kind: a run whose digest did not change has the same
scores on every RAG metric (so carrying its results is exact), and a run whose own rows
changed has a new digest (so it is re-scored)."""

from __future__ import annotations

import dataclasses
import gzip
import numpy as np
import pytest

from service.formats.rag_judgments import Assignments, SupportAnswer, TopicNuggets, read_assignments, read_support
from service.metrics.rag_scoring import evaluate_rag, run_inputs
from tests.conftest import require_shared

METRICS = ["nugget_all", "nugget_all(strict=true)", "nugget_vital", "nugget_vital(strict=true)", "nugget_weighted",
           "nugget_weighted(strict=true)", "support_precision", "support_recall",
           "support_precision(citations=every)", "support_recall(citations=every)"]


@pytest.fixture(scope="module")
def judged() -> tuple[Assignments, list[SupportAnswer]]:
    data = require_shared("data/trec-rag24")
    assignments = read_assignments(gzip.decompress((data / "nugget_assignment.20241108.jl.gz").read_bytes()), "a.jl")
    support = [a for name in ("final.citation_judgments_with_prediction.20241025.jsonl.gz",
                              "final.citation_judgments_without_prediction.20241025.jsonl.gz")
               for a in read_support(gzip.decompress((data / name).read_bytes()), name)]
    return assignments, support


def _scores(assignments: Assignments, support: list[SupportAnswer]) -> dict[str, dict[str, np.ndarray]]:
    ev = evaluate_rag(METRICS, assignments, support)
    out = {}
    for i, run in enumerate(ev.evaluation.runs):
        out[run] = {m: np.array([ev.evaluation.per_topic(m)[i], ev.evaluated[m][i]])
                    for m in ev.evaluation.measures}
        out[run]["topics"] = np.array(ev.evaluation.topics)
    return out


def _relabel(a: Assignments, run: str, topic: str, codes: np.ndarray | None) -> Assignments:
    labels = dict(a.labels)
    if codes is None:
        del labels[(run, topic)]
    else:
        labels[(run, topic)] = codes.astype(np.int8)
    return dataclasses.replace(a, labels=labels)


def _corrections(a: Assignments, support: list[SupportAnswer]) -> list[tuple[str, Assignments, list[SupportAnswer], set[str]]]:
    """(what, assignments, support, runs whose own rows changed)."""
    run, topic = sorted(a.labels)[7]
    flipped = 2 - a.labels[(run, topic)]
    topic_nuggets = a.topics[topic]
    more_vital = dataclasses.replace(topic_nuggets, vital=tuple(True for _ in topic_nuggets.vital))
    everyone = {r for r, _ in a.labels}
    answer = support[3]
    judged_again = dataclasses.replace(answer, sentences=tuple(tuple(2 for _ in s) for s in answer.sentences))
    matched = answer.run.split(".", 1)[-1]
    return [
        ("one run's codes on one topic", _relabel(a, run, topic, flipped), support, {run}),
        ("one run's row removed", _relabel(a, run, topic, None), support, {run}),
        ("a nugget's importance (shared)", dataclasses.replace(a, topics={**a.topics, topic: more_vital}), support,
         everyone),
        ("one answer's support", a, [judged_again if s is answer else s for s in support], {matched}),
        ("a support answer removed", a, [s for s in support if s is not answer], {matched}),
        ("nothing", a, list(support), set()),
    ]


def test_an_unchanged_digest_means_unchanged_scores(judged: tuple[Assignments, list[SupportAnswer]]) -> None:
    assignments, support = judged
    before_digest = run_inputs(assignments, support)
    before = _scores(assignments, support)
    assert set(assignments.runs) <= set(before_digest.runs)  # (and the support ids matched to none)
    for what, a, sup, touched in _corrections(assignments, support):
        digest = run_inputs(a, sup)
        after = _scores(a, sup)
        changed = {run for run in set(before) | set(after) if digest.of(run) != before_digest.of(run)}
        assert touched <= changed, what  # a run whose own rows changed is re-scored
        if what != "a nugget's importance (shared)":
            assert changed == touched, what  # ... and no other
        moved = set()
        for run in set(before) | set(after):
            same = run in before and run in after and list(before[run]["topics"]) == list(after[run]["topics"]) \
                and all(np.array_equal(before[run][m], after[run][m], equal_nan=True) for m in before[run] if m != "topics")
            if not same:
                moved.add(run)
                assert run in changed, (what, run)  # the property carrying relies on
        if what == "nothing":
            assert not moved and not changed
        else:
            assert moved, what  # the correction moved some score (the test reaches the property)


def test_a_topic_added_by_another_run_reaches_every_run(judged: tuple[Assignments, list[SupportAnswer]]) -> None:
    """A topic only one run is assigned on is still a topic of every run's scores (0 where not
    answered, under missing=zero): every digest moves, and so do the other runs' scores."""
    assignments, support = judged
    new = TopicNuggets("new-topic", "a question", ("a fact",), (True,), 1)
    run = assignments.runs[0]
    a = dataclasses.replace(assignments, topics={**assignments.topics, "new-topic": new},
                            labels={**assignments.labels, (run, "new-topic"): np.array([2], dtype=np.int8)})
    before, after = run_inputs(assignments, support), run_inputs(a, support)
    assert all(before.of(r) != after.of(r) for r in assignments.runs)
