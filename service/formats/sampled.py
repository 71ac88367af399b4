"""NIST's sampled qrels for stratified judging (``sample_eval.pl``'s input), read and written.

Format: one judgment per line, five whitespace-separated columns::

    topic  iteration  docno  stratum  rel

as ``sample_eval.pl`` (NIST; Yilmaz, Kanoulas & Aslam, SIGIR 2008) reads it:

* every line is a document of the topic's *pool* (sample_eval's "universe"); a document
  absent from the file was not pooled;
* ``stratum`` names the stratum the document was sampled from: a whole number written with
  digits only, 0 to :data:`MAX_STRATUM` (NIST's files and Cranfield's pools number the strata
  1, 2, ...; sample_eval compares and orders the labels as strings, and uses -1 itself for
  "no stratum", so ``-1``, ``x`` or ``1e3`` are refused);
* ``rel`` >= 0: the document was sampled and judged at that level (0 = non-relevant,
  > 0 relevant, the level being its gain in infNDCG), at most ``MAX_LEVEL``; ``rel`` -1: pooled
  but not sampled, hence not judged. Any other negative level is refused (sample_eval reads
  every negative level as "not sampled", so a -2 is a mistake, not a meaning).

There is no file of sampling rates: sample_eval takes a stratum's inclusion probability
from the file itself, judged documents / documents of the stratum (per topic), which is what
:meth:`SampledQrels.stratum_counts` and :meth:`SampledQrels.inclusion_probabilities` give.
The iteration column is ignored, as by trec_eval. A (topic, docno) pair listed twice is an
error (sample_eval would count the document twice in its stratum's size).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from service.errors import InvalidInput
from service.formats.compressed import read_file
from service.formats.readers import MAX_LEVEL
from service.formats.tokenize import (
    MAX_DOCNO_BYTES,
    MAX_TOPIC_BYTES,
    TokenTable,
    check_lengths,
    parse_ints,
    tokenize,
)
from service.formats.types import Qrels

#: The longest stratum label read, in bytes.
MAX_STRATUM_BYTES = 100
#: The largest stratum number (Cranfield's own pools have at most one stratum per rank, 10,000).
MAX_STRATUM = 1_000_000
#: ``rel`` of a pooled document that was not sampled.
NOT_SAMPLED = -1


@dataclass(frozen=True)
class StratumCounts:
    """One stratum of one topic: its pooled documents, how many were judged and found relevant."""

    stratum: str
    size: int  # pooled documents in the stratum (sample_eval's docs_per_category)
    judged: int  # documents sampled and judged, level >= 0 (sampled_docs)
    relevant: int  # judged at a level > 0 (sampled_rel)

    @property
    def inclusion_probability(self) -> float:
        """judged / size, sample_eval's per-stratum sampling rate (0 for a stratum with nothing judged)."""
        return self.judged / self.size if self.size else 0.0


@dataclass(frozen=True)
class SampledQrels:
    """Per topic, the pooled documents (sorted docnos), their stratum and level (negative = not sampled)."""

    topics: tuple[str, ...]
    docnos: tuple[np.ndarray, ...]  # per topic, sorted bytes_ array
    strata: tuple[tuple[str, ...], ...]  # per topic, aligned with docnos
    levels: tuple[np.ndarray, ...]  # per topic, int64 aligned with docnos
    source: str = "<sampled qrels>"
    _index: dict[str, int] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._index.update({t: i for i, t in enumerate(self.topics)})

    def topic_index(self, topic: str) -> int | None:
        return self._index.get(topic)

    def judgments(self, topic: str) -> dict[str, tuple[str, int]]:
        """docno -> (stratum, level) of one topic (empty when the topic is not in the file)."""
        i = self._index.get(topic)
        if i is None:
            return {}
        return {d.decode("utf-8"): (s, int(lv))
                for d, s, lv in zip(self.docnos[i].tolist(), self.strata[i], self.levels[i].tolist())}

    def to_mapping(self) -> dict[str, dict[str, tuple[str, int]]]:
        """``{topic: {docno: (stratum, level)}}``, the inverse of :meth:`from_mapping`."""
        return {t: self.judgments(t) for t in self.topics}

    def stratum_counts(self, topic: str) -> list[StratumCounts]:
        """The topic's strata in sample_eval's order (labels sorted as strings), with their counts."""
        i = self._index.get(topic)
        if i is None:
            return []
        size: dict[str, int] = {}
        judged: dict[str, int] = {}
        relevant: dict[str, int] = {}
        for s, lv in zip(self.strata[i], self.levels[i].tolist()):
            size[s] = size.get(s, 0) + 1
            judged[s] = judged.get(s, 0) + (lv >= 0)
            relevant[s] = relevant.get(s, 0) + (lv > 0)
        return [StratumCounts(s, size[s], judged[s], relevant[s]) for s in sorted(size, key=_perl_order)]

    def inclusion_probabilities(self) -> dict[str, dict[str, float]]:
        """topic -> stratum -> judged / size, the sampling rate sample_eval infers per stratum."""
        return {t: {c.stratum: c.inclusion_probability for c in self.stratum_counts(t)} for t in self.topics}

    def relabel(self, mapping: Mapping[int, int]) -> SampledQrels:
        """Levels mapped through ``mapping`` (others kept): sample_eval's ``-G level=gain`` option,
        which replaces a level by another before anything is counted or summed."""
        levels = tuple(np.array([mapping.get(int(v), int(v)) for v in lv.tolist()], dtype=np.int64)
                       for lv in self.levels)
        return SampledQrels(self.topics, self.docnos, self.strata, levels, self.source)

    def to_qrels(self) -> Qrels:
        """The same judgments without strata (negative levels kept: pooled but not judged), the
        four-column qrels trec_eval's infAP reads."""
        return Qrels(self.topics, self.docnos, self.levels, self.source)

    def to_text(self) -> str:
        """The file in NIST's five-column format, topics and docnos in sorted order."""
        lines = []
        for i, t in enumerate(self.topics):
            for d, s, lv in zip(self.docnos[i].tolist(), self.strata[i], self.levels[i].tolist()):
                lines.append(f"{t} 0 {d.decode('utf-8')} {s} {int(lv)}")
        return "\n".join(lines) + ("\n" if lines else "")

    @classmethod
    def from_mapping(cls, judgments: Mapping[str, Mapping[str, tuple[str, int]]],
                     source: str = "<sampled qrels>") -> SampledQrels:
        """Build from ``{topic: {docno: (stratum, level)}}`` (tests, the store)."""
        topics = tuple(sorted(judgments, key=lambda t: t.encode("utf-8")))
        docs, strata, levels = [], [], []
        for t in topics:
            items = sorted((d.encode("utf-8"), str(s), int(v)) for d, (s, v) in judgments[t].items())
            docs.append(np.array([d for d, _, _ in items], dtype=bytes) if items else np.array([], dtype="S1"))
            strata.append(tuple(s for _, s, _ in items))
            levels.append(np.array([v for _, _, v in items], dtype=np.int64))
        return cls(topics, tuple(docs), tuple(strata), tuple(levels), source)


