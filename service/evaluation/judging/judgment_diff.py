"""What changes between two sets of judgments, in arrays: counts of every topic, changes listed a
page at a time (issue 24, item 5).

A qrels preview and the diff of two versions compare two judgment sets of up to millions of
judgments each. Each side is a topic's sorted docnos (``bytes_``) and their levels: an upload
as the reader parsed it (:class:`~service.formats.types.Qrels`), a stored version read from its
judgment rows a chunk at a time (:func:`stored`). Each topic's two sides are matched by
``searchsorted``; counts come from masks, and only the changes of the requested page become
Python objects. No object is made per judgment: the memory is the two sides' arrays and one
topic's scratch (a dict of (topic, docno) per judgment took 23 times a 76 MB file).

The listing is the one :func:`service.evaluation.publishing.reading.judgment_changes` gives (topics in
order, each topic's changes by docno, added, removed and changed interleaved): ``offset`` and
``limit`` cut it into pages, ``next_offset`` names the next one.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import pairwise
from typing import Any

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from service.errors import InvalidMeasure
from service.formats.types import Qrels
from service.store.models import Judgment, QrelsVersion

#: A topic's judgments: docnos (sorted, unique ``bytes_``) and their levels, aligned.
Side = Mapping[str, tuple[np.ndarray, np.ndarray]]

LIMIT = 1000  # changes listed by default
MAX_LIMIT = 10_000  # changes one answer may list
CHUNK = 10_000  # judgment rows read at a time

_NONE = np.iinfo(np.int64).min  # no level: the judgment is absent on that side
_EMPTY = (np.zeros(0, dtype="S1"), np.zeros(0, dtype=np.int64))


def of_qrels(qrels: Qrels) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The reader's parsed arrays (each topic's docnos sorted and unique), not copied."""
    return {t: (qrels.docnos[i], qrels.levels[i]) for i, t in enumerate(qrels.topics)}


def stored(s: Session, version_id: int, chunk: int = CHUNK) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """A stored version's judgment rows as arrays, read ``chunk`` rows at a time (the rows of a
    chunk are the only Python objects per judgment at any moment)."""
    pieces: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
    result = s.connection().execute(  # Core rows: the ORM's row processing took most of the time
        select(Judgment.topic, Judgment.docno, Judgment.level).where(Judgment.qrels_version_id == version_id)
        .order_by(Judgment.topic, Judgment.docno).execution_options(yield_per=chunk))
    for rows in result.partitions(chunk):
        topics, docnos, levels = zip(*rows)
        docs = np.array([d.encode("utf-8") for d in docnos], dtype=np.bytes_)
        lv = np.array(levels, dtype=np.int64)
        if lv.shape[0] and -2**15 <= lv.min() and lv.max() < 2**15:  # the readers' levels do (at most 10,000)
            lv = lv.astype(np.int16)
        del docnos, levels, rows
        heads = [0] + [i for i in range(1, len(topics)) if topics[i] != topics[i - 1]] + [len(topics)]
        for a, b in pairwise(heads):
            pieces.setdefault(topics[a], []).append((docs[a:b], lv[a:b]))  # views of the chunk
        del docs, lv, topics
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for t, parts in pieces.items():
        docs = parts[0][0] if len(parts) == 1 else np.concatenate([p[0] for p in parts])
        lv = parts[0][1] if len(parts) == 1 else np.concatenate([p[1] for p in parts])
        parts.clear()
        if docs.shape[0] > 1 and not bool((docs[1:] > docs[:-1]).all()):  # a database's collation
            order = np.argsort(docs, kind="stable")
            docs, lv = docs[order], lv[order]
        out[t] = (docs, lv)
    return out


