"""A judges track on a collection of answers (issue 36, item 4; TREC's AutoJudge setting): teams
submit nugget assignment sets for the collection's answers, the workers score every run under
each, and the judge board ranks them by how well they reproduce the official ranking (on the
board's metric, Vital strict by default: the collection's official one), as
:mod:`service.evaluation.judging.judge_track` does for relevance judgments, whose limits,
windows, secrecy and board this module reuses.

A team's set is nugget assignments or, for a track whose board ranks by a support score
(``support_precision``, ``support_recall``), citation-support judgments in NIST's format (the
kind told by the file's first line: ``nuggets`` or ``sentences``); either replaces that part of
the official set's parts in the team's version.

What the teams are given (:func:`pool_file`, JSON lines, one per answer to judge): the topic,
its question and nuggets (text and importance), and the answer (sentences, citations,
references) under a **blind answer id** in place of the run (``run_id``: ``a`` and 12 hex digits
of a digest of the collection, run and topic), so the file names no run and no team. A team's
file is NIST's / nuggetizer's assignment format with those ids as ``run_id``: checked line by
line against what the team was given (a known answer id of that topic; each topic's nuggets,
matched by their text as the official set's), never against the official assignments, so a
refusal tells nothing of them. The id hides a run's name, not which answers share a run (the
digest is of public numbers): runs are what the answers are, not what is secret.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.errors import Conflict, InvalidInput
from service.evaluation.organising import answer_bundle, answers
from service.evaluation.organising.setup import cached_judgments
from service.formats.jsonl import json_lines
from service.formats.rag_judgments import TopicNuggets, read_assignments, read_support
from service.formats.text import counted
from service.store.models import Collection, QrelsVersion, Run


def answer_id(coll_id: int, run_id: int, topic: str) -> str:
    return "a" + hashlib.sha256(f"{coll_id}\x1f{run_id}\x1f{topic}".encode()).hexdigest()[:12]


def _official(s: Session, coll: Collection) -> tuple[dict[str, Any], Any]:
    version = s.get(QrelsVersion, coll.current_qrels_id) if coll.current_qrels_id is not None else None
    if version is None or version.format != "rag":
        raise Conflict(f"collection {coll.id} has no judgments of answers yet: there is nothing to judge")
    return answer_bundle.decode(zlib.decompress(version.file)), cached_judgments(s, version)[1]


def _nuggets(judged: Any) -> dict[str, TopicNuggets]:
    """The official set's nuggets per topic (its nuggets part, else its assignments' lists)."""
    found = dict(judged.assignments.topics) if judged.assignments is not None else {}
    found.update(judged.nuggets or {})
    if not found:
        raise Conflict("the official judgments have no nuggets yet: there is nothing to judge against")
    return found


def _to_judge(s: Session, coll: Collection, nuggets: dict[str, TopicNuggets]) -> list[tuple[str, Run, Any]]:
    """(answer id, run, answer) of every answer to a topic with nuggets, in topic then id order."""
    out = []
    for run in s.scalars(select(Run).where(Run.collection_id == coll.id).order_by(Run.id)):
        for a in answers.read_stored(zlib.decompress(run.file), run.source_name or run.tag).answers:
            if a.topic in nuggets:
                out.append((answer_id(coll.id, run.id, a.topic), run, a))
    return sorted(out, key=lambda x: (x[2].topic, x[0]))


def pool_file(s: Session, coll: Collection) -> str:
    """The answers to judge, blind, with each topic's nuggets (see the module)."""
    _, judged = _official(s, coll)
    nuggets = _nuggets(judged)
    lines = []
    for aid, _run, a in _to_judge(s, coll, nuggets):
        topic = nuggets[a.topic]
        lines.append(json.dumps({"qid": a.topic, "query": topic.query, "run_id": aid,
                                 "nuggets": [{"text": t, "importance": i} for t, i in zip(topic.texts, topic.importance())],
                                 "answer": [{"text": x.text, "citations": list(x.citations)} for x in a.sentences],
                                 "references": list(a.references)}, ensure_ascii=False))
    return "".join(line + "\n" for line in lines)


def read_submission(s: Session, coll: Collection, body: bytes, source: str) -> tuple[bytes, Any, int, int]:
    """A team's assignment file checked (InvalidInput naming its line) and made the team's next
    version's parts: the official parts with the assignments replaced by the team's, its blind
    ids turned back into the runs' tags. (parts' bytes, the parts read, the answers judged, the
    answers there are to judge)."""
    parts, judged = _official(s, coll)
    nuggets = _nuggets(judged)
    known = {aid: (run, a) for aid, run, a in _to_judge(s, coll, nuggets)}
    rows = []
    kind = None
    for number, obj in json_lines(body, source):
        if not isinstance(obj, dict):
            raise InvalidInput(source, number, "a line is one JSON object: {qid, run_id, nuggets} (nugget "
                                               "assignments) or {topic_id, run_id, sentences} (citation support)")
        this = "support" if "sentences" in obj else "assignments"
        if kind is not None and this != kind:
            raise InvalidInput(source, number, f"a line of {this} in a file of {kind}: a set is one or the other")
        kind = this
        aid, qid = obj.get("run_id"), obj.get("topic_id" if kind == "support" else "qid")
        if aid not in known:
            raise InvalidInput(source, number, f"run_id: {str(aid)[:40]!r} is not an answer id of the judge pool")
        run, answer = known[aid]
        if str(qid) != answer.topic:
            field = "topic_id" if kind == "support" else "qid"
            raise InvalidInput(source, number, f"{field}: answer {aid} answers topic {answer.topic}, "
                                               f"not {str(qid)[:40]!r}")
        if kind == "support":
            _check_support(source, number, obj, answer)
        rows.append({**obj, "run_id": run.tag})
    if not rows:
        raise InvalidInput(source, None, "no judgments in the upload")
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")
    # the team's own file read as such a file (its blind ids, its line numbers): an assignment
    # row's nuggets matched by text to the official lists, a stray or missing one, an answer
    # twice, a label that is none of the three refused with the line; no run's tag in any message
    if kind == "support":
        read_support(body, source)
        new = answer_bundle.replaced(parts, "support", text, source)
    else:
        read_assignments(body, source, nuggets=nuggets)
        new = answer_bundle.replaced(parts, "assignments", text, source)
    return answer_bundle.encode(new), answer_bundle.read(new), len(rows), len(known)


def _check_support(source: str, number: int, obj: dict[str, Any], answer: Any) -> None:
    """A support row's sentences and citations are the answer's (by position: sentence i of
    the answer, citation j of the sentence), as the pool file gave them."""
    for i, sentence in enumerate(obj.get("sentences") or []):
        if not isinstance(sentence, dict):
            continue  # (the reader names it)
        if i >= len(answer.sentences):
            raise InvalidInput(source, number, f"sentences[{i}]: the answer has {len(answer.sentences)} sentences")
        cited = sentence.get("citations") or []
        if isinstance(cited, list) and len(cited) > len(answer.sentences[i].citations):
            cites = counted(len(answer.sentences[i].citations), "passage")
            raise InvalidInput(source, number, f"sentences[{i}].citations: the sentence cites {cites}, "
                                               f"not {len(cited)}")
