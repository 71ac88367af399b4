"""The core's in-memory types: judgments (qrels) and ranked lists (runs).

Both are immutable, array-backed and keyed by opaque string ids: a topic
``0001`` stays ``0001``. Documents are ``numpy.bytes_`` arrays (UTF-8), so five
million run lines never become five million Python objects.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum

import numpy as np

from service.formats.keys import KeyTable, hash_ids, topic_keys

#: Level given to a retrieved document that has no judgment (not in the qrels,
#: or pooled but unjudged: a negative qrels label).
UNJUDGED = -1
#: Level of the padding beyond the end of a ranked list.
ABSENT = -2


class RunOrder(str, Enum):
    """How the documents of a run's topic are put in rank order."""

    SCORE = "score"  # trec_eval: score descending, ties by docno descending (strcmp)
    RANK = "rank"  # the rank column ascending, ties in file order
    FILE = "file"  # the file's line order (NTCIREVAL)


@dataclass(frozen=True)
class Qrels:
    """Graded judgments: per topic, sorted docnos and their integer levels.

    Levels are 0..H (0 = judged non-relevant); a negative level means pooled
    but unjudged and is treated like a document that is not in the qrels.
    """

    topics: tuple[str, ...]
    docnos: tuple[np.ndarray, ...]  # per topic, sorted bytes_ array
    levels: tuple[np.ndarray, ...]  # per topic, int64 aligned with docnos
    source: str = "<qrels>"
    _index: dict[str, int] = field(default_factory=dict, repr=False, compare=False)
    _cache: dict[str, object] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._index.update({t: i for i, t in enumerate(self.topics)})

    def topic_index(self, topic: str) -> int | None:
        return self._index.get(topic)

    @property
    def max_level(self) -> int:
        """H: the largest level judged in any topic (0 if nothing is relevant)."""
        # Negative labels mean "unjudged": H is never below 0.
        return max([0] + [int(lv.max()) for lv in self.levels if lv.shape[0]])

    def level_counts(self, max_level: int) -> np.ndarray:
        """(topics, max_level + 1) counts of judged documents per level (negatives left out)."""
        out = np.zeros((len(self.topics), max_level + 1), dtype=np.int64)
        for i, lv in enumerate(self.levels):
            judged = lv[lv >= 0]
            out[i] = np.bincount(judged, minlength=max_level + 1)[: max_level + 1]
        return out

    def key_table(self) -> tuple[KeyTable, np.ndarray, np.ndarray, np.ndarray] | None:
        """Every judgment in one hash table keyed by (topic, docno).

        Returns (table, levels, docnos, topic index), aligned with the table's
        keys; None when there are no judgments or two judgments share a 64-bit
        key (callers then use :meth:`lookup`, which compares strings).
        """
        if "key_table" not in self._cache:
            counts = [d.shape[0] for d in self.docnos]
            result = None
            if sum(counts):
                docs = np.concatenate([d.astype(f"S{max(d.dtype.itemsize for d in self.docnos)}") for d in self.docnos])
                topic = np.repeat(np.arange(len(self.topics)), counts)
                table = KeyTable(topic_keys(hash_ids(docs), topic))
                if not table.equal_pairs:
                    result = (table, np.concatenate(self.levels), docs, topic)
            self._cache["key_table"] = result
        return self._cache["key_table"]  # type: ignore[return-value]

    def lookup(self, topic_index: int, docnos: np.ndarray) -> np.ndarray:
        """Levels of ``docnos`` in a topic; UNJUDGED where absent or negative."""
        qd = self.docnos[topic_index]
        ql = self.levels[topic_index]
        out = np.full(docnos.shape[0], UNJUDGED, dtype=np.int64)
        if qd.shape[0] == 0 or docnos.shape[0] == 0:
            return out
        pos = np.searchsorted(qd, docnos)
        pos_c = np.minimum(pos, qd.shape[0] - 1)
        hit = qd[pos_c] == docnos
        out[hit] = np.maximum(ql[pos_c[hit]], UNJUDGED)
        return out

    @classmethod
    def from_mapping(cls, judgments: Mapping[str, Mapping[str, int]], source: str = "<qrels>") -> Qrels:
        """Build from ``{topic: {docno: level}}`` (tests, the store)."""
        topics = tuple(sorted(judgments, key=lambda t: t.encode("utf-8")))
        docs, levels = [], []
        for t in topics:
            items = sorted((d.encode("utf-8"), int(v)) for d, v in judgments[t].items())
            docs.append(np.array([d for d, _ in items], dtype=bytes) if items else np.array([], dtype="S1"))
            levels.append(np.array([v for _, v in items], dtype=np.int64))
        return cls(topics=topics, docnos=tuple(docs), levels=tuple(levels), source=source)

    def to_mapping(self) -> dict[str, dict[str, int]]:
        return {
            t: {d.decode("utf-8"): int(v) for d, v in zip(self.docnos[i].tolist(), self.levels[i].tolist())}
            for i, t in enumerate(self.topics)
        }


