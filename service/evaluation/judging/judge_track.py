"""A judges track (the TREC AutoJudge / LLMJudge setting): teams submit automatic judgment
sets for the collection's pool, the workers evaluate every run under each, and a judge board
ranks the submitted judges by how well their judgments reproduce the official ranking of the
runs, with a bootstrap interval over topics.

* Organisers open the track (``configure``: ``accepts_judgments``) and choose what the board
  ranks by: the metric the runs are scored with (default the official one), the agreement
  measure (``tau_ap`` by default: Yilmaz et al.'s AP correlation with the official set as the
  truth; ``kendall``, ``tau_ap_b``, ``spearman``, ``pearson``, ``tau_top_k``), the resamples
  and the level of the interval, how many sets and versions a team may submit (in all and in
  a window of hours), and whether the board is released to the teams.
* A team submits judgments (``submit``): a qrels file checked line by line against the
  judgeable documents (the documents of the collection's pools, which the teams download:
  ``pool_file``) and the collection's scale; it becomes a judgment set of the team's (a set
  submitted again under the same name is its next version), evaluated by the workers like any
  set, in the background (below the runs' evaluations under the official set).
* The board is computed by the workers from stored per-topic scores
  (:func:`service.metrics.stats.judge_meta.judge_agreement`) and stored as an analysis of kind
  ``judge_board``; the scheduled refresh queues it again whenever its inputs change (a new
  official version, configuration, setting, set version or evaluation). The API only reads it.

Secrecy: a team never reads the official judgments, its own judgments' agreement with them
document by document, nor another team's set: the board gives each submitted set's aggregate
agreement only, to the organisers always, to the submitting team for its own sets, and to
everyone who may read the collection once the organisers release the board. The per-team
limits on sets and versions (in all, and per window) bound how often a team can probe the
official judgments through the board, and a refused upload reveals nothing of them: a file is
checked against what the team is given (the pools, the scale), never against the official
judgments, so a refusal for a document the official set judged outside the pools and for one
nobody judged is the same.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

import numpy as np
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from service.errors import BadRequest, Conflict, InvalidInput
from service.evaluation.analysing import analyses
from service.evaluation.common.memory import guarded
from service.evaluation.common.work import Followup, Heartbeat, LeaseLost, Limits, Outcome, patiently
from service.evaluation.judging import judgment_sets
from service.evaluation.organising import collections, idempotency
from service.evaluation.organising.planning import ACTIVE, PENDING, job_key
from service.evaluation.organising.results import current_result
from service.evaluation.organising.setup import add_qrels, audit, max_level, official_set
from service.evaluation.permissions import policy
from service.evaluation.permissions.access import Principal
from service.formats.readers import parse_qrels, qrels_records
from service.metrics import parse_measure
from service.metrics.stats.agreement import bland_altman
from service.metrics.stats.judge_meta import MEASURES, common_topics, judge_agreement
from service.store.arrays import unpack
from service.store.db import as_utc
from service.store.models import (
    Analysis,
    Collection,
    CollectionConfig,
    Job,
    JobItem,
    Judgment,
    JudgmentSet,
    Pool,
    PoolDocument,
    QrelsVersion,
    Run,
    RunEvaluation,
    Score,
    Team,
    utcnow,
)

JUDGE_BOARD = analyses.JUDGE_BOARD
DEFAULTS: dict[str, Any] = {"metric": None, "measure": "tau_ap", "resamples": 1000, "level": 0.95, "seed": 0,
                            "top_k": 10, "max_sets_per_team": 5, "max_versions_per_team": 10,
                            "max_versions_per_window": 3, "window_hours": 24, "released": False}
#: The whole numbers among the settings, with their ranges.
WHOLE = {"resamples": (100, 100_000), "top_k": (2, 10_000), "max_sets_per_team": (1, 1000), "seed": (0, 2**31 - 1),
         "max_versions_per_team": (1, 1000), "max_versions_per_window": (1, 1000), "window_hours": (1, 24 * 366)}


# --------------------------------------------------------------------------- settings
def settings(coll: Collection) -> dict[str, Any]:
    return {"accepts_judgments": coll.accepts_judgments, **DEFAULTS, **(coll.judge_track or {})}


def _check(values: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in values.items():
        if value is None and key != "metric":
            continue
        if key == "metric":
            out[key] = str(parse_measure(value)) if value else None
        elif key == "measure":
            if value not in MEASURES:
                raise BadRequest(f"measure is one of {', '.join(MEASURES)}, not {value!r}")
            out[key] = value
        elif key in WHOLE:
            low, high = WHOLE[key]
            if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
                raise BadRequest(f"{key} is a whole number from {low} to {high}")
            out[key] = value
        elif key == "level":
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0.5 <= value < 1:
                raise BadRequest("level is a number from 0.5 to below 1 (e.g. 0.95)")
            out[key] = float(value)
        elif key == "released":
            if not isinstance(value, bool):
                raise BadRequest("released is true or false")
            out[key] = value
        else:
            raise BadRequest(f"unknown judge track setting {key!r}")
    return out


def configure(s: Session, coll: Collection, me: Principal, changes: Mapping[str, Any]) -> dict[str, Any]:
    """Open or close the track and set what its board ranks by (organisers; audited). A
    metric must be one of the collection's."""
    policy.require(policy.may_configure(me, coll), me, f"the judges track of collection {coll.id}")
    collections.lock(s, coll.id)
    changes = dict(changes)
    accepts = changes.pop("accepts_judgments", None)
    values = _check(changes)
    if values.get("metric") and values["metric"] not in coll.current_config.metrics:
        raise BadRequest(f"{values['metric']} is not among the collection's metrics: "
                         f"{', '.join(coll.current_config.metrics)}")
    if accepts is not None:
        if not isinstance(accepts, bool):
            raise BadRequest("accepts_judgments is true or false")
        coll.accepts_judgments = accepts
    coll.judge_track = {**(coll.judge_track or {}), **values}
    audit(s, me.name, "judge_track.update", coll.id, accepts_judgments=coll.accepts_judgments, **values)
    return settings(coll)


