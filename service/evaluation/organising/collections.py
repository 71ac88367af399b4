"""Collections: find one the caller may read, list them, create and configure them.

Settings arrive as a mapping of the fields the caller sent (a field absent from the mapping
is left as it is; a field present with ``None`` is cleared where that is allowed), so the web
layers' PATCH semantics reach this module unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.errors import BadRequest, NotFound
from service.evaluation.common.locks import mark_locked
from service.evaluation.common.lookup import existing, new_name
from service.evaluation.common.work import Followup, Outcome
from service.evaluation.organising import answers
from service.evaluation.organising.planning import plan_job
from service.evaluation.organising.setup import ConfigSpec, audit, official_set, set_config
from service.evaluation.permissions import policy
from service.evaluation.permissions.access import Principal
from service.formats.text import check_text, check_tree
from service.store.db import as_utc
from service.store.models import Collection

VISIBILITIES = ("public", "private")
ENROLMENTS = ("invite", "open")
# Fields of a collection's versioned configuration (a change makes a new configuration).
CONFIG_FIELDS = ("official_metric", "metrics", "levels", "evaluation", "significance", "hidden_topics")


def iso(value: datetime | None) -> str | None:
    """A stored time as ISO 8601 in UTC (None stays None)."""
    value = as_utc(value)
    return value.astimezone(UTC).isoformat() if value else None


def get(s: Session, cid: int, me: Principal) -> Collection:
    """The collection, if the caller may read it (404 when there is none, 401/403 otherwise)."""
    coll = existing(s, Collection, cid, "collection")
    policy.require(policy.may_read_collection(me, coll), me, f"collection {cid}")
    return coll


def lock(s: Session, cid: int) -> Collection:
    """The collection, its row locked for this transaction (``SELECT ... FOR UPDATE``).

    The first statement of every transaction that writes a collection's runs, qrels or jobs:
    taking this lock before any insert that references the row (a foreign key's share lock)
    gives every such transaction one lock order, so they queue instead of deadlocking. On
    SQLite the write transaction's ``BEGIN IMMEDIATE`` already serialises them."""
    coll = s.scalar(select(Collection).where(Collection.id == cid).with_for_update()
                    .execution_options(populate_existing=True))
    if coll is None:
        raise NotFound(f"no collection {cid}")
    mark_locked(s, cid)  # a use case handed the collection in this transaction need not lock it again
    return coll


def visible(s: Session, me: Principal) -> list[Collection]:
    """The collections the caller may list, by id."""
    return [c for c in s.scalars(select(Collection).order_by(Collection.id)) if policy.may_read_collection(me, c)]


def document(coll: Collection, me: Principal) -> dict[str, Any]:
    """A collection as the caller may see it (configuration details for organisers only)."""
    cfg = coll.current_config
    doc = {"id": coll.id, "name": coll.name, "description": coll.description, "visibility": coll.visibility,
           "enrolment": coll.enrolment,
           "official_metric": cfg.official_metric if cfg else None, "metrics": cfg.metrics if cfg else [],
           "submission_opens_at": iso(coll.submission_opens_at),
           "submission_closes_at": iso(coll.submission_closes_at),
           "daily_run_quota": coll.daily_run_quota, "leaderboard_released": coll.leaderboard_released,
           "topic_split": bool(cfg and cfg.evaluation.get("hidden_topics")), "topics_revealed": coll.topics_revealed,
           "enrolled": policy.is_enrolled(me, coll), "task_kind": coll.task_kind or "ranked"}
    if answers.is_answers(coll):
        doc["answer_settings"] = {**coll.answer_settings, "limits": answers.effective_limits(coll.answer_settings)}
    if policy.may_configure(me, coll) and cfg is not None:
        doc.update(levels=cfg.levels, evaluation=cfg.evaluation, significance=cfg.significance,
                   config_version=cfg.version)
    return doc


def create(s: Session, me: Principal, name: str, settings: Mapping[str, Any]) -> Collection:
    """A new collection with the given settings (defaults for the others)."""
    policy.require(policy.may_create_collection(me), me, "creating a collection")
    name = new_name(s, Collection.name, name, "collection")
    coll = Collection(name=name, description=check_text("description", str(settings.get("description") or "")),
                      task_kind=answers.task_kind(settings.get("task_kind")))
    if answers.is_answers(coll):  # generated answers (issue 35): their format and limits
        coll.answer_settings = answers.normalise_settings(settings.get("answer_settings"))
    elif answers.stated(settings.get("answer_settings")):
        raise BadRequest("answer_settings are settings of a collection of answers (task_kind answers)")
    s.add(coll)
    s.flush()
    official_set(s, coll)
    _apply(s, coll, settings, me, new=True)
    audit(s, me.name, "collection.create", coll.id, name=name)
    return coll


def update(s: Session, coll: Collection, me: Principal, changes: Mapping[str, Any]) -> Outcome[Collection]:
    """Apply the fields present in ``changes``; a new configuration re-evaluates the stored
    results at once (the follow-ups), not at the next scheduled refresh."""
    policy.require(policy.may_configure(me, coll), me, f"changing collection {coll.id}")
    lock(s, coll.id)  # the lock order of every write to a collection (see ``lock``)
    before = coll.current_config_id
    _apply(s, coll, changes, me, new=False)
    followups: list[Followup] = []
    if coll.current_config_id != before and coll.current_qrels_id is not None:
        _, followups = plan_job(s, coll, "config")
    return Outcome(coll, tuple(followups))


def _apply(s: Session, coll: Collection, data: Mapping[str, Any], me: Principal, new: bool) -> None:
    cfg = coll.current_config
    for key in ("description", "levels", "hidden_topics", "evaluation"):  # the texts among the settings
        check_tree(key, data.get(key))
    for key in ("leaderboard_released", "topics_revealed"):
        if data.get(key) is not None and not isinstance(data[key], bool):
            raise BadRequest(f"{key} is true or false, not {data[key]!r}")
    if "hidden_topics" in data:  # shorthand for the configuration's evaluation.hidden_topics
        evaluation = dict(data.get("evaluation") or (cfg.evaluation if cfg else {}))
        evaluation["hidden_topics"] = list(data["hidden_topics"] or [])
        data = {**data, "evaluation": evaluation}
    elif data.get("evaluation") is not None and "hidden_topics" not in data["evaluation"] and cfg is not None:
        # The API omits an empty evaluation.hidden_topics (a default), so an evaluation change
        # without it keeps the topic split; ``hidden_topics: []`` (the shorthand) clears it.
        data = {**data, "evaluation": {**data["evaluation"],
                                       "hidden_topics": list(cfg.evaluation.get("hidden_topics") or [])}}
    if not new and "task_kind" in data and answers.task_kind(data["task_kind"]) != (coll.task_kind or "ranked"):
        raise BadRequest("task_kind is chosen when a collection is created; it cannot change")
    if not new and answers.stated(data.get("answer_settings")) or answers.is_answers(coll) and \
            data.get("answer_settings") is not None:
        if not answers.is_answers(coll):
            raise BadRequest("answer_settings are settings of a collection of answers (task_kind answers)")
        coll.answer_settings = answers.normalise_settings(data["answer_settings"], coll.answer_settings)
    kind = answers.is_answers(coll)
    if new or any(k in data for k in CONFIG_FIELDS):
        spec = ConfigSpec(
            official_metric=_or(data.get("official_metric"), cfg.official_metric if cfg else
                                answers.DEFAULT_OFFICIAL if kind else "AP"),
            metrics=tuple(_or(data.get("metrics"), cfg.metrics if cfg else
                              answers.DEFAULT_METRICS if kind else ConfigSpec().metrics)),
            levels=tuple(_or(data.get("levels"), cfg.levels if cfg else ())),
            evaluation=dict(_or(data.get("evaluation"), cfg.evaluation if cfg else {})),
            significance=dict(_or(data.get("significance"), cfg.significance if cfg else {})),
        )
        set_config(s, coll, spec, me.name)
    if data.get("visibility") is not None:
        if data["visibility"] not in VISIBILITIES:
            raise BadRequest("visibility is public or private")
        coll.visibility = data["visibility"]
    if data.get("enrolment") is not None:
        if data["enrolment"] not in ENROLMENTS:
            raise BadRequest("enrolment is invite or open")
        coll.enrolment = data["enrolment"]
    for key in ("submission_opens_at", "submission_closes_at"):
        if key in data:
            setattr(coll, key, parse_time(data[key], key))
    if "daily_run_quota" in data:
        quota = data["daily_run_quota"]
        if quota is not None and (not isinstance(quota, int) or isinstance(quota, bool) or quota < 1):
            raise BadRequest("daily_run_quota is a positive integer or null")
        coll.daily_run_quota = quota
    if data.get("topics_revealed") is not None:
        coll.topics_revealed = bool(data["topics_revealed"])
        audit(s, me.name, "topics.reveal", coll.id, revealed=coll.topics_revealed)
    if data.get("leaderboard_released") is not None:
        coll.leaderboard_released = bool(data["leaderboard_released"])
        audit(s, me.name, "leaderboard.release", coll.id, released=coll.leaderboard_released)
    if "description" in data and not new:
        coll.description = check_text("description", str(data["description"] or ""))


def _or(value: Any, default: Any) -> Any:
    return default if value is None else value


def parse_time(value: Any, key: str) -> datetime | None:
    """An ISO 8601 time (or a datetime) as an aware datetime, UTC when it names no zone; None stays None."""
    if value is None:
        return None
    if isinstance(value, datetime):
        parsed = value
    else:
        try:
            parsed = datetime.fromisoformat(str(value))
        except ValueError:
            raise BadRequest(f"{key} is an ISO 8601 time, not {value!r}") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
