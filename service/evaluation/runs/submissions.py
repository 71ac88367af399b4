"""Runs: submit one (window and daily quota), list, read, describe, download, delete.

A submission is validated completely before anything is stored (line-numbered errors) and
its evaluation is planned in the same transaction; the follow-ups go to the workers after
the commit.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from service.errors import BadRequest, Conflict, InvalidInput, NotFound
from service.evaluation.common.memory import RELEASE_FROM, guarded
from service.evaluation.common.work import Followup, Outcome
from service.evaluation.organising import answers, collections, idempotency
from service.evaluation.organising.planning import plan_job
from service.evaluation.organising.setup import add_run, audit
from service.evaluation.organising.teams import team_named
from service.evaluation.permissions import policy
from service.evaluation.permissions.access import Principal
from service.formats import ir_metadata, run_checks
from service.formats.readers import parse_run
from service.formats.text import check_text
from service.metrics import parse_measure
from service.runtime import release_memory
from service.store.db import as_utc
from service.store.models import RUN_TYPES, Collection, Run, Team, Topic


def get(s: Session, rid: int, me: Principal) -> tuple[Run, Collection]:
    """The run and its collection, if the caller may see the run."""
    row = s.get(Run, rid)
    coll = s.get(Collection, row.collection_id) if row is not None else None
    if row is None or coll is None:
        raise NotFound(f"no run {rid}")
    policy.require(policy.may_see_run(me, row, coll), me, f"run {rid}")
    return row, coll


def document(row: Run) -> dict[str, Any]:
    """A run as the API and the pages show it: its file's summary, status and metadata, and the
    warnings it was accepted with (``[]`` for runs submitted before there were any)."""
    return {"id": row.id, "collection_id": row.collection_id, "tag": row.tag, "team": row.team.name,
            "status": row.status, "reason": row.status_reason, "submitted_at": collections.iso(row.submitted_at),
            "topics": row.n_topics, "depth": row.depth, "lines": row.n_lines, "baseline": row.is_baseline,
            "primary": row.is_primary, "description": row.description, "priority": row.judging_priority,
            "run_type": row.run_type or "automatic", "uses_training_data": row.uses_training_data,
            "uses_external_resources": row.uses_external_resources, "has_ir_metadata": bool(row.has_ir_metadata),
            "warnings": list(row.warnings or [])}


def listed(s: Session, coll: Collection, me: Principal) -> list[Run]:
    """The runs the caller may list: all of them for organisers, the own team's otherwise."""
    policy.require(policy.is_signed_in(me), me, "listing runs")
    every = policy.may_organise(me, coll.id)
    return [r for r in s.scalars(select(Run).where(Run.collection_id == coll.id).order_by(Run.id))
            if every or policy.owns(me, r)]


def comparable(s: Session, coll: Collection, me: Principal) -> list[Run]:
    """The runs whose per-topic scores the caller may compare (``policy.may_see_run_topics``):
    the listed ones, and every run once the board is released to the caller."""
    policy.require(policy.is_signed_in(me), me, "comparing runs")
    return [r for r in s.scalars(select(Run).where(Run.collection_id == coll.id).order_by(Run.id))
            if policy.may_see_run_topics(me, r, coll)]


def file_text(s: Session, rid: int, me: Principal) -> bytes:
    row, coll = get(s, rid, me)
    policy.require(policy.may_see_run_details(me, row, coll), me, f"downloading run {rid}")
    return zlib.decompress(row.file)


def ir_metadata_text(s: Session, rid: int, me: Principal) -> str:
    """The run's ir_metadata YAML as submitted (whoever may see the run); 404 when it has none."""
    row, _ = get(s, rid, me)
    if row.ir_metadata is None:
        raise NotFound(f"run {rid} has no ir_metadata")
    return row.ir_metadata


def update(s: Session, rid: int, me: Principal, changes: Mapping[str, Any]) -> Run:
    """Description, primary flag, judging priority, run type and the two resource statements
    (its team, organisers); baseline (organisers). Only the fields present in ``changes``
    change; ``None`` clears description, priority and the statements (not stated)."""
    row, coll = get(s, rid, me)
    policy.require(policy.may_edit_run(me, row, coll), me, f"changing run {rid}")
    if changes.get("baseline") is not None:
        policy.require(policy.may_mark_baseline(me, coll), me, "marking baselines")
        if row.is_baseline != bool(changes["baseline"]):  # in the audit log when it changes
            row.is_baseline = bool(changes["baseline"])
            audit(s, me.name, "run.baseline", coll.id, run=row.tag, baseline=row.is_baseline)
    if changes.get("primary") is not None and row.is_primary != bool(changes["primary"]):
        row.is_primary = bool(changes["primary"])
        audit(s, me.name, "run.primary", coll.id, run=row.tag, primary=row.is_primary)
    if "description" in changes:
        row.description = check_text("description", str(changes["description"] or ""))
    if "priority" in changes:  # TREC's judging priority within the team (1 = judge first)
        row.judging_priority = _priority(changes["priority"])
    if changes.get("run_type") is not None:
        row.run_type = _run_type(changes["run_type"])
    for name in ("uses_training_data", "uses_external_resources"):
        if name in changes:
            setattr(row, name, _statement(name, changes[name]))
    return row


