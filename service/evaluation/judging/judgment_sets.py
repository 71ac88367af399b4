"""Judgment sets: several named sets of judgments per collection, each with its versions and
provenance (issue 16).

A collection starts with one set, ``official`` (migration 0017 put every earlier qrels
version in it): boards rank by its newest version (``Collection.current_qrels_id``).
Organisers add other sets (an automatic judge's qrels, a post-edited merge), upload versions
into them (``qrels.upload(..., judgment_set=name)``) and have every run evaluated under them
by the same workers: automatically for each new version when the set says so
(``auto_evaluate``), or on request. A stored score names its qrels version, and the version
its set. Another set can be made the official one; the board then follows it.

Version numbers run in one sequence per collection across its sets, so a number names one
version without its set (what ``?qrels_version=`` and the comparisons take); a reference to
a set is its name (its newest version), ``name:N`` (version N, which must be in that set) or
``assessor@name`` (one assessor's labels in that set, for the label figures only).

Who sees what: organisers see every set; a team sees the sets it submitted to a judges track
(:mod:`service.evaluation.judging.judge_track`) and nothing of the others, least of all the official
judgments.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from service.errors import BadRequest, Conflict, NotFound
from service.evaluation.common.work import Outcome
from service.evaluation.organising import collections
from service.evaluation.organising.planning import ACTIVE, plan_job
from service.evaluation.organising.results import current_result
from service.evaluation.organising.setup import audit, official_set
from service.evaluation.permissions import policy
from service.evaluation.permissions.access import Principal
from service.evaluation.publishing import versions
from service.formats.text import check_text
from service.store.models import (
    AssessorLabel,
    Collection,
    Job,
    JudgmentSet,
    QrelsVersion,
    Run,
    RunEvaluation,
    Team,
)

#: A set's name: begins with a letter (so it is never read as a version number), then letters,
#: digits and ``. _ -``; at most 100 characters.
NAME = re.compile(r"[A-Za-z][A-Za-z0-9._-]{0,99}")
SOURCES = ("human", "automatic", "merge")
FIELDS = ("source", "model", "prompt", "judged_on", "notes", "rule", "auto_evaluate")
LIMITS = {"model": 200, "prompt": 20_000, "judged_on": 40, "notes": 20_000}


def check_name(name: str) -> str:
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise BadRequest(f"a judgment set's name begins with a letter, then letters, digits, '.', '_' or '-' "
                         f"(at most 100 characters), not {name!r}")
    return name


def _rules() -> tuple[str, ...]:
    from service.metrics.judgment_rules import RULES

    return tuple(RULES)


def check_fields(fields: Mapping[str, Any]) -> dict[str, Any]:
    """The provenance fields of a set, checked (400 naming the field)."""
    out: dict[str, Any] = {}
    for key, value in fields.items():
        if key not in FIELDS:
            raise BadRequest(f"unknown field {key!r} of a judgment set (fields: {', '.join(FIELDS)})")
        if value is None:
            continue
        if key == "source":
            if value not in SOURCES:
                raise BadRequest(f"source is one of {', '.join(SOURCES)}, not {value!r}")
        elif key == "rule":
            if value not in _rules():
                raise BadRequest(f"rule is one of {', '.join(_rules())}, not {value!r}")
        elif key == "auto_evaluate":
            if not isinstance(value, bool):
                raise BadRequest("auto_evaluate is true or false")
        elif not isinstance(value, str) or len(value) > LIMITS[key]:
            raise BadRequest(f"{key} is a text of at most {LIMITS[key]} characters")
        else:
            check_text(key, value)  # shown on the judge board: no control character, no bidi override
        out[key] = value
    return out


# --------------------------------------------------------------------------- reading
def may_see(me: Principal, coll: Collection, js: JudgmentSet) -> bool:
    return policy.may_see_judgment_set(me, coll, js)


def find(s: Session, coll: Collection, name: str) -> JudgmentSet | None:
    return s.scalar(select(JudgmentSet).where(JudgmentSet.collection_id == coll.id, JudgmentSet.name == name))


def get(s: Session, coll: Collection, name: str, me: Principal) -> JudgmentSet:
    """The set ``name`` if the caller may see it. Only a caller who sees every set (organisers)
    is told that there is none (404, naming the sets); anyone else gets one refusal (401/403)
    for every name but its own sets', whether such a set exists or not, so that another team's
    set names cannot be found by asking."""
    js = find(s, coll, name)
    if js is not None and may_see(me, coll, js):
        return js
    policy.require(policy.may_see_qrels(me, coll), me, f"judgment set {name!r} of collection {coll.id}")
    known = [j.name for j in _sets(s, coll)]
    raise NotFound(f"collection {coll.id} has no judgment set {name!r}"
                   + (f" (its sets: {', '.join(known)})" if known else ""))


def _sets(s: Session, coll: Collection) -> list[JudgmentSet]:
    return list(s.scalars(select(JudgmentSet).where(JudgmentSet.collection_id == coll.id).order_by(JudgmentSet.id)))


def _evaluated(s: Session, coll: Collection, version_id: int | None) -> dict[str, Any]:
    """How far the runs are evaluated on a version under the current configuration."""
    runs = s.scalar(select(func.count(Run.id)).where(Run.collection_id == coll.id)) or 0
    if version_id is None:
        return {"runs": runs, "evaluated": 0, "job": None, "job_status": None}
    done = s.scalar(select(func.count(RunEvaluation.id)).join(Run, Run.id == RunEvaluation.run_id).where(
        Run.collection_id == coll.id, current_result(coll, version_id))) or 0
    job = s.scalar(select(Job).where(Job.collection_id == coll.id, Job.qrels_version_id == version_id,
                                     Job.config_id == coll.current_config_id).order_by(Job.id.desc()).limit(1))
    return {"runs": runs, "evaluated": done, "job": job.id if job else None, "job_status": job.status if job else None}


def set_doc(s: Session, coll: Collection, js: JudgmentSet, *, versions: bool = False) -> dict[str, Any]:
    current = s.get(QrelsVersion, js.current_version_id) if js.current_version_id else None
    team = s.get(Team, js.team_id) if js.team_id else None
    doc: dict[str, Any] = {
        "name": js.name, "official": js.id == coll.official_set_id, "source": js.source, "model": js.model,
        "prompt": js.prompt, "judged_on": js.judged_on, "notes": js.notes, "rule": js.rule,
        "auto_evaluate": js.auto_evaluate, "team": team.name if team else None, "created_by": js.created_by,
        "created_at": collections.iso(js.created_at),
        "current_version": current.version if current else None,
        "judgments": current.n_judgments if current else 0,
        "labels": s.scalar(select(func.count()).select_from(AssessorLabel)
                           .where(AssessorLabel.judgment_set_id == js.id)) or 0,
        "evaluation": _evaluated(s, coll, js.current_version_id),
    }
    if versions:
        doc["versions"] = [
            {"version": v.version, "uploaded_by": v.uploaded_by, "uploaded_at": collections.iso(v.uploaded_at),
             "source_name": v.source_name, "checksum": v.checksum, "judgments": v.n_judgments}
            for v in s.scalars(select(QrelsVersion).where(QrelsVersion.judgment_set_id == js.id)
                               .order_by(QrelsVersion.version))]
    return doc


def listing(s: Session, coll: Collection, me: Principal) -> dict[str, Any]:
    """The sets the caller may see (organisers: all; a team: its own submissions)."""
    policy.require(policy.may_list_judgment_sets(me, coll), me, f"the judgment sets of collection {coll.id}")
    official_set(s, coll)
    seen = [js for js in _sets(s, coll) if may_see(me, coll, js)]
    return {"collection": coll.id, "accepts_judgments": coll.accepts_judgments,
            "items": [set_doc(s, coll, js) for js in seen]}


def describe(s: Session, coll: Collection, me: Principal, name: str) -> dict[str, Any]:
    return set_doc(s, coll, get(s, coll, name, me), versions=True)


# --------------------------------------------------------------------------- changing
def create(s: Session, coll: Collection, me: Principal, name: str, fields: Mapping[str, Any],
           team_id: int | None = None) -> JudgmentSet:
    """A new, empty set (organisers; a judges track's team through ``judge_track``)."""
    if team_id is None:
        policy.require(policy.may_upload_qrels(me, coll), me, f"creating a judgment set in collection {coll.id}")
    check_name(name)
    values = check_fields(fields)
    official_set(s, coll)
    if find(s, coll, name) is not None:
        raise Conflict(f"collection {coll.id} already has a judgment set {name!r}")
    js = JudgmentSet(collection_id=coll.id, name=name, created_by=me.name, team_id=team_id,
                     **{"source": "automatic" if team_id is not None else "human", "rule": "latest",
                        "auto_evaluate": True, **values})
    s.add(js)
    s.flush()
    audit(s, me.name, "judgment_set.create", coll.id, name=name, source=js.source, team=team_id)
    return js


def evaluation_followups(s: Session, coll: Collection, js: JudgmentSet, version: QrelsVersion,
                         previous_id: int | None, kind: str = "qrels", force: bool = False) -> tuple[Any, ...]:
    """Plan the evaluation of every run on a set's new version: always for the official set (the
    board), for another set when it evaluates automatically (or ``force``), and only when
    the collection has runs. Returns the follow-ups and the job id."""
    is_official = js.id == coll.official_set_id
    has_runs = s.scalar(select(func.count(Run.id)).where(Run.collection_id == coll.id))
    if not (is_official or ((js.auto_evaluate or force) and has_runs)):
        return (None, ())
    job, followups = plan_job(s, coll, kind, previous_qrels_id=previous_id, qrels_version_id=version.id)
    return (job.id, tuple(followups))


def request_evaluation(s: Session, coll: Collection, me: Principal, name: str,
                       retry_failed: bool = True) -> Outcome[dict[str, Any]]:
    """Evaluate every run on the set's newest version under the current configuration (the
    runs that have results already are not evaluated again). Organisers."""
    policy.require(policy.may_upload_qrels(me, coll), me, f"evaluating a judgment set of collection {coll.id}")
    collections.lock(s, coll.id)
    js = get(s, coll, name, me)
    if js.current_version_id is None:
        raise Conflict(f"judgment set {name!r} has no judgments yet: upload a version first")
    if coll.current_config_id is None:
        raise Conflict(f"collection {coll.id} has no configuration yet")
    job, followups = plan_job(s, coll, "judgments", qrels_version_id=js.current_version_id,
                              retry_failed=retry_failed)
    audit(s, me.name, "judgment_set.evaluate", coll.id, name=name, job=job.id)
    return Outcome({"judgment_set": name, "version": s.get(QrelsVersion, js.current_version_id).version,
                    "job": job.id, "status": job.status, "total": job.total}, tuple(followups))


def make_official(s: Session, coll: Collection, me: Principal, name: str,
                  reason: str = "") -> Outcome[dict[str, Any]]:
    """Make ``name`` the official set: boards rank by its newest version from now on. Its
    evaluation under the current configuration must be complete (409 otherwise), so the board
    moves from one complete ranking to another. Organisers; audited."""
    policy.require(policy.may_upload_qrels(me, coll), me, f"choosing the official judgments of collection {coll.id}")
    check_text("reason", reason)
    collections.lock(s, coll.id)
    js = get(s, coll, name, me)
    if js.current_version_id is None:
        raise Conflict(f"judgment set {name!r} has no judgments yet: it cannot rank the runs")
    before = official_set(s, coll)
    if before.id == js.id:
        return Outcome({"official": name, "changed": False, "job": None})
    state = _evaluated(s, coll, js.current_version_id)
    if state["runs"] and (state["evaluated"] < state["runs"] or state["job_status"] != "done"):
        # boards serve the official set's newest complete evaluation: a set without one would
        # leave the board empty (and the previous official results out of it) until it is done
        raise Conflict(f"judgment set {name!r} is not evaluated completely under the current configuration "
                       f"({state['evaluated']} of {state['runs']} runs"
                       + (f", job {state['job']} {state['job_status']}" if state["job"] else "")
                       + "): evaluate it (POST .../evaluate) and make it official once that job is done")
    previous = coll.current_qrels_id
    coll.official_set_id = js.id
    coll.current_qrels_id = js.current_version_id
    coll.current_qrels = s.get(QrelsVersion, js.current_version_id)
    s.flush()
    audit(s, me.name, "judgment_set.official", coll.id, old=before.name, new=name, reason=reason)
    job_id, followups = None, ()
    if coll.current_config_id is not None:
        job, more = plan_job(s, coll, "qrels", previous_qrels_id=previous)
        job_id, followups = job.id, tuple(more)
    return Outcome({"official": name, "previous": before.name, "changed": True, "job": job_id}, followups)


# --------------------------------------------------------------------------- references
@dataclass(frozen=True)
class Reference:
    """What a comparison's ``a`` or ``b`` names: a stored version, or one assessor's labels."""

    text: str
    judgment_set: JudgmentSet
    version: QrelsVersion | None  # None: the labels of ``assessor``
    assessor: str | None = None


def resolve(s: Session, coll: Collection, me: Principal, text: str) -> Reference:
    """``3`` (version 3), ``name`` (the set's newest version), ``name:3`` (version 3 of that
    set) or ``assessor@name`` (an assessor's labels in that set)."""
    text = str(text).strip()
    if text.isdigit():
        v = versions.readable(s, coll, me, int(text))
        js = s.get(JudgmentSet, v.judgment_set_id) if v.judgment_set_id else official_set(s, coll)
        return Reference(text, js, v)
    assessor = None
    if "@" in text:
        assessor, _, text_set = text.rpartition("@")
        if not assessor:
            raise BadRequest(f"{text!r}: an assessor's labels are named assessor@set")
    else:
        text_set = text
    set_name, _, number = text_set.partition(":")
    js = get(s, coll, set_name, me)
    if assessor is not None:
        if number:
            raise BadRequest(f"{text!r}: an assessor's labels have no version (labels are kept as they are now)")
        if not s.scalar(select(func.count()).select_from(AssessorLabel).where(
                AssessorLabel.judgment_set_id == js.id, AssessorLabel.assessor == assessor)):
            raise NotFound(f"judgment set {js.name!r} has no labels by assessor {assessor!r}")
        return Reference(text, js, None, assessor)
    if number:
        if not number.isdigit():
            raise BadRequest(f"{text!r}: a version is a number (name:3)")
        v = s.scalar(select(QrelsVersion).where(QrelsVersion.judgment_set_id == js.id,
                                                QrelsVersion.version == int(number)))
        if v is None or not versions.may_read(me, coll, v):
            raise NotFound(f"judgment set {js.name!r} has no version {number}")
        return Reference(text, js, v)
    if js.current_version_id is None:
        raise Conflict(f"judgment set {js.name!r} has no judgments yet")
    v = s.get(QrelsVersion, js.current_version_id)
    if not versions.may_read(me, coll, v):
        raise NotFound(f"judgment set {js.name!r} has no version {v.version}")
    return Reference(text, js, v)


def is_active(s: Session, coll: Collection, version_id: int) -> bool:
    return s.scalar(select(Job.id).where(Job.collection_id == coll.id, Job.qrels_version_id == version_id,
                                         Job.status.in_(ACTIVE)).limit(1)) is not None
