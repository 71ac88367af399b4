"""Readers for TREC and NTCIR qrels and TREC runs, with line-numbered errors.

Qrels
  TREC   ``topic iteration docno rel``  (rel an integer; 0 = judged non-relevant,
         negative = pooled but unjudged, as in trec_eval)
  NTCIR  ``topic docno L<n>``           (L0 = judged non-relevant)
Runs
  TREC   ``topic Q0 docno rank score tag`` (extra columns ignored, as trec_eval does)

Topic ids, docnos, run tags and numbers have length limits (``MAX_*_BYTES``,
docs/formats.md), checked right after tokenising, before any field is copied.
"""

from __future__ import annotations

import os
from typing import Literal

import numpy as np

from service.errors import InvalidInput
from service.formats.compressed import read_file
from service.formats.keys import KeyTable, hash_words, topic_keys
from service.formats.limits import CountLimits, check_topics
from service.formats.tokenize import (
    MAX_DOCNO_BYTES,
    MAX_NUMBER_BYTES,
    MAX_TAG_BYTES,
    MAX_TOPIC_BYTES,
    TokenTable,
    check_lengths,
    column_heads,
    first_row_differing,
    gather_words,
    parse_floats,
    parse_ints,
    row_chunks,
    tokenize,
    words_to_bytes,
)
from service.formats.types import Qrels, Run, RunOrder

QrelsFormat = Literal["auto", "trec", "ntcir"]


def _read_bytes(path: str | os.PathLike[str]) -> bytes | bytearray:
    """The file's bytes, decompressed when it is gzip (:mod:`service.formats.compressed`)."""
    return read_file(path)