def _match(old: tuple[np.ndarray, np.ndarray], new: tuple[np.ndarray, np.ndarray]
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(where each new docno is in old, whether it is there, whether its level differs)."""
    od, ol = old
    nd, nl = new
    pos = np.searchsorted(od, nd)
    hit = pos < od.shape[0]
    hit[hit] = od[pos[hit]] == nd[hit]
    changed = np.zeros(nd.shape[0], dtype=bool)
    changed[hit] = ol[pos[hit]] != nl[hit]
    return pos, hit, changed


def _counts(old: tuple[np.ndarray, np.ndarray], new: tuple[np.ndarray, np.ndarray]) -> tuple[int, int, int]:
    _, hit, changed = _match(old, new)
    both = int(np.count_nonzero(hit))
    return new[0].shape[0] - both, old[0].shape[0] - both, int(np.count_nonzero(changed))


def _listed(old: tuple[np.ndarray, np.ndarray], new: tuple[np.ndarray, np.ndarray], start: int, stop: int
            ) -> list[dict[str, Any]]:
    """A topic's changes ``start:stop`` in docno order, as the listing gives them."""
    (od, ol), (nd, nl) = old, new
    pos, hit, changed = _match(old, new)
    kept = np.zeros(od.shape[0], dtype=bool)
    kept[pos[hit]] = True
    gone = ~kept
    docs = np.concatenate([nd[~hit], od[gone], nd[changed]])
    was = np.concatenate([np.full(int(np.count_nonzero(~hit)), _NONE), ol[gone].astype(np.int64),
                          ol[pos[changed]].astype(np.int64)])
    now = np.concatenate([nl[~hit].astype(np.int64), np.full(int(np.count_nonzero(gone)), _NONE),
                          nl[changed].astype(np.int64)])
    order = np.argsort(docs, kind="stable")[start:stop]
    return [{"docno": d.decode("utf-8"), "old": None if o == _NONE else o, "new": None if n == _NONE else n}
            for d, o, n in zip(docs[order].tolist(), was[order].tolist(), now[order].tolist())]


def changes(old: Side, new: Side, offset: int = 0, limit: int = LIMIT) -> dict[str, Any]:
    """Judgments added, removed and changed per topic from ``old`` to ``new``, in the form of
    :func:`~service.evaluation.publishing.reading.judgment_changes`: every topic with a change and its
    counts, the totals; ``changes`` of a topic lists those of the page (``limit`` changes of
    the whole listing from ``offset``; a topic outside the page lists none). Also ``offset``,
    ``limit``, ``listed`` (changes on the page) and ``next_offset`` (None on the last page)."""
    topics: dict[str, dict[str, Any]] = {}
    for t in sorted(old.keys() | new.keys()):
        added, removed, changed = _counts(old.get(t, _EMPTY), new.get(t, _EMPTY))
        if added or removed or changed:
            topics[t] = {"added": added, "removed": removed, "changed": changed, "changes": []}
    totals = {k: sum(e[k] for e in topics.values()) for k in ("added", "removed", "changed")}
    every = sum(totals.values())
    first, stop = min(offset, every), min(offset + limit, every)
    at = 0
    for t, e in topics.items():
        n = e["added"] + e["removed"] + e["changed"]
        if at + n > first and at < stop:
            e["changes"] = _listed(old.get(t, _EMPTY), new.get(t, _EMPTY), max(first - at, 0), stop - at)
        at += n
        if at >= stop:
            break
    return {"topics": topics, "totals": totals, "offset": offset, "limit": limit, "listed": stop - first,
            "next_offset": stop if stop < every else None}


def judgments(side: Side) -> int:
    """How many judgments a side holds."""
    return sum(docs.shape[0] for docs, _ in side.values())


def page(offset: int | None, limit: int | None) -> tuple[int, int]:
    """``offset`` and ``limit`` checked (the API's parameters check the same)."""
    from service.errors import InvalidRequest

    offset = 0 if offset is None else offset
    limit = LIMIT if limit is None else limit
    if offset < 0:
        raise InvalidRequest("offset: at least 0")
    if not 0 <= limit <= MAX_LIMIT:
        raise InvalidRequest(f"limit: from 0 to {MAX_LIMIT}")
    return offset, limit


def qrels_diff(s: Session, collection_id: int, old: int, new: int, offset: int = 0,
               limit: int | None = None) -> dict[str, Any]:
    """Judgments added, removed and changed per topic between two versions of a collection: the
    counts of every topic, the changes ``limit`` at a time from ``offset``
    (:func:`changes`, in arrays)."""
    versions = {v.version: v.id for v in s.scalars(select(QrelsVersion).where(
        QrelsVersion.collection_id == collection_id, QrelsVersion.version.in_((old, new))))}
    if old not in versions or new not in versions:
        raise InvalidMeasure(f"no qrels version {old if old not in versions else new}")
    offset, limit = page(offset, limit)
    before = stored(s, versions[old])
    after = before if new == old else stored(s, versions[new])
    return {"from": old, "to": new, **changes(before, after, offset, limit)}