# --------------------------------------------------------------------------- submissions
def judgeable(s: Session, coll: Collection) -> dict[str, set[str]]:
    """topic -> the documents a judge may label: those of the collection's pools (drawn, for a
    stratified pool), which the organisers give the teams. Only what a team may know: checking
    against the official judgments as well would make each refusal tell whether the official
    set judged a document (issue 24)."""
    found: dict[str, set[str]] = {}
    for t, d in s.execute(select(PoolDocument.topic, PoolDocument.docno).join(Pool, Pool.id == PoolDocument.pool_id)
                          .where(Pool.collection_id == coll.id, PoolDocument.sampled.is_(True))):  # not sampled out
        found.setdefault(t, set()).add(d)
    return found


def to_judge(s: Session, coll: Collection) -> dict[str, set[str]]:
    """:func:`judgeable`; 409 while the collection has no pool."""
    found = judgeable(s, coll)
    if not found:
        raise Conflict(f"collection {coll.id} has no pool yet: there is nothing to judge")
    return found


def pool_file(s: Session, coll: Collection, me: Principal) -> str:
    """What the teams judge, as the assessors' files give it: a ``topic docno`` line for each
    document of :func:`judgeable` (the very set a judge file is checked against: what a refusal
    would tell a team anyway, for free), in topic and document order. Nothing else: no level, no
    stratum or inclusion probability, no rank, no pooled document left undrawn, and an order that
    is the documents' own, so it tells nothing of the runs or of a draw's seed. Organisers
    always; enrolled teams while the track is open (``policy.may_download_judge_pool``)."""
    from service.evaluation.judging.assessments import document_lines

    policy.require(policy.may_download_judge_pool(me, coll), me, f"the judges track's pool of collection {coll.id}")
    if coll.task_kind == "answers":  # the answers to judge, blind, with the nuggets (issue 36, item 4)
        from service.evaluation.judging import answer_judges

        return answer_judges.pool_file(s, coll)
    found = to_judge(s, coll)
    return "".join(document_lines(topic, sorted(found[topic])) for topic in sorted(found))


def usage(s: Session, coll: Collection, team_id: int, now: datetime | None = None) -> dict[str, Any]:
    """A team's use of the track's limits: its sets, its versions in all and within the window
    ending ``now``, and when the window lets the next version in (None: at once)."""
    cfg = settings(coll)
    now = now or utcnow()
    window = timedelta(hours=cfg["window_hours"])
    sets = s.scalar(select(func.count(JudgmentSet.id)).where(JudgmentSet.collection_id == coll.id,
                                                            JudgmentSet.team_id == team_id)) or 0
    times = sorted(as_utc(t) for t in s.scalars(
        select(QrelsVersion.uploaded_at).join(JudgmentSet, JudgmentSet.id == QrelsVersion.judgment_set_id)
        .where(JudgmentSet.collection_id == coll.id, JudgmentSet.team_id == team_id)))
    recent = [t for t in times if t > now - window]
    over = len(recent) - cfg["max_versions_per_window"]
    return {"sets": sets, "versions": len(times), "in_window": len(recent),
            "next_at": recent[over] + window if over >= 0 else None}