# ---------------------------------------------------------------------- run metadata
MAX_DESCRIPTION = 20_000
#: The metadata fields a submission may carry besides the file (form fields or query parameters).
METADATA_FIELDS = ("description", "run_type", "uses_training_data", "uses_external_resources", "priority", "primary")


@dataclass(frozen=True)
class RunMetadata:
    """What a team states about a run when it submits it (TREC's submission form): how it was
    made, whether it used the collection's training data or external resources (None: not
    stated), its judging priority and primary flag, and optionally an ir_metadata (PRIMAD) file."""

    description: str = ""
    run_type: str = "automatic"
    uses_training_data: bool | None = None
    uses_external_resources: bool | None = None
    priority: int | None = None
    primary: bool = False
    ir_metadata: bytes | None = None
    ir_metadata_source: str = "ir_metadata"  # the file's name in errors

    def request_key(self) -> tuple[object, ...]:
        """What an Idempotency-Key's body comparison adds to the file: nothing for the defaults
        (so keys of earlier versions compare as before), else every field."""
        if self.ir_metadata is None and self == RunMetadata(description=self.description):
            return ()
        return (self.run_type, self.uses_training_data, self.uses_external_resources, self.priority, self.primary,
                self.ir_metadata)


def metadata_from_fields(fields: Mapping[str, object], ir_metadata_file: bytes | None = None,
                         ir_metadata_source: str = "ir_metadata") -> RunMetadata:
    """A submission's metadata from form fields or query parameters (text, or values already
    typed); blank means the default. A bad value is a 400 naming the field."""
    def text(name: str) -> str:
        value = fields.get(name)
        return "" if value is None else str(value).strip()

    description = check_text("description", text("description"))
    if len(description) > MAX_DESCRIPTION:
        raise BadRequest(f"description: at most {MAX_DESCRIPTION} characters")
    return RunMetadata(
        description=description, run_type=_run_type(fields.get("run_type") or "automatic"),
        uses_training_data=_statement("uses_training_data", fields.get("uses_training_data")),
        uses_external_resources=_statement("uses_external_resources", fields.get("uses_external_resources")),
        priority=_priority(fields.get("priority")), primary=bool(_statement("primary", fields.get("primary"))),
        ir_metadata=ir_metadata_file or None, ir_metadata_source=ir_metadata_source)


_YES = ("true", "yes", "1", "on")
_NO = ("false", "no", "0", "off")


def _statement(name: str, value: object) -> bool | None:
    """true / false, or None when not stated (blank)."""
    if value is None or isinstance(value, bool):
        return value
    word = str(value).strip().lower()
    if not word:
        return None
    if word in _YES or word in _NO:
        return word in _YES
    raise BadRequest(f"{name} is true or false, not {str(value)[:40]!r}")


def _run_type(value: object) -> str:
    word = str(value).strip().lower()
    if word not in RUN_TYPES:
        raise BadRequest(f"run_type is {', '.join(RUN_TYPES[:-1])} or {RUN_TYPES[-1]}, not {str(value)[:40]!r}")
    return word


