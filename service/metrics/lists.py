"""Ranked lists as arrays, and the per-rank quantities metrics share.

A :class:`RankedLists` holds many ranked lists at once (one row per run x topic)
as a matrix of relevance levels, rank by rank:

* ``0..H``: judged, at that level (0 = judged non-relevant);
* ``UNJUDGED`` (-1): retrieved but not judged (absent from the qrels, or a
  negative "pooled but unjudged" label);
* ``ABSENT`` (-2): padding past the end of a shorter list.

Every metric is a function of this matrix and of per-topic constants (the
number of documents per level, hence R, N and the ideal list). Quantities that
several metrics need (gains, cumulative gain, count of relevant documents) are
computed once per evaluation and cached on the object; views for a cutoff
(:meth:`top`) or for the condensed list (:meth:`condensed`) share them.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from service.formats.text import nouned
from service.formats.types import ABSENT, UNJUDGED

GainTable = tuple[float, ...]  # gain of level 0..H


@dataclass(frozen=True)
class Scale:
    """The collection's relevance scale: H and the default gain of each level."""

    max_level: int  # H
    default_gains: GainTable  # gain of levels 0..H (level 0 -> 0)

    @classmethod
    def linear(cls, max_level: int) -> Scale:
        """The default profile: level n -> gain n (NTCIR S:A:B = 3:2:1)."""
        return cls(max_level, tuple(float(lv) for lv in range(max_level + 1)))

    def with_gains(self, gains: dict[int, float]) -> Scale:
        return Scale(self.max_level, resolve_gains(gains, self.max_level, "--gains"))

    @property
    def gmax(self) -> float:
        """The largest gain (that of the top level H when gains increase with the level)."""
        return max(self.default_gains)


def resolve_gains(gains: dict[int, float] | tuple[tuple[int, float], ...], max_level: int, where: str) -> GainTable:
    """A level:gain mapping as a table for levels 0..H; every level 1..H needs a gain."""
    mapping = dict(gains)
    if mapping.get(0, 0) != 0:
        raise ValueError(f"{where}: level 0 means judged non-relevant; its gain must be 0")
    missing = [lv for lv in range(1, max_level + 1) if lv not in mapping]
    if missing:
        raise ValueError(f"{where}: no gain for {nouned(len(missing), 'level')} {', '.join(map(str, missing))} "
                         f"(the scale goes up to {max_level})")
    return tuple([0.0] + [float(mapping[lv]) for lv in range(1, max_level + 1)])


@dataclass(frozen=True)
class TopicStats:
    """Per-topic judgment counts (topics x levels 0..H) and the scale's top level H."""

    counts: np.ndarray  # int64 (T, H + 1)
    max_level: int  # H

    @property
    def n_topics(self) -> int:
        return int(self.counts.shape[0])

    def num_rel(self, rel: int = 1) -> np.ndarray:
        """R: judged documents at level >= rel, per topic."""
        return self.counts[:, rel:].sum(axis=1) if rel <= self.max_level else np.zeros(self.n_topics, np.int64)

    def num_nonrel(self, rel: int = 1) -> np.ndarray:
        """N: judged documents below level rel (0 <= level < rel), per topic."""
        return self.counts[:, : min(rel, self.max_level + 1)].sum(axis=1)


