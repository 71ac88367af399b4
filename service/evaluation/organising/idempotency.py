"""Idempotent uploads: a client that lost the answer to an upload sends it again with the same
``Idempotency-Key`` and gets the first answer, not a second run or qrels version.

The key is scoped to the caller's token and the operation's target (``runs:3``); the stored
answer is written in the upload's own transaction, after the collection's row lock, so two
identical requests racing each other are serialised and the second one finds the first's
answer. The same key with a different body is refused (422): a client bug, not a retry.
Runs, qrels and judgments uploads use it. A key is kept for ``CRANFIELD_IDEMPOTENCY_RETENTION``
seconds (a week), then the scheduler deletes it (:mod:`service.evaluation.computing.pruning`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from service.errors import InvalidRequest
from service.evaluation.common.work import Outcome
from service.evaluation.organising import collections
from service.evaluation.permissions.access import Principal
from service.store.db import retrying, transaction
from service.store.models import Collection, IdempotencyKey

MAX_KEY = 200  # the column's size


def request_hash(body: bytes, *params: object) -> str:
    h = hashlib.sha256(body)
    for p in params:
        h.update(b"\0" + repr(p).encode())
    return h.hexdigest()


def check_key(key: str | None) -> str | None:
    """The key as given, or a 422 for one that cannot be stored (before any work)."""
    if key is None:
        return None
    if not key or len(key) > MAX_KEY or not key.isprintable():
        raise InvalidRequest(f"Idempotency-Key: 1 to {MAX_KEY} printable characters")
    return key


def replay(s: Session, me: Principal, scope: str, key: str | None, digest: str) -> dict[str, Any] | None:
    """The stored answer of an earlier request with this key, or None for a first request."""
    if key is None or me.token_id is None:
        return None
    row = s.scalar(select(IdempotencyKey).where(IdempotencyKey.token_id == me.token_id,
                                                IdempotencyKey.scope == scope, IdempotencyKey.key == key))
    if row is None:
        return None
    if row.request_hash != digest:
        raise InvalidRequest("Idempotency-Key was already used for a different request (another body or "
                             "parameters); use a new key for a new upload")
    return dict(row.response)


def remember(s: Session, me: Principal, scope: str, key: str | None, digest: str, answer: dict[str, Any]) -> None:
    """Store the answer of a first request with a key (in its own transaction)."""
    if key is not None and me.token_id is not None:
        s.add(IdempotencyKey(token_id=me.token_id, scope=scope, key=key, request_hash=digest, response=answer))


def store_once(factory: sessionmaker[Session], cid: int, me: Principal, scope: str, key: str | None, digest: str,
               write: Callable[[Session, Collection], Outcome[dict[str, Any]]], what: str) -> Outcome[dict[str, Any]]:
    """An upload's write: ``write(session, collection)`` in one transaction that locks the
    collection's row first (the lock order of every write to a collection), answers a key seen
    before with its first answer, remembers this answer under the key, and is run again whole
    if the database undoes it (a deadlock victim, a serialization failure)."""

    def attempt() -> Outcome[dict[str, Any]]:
        with transaction(factory) as s:
            coll = collections.lock(s, cid)
            earlier = replay(s, me, scope, key, digest)
            if earlier is not None:
                return Outcome(earlier)
            outcome = write(s, coll)
            remember(s, me, scope, key, digest, outcome.result)
        return outcome

    return retrying(attempt, what=what)
