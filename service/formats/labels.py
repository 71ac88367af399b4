"""Per-assessor label files: who said what about which document, one label per line.

Format (whitespace-separated, one label a line)::

    topic docno assessor level

``level`` is an integer (0 = judged non-relevant, negative = pooled but unjudged, as in TREC
qrels) and may be written ``L<n>`` as NTCIR qrels do (``L2``, ``L-1``). Blank lines and lines
whose first token starts with ``#`` are skipped; the tokeniser of the qrels and run readers
(:mod:`service.formats.tokenize`) splits the file, so BOMs, CRLF line ends, control bytes,
invalid UTF-8 and the field length limits (``MAX_*_BYTES``, checked before any field is copied,
which bounds the work a hostile line can cause) are handled and reported exactly as there.

The labels are kept in file order: an assessor's labels of different documents are
independent, and when several assessors label one document the file order is the order the
labels were given (oldest first), which rules such as "latest" need
(:mod:`service.metrics.judgment_rules`). The same (topic, docno, assessor) twice is refused, even
with the same level: a re-judgment by the same person is a new assessor id (or a new file), not a
silent overwrite. Every error is an :class:`InvalidInput` naming the source, the line and what is
wrong.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from service.errors import InvalidInput
from service.formats.compressed import read_file
from service.formats.limits import CountLimits, check_topics, first_over, running_distinct
from service.formats.readers import MAX_LEVEL
from service.formats.tokenize import (
    MAX_DOCNO_BYTES,
    MAX_NUMBER_BYTES,
    MAX_TAG_BYTES,
    MAX_TOPIC_BYTES,
    TokenTable,
    check_lengths,
    tokenize,
)

#: Assessor ids are names like run tags: the same limit.
MAX_ASSESSOR_BYTES = MAX_TAG_BYTES

_DIGIT_0, _DIGIT_9, _PLUS, _MINUS, _L = ord("0"), ord("9"), ord("+"), ord("-"), ord("L")


@dataclass(frozen=True, eq=False)
class Labels:
    """The labels of a label file, one record per data line, in file order.

    ``topics``, ``docnos`` and ``assessors`` are tuples of ``str`` (equal topic and assessor
    ids share one object), ``levels`` and ``lines`` read-only int64 arrays (``lines``: the
    1-based line number of each record, for messages about it).
    """

    topics: tuple[str, ...]
    docnos: tuple[str, ...]
    assessors: tuple[str, ...]
    levels: np.ndarray
    lines: np.ndarray
    source: str = "<labels>"

    def __len__(self) -> int:
        return len(self.topics)

    @property
    def assessor_ids(self) -> tuple[str, ...]:
        """Every assessor id of the file, sorted."""
        return tuple(sorted(set(self.assessors)))


def _syntax_ok(table: TokenTable) -> np.ndarray:
    """Per line, whether the level is ``[L][+|-]digits`` (at least one digit), checked byte by
    byte on the (lines, width) byte matrix: Python's ``int`` (and numpy's conversion) would also
    take ``1_0`` and ``+ 1``-like forms that a label file should not contain."""
    raw = table.field_bytes(3)
    n, width = raw.shape[0], raw.dtype.itemsize
    u8 = raw.view(np.uint8).reshape(n, width)
    lengths = table.field_lengths(3)
    skip = (u8[:, 0] == _L).astype(np.int64)
    after = u8[np.arange(n), np.minimum(skip, width - 1)]
    signed = ((after == _PLUS) | (after == _MINUS)) & (lengths > skip)
    first = skip + signed
    pos = np.arange(width)[None, :]
    inside = (pos >= first[:, None]) & (pos < lengths[:, None])
    digit = (u8 >= _DIGIT_0) & (u8 <= _DIGIT_9)
    return (lengths > first) & ~np.any(inside & ~digit, axis=1)


def _levels(table: TokenTable) -> np.ndarray:
    ok = _syntax_ok(table)
    if not ok.all():
        r = int(np.flatnonzero(~ok)[0])
        raise InvalidInput(table.source, int(table.line_numbers[r]),
                           f"level {table.field_text(r, 3)!r} is not an integer (or L<n>)")
    raw = table.field_bytes(3)
    if bool(np.any(np.char.startswith(raw, b"L"))):
        raw = np.char.lstrip(raw, b"L")  # exactly one L where there is one (checked above)
    try:
        levels = raw.astype(np.int64)
    except (OverflowError, ValueError):  # more than 18 digits: find the line
        levels = np.array([max(min(int(v), MAX_LEVEL + 1), -MAX_LEVEL - 1) for v in raw.tolist()], dtype=np.int64)
    out = np.flatnonzero(np.abs(levels) > MAX_LEVEL)
    if out.shape[0]:
        r = int(out[0])
        raise InvalidInput(table.source, int(table.line_numbers[r]),
                           f"level {table.field_text(r, 3)!r} is out of range: |level| must be at most {MAX_LEVEL}")
    return levels


def _refuse_duplicates(table: TokenTable, topics: np.ndarray, docnos: np.ndarray, assessors: np.ndarray) -> None:
    """The earliest line that repeats a (topic, docno, assessor) of an earlier line, if any."""
    n = topics.shape[0]
    order = np.lexsort((np.arange(n), assessors, docnos, topics))  # equal keys stay in line order
    t, d, a = topics[order], docnos[order], assessors[order]
    same = (t[1:] == t[:-1]) & (d[1:] == d[:-1]) & (a[1:] == a[:-1])
    if not same.any():
        return
    pairs = np.flatnonzero(same)
    k = int(pairs[np.argmin(order[pairs + 1])])  # the repeat earliest in the file: second of its key
    first, second = int(order[k]), int(order[k + 1])
    raise InvalidInput(
        table.source, int(table.line_numbers[second]),
        f"assessor {table.field_text(second, 2)!r} labels document {table.field_text(second, 1)!r} of topic "
        f"{table.field_text(second, 0)!r} a second time (first on line {int(table.line_numbers[first])})")


def _check_counts(table: TokenTable, limits: CountLimits, topics: np.ndarray, docnos: np.ndarray,
                  assessors: np.ndarray) -> None:
    """Refuse more topics, assessors or labels of one document than ``limits`` allow, at the
    line where the count is first exceeded."""
    topic_ids, topic_codes = np.unique(topics, return_inverse=True)
    topic_codes = topic_codes.reshape(-1)
    check_topics(table.source, topic_codes, topic_ids, table.line_number, limits.topics)
    everyone = np.zeros(topic_codes.shape[0], dtype=np.int64)
    r = first_over(running_distinct(everyone, np.unique(assessors, return_inverse=True)[1].reshape(-1)),
                   limits.assessors)
    if r is not None:
        raise InvalidInput(table.source, table.line_number(r), f"assessor {table.field_text(r, 2)!r} is one more "
                           f"than the {limits.assessors:,} assessors a label file may hold")
    if limits.labels_per_document is None:
        return
    documents = np.unique(np.rec.fromarrays([topic_codes, docnos]), return_inverse=True)[1].reshape(-1)
    r = first_over(running_distinct(documents, np.arange(documents.shape[0])), limits.labels_per_document)
    if r is not None:
        raise InvalidInput(table.source, table.line_number(r),
                           f"document {table.field_text(r, 1)!r} of topic {table.field_text(r, 0)!r} has a label "
                           f"more than the {limits.labels_per_document:,} one document may have in a label file")


def _decode_shared(values: np.ndarray) -> tuple[str, ...]:
    """Each value decoded once per distinct value (topic and assessor ids repeat a lot)."""
    uniq, inverse = np.unique(values, return_inverse=True)
    names = [v.decode("utf-8") for v in uniq.tolist()]
    return tuple(map(names.__getitem__, inverse.reshape(-1).tolist()))


def parse_labels(data: bytes, source: str = "<labels>", limits: CountLimits | None = None) -> Labels:
    """Parse a per-assessor label file (``topic docno assessor level`` lines; see the module);
    ``limits``: the topics, assessors and labels per document an upload may hold."""
    table = tokenize(data, source, 4, exact=True)
    check_lengths(table, [(0, "topic id", MAX_TOPIC_BYTES), (1, "docno", MAX_DOCNO_BYTES),
                          (2, "assessor id", MAX_ASSESSOR_BYTES), (3, "level", MAX_NUMBER_BYTES)])
    levels = _levels(table)
    topics, docnos, assessors = (table.field_bytes(k) for k in range(3))
    _refuse_duplicates(table, topics, docnos, assessors)
    if limits is not None:
        _check_counts(table, limits, topics, docnos, assessors)
    lines = np.array(table.line_numbers, dtype=np.int64)
    for a in (levels, lines):
        a.flags.writeable = False
    return Labels(topics=_decode_shared(topics), docnos=tuple(v.decode("utf-8") for v in docnos.tolist()),
                  assessors=_decode_shared(assessors), levels=levels, lines=lines, source=source)


def read_labels(path: str | os.PathLike[str]) -> Labels:
    data = read_file(path)  # decompressed when it is gzip
    return parse_labels(data, str(path))


def labels_by_document(labels: Labels) -> dict[tuple[str, str], list[int]]:
    """{(topic, docno): its levels in file order (oldest first)}, documents in order of their
    first label: the input of :func:`service.metrics.judgment_rules.derive`."""
    out: dict[tuple[str, str], list[int]] = {}
    for key, level in zip(zip(labels.topics, labels.docnos), labels.levels.tolist()):
        got = out.get(key)
        if got is None:
            out[key] = [level]
        else:
            got.append(level)
    return out


def labels_of(labels: Labels, assessor: str) -> dict[tuple[str, str], int]:
    """{(topic, docno): level} of one assessor, in file order (one label per document: the file
    has no repeated (topic, docno, assessor)). An assessor id the file does not hold is a
    ``ValueError`` rather than an empty result, so that a mistyped id is not mistaken for an
    assessor who judged nothing."""
    out = {(t, d): level for t, d, a, level in zip(labels.topics, labels.docnos, labels.assessors,
                                                   labels.levels.tolist()) if a == assessor}
    if not out:
        known = labels.assessor_ids
        shown = ", ".join(repr(a) for a in known[:10]) + (", ..." if len(known) > 10 else "")
        raise ValueError(f"{labels.source} holds no label by assessor {assessor!r} (assessors: {shown})")
    return out