class RankedLists:
    """A batch of ranked lists (rows) with cached per-rank quantities."""

    def __init__(
        self,
        levels: np.ndarray,
        row_topic: np.ndarray,
        stats: TopicStats,
        *,
        _parent: RankedLists | None = None,
    ) -> None:
        self.levels = levels  # (rows, D) int16
        self.row_topic = row_topic  # (rows,) index into stats
        self.stats = stats
        # A cutoff view is kept in its parent's cache; a strong link back would make a reference
        # cycle, and the lists' arrays would wait for the cyclic collector (a worker evaluating
        # run file after run file grew by hundreds of MB between collections). Without its
        # parent, a view computes prefix quantities itself: the same values (see prefix).
        self._parent_ref = weakref.ref(_parent) if _parent is not None else None
        self._cache: dict[Any, Any] = {}

    @property
    def _parent(self) -> RankedLists | None:
        return self._parent_ref() if self._parent_ref is not None else None

    # ------------------------------------------------------------------ shape
    @property
    def n_rows(self) -> int:
        return int(self.levels.shape[0])

    @property
    def depth(self) -> int:
        return int(self.levels.shape[1])

    @property
    def lengths(self) -> np.ndarray:
        """Number of documents in each list (ABSENT padding excluded)."""
        return self._prefix_free("lengths", lambda: (self.levels != ABSENT).sum(axis=1))

    # ------------------------------------------------------------------ views
    def top(self, k: int | None) -> RankedLists:
        """The lists cut at rank k (the same object when k is None or >= depth)."""
        if k is None or k >= self.depth:
            return self
        key = ("top", k)
        if key not in self._cache:
            self._cache[key] = RankedLists(self.levels[:, :k], self.row_topic, self.stats, _parent=self)
        return self._cache[key]

    def condensed(self) -> RankedLists:
        """The condensed lists: unjudged documents removed, order kept (Sakai 2007)."""
        if "condensed" not in self._cache:
            unjudged = self.levels == UNJUDGED
            if not unjudged.any():
                self._cache["condensed"] = self
            else:
                # A stable sort on "is unjudged" moves unjudged documents to the
                # end of each row, keeping the judged ones in rank order.
                order = np.argsort(unjudged, axis=1, kind="stable")
                lv = np.take_along_axis(self.levels, order, axis=1)
                lv[np.take_along_axis(unjudged, order, axis=1)] = ABSENT
                width = int((lv != ABSENT).sum(axis=1).max(initial=0))
                lv = np.ascontiguousarray(lv[:, : max(width, 1)])
                self._cache["condensed"] = RankedLists(lv, self.row_topic, self.stats)
        return self._cache["condensed"]

    # ------------------------------------------------------------ quantities
    def prefix(self, key: Any, compute: Callable[[RankedLists], np.ndarray]) -> np.ndarray:
        """A (rows, depth) quantity whose value at rank r depends on ranks <= r only.

        Such quantities (gains, cumulative sums) of a cutoff view are the
        parent's first k columns, so ``compute`` always runs on the full-depth
        lists it is given and the result is cached there.
        """
        parent = self._parent
        if parent is not None:
            return parent.prefix(key, compute)[:, : self.depth]
        if key not in self._cache:
            self._cache[key] = compute(self)
        return self._cache[key]

    def _prefix_free(self, key: Any, compute: Callable[[], np.ndarray]) -> np.ndarray:
        if key not in self._cache:
            self._cache[key] = compute()
        return self._cache[key]

    def ranks(self) -> np.ndarray:
        """1..D as float64, shaped (1, D) for broadcasting."""
        return np.arange(1, self.depth + 1, dtype=np.float64)[None, :]

    def is_rel(self, rel: int = 1) -> np.ndarray:
        return self.prefix(("is_rel", rel), lambda lists: lists.levels >= rel)

    def count(self, rel: int = 1) -> np.ndarray:
        """count(r): relevant documents (level >= rel) in the top r."""
        return self.prefix(("count", rel), lambda lists: np.cumsum(lists.is_rel(rel), axis=1, dtype=np.float64))

    def is_judged(self) -> np.ndarray:
        return self.prefix("is_judged", lambda lists: lists.levels >= 0)

    def gains(self, table: GainTable) -> np.ndarray:
        """g(r): the gain of the document at each rank (0 when unjudged or absent)."""

        def compute(lists: RankedLists) -> np.ndarray:
            lut = np.zeros(len(table) + 2, dtype=np.float64)
            lut[2:] = table  # index = level + 2, so ABSENT/UNJUDGED map to 0
            return lut[lists.levels + 2]

        return self.prefix(("gains", table), compute)

    def cum_gains(self, table: GainTable) -> np.ndarray:
        """cg(r)."""
        return self.prefix(("cg", table), lambda lists: np.cumsum(lists.gains(table), axis=1))

    # ----------------------------------------------------- ideal (per topic)
    def ideal_gains(self, table: GainTable, order_by: tuple[float, ...] | None = None) -> np.ndarray:
        """The ideal list's gains per topic, (T, W), best first, zero-padded.

        Relevant documents (level >= 1) in decreasing order of gain (or of
        ``order_by``, a per-level sort key, when given).
        """
        key = ("ideal", table, order_by)
        return self.stats_cache(key, lambda: ideal_vectors(self.stats, table, order_by))

    def ideal_cum_topic(self, table: GainTable) -> np.ndarray:
        """cg_I(r) per topic, (T, W); column W-1 holds cg_I(R), the total ideal gain."""
        return self.stats_cache(("ideal_cum", table), lambda: np.cumsum(self.ideal_gains(table), axis=1))

    def ideal_cum_rows(self, table: GainTable) -> np.ndarray:
        """cg_I(r) for r = 1..depth, per row (constant after the topic's last relevant document)."""
        return self.prefix(
            ("ideal_cum_rows", table),
            lambda lists: _widen(lists.ideal_cum_topic(table), lists.depth)[lists.row_topic],
        )

    def ideal_cum_at(self, table: GainTable, rank: np.ndarray) -> np.ndarray:
        """cg_I(rank) per row for an arbitrary rank per row (0 at rank 0)."""
        cum = self.ideal_cum_topic(table)
        w = cum.shape[1]
        rank = np.asarray(rank, dtype=np.int64)
        vals = cum[self.row_topic, np.clip(rank, 1, w) - 1]
        return np.where(rank > 0, vals, 0.0)

    def stats_cache(self, key: Any, compute: Callable[[], Any]) -> Any:
        root = self
        while (parent := root._parent) is not None:
            root = parent
        if key not in root._cache:
            root._cache[key] = compute()
        return root._cache[key]


def _widen(a: np.ndarray, width: int) -> np.ndarray:
    """Cut or extend (T, W) cumulative rows to ``width`` columns, repeating the last value."""
    w = a.shape[1]
    if width <= w:
        return a[:, :width]
    pad = np.repeat(a[:, -1:], width - w, axis=1)
    return np.concatenate([a, pad], axis=1)


def ideal_vectors(stats: TopicStats, table: GainTable, order_by: tuple[float, ...] | None = None) -> np.ndarray:
    """Per-topic ideal gain vectors, (T, max R) (at least one column)."""
    levels = np.arange(1, stats.max_level + 1)
    key = np.asarray(order_by if order_by is not None else table, dtype=np.float64)
    # Levels from the best to the worst by the sort key (stable for equal keys:
    # the higher level first).
    level_order = sorted(levels.tolist(), key=lambda lv: (-key[lv], -lv))
    rel_counts = stats.counts[:, 1:]
    width = max(int(rel_counts.sum(axis=1).max(initial=0)), 1)
    out = np.zeros((stats.n_topics, width), dtype=np.float64)
    for t in range(stats.n_topics):
        parts = [np.full(int(stats.counts[t, lv]), table[lv], dtype=np.float64) for lv in level_order]
        vec = np.concatenate(parts) if parts else np.zeros(0)
        out[t, : vec.shape[0]] = vec
    return out
