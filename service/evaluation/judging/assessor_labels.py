"""The labels assessors give, kept in a judgment set (:class:`AssessorLabel`): stored, and read
back per (topic, docno). Relevance labels (:mod:`.labels`) and answers' labels
(:mod:`.answer_assessment`, whose docno is a cell key) both keep theirs here."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import delete, insert, select, tuple_
from sqlalchemy.orm import Session

from service.store.models import AssessorLabel, JudgmentSet, utcnow

Key = tuple[str, str]  # (topic, docno)


def store(s: Session, js: JudgmentSet, labels: Iterable[tuple[str, str, str, int]]) -> set[Key]:
    """Keep each (topic, docno, assessor, level), replacing that assessor's earlier label of the
    document; the documents touched."""
    rows = [{"judgment_set_id": js.id, "topic": t, "docno": d, "assessor": a, "level": int(lv)}
            for t, d, a, lv in labels]
    if not rows:
        return set()
    now = utcnow()
    keys = [(r["topic"], r["docno"], r["assessor"]) for r in rows]
    for start in range(0, len(keys), 500):  # bounded IN lists
        chunk = keys[start:start + 500]
        s.execute(delete(AssessorLabel).where(
            AssessorLabel.judgment_set_id == js.id,
            tuple_(AssessorLabel.topic, AssessorLabel.docno, AssessorLabel.assessor).in_(chunk)))
    s.execute(insert(AssessorLabel), [{**r, "labelled_at": now} for r in rows])
    return {(r["topic"], r["docno"]) for r in rows}


def labels_of_set(s: Session, js: JudgmentSet, assessor: str | None = None) -> dict[Key, list[int]]:
    """(topic, docno) -> the set's labels of it, oldest first (ties by assessor)."""
    q = (select(AssessorLabel.topic, AssessorLabel.docno, AssessorLabel.level)
         .where(AssessorLabel.judgment_set_id == js.id)
         .order_by(AssessorLabel.labelled_at, AssessorLabel.assessor))
    if assessor is not None:
        q = q.where(AssessorLabel.assessor == assessor)
    out: dict[Key, list[int]] = {}
    for t, d, lv in s.execute(q):
        out.setdefault((t, d), []).append(int(lv))
    return out
