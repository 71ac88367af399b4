"""Collections of generated answers (issue 35): the task kind chosen at creation, the answer
format and validation limits as collection settings, and answer runs read and stored.

A collection's ``task_kind`` is ``ranked`` (TREC runs, the default) or ``answers`` (TREC RAG
answer runs); it is set when the collection is created and never changes (its runs and
judgments would no longer fit). An answers collection's ``answer_settings``:

* ``format``: ``auto`` (detected where unambiguous), ``rag24``, ``rag25`` or ``rag26``;
* ``words``, ``references``, ``citations_per_sentence``, ``sentences``: the validation limits
  (:class:`~service.formats.rag_answers.AnswerLimits`; absent: the format's track defaults,
  ``None``: no bound);
* ``assessed_citations``: ``first`` (the default, TREC 2024's support assessment) or ``every``:
  which citations of a sentence the assessment pages ask about.

An answer run is validated completely (file, line and field of the first problem) before
anything is stored, as a ranked run is; its tag is the file's ``run_id``.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Collection as Many
from collections.abc import Mapping
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.errors import BadRequest, InvalidInput
from service.formats.rag_answers import FORMATS, TRACK_LIMITS, AnswerLimits, AnswerRun, limits_for, read_answers
from service.formats.text import check_text
from service.store.models import Collection, Run, RunTopics

TASK_KINDS = ("ranked", "answers")
LIMIT_KEYS = ("words", "references", "citations_per_sentence", "sentences")
#: Which citations of a sentence the support assessment pages ask about (issue 36).
ASSESSED_CITATIONS = ("first", "every")
#: An answers collection's configuration unless the organiser chooses: the track's primary score
#: (Vital strict) official, the six nugget scores, citation support and the references' R part.
DEFAULT_OFFICIAL = "nugget_vital(strict=true)"
DEFAULT_METRICS = ("nugget_vital(strict=true)", "nugget_vital", "nugget_all(strict=true)", "nugget_all",
                   "nugget_weighted(strict=true)", "nugget_weighted", "support_precision", "support_recall",
                   "nDCG@20", "Recall@20")


def is_answers(coll: Collection) -> bool:
    return (coll.task_kind or "ranked") == "answers"


def task_kind(value: Any) -> str:
    kind = "ranked" if value is None else str(value)
    if kind not in TASK_KINDS:
        raise BadRequest(f"task_kind is ranked or answers, not {str(value)[:40]!r}")
    return kind


def normalise_settings(data: Mapping[str, Any] | None, current: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """An answers collection's settings, checked (400 naming the field); fields absent keep
    their current value."""
    if data is not None and not isinstance(data, Mapping):
        raise BadRequest("answer_settings is an object: format, words, references, citations_per_sentence, sentences")
    out: dict[str, Any] = {"format": "auto", **(current or {})}
    for key, value in (data or {}).items():
        if key == "format":
            if value not in ("auto", *FORMATS):
                raise BadRequest(f"answer_settings.format is auto, {', '.join(FORMATS)}, not {str(value)[:40]!r}")
            out[key] = value
        elif key == "assessed_citations":
            if value not in ASSESSED_CITATIONS:
                raise BadRequest(f"answer_settings.assessed_citations is first or every, not {str(value)[:40]!r}")
            if value == "first":  # the default: not stored, so an untouched form changes nothing
                out.pop(key, None)
            else:
                out[key] = value
        elif key in LIMIT_KEYS:
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
                raise BadRequest(f"answer_settings.{key} is a positive integer or null (no bound)")
            out[key] = value
        else:
            raise BadRequest(f"answer_settings: unknown field {str(key)[:40]!r} (format, "
                             f"{', '.join(LIMIT_KEYS)}, assessed_citations)")
    return out


def stated(data: Any) -> bool:
    """Whether ``answer_settings`` say anything (the settings forms, generated from the schema,
    post every field, blank ones and defaults included, for collections of ranked lists too:
    ``auto`` formats and ``first`` citations say nothing)."""
    return isinstance(data, Mapping) and any(
        v not in (None, "", "auto") and not (k == "assessed_citations" and v == "first") for k, v in data.items()) or \
        (data is not None and not isinstance(data, Mapping))


def limits(settings: Mapping[str, Any], fmt: str) -> AnswerLimits:
    """The limits an answer run of format ``fmt`` (as read) is validated against."""
    overrides = {k: settings[k] for k in LIMIT_KEYS if k in settings}
    return limits_for(fmt if fmt in TRACK_LIMITS else "rag24", **overrides)


def effective_limits(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The limits in force for the collection's format (its track's defaults where not set),
    as the pages and the API show them."""
    fmt = settings.get("format", "auto")
    if fmt == "auto":
        return {k: settings.get(k) for k in LIMIT_KEYS if k in settings}
    lim = limits(settings, fmt)
    return {k: getattr(lim, k) for k in LIMIT_KEYS}


def parse(data: bytes, source: str, settings: Mapping[str, Any], topics: Many[str] | None) -> AnswerRun:
    """An answer run read in the collection's format with its limits (InvalidInput with the
    file, line and field): the format's track limits (the detected format's with ``auto``: a
    2025 run may hold 100 references, a 2024 one 20) with the collection's settings over them."""
    return read_answers(data, source, settings.get("format", "auto"), topics,
                        overrides={k: settings[k] for k in LIMIT_KEYS if k in settings})


def add_answer_run(s: Session, coll: Collection, data: bytes, source: str, parsed: AnswerRun, *,
                   team: str, actor: str = "") -> Run:
    """Store a validated answer run (verbatim, compressed) as a run of the collection, tagged
    by its ``run_id``: its topics, answers (``n_lines``) and most references (``depth``)."""
    from service.evaluation.organising.setup import audit, enrolled_team

    tag = check_text("run", parsed.run_id)
    if s.scalar(select(Run.id).where(Run.collection_id == coll.id, Run.tag == tag)) is not None:
        raise InvalidInput(source, None, f"collection {coll.name!r} already has a run tagged {tag!r}")
    team_row = enrolled_team(s, coll, team, actor)
    topics = list(parsed.topics())
    row = Run(collection_id=coll.id, team_id=team_row.id, tag=tag, submitted_by=actor, status="validated",
              source_name=source, checksum=hashlib.sha256(data).hexdigest(), file=zlib.compress(data, 1),
              n_topics=len(topics), n_lines=len(parsed.answers),
              depth=max((len(a.references) for a in parsed.answers), default=0),
              file_topics=RunTopics(topics=topics))
    s.add(row)
    s.flush()
    audit(s, actor, "run.submit", coll.id, run=row.tag, team=team, checksum=row.checksum, format=parsed.format)
    return row


def read_stored(data: bytes, source: str) -> Any:
    """A stored answer run read again: its format detected, or (a metadata line that could be
    2025 or 2026, which the collection's format setting told apart) read as 2025, whose
    references and citations 2026's are."""
    try:
        return read_answers(data, source, "auto", None, _unbounded())
    except InvalidInput:
        return read_answers(data, source, "rag25", None, _unbounded())


def _unbounded() -> Any:
    """A stored run was validated with its collection's limits when it was submitted: read
    again, it is not held to limits changed since."""
    return AnswerLimits(words=None, references=None, citations_per_sentence=None, sentences=None)