def _group_consecutive(table: TokenTable, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Codes of field ``k`` via its runs of equal consecutive values.

    Files are grouped by topic, so only the group heads (a handful) are copied
    out of the file and sorted, instead of every line.
    Returns (sorted unique, codes, the first row of each run of equal values); the codes
    are int32 (fewer than 2**31 values).
    """
    n = len(table)
    heads = column_heads(table, k)
    values = table.field_bytes(k, heads)
    if heads.shape[0] <= _FEW_GROUPS:
        # A few dozen topics: sorting them in Python costs less than np.unique's set-up.
        # (bytes sort as numpy's bytes_ do: tokens hold no NUL byte.)
        listed = values.tolist()
        uniq_list = sorted(set(listed))
        code_of = {v: i for i, v in enumerate(uniq_list)}
        uniq = np.array(uniq_list, dtype=values.dtype)
        inv = np.array([code_of[v] for v in listed], dtype=np.int64)
    else:
        uniq, inv = np.unique(values, return_inverse=True)
    code_type = np.int32 if uniq.shape[0] < 2**31 else np.int64
    codes = np.repeat(inv.reshape(-1).astype(code_type), np.diff(np.append(heads, n)))
    return uniq, codes, heads


#: Up to this many groups of consecutive equal values, :func:`_group_consecutive` sorts them in Python.
_FEW_GROUPS = 256


def _decode_all(values: np.ndarray) -> tuple[str, ...]:
    return tuple(v.decode("utf-8") for v in values.tolist())


# ----------------------------------------------------------------------------- qrels


def parse_qrels(data: bytes, source: str = "<qrels>", fmt: QrelsFormat = "auto",
                limits: CountLimits | None = None) -> Qrels:
    """Parse TREC or NTCIR qrels; ``auto`` picks by the first data line's column count.
    ``limits``: the counts an upload may hold (its topics), refused past them."""
    table, doc_k, levels = _qrels_table(data, source, fmt)
    columns = _QrelsColumns.of(table, doc_k, levels, release=True, limits=limits)
    del table, levels  # the token table goes before the sort
    return columns.build()


def qrels_records(data: bytes, source: str = "<qrels>", fmt: QrelsFormat = "auto") -> list[tuple[int, str, str, int]]:
    """Each judgment line as (line number, topic, docno, level), read exactly as
    :func:`parse_qrels` reads it (comments, BOM, separators), and validated the same way."""
    table, doc_k, levels = _qrels_table(data, source, fmt)
    _QrelsColumns.of(table, doc_k, levels).build()  # the same checks (duplicates, contradictions, range)
    topics = [b.decode("utf-8") for b in table.field_bytes(0).tolist()]
    docnos = [b.decode("utf-8") for b in table.field_bytes(doc_k).tolist()]
    return [(int(line), topic, docno, int(level)) for line, topic, docno, level
            in zip(table.line_numbers.tolist(), topics, docnos, levels.tolist())]


def _sorted_within_topics(codes: np.ndarray, docnos: np.ndarray) -> bool:
    """Whether the docnos never decrease within a run of lines of one topic, a chunk of lines
    at a time."""
    n = codes.shape[0]
    for lo, hi in row_chunks(max(n - 1, 0)):
        if not bool(np.all((codes[lo + 1:hi + 1] != codes[lo:hi]) | (docnos[lo + 1:hi + 1] >= docnos[lo:hi]))):
            return False
    return True


def _equal_neighbours(codes: np.ndarray, docnos: np.ndarray) -> np.ndarray:
    """The positions i whose (code, docno) equals position i + 1's, a chunk at a time."""
    n = codes.shape[0]
    parts = [np.flatnonzero((codes[lo + 1:hi + 1] == codes[lo:hi]) & (docnos[lo + 1:hi + 1] == docnos[lo:hi])) + lo
             for lo, hi in row_chunks(max(n - 1, 0))]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def first_data_line(data: bytes | bytearray) -> list[bytes] | None:
    """The tokens of the first data line among the file's first 64 KB (None: none there): what
    format hints and detection look at."""
    head = bytes(data[:1 << 16])
    cut = len(data) > len(head)  # (measured before a BOM is taken off: a short file's last line is whole)
    if head.startswith(b"\xef\xbb\xbf"):
        head = head[3:]
    lines = head.splitlines()
    if cut:
        lines = lines[:-1]  # the last one may be cut
    for line in lines:
        tokens = line.split()
        if tokens and not tokens[0].startswith(b"#"):
            return tokens
    return None


def _qrels_table(data: bytes, source: str, fmt: QrelsFormat) -> tuple[TokenTable, int, np.ndarray]:
    table = None
    if fmt == "auto":
        # The usual file: its first line's column count, and every line's: one tokenisation.
        first = first_data_line(data)
        hint = None if first is None else len(first)
        if hint in (3, 4):
            try:
                table = tokenize(data, source, hint, exact=True)
                fmt = "ntcir" if hint == 3 else "trec"
            except InvalidInput:
                table = None
    if fmt == "auto":  # any other file: as it always was (the probe's errors first)
        probe = tokenize(data, source, 3)
        first, line = int(probe.field_counts[0]), probe.line_number(0)
        del probe  # before the file is read again
        if first == 3:
            fmt = "ntcir"
        elif first == 4:
            fmt = "trec"
        else:
            raise InvalidInput(
                source,
                line,
                f"{first} columns: expected TREC qrels (topic iteration docno rel) "
                "or NTCIR qrels (topic docno L<n>)",
            )
    if fmt == "trec":
        table = table if table is not None else tokenize(data, source, 4, exact=True)
        doc_k = 2
        _check_ids(table, doc_k)
        levels = parse_ints(table, 3, "relevance label")
    elif fmt == "ntcir":
        table = table if table is not None else tokenize(data, source, 3, exact=True)
        doc_k = 1
        _check_ids(table, doc_k)
        levels = _ntcir_levels(table)
    else:
        raise ValueError(f"unknown qrels format {fmt!r}")
    return table, doc_k, levels


def _check_ids(table: TokenTable, doc_k: int, tag_k: int | None = None) -> None:
    """The topic ids', docnos' (and run tags') length limits, before any copy of them."""
    limits = [(0, "topic id", MAX_TOPIC_BYTES), (doc_k, "docno", MAX_DOCNO_BYTES)]
    if tag_k is not None:
        limits.append((tag_k, "run tag", MAX_TAG_BYTES))
    check_lengths(table, limits)


def _ntcir_levels(table: TokenTable) -> np.ndarray:
    """The level column (``L<n>``), a chunk of rows at a time: every label's syntax is checked
    before any is converted, and the first line at fault is the one named."""
    check_lengths(table, [(2, "relevance label", MAX_NUMBER_BYTES)])
    chunks = row_chunks(len(table))
    for lo, hi in chunks:
        raw = table.field_bytes(2, slice(lo, hi))
        ok = np.char.startswith(raw, b"L") & ~np.char.startswith(raw, b"LL")
        if not np.all(ok):
            r = lo + int(np.flatnonzero(~ok)[0])
            raise InvalidInput(
                table.source, table.line_number(r), f"relevance label {table.field_text(r, 2)!r} is not L<n>"
            )
    out = np.empty(len(table), dtype=np.int64)
    for lo, hi in chunks:
        digits = np.char.lstrip(table.field_bytes(2, slice(lo, hi)), b"L")  # exactly one L (checked above)
        try:
            out[lo:hi] = digits.astype(np.int64)
        except (ValueError, OverflowError):
            r = _first_bad_level(table)
            raise InvalidInput(
                table.source, table.line_number(r), f"relevance label {table.field_text(r, 2)!r} is not L<n>"
            ) from None
    return out


def _first_bad_level(table: TokenTable) -> int:
    """The first row whose ``L<n>`` is not an integer within 2**62 (the last row if none is)."""
    for lo, hi in row_chunks(len(table)):
        for r, text in enumerate(np.char.lstrip(table.field_bytes(2, slice(lo, hi)), b"L").tolist(), start=lo):
            try:
                if abs(int(text)) > 2**62:
                    return r
            except ValueError:
                return r
    return len(table) - 1


MAX_LEVEL = 10_000  # relevance scales are small; this bounds the per-level tables


class _QrelsColumns:
    """What qrels are built from, taken out of the token table (which can then go): the
    docnos, the topic codes and ids, the levels and the lines' numbers."""

    def __init__(self, source: str, docnos: np.ndarray, uniq: np.ndarray, codes: np.ndarray, heads: np.ndarray,
                 levels: np.ndarray, numbers: np.ndarray | None) -> None:
        self.source, self.docnos, self.uniq, self.codes, self.levels = source, docnos, uniq, codes, levels
        self.heads = heads  # the first line of each run of lines of one topic
        self.numbers = numbers  # None: data line i is line i + 1

    @classmethod
    def of(cls, table: TokenTable, doc_k: int, levels: np.ndarray, *, release: bool = False,
           limits: CountLimits | None = None) -> _QrelsColumns:
        """The columns of ``table``; with ``release`` the table's offsets go as they are read."""
        too_high = np.flatnonzero(levels > MAX_LEVEL)
        if too_high.shape[0]:
            r = int(too_high[0])
            raise InvalidInput(table.source, table.line_number(r),
                               f"relevance level {int(levels[r])} is above the largest supported level {MAX_LEVEL}")
        uniq, codes, heads = _group_consecutive(table, 0)
        if limits is not None:
            check_topics(table.source, codes, uniq, table.line_number, limits.topics)
        if release:  # all but the docnos' field and the one before it
            table.release(*(k for k in range(table.fields) if k not in (doc_k - 1, doc_k)))
        docnos = table.field_bytes(doc_k)
        return cls(table.source, docnos, uniq, codes, heads, levels, table.numbers)

    def line(self, row: int) -> int:
        return int(self.numbers[row]) if self.numbers is not None else int(row) + 1

    def build(self) -> Qrels:
        """The qrels. The usual file holds each topic in one block, its docnos in order (the
        topics in any order): each topic's arrays are then views of its block, and nothing is
        sorted or copied. Any other file is sorted once (each unsorted array let go as its
        sorted copy comes)."""
        uniq, heads = self.uniq, self.heads
        blocks = heads.shape[0] == uniq.shape[0] and _sorted_within_topics(self.codes, self.docnos)
        order = None if blocks else np.lexsort((self.docnos, self.codes))
        codes_s = self.codes if order is None else self.codes[order]
        docs_s = self.docnos if order is None else self.docnos[order]
        self.docnos = self.codes = None  # type: ignore[assignment]
        levels_s = self.levels if order is None else self.levels[order]
        self.levels = None  # type: ignore[assignment]
        dup = _equal_neighbours(codes_s, docs_s)
        if dup.shape[0]:
            # The same judgment twice is harmless; two different levels are a contradiction.
            conflict = dup[levels_s[dup] != levels_s[dup + 1]]
            if conflict.shape[0]:
                # the first in (topic, docno) order, the one a sort of the lines meets first
                i = int(conflict[np.argmin(codes_s[conflict])]) if blocks else int(conflict[0])
                a, b = (i, i + 1) if order is None else (int(order[i]), int(order[i + 1]))
                first, second = (i, i + 1) if a < b else (i + 1, i)  # positions in the sorted arrays
                raise InvalidInput(
                    self.source,
                    self.line(max(a, b)),
                    f"document {docs_s[i].decode('utf-8')!r} of topic {uniq[codes_s[i]].decode('utf-8')!r} "
                    f"is judged {int(levels_s[second])} here but {int(levels_s[first])} on line "
                    f"{self.line(min(a, b))}",
                )
            keep = np.ones(codes_s.shape[0], dtype=bool)
            keep[dup + 1] = False
            codes_s, docs_s, levels_s = codes_s[keep], docs_s[keep], levels_s[keep]
            heads = heads - np.searchsorted(dup + 1, heads)  # the lines let go before each block
        del order
        if blocks:  # topic i's block, wherever the file has it
            block_of = np.empty(uniq.shape[0], dtype=np.int64)
            block_of[codes_s[heads]] = np.arange(uniq.shape[0])
            ends = np.append(heads[1:], codes_s.shape[0])
            lo, hi = heads[block_of], ends[block_of]
        else:
            bounds = np.searchsorted(codes_s, np.arange(uniq.shape[0] + 1))
            lo, hi = bounds[:-1], bounds[1:]
        return Qrels(
            topics=_decode_all(uniq),
            docnos=tuple(docs_s[lo[i] : hi[i]] for i in range(uniq.shape[0])),
            levels=tuple(levels_s[lo[i] : hi[i]] for i in range(uniq.shape[0])),
            source=self.source,
        )


def read_qrels(path: str | os.PathLike[str], fmt: QrelsFormat = "auto") -> Qrels:
    return parse_qrels(_read_bytes(path), str(path), fmt)


# ----------------------------------------------------------------------------- runs

def parse_run(
    data: bytes, source: str = "<run>", order: RunOrder | str = RunOrder.SCORE, *, keep_ranks: bool = False
) -> Run:
    """Parse a TREC run and put each topic's documents in rank order.

    With ``keep_ranks`` the run also carries its rank column (``Run.ranks``, in evaluation
    order) for the submission checks; a rank column that is not numbers is then left out
    (``None``), not refused: trec_eval ignores it when it ranks by score.

    Memory: every column the run needs is taken out of the token table first (the rank
    column too, its errors raised where the rank order needs them), the table's offsets of
    each field let go as soon as nothing more is read from them, and the table goes before
    the duplicate check sorts and the rank order permutes.
    """
    order = RunOrder(order)
    table = tokenize(data, source, 6)
    _check_ids(table, 2, 5)
    r = first_row_differing(table, 5, 0)
    if r is not None:
        raise InvalidInput(
            source,
            table.line_number(r),
            f"run tag {table.field_text(r, 5)!r} differs from {table.field_text(0, 5)!r} "
            "on the first line: one file holds one run",
        )
    tag = table.field_text(0, 5)
    uniq, codes, heads = _group_consecutive(table, 0)
    table.release(5, 0)  # each field's offsets go once the fields that start after it are read
    scores = parse_floats(table, 4, "score")
    table.release(4)
    rank_ints: np.ndarray | InvalidInput | None = None
    if order is RunOrder.RANK:
        try:
            rank_ints = parse_ints(table, 3, "rank")
        except InvalidInput as exc:  # raised below, after the duplicate check, as always
            rank_ints = exc
    ranks = _ranks_if_numbers(table) if keep_ranks else None
    table.release(3)
    docnos, doc_hashes = _docno_column(table, 2)
    numbers = table.numbers
    del table

    def line(row: int) -> int:
        return int(numbers[row]) if numbers is not None else row + 1

    # Duplicate (topic, docno) pairs: equal 64-bit keys, confirmed on the bytes.
    keys = _topic_keys(doc_hashes, codes)
    keys.sort()  # in place: a vectorised sort of integers, faster here than a hash table
    twice = bool(np.any(keys[1:] == keys[:-1]))  # a document retrieved twice, or a 64-bit collision
    del keys
    if twice:
        dup = _first_duplicate(KeyTable(_topic_keys(doc_hashes, codes)).equal_pairs, codes, docnos)
        if dup is not None:
            a, b = dup
            raise InvalidInput(
                source,
                line(b),
                f"document {docnos[b].decode('utf-8')!r} is retrieved twice for topic "
                f"{uniq[codes[b]].decode('utf-8')!r} (first on line {line(a)})",
            )

    perm = _rank_order(order, codes, heads, scores, docnos, rank_ints)
    del rank_ints
    if isinstance(perm, tuple):  # tied lines re-ordered within their topics, in place
        rows, taken = perm
        for column in (scores, docnos, doc_hashes, ranks):
            if column is not None:
                column[rows] = column[taken]
    elif perm is not None:  # one array at a time: the old one goes as its permuted copy comes
        codes = codes[perm]
        scores = scores[perm]
        docnos = docnos[perm]
        doc_hashes = doc_hashes[perm]
        ranks = ranks[perm] if ranks is not None else None
        del perm
    offsets = np.searchsorted(codes, np.arange(uniq.shape[0] + 1)).astype(np.int64)
    return Run(
        tag=tag,
        topics=_decode_all(uniq),
        offsets=offsets,
        docnos=docnos,
        scores=scores,
        source=source,
        doc_hashes=doc_hashes,
        ranks=ranks,
    )


def _docno_column(table: TokenTable, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Field ``k`` as a ``bytes_`` array (the column's width) and its 64-bit hashes, a chunk of
    rows at a time: the words each chunk is read into are hashed and let go."""
    n = len(table)
    chunks = row_chunks(n)
    width = max([1, *(int(table.field_lengths(k, slice(lo, hi)).max()) for lo, hi in chunks)])
    docnos = np.empty(n, dtype=f"S{width}")
    hashes = np.empty(n, dtype=np.uint64)
    for lo, hi in chunks:
        starts, ends = table.spans(k, slice(lo, hi))
        words, _ = gather_words(table.buffer, starts, ends, width)
        docnos[lo:hi] = words_to_bytes(words, width)
        hashes[lo:hi] = hash_words(words, ends - starts)
    return docnos, hashes


def _topic_keys(doc_hashes: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """:func:`topic_keys`, a chunk at a time (its mixing steps make several arrays of their input's size)."""
    out = np.empty(doc_hashes.shape[0], dtype=np.uint64)
    for lo, hi in row_chunks(doc_hashes.shape[0]):
        out[lo:hi] = topic_keys(doc_hashes[lo:hi], codes[lo:hi])
    return out


def _docno_words(docnos: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The docnos of ``rows`` as (rows, ceil(width / 8)) little-endian words, zero past each
    docno's end: what :func:`gather_words` read them as."""
    width = docnos.dtype.itemsize
    m = rows.shape[0]
    raw = np.zeros((m, -(-width // 8) * 8), dtype=np.uint8)
    raw[:, :width] = docnos[rows].view(np.uint8).reshape(m, width)
    return raw.view("<u8")


def _ranks_if_numbers(table: TokenTable) -> np.ndarray | None:
    """The rank column as float64 (the float parser's word-at-a-time path is several times
    faster than the integer one), or None when it is not all numbers: its errors matter only
    where the rank column orders the run, and :func:`_rank_order` raises them."""
    try:
        return parse_floats(table, 3, "rank")
    except InvalidInput:
        return None


def _first_duplicate(
    pairs: list[tuple[int, int]], codes: np.ndarray, docnos: np.ndarray
) -> tuple[int, int] | None:
    """The duplicate (first line, repeated line) that repeats earliest in the file, if any."""
    real = [(min(a, b), max(a, b)) for a, b in pairs if codes[a] == codes[b] and docnos[a] == docnos[b]]
    if len(real) < len(pairs):
        # A 64-bit collision between different ids: find duplicates exactly, by sorting.
        order = np.lexsort((docnos, codes))
        same = (codes[order][1:] == codes[order][:-1]) & (docnos[order][1:] == docnos[order][:-1])
        real = [tuple(sorted((int(order[i]), int(order[i + 1])))) for i in np.flatnonzero(same).tolist()]
    # A document listed three times or more gives several pairs, not all with its first two
    # lines (the table pairs each repeat with whichever line holds the key's slot): group them.
    lines_of: dict[tuple[int, bytes], set[int]] = {}
    for a, b in real:
        lines_of.setdefault((int(codes[a]), bytes(docnos[a])), set()).update((a, b))
    first_two = [tuple(sorted(rows)[:2]) for rows in lines_of.values()]
    return min(first_two, key=lambda p: p[1]) if first_two else None  # type: ignore[return-value]


def _rank_order(
    order: RunOrder,
    codes: np.ndarray,
    heads: np.ndarray,
    scores: np.ndarray,
    docnos: np.ndarray,
    rank_ints: np.ndarray | InvalidInput | None,
) -> Permutation | None:
    """Permutation into (topic, rank) order, or None when the file already is.

    ``heads`` are the first lines of the runs of equal topic codes. The usual file holds
    each topic in one block, in rank order (it may list the topics in any order): its
    permutation only moves whole blocks, and, for ``score``, the tied scores within them.
    ``rank_ints``: the rank column as integers for ``rank`` (or the error reading it). A file
    in order but for tied scores gets a partial permutation (:func:`_order_ties_by_docno_desc`).
    """
    n = codes.shape[0]
    blocks = heads.shape[0] == int(codes.max(initial=-1)) + 1  # each topic in one block
    in_topic_order = blocks and bool(np.all(codes[heads[1:]] > codes[heads[:-1]]))
    if order is RunOrder.FILE:
        if in_topic_order:
            return None
        return _block_order(codes, heads) if blocks else np.argsort(codes, kind="stable")
    same = codes[1:] == codes[:-1]
    if order is RunOrder.RANK:
        if isinstance(rank_ints, InvalidInput):
            raise rank_ints
        assert rank_ints is not None
        ranks = rank_ints
        if blocks and bool(np.all(~same | (ranks[1:] >= ranks[:-1]))):
            return None if in_topic_order else _block_order(codes, heads)
        return np.lexsort((ranks, codes))
    # trec_eval: score descending, ties broken by docno descending.
    if blocks and bool(np.all(~same | (scores[1:] <= scores[:-1]))):
        # Scores already descending within each topic's block: only blocks of tied
        # scores may need re-ordering (by docno descending), and the blocks themselves.
        ties: Permutation | None = None
        tied = same & (scores[1:] == scores[:-1])
        if np.any(tied) and not bool(np.all(docnos[1:][tied] < docnos[:-1][tied])):
            ties = _order_ties_by_docno_desc(None, tied, docnos)
        if in_topic_order:
            return ties
        by_topic = _block_order(codes, heads)
        if ties is None:
            return by_topic
        full = np.arange(n)
        full[ties[0]] = ties[1]
        return full[by_topic]
    perm = np.lexsort((-scores, codes))
    cs, ss = codes[perm], scores[perm]
    tied = (cs[1:] == cs[:-1]) & (ss[1:] == ss[:-1])
    if not np.any(tied):
        return perm
    return _order_ties_by_docno_desc(perm, tied, docnos)


def _block_order(codes: np.ndarray, heads: np.ndarray) -> np.ndarray:
    """The permutation that puts blocks of equal codes (one per code, starting at ``heads``)
    in code order, keeping the order within each block."""
    n = codes.shape[0]
    by_code = np.argsort(codes[heads])
    sizes = np.diff(np.append(heads, n))[by_code]
    shift = heads[by_code] - (np.cumsum(sizes) - sizes)  # old start - new start of each block
    return np.repeat(shift, sizes) + np.arange(n)


#: A permutation of a run's lines: the lines in their new order, or (rows, taken) where row
#: ``rows[i]`` takes the line at ``taken[i]`` and every other line stays.
Permutation = np.ndarray | tuple[np.ndarray, np.ndarray]


def _order_ties_by_docno_desc(perm: np.ndarray | None, tied: np.ndarray, docnos: np.ndarray) -> Permutation:
    """Within each block of equal (topic, score) in ``perm``, put docnos in descending byte order.

    ``tied[i]`` says that positions i and i + 1 of ``perm`` hold equal scores. Docnos are
    compared as their big-endian 64-bit words (:func:`_docno_words`, zero past each docno's
    end, byte-swapped), which orders them as their bytes do. ``perm`` None is the file's own
    order: the result is then the partial permutation of the tied lines (no array of the
    run's length).
    """
    n = tied.shape[0] + 1
    in_block = np.zeros(n, dtype=bool)
    in_block[1:] |= tied
    in_block[:-1] |= tied
    idx = np.flatnonzero(in_block)
    block_head = np.ones(idx.shape[0], dtype=bool)
    block_head[1:] = ~tied[idx[1:] - 1]
    block_id = np.cumsum(block_head)
    lines = idx if perm is None else perm[idx]
    words = _docno_words(docnos, lines)
    # lexsort's last key is the primary one: block ascending, then docno descending
    # (the complement of each big-endian word, most significant word last).
    keys = [~words[:, j].byteswap() for j in range(words.shape[1] - 1, -1, -1)]
    sub = np.lexsort((*keys, block_id))
    if perm is None:
        return idx, lines[sub]
    perm = perm.copy()
    perm[idx] = lines[sub]
    return perm


def read_run(path: str | os.PathLike[str], order: RunOrder | str = RunOrder.SCORE) -> Run:
    return parse_run(_read_bytes(path), str(path), order)