def _priority(value: object) -> int | None:
    """TREC's judging priority within the team: a whole number from 1 (judged first) to 1000."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool) or not (isinstance(value, int) or (isinstance(value, str) and value.strip().isdigit()
                                                                    and value.strip().isascii())):
        raise BadRequest(f"priority is a whole number from 1 to 1000, not {str(value)[:40]!r}")
    number = int(value)
    if not 1 <= number <= 1000:
        raise BadRequest(f"priority is a whole number from 1 to 1000, not {number}")
    return number


def _check_settings(coll: Collection) -> tuple[str, int, int | None, str]:
    """The collection's order, warning depth, tie cutoff and where the depth comes from
    (:mod:`service.formats.run_checks`)."""
    config = coll.current_config
    evaluation = (config.evaluation if config else None) or {}
    depth = evaluation.get("depth")
    cutoffs = [parse_measure(m).cutoff for m in (config.metrics if config else [])]
    official = parse_measure(config.official_metric).cutoff if config else None
    return (evaluation.get("order", "score"), run_checks.warning_depth(depth, cutoffs),
            run_checks.tie_cutoff(official, depth), run_checks.depth_reason(depth, cutoffs))


def delete(s: Session, rid: int, me: Principal) -> int:
    row, coll = get(s, rid, me)
    policy.require(policy.may_delete_run(me, coll), me, f"deleting run {rid}")
    audit(s, me.name, "run.delete", coll.id, run=row.tag, checksum=row.checksum)
    s.delete(row)
    return rid


# ------------------------------------------------------------------------------- quotas
def next_midnight() -> str:
    now = datetime.now(UTC)
    return (now.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=1)).isoformat()


def runs_today(s: Session, cid: int, team_id: int) -> int:
    midnight = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return sum(1 for t in s.scalars(select(Run.submitted_at).where(Run.collection_id == cid, Run.team_id == team_id))
               if as_utc(t) >= midnight)


def quota_document(s: Session, coll: Collection, me: Principal) -> dict[str, Any]:
    if coll.daily_run_quota is None or me.team_id is None:
        return {}
    return {"quota": {"per_day": coll.daily_run_quota, "used_today": runs_today(s, coll.id, me.team_id),
                      "resets_at": next_midnight()}}


def check_window(coll: Collection) -> None:
    if not policy.window_open(coll):
        raise Conflict(f"submissions are closed (window {collections.iso(coll.submission_opens_at)} - "
                       f"{collections.iso(coll.submission_closes_at)})")


def check_quota(s: Session, coll: Collection, team_id: int) -> None:
    if coll.daily_run_quota is not None and runs_today(s, coll.id, team_id) >= coll.daily_run_quota:
        raise Conflict(f"the team's quota of {coll.daily_run_quota} runs a day is used; it resets at "
                       f"{next_midnight()}")


# ------------------------------------------------------------------------------ submit
@guarded
def submit(factory: sessionmaker[Session], me_of: Any, cid: int, body: bytes, team_param: str | None = None,
           source: str = "run upload", description: str = "",
           idempotency_key: str | None = None, metadata: RunMetadata | None = None) -> Outcome[dict[str, Any]]:
    """Validate and store a run and plan its evaluation (participants: window and quota
    apply). ``me_of(session)`` gives the caller. Commits; the follow-ups are for the workers.

    ``metadata`` (or just a ``description``) is stored with the run; its ir_metadata (or one in
    the run file's comment header) is checked first. The run's warnings
    (:func:`service.formats.run_checks.check_run`) are stored with it and returned.

    Three steps, so that the expensive one holds no connection and no lock: a short read
    (who submits what to which collection, in which order), the parse (no session open),
    then one write transaction that locks the collection row *first* and only then checks
    the window and the quota, inserts the run and plans its job. Every submission to a
    collection takes the same lock in the same order, so concurrent submissions queue on it
    instead of deadlocking, and the quota's count and insert are atomic. A transaction the
    database still undoes (a deadlock victim, a serialization failure) is retried whole.
    ``idempotency_key``: a retry of an upload that did store gets the first answer again.
    """
    idempotency.check_key(idempotency_key)
    with factory() as s:
        me = me_of(s)
        coll = collections.get(s, cid, me)
        # a closed window refuses before the parse; not a keyed request, which may be a retry
        _may_submit(s, me, coll, team_param, window=idempotency_key is None)
        order, depth, cutoff, depth_source = _check_settings(coll)
        answers = coll.task_kind == "answers"
    meta = metadata if metadata is not None else RunMetadata(description=description)
    if answers:  # a collection of generated answers (issue 35)
        return _submit_answers(factory, me, cid, body, team_param, source, meta, idempotency_key)
    digest = idempotency.request_hash(body, team_param, meta.description, *meta.request_key())
    if meta.ir_metadata is not None:
        ir_text: str | None = ir_metadata.read(meta.ir_metadata, meta.ir_metadata_source)
    else:  # repro_eval's form: the metadata as the run file's comment header
        embedded = ir_metadata.embedded_in_run(body, source)
        ir_text = ir_metadata.read(embedded, source).strip("\n") + "\n" if embedded is not None else None
    parsed = parse_run(body, source, order, keep_ranks=True)  # InvalidInput with the line before anything is stored
    # The lists' warnings now, then the parsed arrays go (and their memory, run.summary() is
    # what storing needs) before the file is compressed and written.
    lists = run_checks.list_warnings(parsed, depth=depth, cutoff=cutoff, ranked_by_score=order == "score",
                                     depth_source=depth_source)
    summary = parsed.summary()
    del parsed
    if len(body) >= RELEASE_FROM:
        release_memory()

    def store(s: Session, coll: Collection) -> Outcome[dict[str, Any]]:
        team = _may_submit(s, me, coll, team_param, now=True)
        known = set(s.scalars(select(Topic.topic_id).where(Topic.collection_id == cid)))
        if not known:
            raise Conflict("the collection has no topics yet (upload qrels or register its topics)")
        unknown = sorted(set(summary.topics) - known)
        if unknown:
            raise InvalidInput(source, None, f"unknown topics: {', '.join(unknown[:20])}")
        row = add_run(s, coll, body, source, team=team.name, actor=me.name, parsed=summary)
        row.description = meta.description
        row.run_type, row.is_primary, row.judging_priority = meta.run_type, meta.primary, meta.priority
        row.uses_training_data, row.uses_external_resources = meta.uses_training_data, meta.uses_external_resources
        row.ir_metadata = ir_text
        row.warnings = [w.as_dict() for w in [*run_checks.missing_topics(summary.topics, known), *lists]]
        followups: list[Followup] = []
        job_id = None
        if coll.current_qrels_id is not None:  # before any judgment the run waits for the pool's qrels
            job, followups = plan_job(s, coll, "submission")
            job_id = job.id
        return Outcome({**document(row), "job": job_id}, tuple(followups))

    return idempotency.store_once(factory, cid, me, f"runs:{cid}", idempotency_key, digest, store,
                                  what=f"a run submission to collection {cid}")


def _may_submit(s: Session, me: Principal, coll: Collection, team_param: str | None,
                now: bool = False, window: bool = False) -> Team:
    """The team a submission is for, if the caller may submit to the collection; with ``now``
    (under the collection's lock, after an idempotent retry has been answered) the window and
    the daily quota are checked too: a retry of a run stored at 23:59:59 is answered as the
    first request was, even after the window has closed."""
    policy.require(policy.may_submit(me, coll), me, f"submitting to collection {coll.id} (teams take part by "
                   "enrolment)")
    if policy.may_organise(me, coll.id):
        if not team_param:
            raise BadRequest("organisers submit for a team: add ?team=NAME")
        return team_named(s, team_param)
    team = s.get(Team, me.team_id)
    if team is None:
        raise NotFound("the token's team no longer exists")
    if now or window:
        check_window(coll)
    if now:
        check_quota(s, coll, team.id)
    return team


def _submit_answers(factory: sessionmaker[Session], me: Principal, cid: int, body: bytes, team_param: str | None,
                    source: str, meta: RunMetadata, idempotency_key: str | None) -> Outcome[dict[str, Any]]:
    """An answer run into a collection of answers (issue 35): the same permission, window, quota,
    idempotency and lock order as a ranked run, the file read as answers in the collection's format
    and limits. The file is validated completely (file, line and field of the first problem; an
    unknown topic among them) before anything is stored; its warnings (a topic not answered, a
    response_length that is not the words counted) are stored with the run."""
    with factory() as s:
        coll = s.get(Collection, cid)
        assert coll is not None
        settings = dict(coll.answer_settings or {})
        known = set(s.scalars(select(Topic.topic_id).where(Topic.collection_id == cid)))
    if not known:
        raise Conflict("the collection has no topics yet (upload its nuggets or assignments, or register its topics)")
    parsed = answers.parse(body, source, settings, known)  # InvalidInput with the line before anything is stored
    digest = idempotency.request_hash(body, team_param, meta.description, *meta.request_key())

    def store(s: Session, coll: Collection) -> Outcome[dict[str, Any]]:
        team = _may_submit(s, me, coll, team_param, now=True)
        row = answers.add_answer_run(s, coll, body, source, parsed, team=team.name, actor=me.name)
        row.description = meta.description
        row.run_type, row.is_primary, row.judging_priority = meta.run_type, meta.primary, meta.priority
        row.uses_training_data, row.uses_external_resources = meta.uses_training_data, meta.uses_external_resources
        row.warnings = [{"code": "answers", "message": w, "topics": [], "count": 0} for w in parsed.warnings]
        if meta.ir_metadata is not None:
            row.ir_metadata = ir_metadata.read(meta.ir_metadata, meta.ir_metadata_source)
        followups: list[Followup] = []
        job_id = None
        if coll.current_qrels_id is not None:  # before any judgment the run waits for them
            job, followups = plan_job(s, coll, "submission")
            job_id = job.id
        return Outcome({**document(row), "format": parsed.format, "job": job_id}, tuple(followups))

    return idempotency.store_once(factory, cid, me, f"runs:{cid}", idempotency_key, digest, store,
                                  what=f"a run submission to collection {cid}")
