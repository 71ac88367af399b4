"""Readers for intent-aware (diversity) judgments, with line-numbered errors.

Formats (whitespace-separated; blank lines and ``#`` comment lines skipped, as in every reader)

TREC diversity qrels (ndeval's input, TREC 2009-2014 Web track)
    ``topic subtopic docno rel``: ``subtopic`` an integer from 0 to ``MAX_SUBTOPIC``, without a
    sign or leading zeros (ndeval's subtopic numbers; 0, as NTCIR's intent 0, marks a document
    judged relevant to no subtopic); ``rel`` an integer; ``rel >= 1`` is relevant to the subtopic,
    ``0`` or a negative label is not (ndeval itself refuses negative labels; pyndeval counts
    everything below its ``relevance_level`` as not relevant).
NTCIR intent qrels (NTCIREVAL's ``Dqrels``, NTCIR-9/10 INTENT, NTCIR-11/12 IMine)
    ``topic intent docno level``: ``level`` is ``L<n>`` (``L0`` = judged not relevant) or a
    plain integer. NTCIR files give a judged non-relevant document the intent ``0`` ("no
    intent", README.diversity of NTCIREVAL): such an intent, having no relevant document,
    never counts (it needs no probability and is not an intent of I-rec or S-recall).
    NTCIREVAL's DIN-splitqrels reads levels L1..L9 only; Cranfield reads any level up to
    ``MAX_LEVEL`` (10000), as the ad hoc readers do.
NTCIR intent probabilities (NTCIREVAL's ``Iprob``/``DINprob``)
    ``topic intent probability [inf|nav]``: P(i|q) in [0, 1]; the optional fourth column
    (the intent's type, used only by NTCIREVAL's DIN-measures) is checked and ignored.
    A topic's probabilities must sum to 1 within ``PROBABILITY_TOLERANCE``. Without a
    probability file, every intent of a topic that has a relevant document gets
    1 / (their number), the others 0.

The two qrels formats differ only in the level column, so one parser reads both; ``fmt``
says which level syntax is accepted. Every (topic, intent, docno) is judged once: a repeated
line is an error (ndeval would count a repeated relevant judgment twice in MAP-IA's R).

Checks between a qrels file and its probability file: an intent with a probability must be
judged in the qrels (a typo in an intent id would otherwise move probability mass silently),
and an intent with a relevant document must have a probability.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

import numpy as np

from service.errors import InvalidInput
from service.formats.compressed import read_file
from service.formats.limits import CountLimits, check_topics, codes_of, first_over, running_distinct
from service.formats.tokenize import (
    MAX_DOCNO_BYTES,
    MAX_NUMBER_BYTES,
    MAX_TOPIC_BYTES,
    TokenTable,
    check_lengths,
    parse_floats,
    parse_ints,
    tokenize,
)
from service.formats.types import Qrels

DiversityFormat = Literal["trec", "ntcir"]

#: A topic's intent probabilities must add up to 1 within this.
PROBABILITY_TOLERANCE = 1e-6
#: The highest relevance level read (as the ad hoc readers: readers.MAX_LEVEL).
MAX_LEVEL = 10_000
#: Intent ids have the topic ids' length limit.
MAX_INTENT_BYTES = MAX_TOPIC_BYTES
#: TREC diversity subtopics are numbers, as ndeval reads them (a C int): 0 to this.
MAX_SUBTOPIC = 2**31 - 1


def intent_sort_key(intent: str) -> tuple[int, int, bytes]:
    """The canonical order of a topic's intents: ids made of ASCII digits first, by value
    (ndeval numbers its subtopics), then the others by their UTF-8 bytes."""
    raw = intent.encode("utf-8")
    if intent.isascii() and intent.isdigit():
        return (0, int(intent), raw)
    return (1, 0, raw)


@dataclass(frozen=True)
class TopicIntents:
    """One topic's intent-aware judgments.

    ``intents`` are in canonical order (:func:`intent_sort_key`); ``probabilities[i]`` is
    P(intents[i] | topic) and ``judgments[i]`` maps each document judged for that intent to
    its level (>= 0; negative labels are stored as 0, not relevant). Every judgment line is
    stored once: memory is linear in the qrels.
    """

    topic: str
    intents: tuple[str, ...]
    probabilities: tuple[float, ...]
    judgments: tuple[Mapping[str, int], ...]

    def relevant_intents(self, rel: int = 1) -> tuple[int, ...]:
        """Indices of the intents with at least one document at level >= ``rel``."""
        return tuple(i for i, j in enumerate(self.judgments) if any(v >= rel for v in j.values()))

    @property
    def has_relevant(self) -> bool:
        return any(v >= 1 for j in self.judgments for v in j.values())


@dataclass(frozen=True)
class IntentQrels:
    """Intent-aware judgments of a collection: per topic a :class:`TopicIntents`.

    ``uniform`` is True when the probabilities are the uniform default (no probability file).
    """

    topics: tuple[str, ...]  # sorted by UTF-8 bytes, as Qrels' topics
    entries: Mapping[str, TopicIntents] = field(repr=False)
    source: str = "<qrels>"
    uniform: bool = True

    def __getitem__(self, topic: str) -> TopicIntents:
        return self.entries[topic]

    def __contains__(self, topic: object) -> bool:
        return topic in self.entries

    def __len__(self) -> int:
        return len(self.topics)

    def get(self, topic: str) -> TopicIntents | None:
        return self.entries.get(topic)

    def to_qrels(self) -> Qrels:
        """The flattened ad hoc view: one judgment per (topic, docno), at the largest level
        the document has for any intent of the topic (0 when it is relevant to none). Pools,
        diffs and the ad hoc metrics read it; the intent-aware measures read the intents."""
        flat: dict[str, dict[str, int]] = {}
        for t in self.topics:
            docs: dict[str, int] = {}
            for judged in self.entries[t].judgments:
                for d, lv in judged.items():
                    docs[d] = max(docs.get(d, 0), lv)
            flat[t] = docs
        return Qrels.from_mapping(flat, self.source)

    @classmethod
    def from_mapping(
        cls,
        judgments: Mapping[str, Mapping[str, Mapping[str, int]]],
        probabilities: Mapping[str, Mapping[str, float]] | None = None,
        source: str = "<qrels>",
    ) -> IntentQrels:
        """Build from ``{topic: {intent: {docno: level}}}`` and, optionally,
        ``{topic: {intent: P(i|q)}}`` (tests, the store), checked as the readers check files."""
        raw: dict[str, dict[str, dict[str, int]]] = {
            t: {i: {d: max(int(v), 0) for d, v in docs.items()} for i, docs in intents.items()}
            for t, intents in judgments.items()
        }
        probs = None
        if probabilities is not None:
            # A mapping has no lines: its errors name no line (line 0 below means "none").
            rows = [(t, i, float(p), 0) for t, ps in probabilities.items() for i, p in ps.items()]
            probs = _probabilities_from_rows(rows, "<probabilities>")
        first_rel = {(t, i): 0 for t, intents in raw.items() for i, docs in intents.items()
                     if any(v >= 1 for v in docs.values())}
        return _build(raw, first_rel, source, probs)


@dataclass(frozen=True)
class IntentProbabilities:
    """P(i|q) per topic and intent, with the line each was read from."""

    topics: Mapping[str, Mapping[str, float]]
    lines: Mapping[tuple[str, str], int] = field(repr=False)
    source: str = "<probabilities>"


# ----------------------------------------------------------------------------- qrels


def parse_diversity_qrels(
    data: bytes,
    source: str = "<qrels>",
    fmt: DiversityFormat = "trec",
    probabilities: IntentProbabilities | None = None,
    limits: CountLimits | None = None,
) -> IntentQrels:
    """Read TREC diversity qrels (``fmt="trec"``) or NTCIR intent qrels (``fmt="ntcir"``).

    ``probabilities`` (from :func:`parse_intent_probabilities`) gives P(i|q); without it each
    topic's intents with a relevant document share the probability uniformly. ``limits``: the
    topics, intents per topic and documents x intents per topic an upload may hold, checked on
    the columns before any judgment is read into Python objects.
    """
    if fmt not in ("trec", "ntcir"):
        raise ValueError(f"unknown diversity qrels format {fmt!r}")
    table = tokenize(data, source, 4, exact=True)
    check_lengths(table, [(0, "topic id", MAX_TOPIC_BYTES), (1, "intent id", MAX_INTENT_BYTES),
                          (2, "docno", MAX_DOCNO_BYTES)])
    if fmt == "trec":
        _check_subtopics(table)
    levels = parse_ints(table, 3, "relevance label") if fmt == "trec" else _ntcir_levels(table)
    too_high = np.flatnonzero(levels > MAX_LEVEL)
    if too_high.shape[0]:
        r = int(too_high[0])
        raise InvalidInput(source, int(table.line_numbers[r]),
                           f"relevance level {int(levels[r])} is above the largest supported level {MAX_LEVEL}")
    if limits is not None:
        _check_counts(table, limits)
    topics = _column_text(table, 0)
    intents = _column_text(table, 1)
    docnos = _column_text(table, 2)
    lines = table.line_numbers.tolist()
    raw: dict[str, dict[str, dict[str, int]]] = {}
    first_rel: dict[tuple[str, str], int] = {}
    for row, (t, i, d, lv) in enumerate(zip(topics, intents, docnos, levels.tolist())):
        judged = raw.setdefault(t, {}).setdefault(i, {})
        if d in judged:
            first = next(lines[r] for r in range(row) if topics[r] == t and intents[r] == i and docnos[r] == d)
            raise InvalidInput(source, lines[row],
                               f"document {d!r} is judged twice for intent {i!r} of topic {t!r} "
                               f"(first on line {first}); each judgment appears once")
        judged[d] = max(lv, 0)
        if lv >= 1:
            first_rel.setdefault((t, i), lines[row])
    return _build(raw, first_rel, source, probabilities)


def _check_counts(table: TokenTable, limits: CountLimits, docs: bool = True) -> None:
    """Refuse more topics, more intents of a topic or (with ``docs``) more judged documents x
    intents of a topic than ``limits`` allow, at the line where the count is first exceeded."""
    topic_ids = np.unique(table.field_bytes(0))
    topics = np.searchsorted(topic_ids, table.field_bytes(0))
    check_topics(table.source, topics, topic_ids, table.line_number, limits.topics)
    if limits.intents_per_topic is None and (limits.intent_cells is None or not docs):
        return
    intents = running_distinct(topics, codes_of(table.field_bytes(1)))
    r = first_over(intents, limits.intents_per_topic)
    if r is not None:
        raise InvalidInput(table.source, table.line_number(r),
                           f"intent {table.field_text(r, 1)!r} is one more than the {limits.intents_per_topic:,} "
                           f"intents a topic may have (topic {table.field_text(r, 0)!r})")
    if limits.intent_cells is None or not docs:
        return
    cells = running_distinct(topics, codes_of(table.field_bytes(2))) * intents
    r = first_over(cells, limits.intent_cells)
    if r is not None:
        raise InvalidInput(table.source, table.line_number(r),
                           f"topic {table.field_text(r, 0)!r} judges {int(cells[r] // intents[r]):,} documents for "
                           f"{int(intents[r]):,} intents here: {int(cells[r]):,} document-intent pairs, more than the "
                           f"{limits.intent_cells:,} a topic may have")


def _check_subtopics(table: TokenTable) -> None:
    """TREC diversity subtopics are integers from 0 to ``MAX_SUBTOPIC``, written without a sign
    or leading zeros: ndeval numbers them (``-5`` or ``10^30`` is no subtopic of its, and ``07``
    would be a second spelling of subtopic 7, which ndeval reads as one). NTCIR intent ids stay
    free text within the length limit: NTCIREVAL compares them as strings."""
    raw = table.field_bytes(1)
    width = len(str(MAX_SUBTOPIC))
    leading_zero = np.char.startswith(raw, b"0") & (np.char.str_len(raw) > 1)
    ok = np.char.isdigit(raw) & ~leading_zero & (np.char.str_len(raw) <= width)
    longest = ok & (np.char.str_len(raw) == width)  # as many digits as the largest: compare as text
    ok &= ~longest | (raw <= str(MAX_SUBTOPIC).encode())
    bad = np.flatnonzero(~ok)
    if bad.shape[0]:
        r = int(bad[0])
        raise InvalidInput(table.source, table.line_number(r),
                           f"subtopic {table.field_text(r, 1)!r} is not a subtopic number: TREC diversity "
                           f"subtopics are integers from 0 to {MAX_SUBTOPIC:,}, without a sign or leading "
                           "zeros (ndeval's)")


def _column_text(table: TokenTable, k: int) -> list[str]:
    return [b.decode("utf-8") for b in table.field_bytes(k).tolist()]


def _ntcir_levels(table: TokenTable) -> np.ndarray:
    """The level column as ``L<n>`` (NTCIREVAL) or a plain integer, line by line."""
    check_lengths(table, [(3, "relevance label", MAX_NUMBER_BYTES)])
    raw = table.field_bytes(3)
    double_l = np.char.startswith(raw, b"LL")
    digits = np.where(np.char.startswith(raw, b"L"), np.char.lstrip(raw, b"L"), raw)
    if not np.any(double_l):
        try:
            values = digits.astype(np.int64)
            if values.shape[0] == 0 or int(np.abs(values).max()) <= 2**62:
                return values
        except (ValueError, OverflowError):
            pass
    for r, text in enumerate(digits.tolist()):
        ok = not bool(double_l[r])
        if ok:
            try:
                ok = abs(int(text)) <= 2**62
            except ValueError:
                ok = False
        if not ok:
            raise InvalidInput(table.source, int(table.line_numbers[r]),
                               f"relevance label {table.field_text(r, 3)!r} is not L<n> or an integer")
    raise AssertionError("unreachable: every label parsed one by one")  # pragma: no cover


def _build(
    raw: dict[str, dict[str, dict[str, int]]],
    first_rel: Mapping[tuple[str, str], int],
    source: str,
    probabilities: IntentProbabilities | None,
) -> IntentQrels:
    if probabilities is not None:
        _cross_check(raw, first_rel, source, probabilities)
    entries: dict[str, TopicIntents] = {}
    for t in sorted(raw, key=lambda s: s.encode("utf-8")):
        by_intent = raw[t]
        order = sorted(by_intent, key=intent_sort_key)
        if probabilities is None:
            relevant = [i for i in order if (t, i) in first_rel]
            share = 1.0 / len(relevant) if relevant else 0.0
            probs = tuple(share if (t, i) in first_rel else 0.0 for i in order)
        else:
            given = probabilities.topics.get(t, {})
            probs = tuple(float(given.get(i, 0.0)) for i in order)
        entries[t] = TopicIntents(
            topic=t,
            intents=tuple(order),
            probabilities=probs,
            judgments=tuple(MappingProxyType(by_intent[i]) for i in order),
        )
    return IntentQrels(topics=tuple(entries), entries=MappingProxyType(entries), source=source,
                       uniform=probabilities is None)


def _cross_check(
    raw: Mapping[str, Mapping[str, Mapping[str, int]]],
    first_rel: Mapping[tuple[str, str], int],
    source: str,
    probabilities: IntentProbabilities,
) -> None:
    """Every probability belongs to a judged intent; every intent with a relevant document has one."""
    for (t, i), line in sorted(probabilities.lines.items(), key=lambda kv: kv[1]):
        if t not in raw:
            raise InvalidInput(probabilities.source, _line(line),
                               f"topic {t!r} has intent probabilities but no judgments in {source}")
        if i not in raw[t]:
            raise InvalidInput(probabilities.source, _line(line),
                               f"intent {i!r} of topic {t!r} has a probability but no judgments in {source}")
    for (t, i), line in sorted(first_rel.items(), key=lambda kv: kv[1]):
        if i not in probabilities.topics.get(t, {}):
            raise InvalidInput(source, _line(line),
                               f"intent {i!r} of topic {t!r} has relevant documents but no probability "
                               f"in {probabilities.source}")


def read_diversity_qrels(
    path: str | os.PathLike[str],
    fmt: DiversityFormat = "trec",
    probabilities: str | os.PathLike[str] | IntentProbabilities | None = None,
) -> IntentQrels:
    """Read a diversity qrels file, with an optional intent probability file (or parsed one)."""
    probs = probabilities
    if probs is not None and not isinstance(probs, IntentProbabilities):
        probs = read_intent_probabilities(probs)
    return parse_diversity_qrels(_read_bytes(path), str(path), fmt, probs)


# ----------------------------------------------------------------------------- probabilities


def parse_intent_probabilities(data: bytes, source: str = "<probabilities>",
                               limits: CountLimits | None = None) -> IntentProbabilities:
    """Read ``topic intent probability [inf|nav]`` lines (NTCIREVAL's Iprob / DINprob);
    ``limits``: the topics and intents per topic an upload may hold."""
    table = tokenize(data, source, 3)
    extra = np.flatnonzero(table.field_counts > 4)
    if extra.shape[0]:
        r = int(extra[0])
        raise InvalidInput(source, int(table.line_numbers[r]),
                           f"expected 3 or 4 whitespace-separated columns (topic intent probability [inf|nav]), "
                           f"found {int(table.field_counts[r])}")
    check_lengths(table, [(0, "topic id", MAX_TOPIC_BYTES), (1, "intent id", MAX_INTENT_BYTES)])
    for r in np.flatnonzero(table.field_counts == 4).tolist():
        kind = _fourth_token(table, r)
        if kind not in ("inf", "nav"):
            raise InvalidInput(source, int(table.line_numbers[r]),
                               f"the fourth column is an intent type, inf or nav, not {kind[:40]!r}")
    values = parse_floats(table, 2, "probability")
    if limits is not None:
        _check_counts(table, limits, docs=False)
    topics = _column_text(table, 0)
    intents = _column_text(table, 1)
    rows = list(zip(topics, intents, values.tolist(), table.line_numbers.tolist()))
    return _probabilities_from_rows(rows, source)


def _fourth_token(table: TokenTable, r: int) -> str:
    """The token after field 2 of data line ``r`` (field_counts says there is one)."""
    buf = table.buffer
    pos = table.span(r, 2)[1]
    n = buf.shape[0]
    while pos < n and buf[pos] in _BLANKS:
        pos += 1
    end = pos
    while end < n and buf[end] not in _SPACES:
        end += 1
    return buf[pos:end].tobytes().decode("utf-8")


_BLANKS = frozenset(b" \t\v\f")  # within a line
_SPACES = frozenset(b" \t\n\v\f\r")


def _probabilities_from_rows(rows: list[tuple[str, str, float, int]], source: str) -> IntentProbabilities:
    topics: dict[str, dict[str, float]] = {}
    lines: dict[tuple[str, str], int] = {}
    first_line: dict[str, int] = {}
    for t, i, p, line in rows:
        if not math.isfinite(p) or not 0.0 <= p <= 1.0:
            raise InvalidInput(source, _line(line),
                               f"probability {p!r} of intent {i!r} of topic {t!r} is not in [0, 1]")
        if (t, i) in lines:
            raise InvalidInput(source, _line(line),
                               f"intent {i!r} of topic {t!r} has a second probability (first on line {lines[(t, i)]})")
        topics.setdefault(t, {})[i] = p
        lines[(t, i)] = line
        first_line.setdefault(t, line)
    for t, probs in topics.items():
        total = math.fsum(probs.values())
        if abs(total - 1.0) > PROBABILITY_TOLERANCE:
            raise InvalidInput(source, _line(first_line[t]),
                               f"the intent probabilities of topic {t!r} sum to {total!r}, not 1 "
                               f"(tolerance {PROBABILITY_TOLERANCE}; {len(probs)} intents)")
    return IntentProbabilities(
        topics=MappingProxyType({t: MappingProxyType(p) for t, p in topics.items()}),
        lines=MappingProxyType(lines),
        source=source,
    )


def _line(line: int) -> int | None:
    """A 1-based line number, or None for data that came from a mapping (line 0)."""
    return line if line > 0 else None


def read_intent_probabilities(path: str | os.PathLike[str]) -> IntentProbabilities:
    return parse_intent_probabilities(_read_bytes(path), str(path))


def _read_bytes(path: str | os.PathLike[str]) -> bytes | bytearray:
    """The file's bytes, decompressed when it is gzip (:mod:`service.formats.compressed`)."""
    return read_file(path)
