"""Which collection rows this transaction has locked (``organising.collections.lock``).

Every transaction that writes a collection's runs, qrels or jobs locks its row first; a use case
handed the collection by a caller that already did (an upload, then the planning of its job)
asks here instead of reading and locking the row again. The mark belongs to the transaction: a
new transaction of the same session starts with none."""

from __future__ import annotations

from sqlalchemy.orm import Session

_KEY = "locked_collections"


def mark_locked(s: Session, cid: int) -> None:
    transaction, held = s.info.get(_KEY, (None, frozenset()))
    if transaction is not s.get_transaction():
        held = frozenset()
    s.info[_KEY] = (s.get_transaction(), held | {cid})


def is_locked(s: Session, cid: int) -> bool:
    transaction, held = s.info.get(_KEY, (None, frozenset()))
    return transaction is not None and transaction is s.get_transaction() and cid in held
