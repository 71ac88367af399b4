"""People assess generated answers in the portal (issue 36, items 1-2): per topic, every answer
of the collection's answer runs, blind (no run, no team; in an order of its own per assessor),
beside the topic's nuggets (each labelled support, partial support or no support) and, per
sentence, its first cited passage (or each one: ``answer_settings.assessed_citations``; full,
partial or no support), with the passage's text when
the organiser uploaded it (a ``passages`` part: ``{segment_id, segment}`` JSON lines).

Each assessor's labels are kept in a judgment set as relevance labels are
(:class:`~service.store.models.AssessorLabel`, keyed by topic and an opaque cell key:
``n:RUN:K`` for nugget K of the topic's list in run RUN's answer, ``s:RUN:I:J`` for citation J
of sentence I), so the set's rule (latest, majority, ...) derives one label from several
assessors' and the set's assessor agreement reads them unchanged. :func:`derive_version` makes
the set's next version from them: the nugget assignments of every answer whose nuggets all have
a derived label, the support judgments of every answer with a labelled citation (a sentence
without a citation is written without one: it scores no support with no one's click; a citation
not labelled is written unjudged, -1), the other parts (nuggets, retrieval qrels) those of the
set's newest version or else the official set's. The workers then score it as any version.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from service.errors import BadRequest, Conflict, Forbidden, NotFound
from service.evaluation.common.work import Outcome
from service.evaluation.judging import assessor_labels as labels
from service.evaluation.organising import answer_bundle, answers
from service.evaluation.organising.setup import cached_judgments, official_set
from service.evaluation.permissions import policy
from service.evaluation.permissions.access import Principal
from service.formats.rag_judgments import TopicNuggets
from service.metrics.judgment_rules import derive
from service.store.models import Collection, JudgmentSet, QrelsVersion, Run

LABELS = ("not_support", "partial_support", "support")  # a cell's label 0, 1, 2
SUPPORT_WORDS = ("no support", "partial support", "full support")


@dataclass(frozen=True)
class _Answer:
    run_id: int
    tag: str
    references: tuple[str, ...]
    sentences: tuple[Any, ...]


def nugget_key(run_id: int, k: int) -> str:
    return f"n:{run_id}:{k}"


def support_key(run_id: int, i: int, j: int) -> str:
    return f"s:{run_id}:{i}:{j}"


def _answers_collection(coll: Collection) -> None:
    if coll.task_kind != "answers":
        raise Conflict(f"collection {coll.name!r} takes ranked lists: its pools are assessed, not answers")


def _target(s: Session, coll: Collection, me: Principal, set_name: str | None) -> JudgmentSet:
    from service.evaluation.judging import judgment_sets

    if not set_name:
        return official_set(s, coll)
    js = s.scalar(select(JudgmentSet).where(JudgmentSet.collection_id == coll.id, JudgmentSet.name == set_name))
    if js is None:
        raise NotFound(f"collection {coll.name!r} has no judgment set {set_name!r}")
    if policy.may_see_qrels(me, coll):
        judgment_sets.get(s, coll, set_name, me)  # (the organisers' own check)
    elif js.team_id is not None:  # an assessor labels the organisers' sets, never a team's judges-track set
        raise Forbidden(f"judgment set {set_name!r} is a team's: assessors label the organisers' sets")
    return js


def _base(s: Session, coll: Collection, js: JudgmentSet) -> tuple[dict[str, Any], Any]:
    """The parts a derived version starts from, read: the set's newest version, else the official one's."""
    for version_id in (js.current_version_id, coll.current_qrels_id):
        version = s.get(QrelsVersion, version_id) if version_id is not None else None
        if version is not None and version.format == "rag":
            return answer_bundle.decode(zlib.decompress(version.file)), cached_judgments(s, version)[1]
    return answer_bundle.empty(), None


def _nuggets(judged: Any, topic: str) -> TopicNuggets:
    found = None
    if judged is not None:
        found = (judged.nuggets or {}).get(topic) or (judged.assignments.topics.get(topic)
                                                       if judged.assignments is not None else None)
    if found is None:
        raise Conflict(f"topic {topic} has no nuggets yet: upload them (POST .../answer-judgments/nuggets) first")
    return found


def _answers(s: Session, coll: Collection, topic: str, assessor: str, js: JudgmentSet) -> list[_Answer]:
    """Every answer to ``topic`` in the collection's runs, in the assessor's own order (a seeded
    shuffle of the runs' ids: the same each visit, another for another assessor or topic)."""
    out = []
    for run in s.scalars(select(Run).where(Run.collection_id == coll.id).order_by(Run.id)):
        parsed = answers.read_stored(zlib.decompress(run.file), run.source_name or run.tag)
        for a in parsed.answers:
            if a.topic == topic:
                out.append(_Answer(run.id, run.tag, a.references, a.sentences))
    seed = int.from_bytes(hashlib.sha256(f"{js.id}\x1f{assessor}\x1f{topic}".encode()).digest()[:8], "big")
    order = np.random.default_rng(seed).permutation(len(out))
    return [out[i] for i in order.tolist()]


def _assessed(coll: Collection, citations: tuple[int, ...]) -> tuple[int, ...]:
    """The citations of a sentence its support is assessed on: the first listed (TREC 2024's
    rule, the default) or every one (``answer_settings.assessed_citations``)."""
    every = (coll.answer_settings or {}).get("assessed_citations") == "every"
    return tuple(citations) if every else tuple(citations[:1])


def _may_assess(me: Principal, coll: Collection, topic: str) -> None:
    if not policy.may_assess(me, coll.id, topic):
        raise Forbidden(f"topic {topic} of collection {coll.id} is not assigned to you")


def assessment(s: Session, coll: Collection, me: Principal, topic: str, set_name: str | None = None) -> dict[str, Any]:
    """What the assessment page of ``topic`` shows ``me``: the topic's nuggets and every answer
    (by position in ``me``'s order, with no run or team), each with the labels ``me`` gave."""
    _answers_collection(coll)
    _may_assess(me, coll, topic)
    js = _target(s, coll, me, set_name)
    _, judged = _base(s, coll, js)
    nuggets = _nuggets(judged, topic)
    passages = judged.passages if judged is not None else {}
    mine = {d: levels[-1] for (t, d), levels in labels.labels_of_set(s, js, me.name).items() if t == topic}
    items = []
    for position, a in enumerate(_answers(s, coll, topic, me.name, js), start=1):
        sentences = []
        for i, sentence in enumerate(a.sentences):
            refs = [a.references[c] if 0 <= c < len(a.references) else str(c) for c in _assessed(coll, sentence.citations)]
            sentences.append({"index": i, "text": sentence.text, "citations": [
                {"index": j, "reference": ref, "passage": passages.get(ref),
                 "label": mine.get(support_key(a.run_id, i, j))} for j, ref in enumerate(refs)]})
        nugget_labels = [mine.get(nugget_key(a.run_id, k)) for k in range(len(nuggets.texts))]
        cited = [c for sentence in sentences for c in sentence["citations"]]
        items.append({"position": position, "sentences": sentences, "nugget_labels": nugget_labels,
                      "done": all(v is not None for v in nugget_labels) and all(c["label"] is not None for c in cited)})
    return {"collection": coll.id, "topic": topic, "query": nuggets.query, "judgment_set": js.name,
            "nuggets": [{"index": k, "text": text, "importance": "vital" if vital else "okay"}
                        for k, (text, vital) in enumerate(zip(nuggets.texts, nuggets.vital))],
            "answers": items, "assessed": sum(1 for it in items if it["done"]), "total": len(items)}


def record(s: Session, coll: Collection, me: Principal, topic: str, position: int, nugget_labels: dict[int, int],
           support_labels: dict[tuple[int, int], int], set_name: str | None = None) -> int:
    """Keep ``me``'s labels of the answer at ``position`` (of ``me``'s order) on ``topic``:
    nugget K -> label, (sentence I, citation J) -> label, each 0, 1 or 2; the number kept.
    Everything is checked before anything is kept (400 naming what is wrong)."""
    _answers_collection(coll)
    _may_assess(me, coll, topic)
    js = _target(s, coll, me, set_name)
    _, judged = _base(s, coll, js)
    nuggets = _nuggets(judged, topic)
    listed = _answers(s, coll, topic, me.name, js)
    if not 1 <= position <= len(listed):
        raise BadRequest(f"answer {position}: topic {topic} has answers 1 to {len(listed)}")
    a = listed[position - 1]
    rows = []
    for k, level in nugget_labels.items():
        if not 0 <= k < len(nuggets.texts):
            raise BadRequest(f"nugget {k + 1}: topic {topic} has nuggets 1 to {len(nuggets.texts)}")
        rows.append((topic, nugget_key(a.run_id, k), me.name, _level(level, f"nugget {k + 1}")))
    for (i, j), level in support_labels.items():
        if not (0 <= i < len(a.sentences) and 0 <= j < len(_assessed(coll, a.sentences[i].citations))):
            raise BadRequest(f"sentence {i + 1}, citation {j + 1}: not a citation assessed in answer {position}")
        rows.append((topic, support_key(a.run_id, i, j), me.name, _level(level, f"sentence {i + 1}")))
    labels.store(s, js, rows)
    return len(rows)


def _level(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value not in (0, 1, 2):
        raise BadRequest(f"{what}: a label is 0 (no support), 1 (partial) or 2 (support), not {value!r}")
    return value


def derive_version(s: Session, coll: Collection, js: JudgmentSet, me: Principal, source: str
                   ) -> Outcome[dict[str, Any]]:
    """The set's next version from its assessors' labels under its rule (see the module), and
    its scoring planned; 409 when no answer is completely assessed yet."""
    from service.evaluation.judging import answer_judgments

    _answers_collection(coll)
    policy.require(policy.may_see_qrels(me, coll), me, f"the judgments of collection {coll.id}")
    derived = derive(labels.labels_of_set(s, js), js.rule)
    parts, judged = _base(s, coll, js)
    runs = {r.id: r for r in s.scalars(select(Run).where(Run.collection_id == coll.id))}
    cells: dict[tuple[str, int], dict[str, int]] = {}
    for (topic, key), level in derived.items():
        kind, run_id, *_ = key.split(":")
        if kind in ("n", "s") and int(run_id) in runs:
            cells.setdefault((topic, int(run_id)), {})[key] = int(level)
    assignment_rows, support_rows = [], []
    for (topic, run_id), got in sorted(cells.items()):
        run = runs[run_id]
        nuggets = _nuggets(judged, topic)
        keys = [nugget_key(run_id, k) for k in range(len(nuggets.texts))]
        if all(k in got for k in keys):
            assignment_rows.append({"qid": topic, "query": nuggets.query, "run_id": run.tag, "nuggets": [
                {"text": text, "importance": "vital" if vital else "okay", "assignment": LABELS[got[key]]}
                for text, vital, key in zip(nuggets.texts, nuggets.vital, keys)]})
        if any(k.startswith("s:") for k in got):
            answer = next(a for a in answers.read_stored(zlib.decompress(run.file), run.source_name or run.tag).answers
                          if a.topic == topic)
            support_rows.append({"topic_id": topic, "run_id": run.tag, "sentences": [
                {"sentenceID": i, "text": sentence.text, "citations": [
                    {"citationID": j, "reference": answer.references[c] if 0 <= c < len(answer.references) else str(c),
                     "support": str(got.get(support_key(run_id, i, j), -1))}
                    for j, c in enumerate(_assessed(coll, sentence.citations))]}
                for i, sentence in enumerate(answer.sentences)]})
    if not assignment_rows and not support_rows:
        raise Conflict(f"judgment set {js.name!r} has no completely assessed answer yet: nothing to derive")
    if assignment_rows:
        parts = answer_bundle.replaced(parts, "assignments", _jsonl(assignment_rows), f"{source} (nuggets)")
    if support_rows:
        parts = answer_bundle.replaced(parts, "support", _jsonl(support_rows), f"{source} (support)")
    judged_new = answer_bundle.read(parts)
    before = s.get(QrelsVersion, js.current_version_id) if js.current_version_id else None
    version, job_id, followups = answer_judgments.store_version(s, coll, js, answer_bundle.encode(parts), judged_new,
                                                                source, me.name, "labels")
    return Outcome({"judgment_set": js.name, "version": version.version, "previous_version": before.version if before else None,
                    "answers_assessed": len(assignment_rows), "answers_with_support": len(support_rows),
                    "job": job_id}, followups)


def _jsonl(rows: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")


def progress(s: Session, coll: Collection, me: Principal, set_name: str) -> dict[str, Any]:
    """How far each assessor has got, per topic (organisers): the topic's answers, and per
    assessor the answers they completed (every nugget and every assessed citation labelled)."""
    from service.store.models import AssessorLabel

    _answers_collection(coll)
    policy.require(policy.may_see_qrels(me, coll), me, f"the judgments of collection {coll.id}")
    js = _target(s, coll, me, set_name)
    _, judged = _base(s, coll, js)
    topics: dict[str, TopicNuggets] = {}
    if judged is not None:
        topics = {**(judged.assignments.topics if judged.assignments is not None else {}), **(judged.nuggets or {})}
    keys: dict[tuple[str, str], set[str]] = {}
    for topic, docno, assessor in s.execute(select(AssessorLabel.topic, AssessorLabel.docno, AssessorLabel.assessor)
                                            .where(AssessorLabel.judgment_set_id == js.id)):
        keys.setdefault((topic, assessor), set()).add(docno)
    needed: dict[str, list[set[str]]] = {}
    for run in s.scalars(select(Run).where(Run.collection_id == coll.id).order_by(Run.id)):
        for a in answers.read_stored(zlib.decompress(run.file), run.source_name or run.tag).answers:
            if a.topic in topics:
                cells = {nugget_key(run.id, k) for k in range(len(topics[a.topic].texts))}
                cells |= {support_key(run.id, i, j) for i, sentence in enumerate(a.sentences)
                          for j, _ in enumerate(_assessed(coll, sentence.citations))}
                needed.setdefault(a.topic, []).append(cells)
    assessors = sorted({who for _, who in keys})
    rows = []
    for topic in sorted(needed):
        done = {who: sum(1 for cells in needed[topic] if cells <= keys.get((topic, who), set())) for who in assessors}
        rows.append({"topic": topic, "answers": len(needed[topic]), "assessors": done})
    return {"judgment_set": js.name, "assessors": assessors, "topics": rows}