def check_budget(s: Session, coll: Collection, team_id: int, new_set: bool) -> None:
    """409 when one more version (of a new set, with ``new_set``) would pass one of the track's
    limits: each version is another aggregate probe of the official judgments."""
    cfg, used = settings(coll), usage(s, coll, team_id)
    if new_set and used["sets"] >= cfg["max_sets_per_team"]:
        raise Conflict(f"your team has submitted {used['sets']} judgment sets, the limit of this track "
                       f"({cfg['max_sets_per_team']}): submit a new version of one of them instead")
    if used["versions"] >= cfg["max_versions_per_team"]:
        raise Conflict(f"your team has submitted {used['versions']} versions of judgment sets, the limit of this "
                       f"track ({cfg['max_versions_per_team']})")
    if used["next_at"] is not None:
        raise Conflict(f"your team has submitted {used['in_window']} versions of judgment sets in the last "
                       f"{cfg['window_hours']} hours, the limit of this track ({cfg['max_versions_per_window']}); "
                       f"the next is accepted from {collections.iso(used['next_at'])}")


def team_set_name(team: str, name: str) -> str:
    """The name a judges-track team's set is stored under: in the team's own namespace,
    ``<team>-<name>`` (the team's name with every character but letters, digits and ``_`` as
    ``_``), kept as it is when it is already there. So the answer to a submission never depends
    on the names of other teams' sets: a name another team holds is simply another name here
    (issue 24: a 409 "taken" told a team which names others had used)."""
    slug = re.sub(r"[^A-Za-z0-9_]", "_", team)
    if not slug[:1].isalpha():
        slug = f"team_{slug}"
    return name if name.startswith(f"{slug}-") else f"{slug}-{name}"


@guarded
def submit(factory: sessionmaker[Session], me_of: Any, cid: int, body: bytes, name: str,
           fields: Mapping[str, Any], source: str = "judgments", idempotency_key: str | None = None
           ) -> Outcome[dict[str, Any]]:
    """A team's automatic judgments for the collection's pool: checked line by line before
    anything is stored (topics and documents judgeable, levels within the scale; a negative
    level, ``L-1``, is what it is in the official qrels: the document pooled but not judged,
    scored as unjudged and not counted among the judgments), then, within
    the track's limits (:func:`check_budget`), a new version of the team's set ``name`` (made
    on the first submission, with the provenance in ``fields``), which every run is evaluated
    under in the background. A refused upload stores nothing: no version number, no limit used.
    ``source`` names the file in every error (the client's file name)."""

    idempotency.check_key(idempotency_key)
    with factory() as s:
        me = me_of(s)
        coll = collections.get(s, cid, me)
        policy.require(policy.is_enrolled(me, coll) and me.team_id is not None, me,
                       f"submitting judgments to collection {cid}")
        judgment_sets.check_name(name)  # 400s only for those who may submit
        requested = name
        provenance = judgment_sets.check_fields({k: v for k, v in fields.items()
                                                 if k in ("model", "prompt", "judged_on", "notes")})
        if not policy.may_submit_judgments(me, coll):
            raise Conflict(f"collection {cid} does not accept judgment sets (its organisers have not opened a "
                           "judges track)")
        answers_read = None
        if coll.task_kind == "answers":  # nugget assignment sets (issue 36, item 4)
            from service.evaluation.judging import answer_judges

            answers_read = answer_judges.read_submission(s, coll, body, source)
        else:
            pool = to_judge(s, coll)
            top = max_level(s, coll)
    if answers_read is not None:
        return _submit_answers(factory, me, cid, requested, provenance, source, idempotency_key, body, *answers_read)
    records = qrels_records(body, source)  # InvalidInput with the line (syntax, duplicates) first
    if not records:
        raise InvalidInput(source, None, "no judgments in the upload")
    for line, topic, docno, level in records:
        if topic not in pool:
            raise InvalidInput(source, line, f"topic {topic} has nothing to judge in this collection")
        if docno not in pool[topic]:
            raise InvalidInput(source, line, f"document {docno} is not in the pool of topic {topic}")
        if level > top:  # a negative level (L-1): pooled, not judged, as in the official qrels
            raise InvalidInput(source, line, f"level {level} is above the collection's scale 0 to {top} (a negative "
                                             "level, such as L-1, marks a pooled document left unjudged)")
    unjudged = sum(1 for *_, level in records if level < 0)
    judged = len(records) - unjudged  # documents labelled: a negative level is no label (Qrels)
    parsed = parse_qrels(body, source)
    digest = idempotency.request_hash(body + json.dumps(provenance, sort_keys=True).encode())

    def write(s: Session, coll: Collection) -> Outcome[dict[str, Any]]:
        js, name = _team_set(s, coll, me, requested, provenance)
        previous = js.current_version_id
        version = add_qrels(s, coll, body, source, me.name, parsed=parsed, judgment_set=js)
        job_id, followups = judgment_sets.evaluation_followups(s, coll, js, version, previous, kind="judges",
                                                               force=True)
        total = sum(len(v) for v in pool.values())
        audit(s, me.name, "judgments.submit", coll.id, judgment_set=name, version=version.version, judgments=judged,
              unjudged=unjudged)
        return Outcome({"judgment_set": name, "version": version.version, "judgments": judged,
                        "unjudged": unjudged, "judgeable": total, "coverage": judged / total if total else None,
                        "job": job_id}, followups)

    return idempotency.store_once(factory, cid, me, f"judges:{cid}:{requested}", idempotency_key, digest, write,
                                  what=f"a judgments submission to collection {cid}")


