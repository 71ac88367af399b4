"""The qrels version a read names: the one rule of every read keyed by a version.

Boards and their exports, the significance matrix and the comparisons of judgments take a
version number (``?qrels_version=``, ``a``/``b``, ``old``/``new``, a set reference
``name:N``). Each finds the version here and nowhere else: a version of the official set is
read by whoever may see what is read under it (the read asks its own predicate first: the
board's, the results', the qrels'), a version of any other set only by those who may see the
qrels (:func:`policy.may_read_version`). A version that does not exist and a version the caller
may not read get the same answer, so a number tells a team nothing of the other sets.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.errors import NotFound
from service.evaluation.permissions import policy
from service.evaluation.permissions.access import Principal
from service.store.models import Collection, QrelsVersion


def is_official(coll: Collection, set_id: int | None) -> bool:
    """Whether a version of the set ``set_id`` is the official set's (a version stored before
    judgment sets, with no set, is)."""
    return set_id is None or set_id == coll.official_set_id


def may_read(me: Principal, coll: Collection, version: QrelsVersion) -> bool:
    return policy.may_read_version(me, coll, is_official(coll, version.judgment_set_id))


def readable(s: Session, coll: Collection, me: Principal, number: int) -> QrelsVersion:
    """Version ``number`` of ``coll`` if the caller may read figures under it; 404 otherwise,
    the same whether it does not exist or is another set's (listing the versions only to
    callers who may read every one)."""
    found = s.scalar(select(QrelsVersion).where(QrelsVersion.collection_id == coll.id,
                                                QrelsVersion.version == number))
    if found is not None and may_read(me, coll, found):
        return found
    known = (list(s.scalars(select(QrelsVersion.version).where(QrelsVersion.collection_id == coll.id)
                            .order_by(QrelsVersion.version)))
             if policy.may_read_version(me, coll, official=False) else [])
    raise NotFound(f"collection {coll.id} has no qrels version {number}"
                   + (f" (its versions: {', '.join(map(str, known))})" if known else ""))
