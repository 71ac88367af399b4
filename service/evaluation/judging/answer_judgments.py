"""The judgments of a collection of answers: upload a part (nuggets, nugget assignments,
citation support, retrieval qrels) as a new version of a judgment set (issue 35).

The same machinery as qrels (:mod:`service.evaluation.judging.qrels`): a version of a
judgment set (the official one by default, which boards rank by; any other set with its
provenance: an LLM assigner's, a post-edited merge), numbered in the collection's one
sequence, immutable, evaluated by the workers as a new qrels version is (every run of the
collection scored on it, then the pairwise tests). A version of format ``rag`` holds every
part (:mod:`service.evaluation.organising.answer_bundle`): an upload replaces one part of the
set's newest version (``support`` with ``append``: adds a file), and the whole is read and
checked before anything is stored (file, line and field of the first problem).
"""

from __future__ import annotations

import zlib
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.orm import Session, sessionmaker

from service.errors import Conflict
from service.evaluation.common.memory import guarded
from service.evaluation.common.work import Outcome
from service.evaluation.judging import judgment_sets
from service.evaluation.organising import answer_bundle, collections, idempotency
from service.evaluation.organising.answers import is_answers
from service.evaluation.organising.setup import ParsedQrels, add_qrels, official_set
from service.evaluation.permissions import policy
from service.store.models import Collection, JudgmentSet, QrelsVersion, Topic


def _current_parts(s: Session, js: JudgmentSet) -> dict[str, Any]:
    version = s.get(QrelsVersion, js.current_version_id) if js.current_version_id is not None else None
    if version is None or version.format != "rag":
        return answer_bundle.empty()
    return answer_bundle.decode(zlib.decompress(version.file))


@guarded
def upload(factory: sessionmaker[Session], me_of: Any, cid: int, part: str, body: bytes, source: str = "",
           judgment_set: str | None = None, append: bool = False, grades: str | None = None,
           idempotency_key: str | None = None) -> Outcome[dict[str, Any]]:
    """Validate and store ``body`` as ``part`` of a new version of ``judgment_set`` (default:
    the official one) and plan its evaluation; who may upload qrels may upload these."""
    idempotency.check_key(idempotency_key)
    if part not in answer_bundle.PARTS:
        from service.errors import NotFound

        raise NotFound(f"no judgment part {part!r} (one of {', '.join(answer_bundle.PARTS)})")
    source = source or f"{part} upload"
    with factory() as s:
        me = me_of(s)
        coll = collections.get(s, cid, me)
        policy.require(policy.may_upload_qrels(me, coll), me, f"uploading judgments to collection {cid}")
        if not is_answers(coll):
            raise Conflict(f"collection {cid} takes ranked lists: nuggets, assignments and support judge answers "
                           "(a collection created with task_kind answers); its qrels go to /qrels")
        target = official_set(s, coll) if judgment_set is None else judgment_sets.get(s, coll, judgment_set, me)
        base = _current_parts(s, target)
    parts = answer_bundle.replaced(base, part, body, source, append=append, grades=grades)
    judged = answer_bundle.read(parts)  # InvalidInput with the file, line and field before any write
    data = answer_bundle.encode(parts)
    digest = idempotency.request_hash(body, part, judgment_set, str(append), str(grades))

    def store(s: Session, coll: Collection) -> Outcome[dict[str, Any]]:
        target = official_set(s, coll) if judgment_set is None else judgment_sets.get(s, coll, judgment_set, me)
        if _current_parts(s, target) != base:
            raise Conflict("the judgment set changed while this upload was read; send it again")
        previous = target.current_version_id
        version, job_id, followups = store_version(s, coll, target, data, judged, source, me.name, part)
        return Outcome({"version": version.version, "judgment_set": target.name, "part": part, "format": "rag",
                        "parts": judged.describe(), "job": job_id,
                        "previous_version": s.get(QrelsVersion, previous).version if previous else None},
                       tuple(followups))

    scope = f"answer-judgments:{cid}" if judgment_set is None else f"answer-judgments:{cid}:{judgment_set}"
    return idempotency.store_once(factory, cid, me, scope, idempotency_key, digest, store,
                                  what=f"a judgment upload to collection {cid}")


def store_version(s: Session, coll: Collection, target: JudgmentSet, data: bytes,
                  judged: answer_bundle.AnswerJudgments, source: str, actor: str, part: str = "parts"
                  ) -> tuple[QrelsVersion, int | None, tuple[Any, ...]]:
    """Store the parts (``data``, read as ``judged``) as the set's new version, add the topics
    they name, and plan the runs' evaluation on it (not while it holds only nuggets: nothing to
    score). The version, the job's id and the follow-ups."""
    previous = target.current_version_id
    version = add_qrels(s, coll, data, source, actor, parsed=ParsedQrels(f"rag-{part}", judged.qrels),
                        judgment_set=target)
    version.run_inputs = judged.run_inputs()  # what re-scoring compares (planning.carry_unchanged)
    _add_topics(s, coll, judged)
    if judged.assignments is None and not judged.support and not judged.qrels.topics:
        return version, None, ()
    job_id, followups = judgment_sets.evaluation_followups(s, coll, target, version, previous)
    return version, job_id, tuple(followups)


def _add_topics(s: Session, coll: Collection, judged: answer_bundle.AnswerJudgments) -> None:
    """The topics the judgments name that the collection lacks, with the nuggets' query as
    their title (``add_qrels`` added the retrieval qrels' topics)."""
    known = {t.topic_id: t for t in s.scalars(select(Topic).where(Topic.collection_id == coll.id))}
    queries = {q: t.query for q, t in (judged.nuggets or {}).items()}
    if judged.assignments is not None:
        queries = {**{q: t.query for q, t in judged.assignments.topics.items()}, **queries}
    new = [t for t in judged.topics() if t not in known]
    if new:
        s.execute(insert(Topic), [{"collection_id": coll.id, "topic_id": t, "title": queries.get(t, "")[:500]}
                                  for t in new])
    for topic_id, row in known.items():
        if not row.title and queries.get(topic_id):
            row.title = queries[topic_id][:500]