def _team_set(s: Session, coll: Collection, me: Principal, requested: str,
              provenance: Mapping[str, Any]) -> tuple[JudgmentSet, str]:
    """The team's set a submission goes to (made on its first), within the track's limits: the
    one check of both kinds of submission, in the storing transaction."""
    if not coll.accepts_judgments:
        raise Conflict(f"collection {coll.id} does not accept judgment sets")
    name = judgment_sets.check_name(team_set_name(s.get(Team, me.team_id).name, requested))
    js = judgment_sets.find(s, coll, name)
    taken = js is not None and js.team_id != me.team_id
    check_budget(s, coll, me.team_id, new_set=js is None or taken)  # at the limit, a taken name is no news
    if taken:  # only an organiser's set named in the team's namespace (see team_set_name)
        raise Conflict(f"the name {name!r} is taken in collection {coll.id}: choose another")
    if js is None:
        js = judgment_sets.create(s, coll, me, name, {"source": "automatic", **provenance}, team_id=me.team_id)
    else:
        for key, value in provenance.items():
            setattr(js, key, value)
    return js, name


def _submit_answers(factory: sessionmaker[Session], me: Principal, cid: int, requested: str,
                    provenance: Mapping[str, Any], source: str, idempotency_key: str | None, body: bytes,
                    data: bytes, judged: Any, rows: int, judgeable: int) -> Outcome[dict[str, Any]]:
    """:func:`submit` of a collection of answers: the team's assignment set (already checked:
    ``answer_judges.read_submission``) as the next ``rag`` version of its set, under the same
    limits, names and idempotency as a relevance judge's, scored in the background."""
    from service.evaluation.organising.setup import ParsedQrels

    digest = idempotency.request_hash(body + json.dumps(provenance, sort_keys=True).encode())

    def write(s: Session, coll: Collection) -> Outcome[dict[str, Any]]:
        js, name = _team_set(s, coll, me, requested, provenance)
        previous = js.current_version_id
        version = add_qrels(s, coll, data, source, me.name, parsed=ParsedQrels("rag-assignments", judged.qrels),
                            judgment_set=js)
        version.run_inputs = judged.run_inputs()
        job_id, followups = judgment_sets.evaluation_followups(s, coll, js, version, previous, kind="judges",
                                                               force=True)
        audit(s, me.name, "judgments.submit", coll.id, judgment_set=name, version=version.version, judgments=rows)
        return Outcome({"judgment_set": name, "version": version.version, "judgments": rows, "unjudged": 0,
                        "judgeable": judgeable, "coverage": rows / judgeable if judgeable else None, "job": job_id},
                       followups)

    return idempotency.store_once(factory, cid, me, f"judges:{cid}:{requested}", idempotency_key, digest, write,
                                  what=f"a judgments submission to collection {cid}")


