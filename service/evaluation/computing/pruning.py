"""Keeping bookkeeping tables bounded: the beat-scheduled prune of rows nobody needs any more.

Two tables grow with use and are never read back after a while:

- ``idempotency_keys``: an upload's key and answer (:mod:`service.evaluation.organising.idempotency`),
  needed only while a client may still retry it; kept for ``retention`` seconds (at least a
  day, far longer than any client retries), then a request under the key is a new one;
- ``portal_sessions``: a sign-in that expired or was signed out answers "sign in again"
  whether its row exists or not; kept for ``grace`` seconds after it ended, then deleted.
  A live session is never touched.

Rows go in batches of ``batch``, each in a short transaction of its own, at most
``max_batches`` per table and pass: a backlog of millions is worked off over several passes
instead of holding one long lock. The batch's rows are taken with ``FOR UPDATE SKIP
LOCKED`` (PostgreSQL; SQLite has one writer at a time), so several beats or workers pruning at
once share the rows instead of waiting for or deadlocking with each other, and a row still
being written by someone else is left to the next pass. Deleting is idempotent: a pass with
nothing old reads each table once and changes nothing.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from sqlalchemy import ColumnElement, delete, or_, select
from sqlalchemy.orm import Session, sessionmaker

from service.store.db import retrying, transaction
from service.store.models import IdempotencyKey, PortalSession, utcnow

log = logging.getLogger("cranfield.pruning")

BATCH = 1000  # rows per delete: a short transaction, a short lock
MAX_BATCHES = 100  # per table and pass: the rest waits for the next pass


def prune(factory: sessionmaker[Session], *, retention: float, grace: float, batch: int = BATCH,
          max_batches: int = MAX_BATCHES) -> dict[str, int]:
    """One pass: delete idempotency keys older than ``retention`` seconds and portal sessions
    that expired or were signed out more than ``grace`` seconds ago. Returns the rows deleted
    per table."""
    now = utcnow()
    keys_before, sessions_before = now - timedelta(seconds=retention), now - timedelta(seconds=grace)
    deleted = {
        "idempotency_keys": _delete_in_batches(factory, IdempotencyKey, IdempotencyKey.created_at < keys_before,
                                               batch, max_batches),
        "portal_sessions": _delete_in_batches(factory, PortalSession, or_(
            PortalSession.expires_at < sessions_before, PortalSession.revoked_at < sessions_before),
            batch, max_batches),
    }
    if any(deleted.values()):
        log.info("pruned %s", ", ".join(f"{n} {table}" for table, n in deleted.items()))
    return deleted


def _delete_in_batches(factory: sessionmaker[Session], model: Any, old: ColumnElement[bool], batch: int,
                       max_batches: int) -> int:
    total = 0
    for _ in range(max_batches):
        n = retrying(lambda: _delete_batch(factory, model, old, batch), what=f"a prune of {model.__tablename__}")
        total += n
        if n < batch:
            break
    return total


def _delete_batch(factory: sessionmaker[Session], model: Any, old: ColumnElement[bool], batch: int) -> int:
    """Delete up to ``batch`` old rows that nobody else holds, in one short transaction."""
    chosen = select(model.id).where(old).limit(batch).with_for_update(skip_locked=True)
    with transaction(factory) as s:
        return int(s.execute(delete(model).where(model.id.in_(chosen))
                             .execution_options(synchronize_session=False)).rowcount or 0)
