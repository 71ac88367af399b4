"""Qrels: upload a new version (validated before it is stored), preview what an upload would
change, list versions, diff two.

An upload may be guarded: with ``max_removal``, one that would remove a larger share of the
current judgments is refused (409, naming what would go) before anything is stored, so a
truncated or wrong file does not silently become the version every run is scored on. The
portal guards every upload at :data:`LARGE_REMOVAL` until the organiser confirms; the API
guards when the client asks (``?max_removal=0.2``), so scripts that replace whole qrels files
keep working.

An upload names its format (``setup.UPLOAD_FORMATS``: adhoc, diversity-trec, diversity-ntcir,
sampled; an NTCIR intent qrels upload may bring its intent probability file); the preview, the
removal guard and the diff compare the flattened ad hoc view that the judgment rows hold.
"""

from __future__ import annotations

import hashlib
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from service.errors import Conflict
from service.evaluation.common.memory import guarded
from service.evaluation.common.work import Outcome
from service.evaluation.judging import judgment_diff, judgment_sets
from service.evaluation.organising import collections, idempotency
from service.evaluation.organising.setup import add_qrels, official_set, parse_upload
from service.evaluation.permissions import policy
from service.evaluation.permissions.access import Principal
from service.evaluation.publishing.versions import readable as readable_version
from service.formats.types import Qrels
from service.store.models import Collection, JudgmentSet, QrelsVersion, Topic

LARGE_REMOVAL = 0.2  # share of the current judgments the portal lets an upload remove without a confirmation


@guarded(always_release=True)  # it reads the current version whole
def upload(factory: sessionmaker[Session], me_of: Any, cid: int, body: bytes,
           source: str = "qrels upload", idempotency_key: str | None = None,
           max_removal: float | None = None, judgment_set: str | None = None, fmt: str = "adhoc",
           probabilities: bytes | None = None,
           probabilities_source: str = "intent probabilities") -> Outcome[dict[str, Any]]:
    """Validate, store as a new qrels version and plan the re-evaluation. The caller is
    authorised and the file parsed before any write lock is taken; ``me_of(session)`` gives
    the caller. The write transaction locks the collection row first (the lock order of
    every write to a collection's runs and qrels; see ``submissions.submit``) and is retried
    whole if the database undoes it. Commits; the follow-ups are for the workers.

    With ``max_removal``, an upload that removes a larger share of the current judgments is
    refused (409) before anything is stored; the check is made under the collection's lock,
    against the version the upload would replace.

    ``judgment_set`` names the set the version goes to (default: the official one, which the
    board ranks by); a version of another set is evaluated when that set evaluates
    automatically (see :mod:`service.evaluation.judging.judgment_sets`).

    ``fmt`` is the upload's format (``setup.UPLOAD_FORMATS``); ``probabilities`` an NTCIR
    intent probability file (diversity-ntcir only), validated with the qrels and kept verbatim."""
    idempotency.check_key(idempotency_key)
    with factory() as s:
        me = me_of(s)
        coll = collections.get(s, cid, me)
        policy.require(policy.may_upload_qrels(me, coll), me, f"uploading qrels to collection {cid}")
        if judgment_set is not None:
            judgment_sets.get(s, coll, judgment_set, me)  # 404 before reading the body
    # InvalidInput with the file and line before anything is stored
    parsed = parse_upload(body, source, fmt, probabilities, probabilities_source)
    digest = idempotency.request_hash(body) if fmt == "adhoc" else idempotency.request_hash(
        body, fmt, None if probabilities is None else hashlib.sha256(probabilities).hexdigest())

    def store(s: Session, coll: Collection) -> Outcome[dict[str, Any]]:
        target = official_set(s, coll) if judgment_set is None else judgment_sets.get(s, coll, judgment_set, me)
        previous = target.current_version_id
        if max_removal is not None and previous is not None:
            change = summary(s, coll, parsed.qrels, max_removal, base_id=previous, limit=0)
            if change["large_removal"]:
                raise Conflict(removal_message(change))
        version = add_qrels(s, coll, body, source, me.name, parsed=parsed, judgment_set=target)
        job_id, followups = judgment_sets.evaluation_followups(s, coll, target, version, previous)
        return Outcome({"version": version.version, "judgment_set": target.name, "judgments": version.n_judgments,
                        "format": version.format, "job": job_id,
                        "previous_version": s.get(QrelsVersion, previous).version if previous else None},
                       tuple(followups))

    scope = f"qrels:{cid}" if judgment_set is None else f"qrels:{cid}:{judgment_set}"
    return idempotency.store_once(factory, cid, me, scope, idempotency_key, digest, store,
                                  what=f"a qrels upload to collection {cid}")