# --------------------------------------------------------------------------- the board
def _progress(s: Session, coll: Collection, version_id: int | None) -> dict[str, Any]:
    """How far the collection's runs are evaluated on ``version_id`` under the current
    configuration: ``done`` (stored results), ``pending`` (items still queued or being
    evaluated in an active job) and ``failed`` (the tags of the runs with no result whose
    newest item under this key failed for good, e.g. over a budget)."""
    if version_id is None or coll.current_config_id is None:
        return {"done": 0, "pending": 0, "failed": []}
    done_runs = set(s.scalars(select(RunEvaluation.run_id).join(Run, Run.id == RunEvaluation.run_id).where(
        Run.collection_id == coll.id, current_result(coll, version_id))))
    key = job_key(coll, coll.current_config, version_id)
    pending = s.scalar(select(func.count(JobItem.id)).join(Job, Job.id == JobItem.job_id).where(
        *key, Job.status.in_(ACTIVE), JobItem.status.in_(PENDING))) or 0
    newest: dict[int, tuple[str, str]] = {}  # run -> (status, tag) of its newest item under this key
    for run_id, status, tag in s.execute(
            select(JobItem.run_id, JobItem.status, Run.tag).join(Job, Job.id == JobItem.job_id)
            .join(Run, Run.id == JobItem.run_id).where(*key).order_by(JobItem.id)):
        newest[run_id] = (status, tag)
    failed = sorted(tag for run_id, (status, tag) in newest.items() if status == "failed" and run_id not in done_runs)
    return {"done": len(done_runs), "pending": int(pending), "failed": failed}


def _inputs(s: Session, coll: Collection) -> dict[str, Any]:
    """What the board is computed from; a change of any of it makes the stored board stale:
    the official set's and each other set's current version with how far the runs are
    evaluated on it (results stored, items pending, runs failed), the configuration and the
    board's settings."""
    cfg = settings(coll)
    sets = {}
    for js in s.scalars(select(JudgmentSet).where(JudgmentSet.collection_id == coll.id,
                                                  JudgmentSet.id != coll.official_set_id,
                                                  JudgmentSet.current_version_id.is_not(None))
                        .order_by(JudgmentSet.id)):
        sets[str(js.id)] = [js.current_version_id, _progress(s, coll, js.current_version_id)]
    return {"official": [coll.current_qrels_id, _progress(s, coll, coll.current_qrels_id)],
            "config": coll.current_config_id,
            "settings": {k: cfg[k] for k in ("metric", "measure", "resamples", "level", "seed", "top_k")},
            "sets": sets}


def pending(inputs: Mapping[str, Any]) -> int:
    """The run evaluations the board waits for: items of the official set's or a set's current
    version still queued or being evaluated."""
    return int(inputs["official"][1]["pending"]) + sum(int(p["pending"]) for _, p in inputs["sets"].values())


