"""The judgments of a collection of generated answers (issue 35): one qrels version of format
``rag`` holds every part a board of answers is scored on, each kept verbatim with its name:

* ``nuggets``: each topic's nuggets (nuggetizer's ``create`` output), optional: without them
  each topic's list is taken from the assignment file, which repeats it on every row;
* ``assignments``: the nugget assignments (NIST's / nuggetizer's ``assign`` format);
* ``support``: citation-support files (NIST's), any number;
* ``qrels``: the retrieval qrels the answers' references are ranked against (the R of RAG).

An upload replaces one part of the set's newest version and the result is a new version, so a
version is always a complete, consistent state that a run's stored scores name (``RunEvaluation``
is keyed by the version, as for qrels). Every part is read with the core readers
(:mod:`service.formats.rag_judgments`) when the version is made, and again, from the stored
bytes, by the workers; the judgment rows of the version hold the retrieval qrels (the flattened
ad hoc view every format stores), so pools, diffs and the qrels pages read them as any version's.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from service.errors import InvalidRequest
from service.formats.rag_judgments import (
    Assignments,
    SupportAnswer,
    TopicNuggets,
    read_assignments,
    read_nuggets,
    read_passages,
    read_support,
)
from service.formats.readers import parse_qrels
from service.formats.types import Qrels
from service.metrics.rag_scoring import run_inputs, support_by_answer

#: The parts of a version, in the order they are read (nuggets before the assignments matched to them).
PARTS = ("nuggets", "assignments", "support", "qrels", "passages")
GRADES = ("auto", 2, 3)


def empty() -> dict[str, Any]:
    """The parts of a set without any version yet."""
    return {"nuggets": None, "assignments": None, "support": [], "qrels": None, "passages": None, "grades": "auto"}


def encode(parts: Mapping[str, Any]) -> bytes:
    """What the version stores (its ``file``, compressed): the parts as JSON, each a file's name
    and text. The texts are UTF-8 (the readers refuse anything else) except the qrels, whose
    undecodable bytes survive as surrogate escapes."""
    return json.dumps(parts, sort_keys=True, ensure_ascii=True).encode("ascii")


def decode(data: bytes) -> dict[str, Any]:
    parts = json.loads(data)
    return {**empty(), **parts}


def _bytes(part: Mapping[str, Any]) -> bytes:
    return str(part["text"]).encode("utf-8", "surrogateescape")


def as_part(data: bytes, source: str) -> dict[str, Any]:
    return {"source": source, "text": data.decode("utf-8", "surrogateescape")}


@dataclass
class AnswerJudgments:
    """A version's parts, read. ``scores`` caches a whole-collection evaluation per metric
    list (a worker scores every run of a version from one)."""

    nuggets: dict[str, TopicNuggets] | None
    assignments: Assignments | None
    support: list[SupportAnswer]
    qrels: Qrels
    sources: dict[str, Any]
    qrels_digest: str = ""  # sha256 of the retrieval qrels' text (the references' scores read them)
    #: the cited passages' texts (segment id -> text), shown on the assessment pages; no score reads them
    passages: dict[str, str] = field(default_factory=dict)
    cache: dict[Any, Any] = field(default_factory=dict, repr=False)

    def topics(self) -> list[str]:
        """Every topic any part judges, sorted: the topics of a run's stored scores (the same
        for every run, so that boards and tests line them up)."""
        found = set(self.qrels.topics) | {a.topic for a in self.support}
        if self.assignments is not None:
            found |= set(self.assignments.topics)
        if self.nuggets is not None:
            found |= set(self.nuggets)
        return sorted(found)

    def run_inputs(self) -> dict[str, Any]:
        """Per run tag, a digest of every input of its scores under this version (what the
        version stores as ``QrelsVersion.run_inputs``): the RAG metrics' inputs
        (:func:`~service.metrics.rag_scoring.run_inputs`), the topics every run's scores are
        laid out on, and the retrieval qrels its references are scored against. The run's own
        file and the configuration are not in it: a run's results are carried only to the same
        run under the same settings (:mod:`service.evaluation.organising.planning`)."""
        core = run_inputs(self.assignments, self.support)
        common = hashlib.sha256(repr((self.topics(), self.qrels_digest)).encode()).hexdigest()

        def digest(d: str) -> str:
            return hashlib.sha256(f"{common}:{d}".encode()).hexdigest()

        return {"runs": {run: digest(d) for run, d in core.runs.items()}, "unjudged": digest(core.unjudged)}

    def describe(self) -> dict[str, Any]:
        """What the version holds, for listings."""
        return {"nuggets": None if self.nuggets is None else {"source": self.sources["nuggets"], "topics": len(self.nuggets)},
                "assignments": None if self.assignments is None else {
                    "source": self.sources["assignments"], "topics": len(self.assignments.topics),
                    "runs": len(self.assignments.runs), "rows": len(self.assignments.labels),
                    "grades": self.assignments.grades},
                "support": [{"source": s} for s in self.sources["support"]] if self.support else [],
                "support_answers": len(self.support),
                "qrels": None if not self.qrels.topics else {"source": self.sources["qrels"],
                                                             "topics": len(self.qrels.topics)},
                "passages": None if not self.passages else {"source": self.sources["passages"],
                                                            "passages": len(self.passages)}}


def read(parts: Mapping[str, Any]) -> AnswerJudgments:
    """Read and check every part (InvalidInput naming the part's file, its line and field):
    the assignments matched to the nuggets when both are there, the support files' run ids
    matched to the assignments' runs (:func:`~service.metrics.rag_scoring.support_by_answer`):
    two ids matched to one run, or a (run, topic) judged twice across files, refused."""
    grades = parts.get("grades", "auto")
    if grades not in GRADES:
        raise InvalidRequest(f"grades is auto, 2 or 3, not {grades!r}")
    nuggets = assignments = None
    sources: dict[str, Any] = {"support": []}
    if parts.get("nuggets"):
        nuggets = read_nuggets(_bytes(parts["nuggets"]), parts["nuggets"]["source"])
        sources["nuggets"] = parts["nuggets"]["source"]
    if parts.get("assignments"):
        a = parts["assignments"]
        assignments = read_assignments(_bytes(a), a["source"], nuggets=nuggets, grades=grades)
        sources["assignments"] = a["source"]
    support: list[SupportAnswer] = []
    for part in parts.get("support") or []:
        support.extend(read_support(_bytes(part), part["source"]))
        sources["support"].append(part["source"])
    # refused here, at the upload, as the workers' scoring would refuse it: two support ids
    # matched to one run, an answer judged twice (across files too)
    support_by_answer(support, assignments.runs if assignments is not None else ())
    qrels = Qrels.from_mapping({})
    if parts.get("qrels"):
        qrels = parse_qrels(_bytes(parts["qrels"]), parts["qrels"]["source"])
        sources["qrels"] = parts["qrels"]["source"]
    qrels_digest = hashlib.sha256(_bytes(parts["qrels"]) if parts.get("qrels") else b"").hexdigest()
    passages: dict[str, str] = {}
    if parts.get("passages"):
        passages = read_passages(_bytes(parts["passages"]), parts["passages"]["source"])
        sources["passages"] = parts["passages"]["source"]
    return AnswerJudgments(nuggets, assignments, support, qrels, sources, qrels_digest, passages)


def replaced(parts: Mapping[str, Any], part: str, data: bytes, source: str, *, append: bool = False,
             grades: str | int | None = None) -> dict[str, Any]:
    """The parts with ``part`` replaced by the upload (``support`` with ``append``: added to
    the support files already there)."""
    if part not in PARTS:
        raise InvalidRequest(f"part: one of {', '.join(PARTS)}, not {part!r}")
    new = {**empty(), **parts}
    if part == "support":
        new["support"] = [*(new["support"] if append else []), as_part(data, source)]
    else:
        new[part] = as_part(data, source)
    if grades is not None:
        new["grades"] = int(grades) if str(grades) in ("2", "3") else grades
    return new
