"""A run of a collection of answers as its page shows it (issue 35): each topic's answer, its
sentences with their citations and the citation-support judgments, and the topic's nuggets
with the assignment the run got, from the collection's current judgments.

Who sees what: the answers as whoever may see the run's file; the nuggets and support (the
judgments) as whoever may see the run's per-topic scores, never on a hidden topic of an
unrevealed split to those who see visible topics only.
"""

from __future__ import annotations

import zlib
from typing import Any

from sqlalchemy.orm import Session

from service.errors import Conflict
from service.evaluation.organising import answers
from service.evaluation.organising.answers import is_answers
from service.evaluation.organising.setup import cached_judgments
from service.evaluation.permissions import policy
from service.evaluation.permissions.access import Principal
from service.evaluation.runs import submissions
from service.evaluation.runs.run_results import hidden_from
from service.metrics.rag_scoring import match_runs
from service.store.models import QrelsVersion

ASSIGNMENT = {2: "support", 1: "partial_support", 0: "not_support"}
SUPPORT = {2: "full", 1: "partial", 0: "none", -1: "not judged"}


def answers_of(s: Session, rid: int, me: Principal) -> dict[str, Any]:
    row, coll = submissions.get(s, rid, me)
    policy.require(policy.may_see_run_details(me, row, coll), me, f"the answers of run {rid}")
    if not is_answers(coll):
        raise Conflict(f"run {rid} is a ranked list, not answers")
    run = answers.read_stored(zlib.decompress(row.file), row.source_name or row.tag)
    judged = None
    version = s.get(QrelsVersion, coll.current_qrels_id) if coll.current_qrels_id is not None else None
    if version is not None and version.format == "rag" and policy.may_see_run_topics(me, row, coll):
        judged = cached_judgments(s, version)[1]
    hide = hidden_from(me, coll)
    support = {}
    if judged is not None and judged.support:
        known = judged.assignments.runs if judged.assignments is not None else (row.tag,)
        matched, _ = match_runs({a.run for a in judged.support}, tuple({*known, row.tag}))
        support = {a.topic: a for a in judged.support if matched.get(a.run) == row.tag}
    topics = []
    for answer in run.answers:
        if answer.topic in hide:
            continue
        judged_support = support.get(answer.topic)
        sentences = []
        for i, sentence in enumerate(answer.sentences):
            codes = judged_support.sentences[i] if judged_support is not None and i < len(judged_support.sentences) else ()
            sentences.append({"text": sentence.text, "citations": [
                {"reference": answer.references[c] if 0 <= c < len(answer.references) else str(c),
                 "support": SUPPORT[codes[k]] if k < len(codes) else None}
                for k, c in enumerate(sentence.citations)]})
        nuggets = None
        if judged is not None and judged.assignments is not None and answer.topic in judged.assignments.topics:
            t = judged.assignments.topics[answer.topic]
            labels = judged.assignments.labels.get((row.tag, answer.topic))
            nuggets = [{"text": text, "importance": "vital" if vital else "okay",
                        "assignment": None if labels is None else ASSIGNMENT[int(labels[k])]}
                       for k, (text, vital) in enumerate(zip(t.texts, t.vital))]
        topics.append({"topic": answer.topic, "references": list(answer.references), "words": answer.words,
                       "sentences": sentences, "nuggets": nuggets, "support_judged": judged_support is not None})
    return {"run": row.id, "tag": row.tag, "format": run.format, "qrels_version": version.version if version else None,
            "topics": topics}