def _key(inputs: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()


def _newest(s: Session, coll: Collection, *statuses: str) -> Analysis | None:
    q = select(Analysis).where(Analysis.collection_id == coll.id, Analysis.kind == JUDGE_BOARD)
    if statuses:
        q = q.where(Analysis.status.in_(statuses))
    return s.scalars(q.order_by(Analysis.id.desc()).limit(1)).first()


def _computed_key(row: Analysis) -> str | None:
    """The key of what a done board was computed from: the inputs its worker read (stored with
    the result), else (boards computed before) the inputs when it was queued."""
    return (row.result or {}).get("key") or row.params.get("key")


def queue_if_stale(s: Session, coll: Collection, actor: str = "refresh", force: bool = False) -> list[Followup]:
    """Queue the board's computation unless one is queued already (its worker reads the inputs
    as they are when it starts), the one being computed started from the same inputs, or the
    newest done one is up to date (``force``: queue even then); only when there is a set to
    rank. The scheduled refresh, an organiser's request and the completion of the last pending
    evaluation of a set's or the official set's version (:func:`after_evaluations`) call this;
    the newest board's row is locked first, so that completions at once queue one board."""
    if coll.current_qrels_id is None or coll.current_config_id is None:
        return []
    newest = _newest(s, coll, "done", "queued", "running")
    if newest is not None:  # serialise the callers of one collection on its newest board (PostgreSQL)
        newest = s.scalar(select(Analysis).where(Analysis.id == newest.id).with_for_update()
                          .execution_options(populate_existing=True))
        latest = _newest(s, coll, "done", "queued", "running")
        if latest is not None and newest is not None and latest.id != newest.id:  # queued meanwhile
            newest = latest
    if newest is not None and newest.status == "queued":
        return []  # it reads everything when its worker starts
    inputs = _inputs(s, coll)
    if not inputs["sets"]:
        return []
    key = _key(inputs)
    if newest is not None and not (force and newest.status == "done") and key == (
            newest.params.get("key") if newest.status == "running" else _computed_key(newest)):
        return []
    row = Analysis(collection_id=coll.id, kind=JUDGE_BOARD, params={"key": key, **inputs},
                   qrels_version_id=coll.current_qrels_id, config_id=coll.current_config_id, created_by=actor)
    s.add(row)
    s.flush()
    return [analyses.followup(row)]


def after_evaluations(s: Session, job: Job) -> list[Followup]:
    """The board's computation, when the last pending item of ``job`` has completed (done or
    failed) and the job evaluated the current version of the official set or of another set
    of a collection with a set to rank: queued once however many sets complete together
    (:func:`queue_if_stale`)."""
    coll = s.get(Collection, job.collection_id)
    if coll is None or job.config_id != coll.current_config_id:
        return []
    current = job.qrels_version_id == coll.current_qrels_id or s.scalar(
        select(JudgmentSet.id).where(JudgmentSet.collection_id == coll.id,
                                     JudgmentSet.current_version_id == job.qrels_version_id).limit(1)) is not None
    if not current or s.scalar(select(JudgmentSet.id).where(
            JudgmentSet.collection_id == coll.id, JudgmentSet.id != coll.official_set_id,
            JudgmentSet.current_version_id.is_not(None)).limit(1)) is None:
        return []
    return queue_if_stale(s, coll, "evaluations")


def request_board(s: Session, coll: Collection, me: Principal, force: bool = False) -> Outcome[dict[str, Any]]:
    """Compute the judge board now, unless an up-to-date one is stored (``force``: even then)
    or on its way (organisers)."""
    policy.require(policy.may_configure(me, coll), me, f"the judge board of collection {coll.id}")
    followups = queue_if_stale(s, coll, me.name, force)
    newest = _newest(s, coll)
    return Outcome({"analysis": newest.id if newest else None, "queued": bool(followups),
                    "status": newest.status if newest else None}, tuple(followups))


def _judged_topics(s: Session, version_id: int) -> dict[str, bool]:
    """topic -> whether it has a relevant document, for every topic judged in a version (of a
    ``rag`` version: the topics its nugget assignments assess, each with something to find)."""
    version = s.get(QrelsVersion, version_id)
    if version is not None and version.format == "rag":
        from service.evaluation.organising.setup import cached_judgments

        judged = cached_judgments(s, version)[1]
        return {t: True for t in (judged.assignments.topics if judged.assignments is not None else ())}
    return {t: top >= 1 for t, top in s.execute(
        select(Judgment.topic, func.max(Judgment.level)).where(Judgment.qrels_version_id == version_id,
                                                               Judgment.level >= 0).group_by(Judgment.topic))}


def _per_topic(s: Session, coll: Collection, version_id: int, config: CollectionConfig,
               metric: str) -> dict[str, dict[str, float]]:
    from service.evaluation.organising.results import evaluated_under

    out: dict[str, dict[str, float]] = {}
    for tag, topics, blob in s.execute(
            select(Run.tag, RunEvaluation.topics, Score.values).join(Score).join(Run, Run.id == RunEvaluation.run_id)
            .where(Run.collection_id == coll.id, evaluated_under(version_id, config.settings_hash),
                   Score.metric == metric)):
        out[tag] = dict(zip(topics, unpack(blob).tolist()))
    return out


def compute(factory: sessionmaker[Session], analysis_id: int, max_attempts: int = 3,
            lease: float = Limits.lease) -> list[Followup]:
    """The worker's part: claim the board's row, read the stored scores, rank the judges with
    their intervals (no transaction open meanwhile), store the result in one transaction."""
    return analyses.run_claimed(factory, analysis_id, (JUDGE_BOARD,), max_attempts, lease, _compute)


def _compute(factory: sessionmaker[Session], analysis_id: int, attempt: int, heartbeat: Heartbeat) -> list[Followup]:
    def read() -> tuple[dict[str, Any], str, dict[str, dict[str, float]], list[dict[str, Any]], dict[str, Any],
                        dict[str, bool]]:
        # The inputs as they are now, read in the same transaction as the scores (on SQLite one
        # snapshot; on PostgreSQL the scores read afterwards can only be more): the key stored
        # with the result says what the board was computed from, so it is never called up to
        # date over fewer results than its key counts.
        with factory() as s:
            row = s.get(Analysis, analysis_id)
            coll = s.get(Collection, row.collection_id)
            inputs = _inputs(s, coll)
            config = s.get(CollectionConfig, inputs["config"])
            params = dict(inputs["settings"])
            metric = params["metric"] or config.official_metric
            official_version, official = inputs["official"]
            reference = _per_topic(s, coll, official_version, config, metric)
            reference_judged = _judged_topics(s, official_version)
            judges = []
            for set_id, (version_id, progress) in inputs["sets"].items():
                js = s.get(JudgmentSet, int(set_id))
                if js is None:
                    continue
                team = s.get(Team, js.team_id) if js.team_id else None
                version = s.get(QrelsVersion, version_id)
                judges.append({"judgment_set": js.name, "team": team.name if team else None, "source": js.source,
                               "model": js.model, "version": version.version if version else None,
                               "scores": _per_topic(s, coll, version_id, config, metric),
                               "judged": _judged_topics(s, version_id),
                               "failed": progress["failed"], "official_failed": official["failed"]})
            return params, metric, reference, judges, inputs, reference_judged

    params, metric, reference, judges, inputs, reference_judged = patiently(read, heartbeat)
    try:
        with heartbeat.guarded():
            result = rank_judges(reference, judges, metric, params, reference_judged)
        _note_failures(result, judges)
        result.update(key=_key(inputs), pending=pending(inputs))
        error = ""
    except LeaseLost:
        raise
    except Exception as exc:  # noqa: BLE001  (recorded on the analysis; the worker goes on)
        result, error = {}, f"{type(exc).__name__}: {exc}"
    return analyses.store_outcome(factory, analysis_id, attempt, result, error, heartbeat)


def _note_failures(result: dict[str, Any], judges: list[dict[str, Any]]) -> None:
    """Each row names the runs left out because their evaluation failed for good, under the
    official set or under the row's set (``failed_runs``: organisers only, see :func:`board`),
    and a note counts them."""
    failed = {j["judgment_set"]: (j["official_failed"], j["failed"]) for j in judges}
    for row in result["rows"]:
        official, own = failed.get(row["judgment_set"], ([], []))
        row["failed_runs"] = sorted(set(official) | set(own))
        for where, tags in (("the official set", official), ("this set", own)):
            if tags:
                row.setdefault("notes", []).append(
                    f"{len(tags)} run{'s' if len(tags) != 1 else ''} left out: "
                    f"{'its' if len(tags) == 1 else 'their'} evaluation under {where} failed")


def _num(v: float) -> float | None:
    return float(v) if v is not None and math.isfinite(v) else None


def rank_judges(reference: Mapping[str, Mapping[str, float]], judges: list[dict[str, Any]], metric: str,
                params: Mapping[str, Any], reference_judged: Mapping[str, bool] | None = None) -> dict[str, Any]:
    """The board: every judge's agreement with the reference on the runs scored under both and
    on the topics both sets judged (:func:`service.metrics.stats.judge_meta.common_topics`;
    ``reference_judged`` and each judge's ``judged`` map a judged topic to whether it has a
    relevant document, None: the topics scored; a compared topic judged without one scores 0
    there), run means over those topics ((topics, runs) matrices with NaN where a run was not
    scored), ranked by the measure (undefined last), with its interval and the leniency
    (Bland-Altman bias of the per-topic means, judge - official). Each row says how many topics
    it compared and left out."""
    rows = []
    for judge in judges:
        scores = judge["scores"]
        runs = sorted(set(reference) & set(scores))
        topics = sorted({t for r in runs for t in (*reference[r], *scores[r])})
        x = np.array([[reference[r].get(t, math.nan) for r in runs] for t in topics], dtype=np.float64)
        y = np.array([[scores[r].get(t, math.nan) for r in runs] for t in topics], dtype=np.float64)
        x, y = x.reshape(len(topics), len(runs)), y.reshape(len(topics), len(runs))
        # on the topics both sets judged (issue 25, item 8): judge_meta.common_topics
        compared = common_topics(topics, x, y, reference_judged, judge.get("judged"))
        x, y, topics = compared.reference, compared.candidate, list(compared.topics)
        row: dict[str, Any] = {k: judge[k] for k in ("judgment_set", "team", "source", "model", "version")}
        row.update(runs=len(runs), topics=len(topics), topics_left_out=len(compared.only_a) + len(compared.only_b)
                   + len(compared.no_relevant), compared_topics=compared.sentence())
        if len(runs) < 2 or not topics:
            row.update(value=None, low=None, high=None, bias=None,
                       notes=["fewer than two runs evaluated under both the official set and this one"])
            rows.append(row)
            continue
        agreement = judge_agreement(x, y, params["measure"], resamples=int(params["resamples"]),
                                    level=float(params["level"]), seed=int(params["seed"]), top_k=int(params["top_k"]))
        with np.errstate(invalid="ignore", divide="ignore"):  # a topic no run was scored on: NaN, left out
            topic_x = np.where(np.isnan(x), 0.0, x).sum(axis=1) / (~np.isnan(x)).sum(axis=1)
            topic_y = np.where(np.isnan(y), 0.0, y).sum(axis=1) / (~np.isnan(y)).sum(axis=1)
        ba = bland_altman(topic_x, topic_y)
        row.update(value=_num(agreement.value), low=_num(agreement.low), high=_num(agreement.high),
                   undefined_resamples=agreement.undefined_resamples, bias=_num(ba.bias),
                   bias_low=_num(ba.bias_low), bias_high=_num(ba.bias_high), direction=ba.direction,
                   notes=list(agreement.notes))
        rows.append(row)
    rows.sort(key=lambda r: (r["value"] is None, -(r["value"] or 0.0), r["judgment_set"]))
    for i, r in enumerate(rows):
        r["rank"] = i + 1 if r["value"] is not None else None
    return {"metric": metric, "measure": params["measure"], "resamples": int(params["resamples"]),
            "level": float(params["level"]), "seed": int(params["seed"]), "top_k": int(params["top_k"]), "rows": rows}


def board(s: Session, coll: Collection, me: Principal) -> dict[str, Any]:
    """The newest judge board the caller may see: organisers every row; a team its own sets'
    rows until the organisers release the board; once released, whoever may read the
    collection every row. ``stale`` when its inputs changed since it was computed or a run
    evaluation it waits for is still queued or running (``pending``: of the official set and
    the sets the caller sees); the workers compute a new one when those evaluations complete."""
    policy.require(policy.may_see_judge_board(me, coll), me, f"the judge board of collection {coll.id}")
    cfg = settings(coll)
    released = policy.judge_board_released(coll)
    row = _newest(s, coll, "done")
    official = official_set(s, coll)
    doc: dict[str, Any] = {"collection": coll.id, "accepts_judgments": coll.accepts_judgments, "released": released,
                           "official_set": official.name, "computed_at": None, "stale": True, "pending": 0,
                           "metric": cfg["metric"] or coll.current_config.official_metric,
                           "measure": cfg["measure"], "resamples": cfg["resamples"], "level": cfg["level"],
                           "rows": []}
    own_team = None
    if not policy.sees_all_judge_rows(me, coll):
        team = s.get(Team, me.team_id) if me.team_id else None
        own_team = team.name if team else ""
    inputs = _inputs(s, coll) if coll.current_qrels_id is not None else None
    if inputs is not None:  # a team is told of the official set's and its own sets' pending work only
        own = None
        if own_team is not None:
            own = {str(i) for i in s.scalars(select(JudgmentSet.id).where(
                JudgmentSet.collection_id == coll.id, JudgmentSet.team_id == me.team_id))} if me.team_id else set()
        doc["pending"] = pending({**inputs, "sets": {k: v for k, v in inputs["sets"].items()
                                                    if own is None or k in own}})
    if row is None:
        return doc
    result = row.result or {}
    doc.update(computed_at=collections.iso(row.finished_at),
               stale=inputs is None or pending(inputs) > 0 or _computed_key(row) != _key(inputs),
               metric=result.get("metric", doc["metric"]), measure=result.get("measure", doc["measure"]),
               resamples=result.get("resamples", doc["resamples"]), level=result.get("level", doc["level"]),
               rows=[r if own_team is None else {**r, "failed_runs": []}  # other teams' run tags: organisers'
                     for r in result.get("rows", []) if own_team is None or r.get("team") == own_team])
    return doc


def public_settings(s: Session, coll: Collection, me: Principal) -> dict[str, Any]:
    policy.require(policy.may_list_judgment_sets(me, coll), me, f"the judges track of collection {coll.id}")
    return settings(coll)
