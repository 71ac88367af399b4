"""Two judgment sets of a collection of answers compared (issue 36, item 3): an automatic
assigner's nugget assignments (or support judgments) against NIST's, say.

The labels are read from the two versions' stored parts (``answer_bundle``), the run rankings
from the scores the workers stored for each version under the current configuration (a version
not scored yet has its labels compared and its rankings reported missing, with why); what is
computed here is the agreement of labels and of rankings, as for relevance judgment sets
(:mod:`service.evaluation.judging.judge_comparison`). Organisers only: the labels are judgments.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from service.errors import BadRequest, Conflict
from service.evaluation.organising import collections
from service.evaluation.organising.setup import cached_judgments
from service.evaluation.permissions import policy
from service.evaluation.permissions.access import Principal
from service.evaluation.publishing.reading import score_tables
from service.formats.text import nouned
from service.metrics.rag import is_rag
from service.metrics.rag_agreement import (
    assignment_labels,
    comparison_document,
    ranking_agreement,
    support_labels,
)
from service.metrics.scoring import parse_measures
from service.store.models import Collection, CollectionConfig, QrelsVersion, Run

KINDS = ("assignments", "support")
#: The bootstrap over topics of the ranking correlations (the judge comparisons' B and seed).
RESAMPLES, SEED = 1000, 0


def compare_answer_sets(s: Session, coll: Collection, me: Principal, a: str, b: str, kind: str = "assignments",
                        metrics: list[str] | None = None) -> dict[str, Any]:
    """How far set ``b`` agrees with the reference ``a`` (each a set's name: its newest version,
    ``name:N``, or a version number) on ``kind`` (nugget assignments or citation support), and
    the agreement of the run rankings on ``metrics`` (default: the configuration's nugget scores,
    or its support scores). 403 for a non-organiser, 409 for a collection of ranked lists or a
    version without that part, 400 for a metric that is not a RAG score of the kind."""
    from service.evaluation.judging import judgment_sets

    policy.require(policy.may_see_qrels(me, coll), me, f"the judgments of collection {coll.id}")
    if coll.task_kind != "answers":
        raise Conflict(f"collection {coll.name!r} takes ranked lists: its judgment sets are compared with "
                       "GET .../judgment-sets/compare")
    if kind not in KINDS:
        raise BadRequest(f"kind is assignments or support, not {kind!r}")
    refs = [judgment_sets.resolve(s, coll, me, text) for text in (a, b)]
    if any(ref.version is None for ref in refs):
        raise BadRequest("an answers collection's sets are compared by their versions (name, name:N or N), "
                         "not by one assessor's labels")
    va, vb = (ref.version for ref in refs)
    ja, jb = cached_judgments(s, va)[1], cached_judgments(s, vb)[1]
    for v, j in ((va, ja), (vb, jb)):
        if (j.assignments is None) if kind == "assignments" else not j.support:
            raise Conflict(f"version {v.version} has no {'nugget assignments' if kind == 'assignments' else 'support judgments'}")
    config = s.get(CollectionConfig, coll.current_config_id)
    assert config is not None
    family = "nugget" if kind == "assignments" else "support"
    if metrics:
        chosen = [str(m) for m in parse_measures(metrics)]
        wrong = [m for m in chosen if not (is_rag(parse_measures([m])[0]) and m.startswith(family))]
        if wrong:
            raise BadRequest(f"{', '.join(wrong)}: not a {family} score (cranfield metrics lists them)")
    else:
        chosen = [m for m in config.metrics if m.startswith(family)]
    if kind == "assignments":
        labels = assignment_labels(ja.assignments, jb.assignments)
        assessed = (set(ja.assignments.topics), set(jb.assignments.topics))
    else:
        labels = support_labels(ja.support, jb.support)
        assessed = ({x.topic for x in ja.support}, {x.topic for x in jb.support})

    notes: list[str] = []
    tables_a = score_tables(s, coll.id, va.id, config.settings_hash, chosen)
    tables_b = score_tables(s, coll.id, vb.id, config.settings_hash, chosen)
    tags = dict(s.execute(select(Run.id, Run.tag).where(Run.collection_id == coll.id)).all())
    rankings = {}
    for metric in chosen:
        missing = [v.version for v, t in ((va, tables_a), (vb, tables_b)) if metric not in t]
        if missing:
            notes.append(f"{metric}: {nouned(len(missing), 'version')} {', '.join(map(str, missing))} "
                         f"{'has' if len(missing) == 1 else 'have'} no stored scores under the "
                         "current configuration (a set that does not evaluate automatically is scored when a board "
                         "of it is asked for); its rankings are not compared")
            continue
        (ids_a, topics_a, xa), (ids_b, topics_b, xb) = tables_a[metric], tables_b[metric]
        runs = [r for r in ids_a if r in set(ids_b)]
        topics = sorted(set(topics_a) | set(topics_b))

        def matrix(ids: list[int], own: list[str], x: np.ndarray) -> np.ndarray:
            col, row = {r: k for k, r in enumerate(ids)}, {t: i for i, t in enumerate(own)}
            m = np.full((len(topics), len(runs)), np.nan)
            for i, t in enumerate(topics):
                if t in row:
                    m[i] = x[row[t], [col[r] for r in runs]]
            return m

        rankings[metric] = ranking_agreement(metric, [tags[r] for r in runs], topics, matrix(ids_a, topics_a, xa),
                                             matrix(ids_b, topics_b, xb), assessed[0], assessed[1],
                                             resamples=RESAMPLES, seed=SEED)
    doc = comparison_document(dataclasses.replace(labels, rankings=rankings))

    def version_doc(v: QrelsVersion, name: str) -> dict[str, Any]:
        return {"version": v.version, "judgment_set": name, "uploaded_by": v.uploaded_by,
                "uploaded_at": collections.iso(v.uploaded_at)}

    return {"collection": coll.id, "a": version_doc(va, refs[0].judgment_set.name),
            "b": version_doc(vb, refs[1].judgment_set.name), **doc,
            "notes": [*doc["notes"], *notes]}
