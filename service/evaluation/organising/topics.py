"""Topics: registering them (with the title and description participants and assessors read)
and listing them as the caller may see them.

A topic is registered by its id alone (as before: runs are validated against the ids, and a
qrels upload registers the topics it judges) or with its texts; registering a known id again
with texts replaces its texts. Under an unrevealed public/private split the hidden topics'
texts are withheld from everyone but the organisers (``policy.may_see_topic_text``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from service.errors import InvalidMeasure
from service.evaluation.common.lookup import existing
from service.evaluation.organising.setup import audit
from service.evaluation.permissions import policy
from service.evaluation.permissions.access import Principal
from service.formats.text import check_text
from service.store.models import Collection, Topic

MAX_TITLE = 500  # the column's size


def _item(raw: str | Mapping[str, Any]) -> tuple[str, str | None, str | None]:
    """(id, title, description) of one topic as sent: a bare id leaves its texts as they are."""
    if isinstance(raw, Mapping):
        tid, title, text = str(raw.get("id") or "").strip(), raw.get("title"), raw.get("description")
    else:
        tid, title, text = str(raw).strip(), None, None
    if not tid or any(c.isspace() for c in tid):
        raise InvalidMeasure("topics are non-empty ids without spaces")
    check_text("topic id", tid)
    if title is not None and len(str(title)) > MAX_TITLE:
        raise InvalidMeasure(f"the title of topic {tid} is longer than {MAX_TITLE} characters")
    if title is not None:
        check_text(f"the title of topic {tid}", str(title))
    if text is not None:
        check_text(f"the description of topic {tid}", str(text), multiline=True)
    return (tid, None if title is None else str(title).strip(),
            None if text is None else str(text).strip())


def add(s: Session, coll: Collection, me: Principal, items: Sequence[str | Mapping[str, Any]]) -> list[str]:
    """Register topics (organisers): ids, or ``{id, title, description}`` objects whose texts
    are set (also on a known topic). Returns every topic id of the collection, sorted."""
    return register(s, coll, me, items)["topics"]


def register(s: Session, coll: Collection, me: Principal, items: Sequence[str | Mapping[str, Any]]
             ) -> dict[str, list[str]]:
    """:func:`add`, saying what it did: the topics it registered (``new``), those whose texts
    it changed (``updated``), those named that were already so (``unchanged``), and every topic
    id of the collection (``topics``), each sorted."""
    policy.require(policy.may_configure(me, coll), me, f"registering topics of collection {coll.id}")
    wanted: dict[str, tuple[str | None, str | None]] = {}
    for raw in items:
        tid, title, text = _item(raw)
        old_title, old_text = wanted.get(tid, (None, None))
        wanted[tid] = (title if title is not None else old_title, text if text is not None else old_text)
    if not wanted:
        raise InvalidMeasure("name at least one topic")
    rows = {t.topic_id: t for t in s.scalars(select(Topic).where(Topic.collection_id == coll.id))}
    new = sorted(set(wanted) - set(rows))
    if new:
        s.execute(insert(Topic), [{"collection_id": coll.id, "topic_id": t, "title": wanted[t][0] or "",
                                   "description": wanted[t][1] or ""} for t in new])
        audit(s, me.name, "topics.add", coll.id, topics=new)
    edited = []
    for tid, (title, text) in sorted(wanted.items()):
        row = rows.get(tid)
        if row is None:
            continue
        changed = False
        if title is not None and title != row.title:
            row.title, changed = title, True
        if text is not None and text != row.description:
            row.description, changed = text, True
        if changed:
            edited.append(tid)
    if edited:
        audit(s, me.name, "topics.texts", coll.id, topics=edited)
    return {"new": new, "updated": edited, "unchanged": sorted(set(wanted) - set(new) - set(edited)),
            "topics": sorted(set(rows) | set(new))}


def listing(s: Session, coll: Collection, me: Principal) -> list[dict[str, Any]]:
    """The topics the caller may list, in id order, with their texts where it may read them
    (``title`` and ``description`` null otherwise); ``hidden`` (in the unrevealed part of a
    split) only for the organisers. Assessors list their assigned topics only."""
    policy.require(policy.may_read_topics(me, coll), me, f"the topics of collection {coll.id}")
    organiser = policy.may_organise(me, coll.id)
    hidden = policy.hidden_topics(coll)
    out = []
    for row in s.scalars(select(Topic).where(Topic.collection_id == coll.id).order_by(Topic.topic_id)):
        if policy.is_assessor(me) and (coll.id, row.topic_id) not in me.assigned:
            continue
        shown = policy.may_see_topic_text(me, coll, row.topic_id)
        doc: dict[str, Any] = {"id": row.topic_id, "title": row.title if shown else None,
                               "description": row.description if shown else None}
        if organiser:
            doc["hidden"] = row.topic_id in hidden
        out.append(doc)
    return out


def of_collection(s: Session, cid: int, me: Principal) -> tuple[Collection, list[dict[str, Any]]]:
    """The collection and its :func:`listing`, by id: assessors, who read no collection, list
    their assigned topics here too (404 when there is no collection, 401/403 as the policy says)."""
    coll = existing(s, Collection, cid, "collection")
    return coll, listing(s, coll, me)