@dataclass(frozen=True)
class Run:
    """One system's ranked lists, in evaluation order (CSR layout by topic).

    ``docnos[offsets[i]:offsets[i+1]]`` is topic ``topics[i]``'s ranking, best first.
    """

    tag: str
    topics: tuple[str, ...]
    offsets: np.ndarray  # int64 (len(topics) + 1,)
    docnos: np.ndarray  # bytes_ (lines,)
    scores: np.ndarray  # float64 (lines,)
    source: str = "<run>"
    doc_hashes: np.ndarray | None = field(default=None, repr=False, compare=False)
    # the file's rank column aligned with ``docnos`` (float64), kept only for the submission checks
    ranks: np.ndarray | None = field(default=None, repr=False, compare=False)

    def summary(self) -> RunSummary:
        return RunSummary(tag=self.tag, topics=self.topics, lines=int(self.docnos.shape[0]),
                          depth=int(np.diff(self.offsets).max(initial=0)))

    def hashes(self) -> np.ndarray:
        """64-bit hashes of the docnos (computed by the reader, or here on demand)."""
        if self.doc_hashes is None:
            object.__setattr__(self, "doc_hashes", hash_ids(self.docnos))
        assert self.doc_hashes is not None
        return self.doc_hashes

    def ranking(self, topic: str) -> np.ndarray:
        i = self.topics.index(topic)
        return self.docnos[self.offsets[i] : self.offsets[i + 1]]

    @classmethod
    def from_rankings(
        cls, tag: str, rankings: Mapping[str, Sequence[str]], source: str = "<run>"
    ) -> Run:
        """Build from ``{topic: [docno, ...]}`` already in rank order (tests)."""
        topics = tuple(sorted(rankings, key=lambda t: t.encode("utf-8")))
        offsets = np.zeros(len(topics) + 1, dtype=np.int64)
        docs: list[bytes] = []
        for i, t in enumerate(topics):
            docs.extend(d.encode("utf-8") for d in rankings[t])
            offsets[i + 1] = len(docs)
        arr = np.array(docs, dtype=bytes) if docs else np.array([], dtype="S1")
        scores = -np.arange(len(docs), dtype=np.float64)
        return cls(tag=tag, topics=topics, offsets=offsets, docnos=arr, scores=scores, source=source)

    def to_rankings(self) -> dict[str, list[str]]:
        return {
            t: [d.decode("utf-8") for d in self.docnos[self.offsets[i] : self.offsets[i + 1]].tolist()]
            for i, t in enumerate(self.topics)
        }


@dataclass(frozen=True)
class RunSummary:
    """What storing a run needs of it once its lists are checked: its tag, topics, lines and
    longest list (a submission lets the arrays go before it writes the file)."""

    tag: str
    topics: tuple[str, ...]
    lines: int
    depth: int