def versions(s: Session, coll: Collection, me: Principal) -> dict[str, Any]:
    policy.require(policy.may_see_qrels(me, coll), me, f"the qrels of collection {coll.id}")
    rows = s.scalars(select(QrelsVersion).where(QrelsVersion.collection_id == coll.id).order_by(QrelsVersion.version))
    names = dict(s.execute(select(JudgmentSet.id, JudgmentSet.name).where(JudgmentSet.collection_id == coll.id)).all())
    with_probabilities = set(s.scalars(select(QrelsVersion.id).where(  # without reading the (deferred) files
        QrelsVersion.collection_id == coll.id, QrelsVersion.intent_probabilities.is_not(None))))
    return {"current": coll.current_qrels.version if coll.current_qrels else None, "items": [
        {"version": v.version, "judgment_set": names.get(v.judgment_set_id), "uploaded_by": v.uploaded_by,
         "uploaded_at": collections.iso(v.uploaded_at), "format": v.format or "adhoc",
         "intent_probabilities": v.id in with_probabilities,
         "checksum": v.checksum, "judgments": v.n_judgments, "level_counts": v.level_counts} for v in rows]}


def diff(s: Session, coll: Collection, me: Principal, old: int, new: int, offset: int | None = None,
         limit: int | None = None) -> dict[str, Any]:
    """The judgments changed from version ``old`` to ``new``: counts per topic, and the changes
    ``limit`` (default 1000, at most 10000) at a time from ``offset``."""
    policy.require(policy.may_see_qrels(me, coll), me, f"the qrels of collection {coll.id}")
    for number in (old, new):
        readable_version(s, coll, me, number)
    return judgment_diff.qrels_diff(s, coll.id, old, new, *judgment_diff.page(offset, limit))


# ------------------------------------------------------------------- what an upload changes
@guarded(always_release=True)  # it reads the current version whole
def preview(factory: sessionmaker[Session], me_of: Any, cid: int, body: bytes,
            source: str = "qrels upload", fmt: str = "adhoc", probabilities: bytes | None = None,
            probabilities_source: str = "intent probabilities", offset: int | None = None,
            limit: int | None = None) -> dict[str, Any]:
    """What uploading ``body`` would change (:func:`summary`), stored nowhere: the caller is
    authorised as for an upload, and the file validated as an upload is (422 with the line),
    in its format (the change is that of the flattened judgments). The counts are complete;
    the changes are listed ``limit`` (default 1000, at most 10000) at a time from ``offset``."""
    offset, limit = judgment_diff.page(offset, limit)
    with factory() as s:
        me = me_of(s)
        coll = collections.get(s, cid, me)
        policy.require(policy.may_upload_qrels(me, coll), me, f"uploading qrels to collection {cid}")
    parsed = parse_upload(body, source, fmt, probabilities, probabilities_source)  # as the upload would
    with factory() as s:
        return summary(s, collections.get(s, cid, me), parsed.qrels, offset=offset, limit=limit)


def summary(s: Session, coll: Collection, parsed: Qrels, threshold: float = LARGE_REMOVAL,
            base_id: int | None = None, offset: int = 0, limit: int = judgment_diff.LIMIT) -> dict[str, Any]:
    """The judgments ``parsed`` adds, removes and changes per topic against the current
    version (or the version ``base_id``: another set's newest) in the form of :func:`diff`,
    so a preview and the diff of the stored version agree (the counts of every topic, the
    changes ``limit`` at a time from ``offset``, compared in arrays); the share of the current
    judgments it removes and whether that is more than ``threshold`` (a large removal: the
    portal asks for a confirmation)."""
    base = base_id if base_id is not None else coll.current_qrels_id
    current = judgment_diff.stored(s, base) if base is not None else {}
    n_current = judgment_diff.judgments(current)
    change = judgment_diff.changes(current, judgment_diff.of_qrels(parsed), offset, limit)
    del current
    removed = change["totals"]["removed"]
    share = removed / n_current if n_current else 0.0
    known = set(s.scalars(select(Topic.topic_id).where(Topic.collection_id == coll.id)))
    base_row = s.get(QrelsVersion, base) if base is not None else None
    return {"from": base_row.version if base_row is not None else None,
            "topics": change["topics"], "totals": change["totals"], "current_judgments": n_current,
            "judgments": judgment_diff.judgments(judgment_diff.of_qrels(parsed)), "removed_share": share,
            "large_removal": share > threshold, "threshold": threshold,
            "new_topics": sorted(set(parsed.topics) - known), "offset": change["offset"], "limit": change["limit"],
            "listed": change["listed"], "next_offset": change["next_offset"]}


def removal_message(change: dict[str, Any]) -> str:
    """Why a large removal is refused, naming the topics that lose the most."""
    losing = sorted(((e["removed"], t) for t, e in change["topics"].items() if e["removed"]), reverse=True)
    topics = ", ".join(f"{t} (-{n})" for n, t in losing[:10]) + (" ..." if len(losing) > 10 else "")
    return (f"this upload removes {change['totals']['removed']} of the {change['current_judgments']} current "
            f"judgments ({change['removed_share']:.0%}, more than {change['threshold']:.0%}): {topics}. "
            "Check the file (a preview shows every change); to store it anyway, confirm the upload (API: send it "
            "without max_removal).")