def _perl_order(label: str) -> bytes:
    """Perl's default ``sort`` (string comparison, byte by byte for undecoded input)."""
    return label.encode("utf-8")


def parse_sampled_qrels(data: bytes, source: str = "<sampled qrels>") -> SampledQrels:
    """Read NIST's five-column sampled qrels (``topic iteration docno stratum rel``)."""
    table = tokenize(data, source, 5, exact=True)
    check_lengths(table, [(0, "topic id", MAX_TOPIC_BYTES), (2, "docno", MAX_DOCNO_BYTES),
                          (3, "stratum", MAX_STRATUM_BYTES)])
    levels = parse_ints(table, 4, "relevance label")
    topics = table.field_bytes(0)
    docnos = table.field_bytes(2)
    strata = table.field_bytes(3)
    _check_values(table, strata, levels, source)
    order = np.lexsort((docnos, topics))
    t_s, d_s = topics[order], docnos[order]
    same = np.flatnonzero((t_s[1:] == t_s[:-1]) & (d_s[1:] == d_s[:-1]))
    if same.shape[0]:
        first, second = sorted((int(order[same[0]]), int(order[same[0] + 1])))
        raise InvalidInput(source, int(table.line_numbers[second]),
                           f"document {table.field_text(second, 2)!r} of topic {table.field_text(second, 0)!r} is "
                           f"listed twice (first on line {int(table.line_numbers[first])}): a pooled document "
                           "belongs to one stratum once")
    uniq, starts = np.unique(t_s, return_index=True)
    bounds = np.append(starts, t_s.shape[0])
    strata_s = [s.decode("utf-8") for s in strata[order].tolist()]
    levels_s = levels[order]
    return SampledQrels(
        topics=tuple(t.decode("utf-8") for t in uniq.tolist()),
        docnos=tuple(d_s[bounds[i]: bounds[i + 1]] for i in range(uniq.shape[0])),
        strata=tuple(tuple(strata_s[bounds[i]: bounds[i + 1]]) for i in range(uniq.shape[0])),
        levels=tuple(levels_s[bounds[i]: bounds[i + 1]] for i in range(uniq.shape[0])),
        source=source,
    )


def _check_values(table: TokenTable, strata: np.ndarray, levels: np.ndarray, source: str) -> None:
    """Every stratum a whole number from 0 to :data:`MAX_STRATUM` written with digits only, every
    level -1 or 0 to ``MAX_LEVEL``; the first line that breaks either rule is refused, saying what
    it holds."""
    digits = np.char.isdigit(strata)
    ok = digits & (np.char.str_len(strata) <= len(str(MAX_STRATUM)))
    ok[ok] = strata[ok].astype(np.int64) <= MAX_STRATUM
    ok &= (levels >= NOT_SAMPLED) & (levels <= MAX_LEVEL)
    bad = np.flatnonzero(~ok)
    if not bad.shape[0]:
        return
    r = int(bad[0])
    level = int(levels[r])
    if level > MAX_LEVEL:
        reason = f"relevance level {level} is above the largest supported level {MAX_LEVEL}"
    elif level < NOT_SAMPLED:
        reason = (f"relevance level {level}: a sampled judgment's level is -1 (pooled, not sampled) or a level "
                  f"from 0 to {MAX_LEVEL}")
    elif digits[r]:
        reason = f"stratum {table.field_text(r, 3)!r} is above the largest stratum {MAX_STRATUM}"
    else:
        reason = (f"stratum {table.field_text(r, 3)!r} is not a stratum number (a whole number written with "
                  "digits: 1, 2, ...)")
    raise InvalidInput(source, int(table.line_numbers[r]), reason)


def read_sampled_qrels(path: str | os.PathLike[str]) -> SampledQrels:
    data = read_file(path)  # decompressed when it is gzip
    return parse_sampled_qrels(data, str(path))
