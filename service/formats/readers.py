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
from pathlib import Path
from typing import Literal

import numpy as np

from service.errors import InvalidInput
from service.formats.keys import KeyTable, hash_words, topic_keys
from service.formats.tokenize import (
    MAX_DOCNO_BYTES,
    MAX_NUMBER_BYTES,
    MAX_TAG_BYTES,
    MAX_TOPIC_BYTES,
    TokenTable,
    check_lengths,
    consecutive_heads,
    gather_fixed_width,
    gather_words,
    parse_floats,
    parse_ints,
    spans_equal_to,
    tokenize,
    words_to_bytes,
)
from service.formats.types import Qrels, Run, RunOrder

QrelsFormat = Literal["auto", "trec", "ntcir"]


def _read_bytes(path: str | os.PathLike[str]) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise InvalidInput(str(path), None, f"cannot read the file: {exc.strerror}") from None


def _group_consecutive(table: TokenTable, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Codes of field ``k`` via its runs of equal consecutive values.

    Files are grouped by topic, so only the group heads (a handful) are copied
    out of the file and sorted, instead of every line.
    Returns (sorted unique, codes, the first row of each run of equal values).
    """
    starts, ends, _ = table.column(k)
    n = starts.shape[0]
    heads = np.flatnonzero(consecutive_heads(table.buffer, starts, ends))
    values = gather_fixed_width(table.buffer, starts[heads], ends[heads])
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
    codes = np.repeat(inv.reshape(-1), np.diff(np.append(heads, n)))
    return uniq, codes, heads


#: Up to this many groups of consecutive equal values, :func:`_group_consecutive` sorts them in Python.
_FEW_GROUPS = 256


def _decode_all(values: np.ndarray) -> tuple[str, ...]:
    return tuple(v.decode("utf-8") for v in values.tolist())


# ----------------------------------------------------------------------------- qrels


def parse_qrels(data: bytes, source: str = "<qrels>", fmt: QrelsFormat = "auto") -> Qrels:
    """Parse TREC or NTCIR qrels; ``auto`` picks by the first data line's column count."""
    return _build_qrels(*_qrels_table(data, source, fmt))


def qrels_records(data: bytes, source: str = "<qrels>", fmt: QrelsFormat = "auto") -> list[tuple[int, str, str, int]]:
    """Each judgment line as (line number, topic, docno, level), read exactly as
    :func:`parse_qrels` reads it (comments, BOM, separators), and validated the same way."""
    table, doc_k, levels = _qrels_table(data, source, fmt)
    _build_qrels(table, doc_k, levels)  # the same checks (duplicates, contradictions, range)
    topics = [b.decode("utf-8") for b in table.field_bytes(0).tolist()]
    docnos = [b.decode("utf-8") for b in table.field_bytes(doc_k).tolist()]
    return [(int(line), topic, docno, int(level)) for line, topic, docno, level
            in zip(table.line_numbers.tolist(), topics, docnos, levels.tolist())]


def _qrels_table(data: bytes, source: str, fmt: QrelsFormat) -> tuple[TokenTable, int, np.ndarray]:
    if fmt == "auto":
        probe = tokenize(data, source, 3)
        first = int(probe.field_counts[0])
        if first == 3:
            fmt = "ntcir"
        elif first == 4:
            fmt = "trec"
        else:
            raise InvalidInput(
                source,
                int(probe.line_numbers[0]),
                f"{first} columns: expected TREC qrels (topic iteration docno rel) "
                "or NTCIR qrels (topic docno L<n>)",
            )
    if fmt == "trec":
        table = tokenize(data, source, 4, exact=True)
        doc_k = 2
        _check_ids(table, doc_k)
        levels = parse_ints(table, 3, "relevance label")
    elif fmt == "ntcir":
        table = tokenize(data, source, 3, exact=True)
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
    check_lengths(table, [(2, "relevance label", MAX_NUMBER_BYTES)])
    raw = table.field_bytes(2)
    ok = np.char.startswith(raw, b"L") & ~np.char.startswith(raw, b"LL")
    if not np.all(ok):
        r = int(np.flatnonzero(~ok)[0])
        raise InvalidInput(
            table.source, int(table.line_numbers[r]), f"relevance label {table.field_text(r, 2)!r} is not L<n>"
        )
    digits = np.char.lstrip(raw, b"L")  # exactly one L (checked above)
    try:
        return digits.astype(np.int64)
    except (ValueError, OverflowError):
        pass
    for r, text in enumerate(digits.tolist()):
        try:
            if abs(int(text)) > 2**62:
                break
        except ValueError:
            break
    raise InvalidInput(
        table.source, int(table.line_numbers[r]), f"relevance label {table.field_text(r, 2)!r} is not L<n>"
    )


MAX_LEVEL = 10_000  # relevance scales are small; this bounds the per-level tables


def _build_qrels(table: TokenTable, doc_k: int, levels: np.ndarray) -> Qrels:
    too_high = np.flatnonzero(levels > MAX_LEVEL)
    if too_high.shape[0]:
        r = int(too_high[0])
        raise InvalidInput(table.source, int(table.line_numbers[r]),
                           f"relevance level {int(levels[r])} is above the largest supported level {MAX_LEVEL}")
    docnos = table.field_bytes(doc_k)
    uniq, codes, _ = _group_consecutive(table, 0)
    order = np.lexsort((docnos, codes))
    codes_s, docs_s, levels_s = codes[order], docnos[order], levels[order]
    same = (codes_s[1:] == codes_s[:-1]) & (docs_s[1:] == docs_s[:-1])
    if np.any(same):
        # The same judgment twice is harmless; two different levels are a contradiction.
        dup = np.flatnonzero(same)
        conflict = dup[levels_s[dup] != levels_s[dup + 1]]
        if conflict.shape[0]:
            i = int(conflict[0])
            a, b = int(order[i]), int(order[i + 1])
            first, second = sorted((a, b))
            raise InvalidInput(
                table.source,
                int(table.line_numbers[second]),
                f"document {table.field_text(second, doc_k)!r} of topic {table.field_text(second, 0)!r} "
                f"is judged {int(levels[second])} here but {int(levels[first])} on line "
                f"{int(table.line_numbers[first])}",
            )
        keep = np.ones(codes_s.shape[0], dtype=bool)
        keep[dup + 1] = False
        codes_s, docs_s, levels_s = codes_s[keep], docs_s[keep], levels_s[keep]
    bounds = np.searchsorted(codes_s, np.arange(uniq.shape[0] + 1))
    return Qrels(
        topics=_decode_all(uniq),
        docnos=tuple(docs_s[bounds[i] : bounds[i + 1]] for i in range(uniq.shape[0])),
        levels=tuple(levels_s[bounds[i] : bounds[i + 1]] for i in range(uniq.shape[0])),
        source=table.source,
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
    """
    order = RunOrder(order)
    table = tokenize(data, source, 6)
    _check_ids(table, 2, 5)
    other_tag = np.flatnonzero(~spans_equal_to(table.buffer, *table.column(5)[:2], 0))
    if other_tag.shape[0]:
        r = int(other_tag[0])
        raise InvalidInput(
            source,
            int(table.line_numbers[r]),
            f"run tag {table.field_text(r, 5)!r} differs from {table.field_text(0, 5)!r} "
            "on the first line: one file holds one run",
        )
    scores = parse_floats(table, 4, "score")
    uniq, codes, heads = _group_consecutive(table, 0)

    # Duplicate (topic, docno) pairs: equal 64-bit keys, confirmed on the bytes.
    doc_words, width = gather_words(table.buffer, *table.column(2)[:2])
    docnos = words_to_bytes(doc_words, width)
    doc_hashes = hash_words(doc_words, table.field_lengths(2))
    keys = topic_keys(doc_hashes, codes)
    ordered = np.sort(keys)  # a vectorised sort of integers: faster here than a hash table
    dup = None
    if bool(np.any(ordered[1:] == ordered[:-1])):  # a document retrieved twice, or a 64-bit collision
        dup = _first_duplicate(KeyTable(keys).equal_pairs, codes, docnos)
    del keys, ordered
    if dup is not None:
        a, b = dup
        raise InvalidInput(
            source,
            int(table.line_numbers[b]),
            f"document {table.field_text(b, 2)!r} is retrieved twice for topic "
            f"{table.field_text(b, 0)!r} (first on line {int(table.line_numbers[a])})",
        )

    perm = _rank_order(order, table, codes, heads, scores, docnos, doc_words)
    del doc_words
    ranks = _ranks_if_numbers(table) if keep_ranks else None
    if perm is not None:
        codes, scores, docnos, doc_hashes = codes[perm], scores[perm], docnos[perm], doc_hashes[perm]
        ranks = ranks[perm] if ranks is not None else None
    offsets = np.searchsorted(codes, np.arange(uniq.shape[0] + 1)).astype(np.int64)
    return Run(
        tag=table.field_text(0, 5),
        topics=_decode_all(uniq),
        offsets=offsets,
        docnos=docnos,
        scores=scores,
        source=source,
        doc_hashes=doc_hashes,
        ranks=ranks,
    )


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
    return min(real, key=lambda p: p[1]) if real else None


def _rank_order(
    order: RunOrder,
    table: TokenTable,
    codes: np.ndarray,
    heads: np.ndarray,
    scores: np.ndarray,
    docnos: np.ndarray,
    doc_words: np.ndarray,
) -> np.ndarray | None:
    """Permutation into (topic, rank) order, or None when the file already is.

    ``heads`` are the first lines of the runs of equal topic codes. The usual file holds
    each topic in one block, in rank order (it may list the topics in any order): its
    permutation only moves whole blocks, and, for ``score``, the tied scores within them.
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
        ranks = parse_ints(table, 3, "rank")
        if blocks and bool(np.all(~same | (ranks[1:] >= ranks[:-1]))):
            return None if in_topic_order else _block_order(codes, heads)
        return np.lexsort((ranks, codes))
    # trec_eval: score descending, ties broken by docno descending.
    if blocks and bool(np.all(~same | (scores[1:] <= scores[:-1]))):
        # Scores already descending within each topic's block: only blocks of tied
        # scores may need re-ordering (by docno descending), and the blocks themselves.
        perm = None
        tied = same & (scores[1:] == scores[:-1])
        if np.any(tied) and not bool(np.all(docnos[1:][tied] < docnos[:-1][tied])):
            perm = _order_ties_by_docno_desc(np.arange(n), tied, doc_words)
        if not in_topic_order:
            by_topic = _block_order(codes, heads)
            perm = by_topic if perm is None else perm[by_topic]
        return perm
    perm = np.lexsort((-scores, codes))
    cs, ss = codes[perm], scores[perm]
    tied = (cs[1:] == cs[:-1]) & (ss[1:] == ss[:-1])
    if not np.any(tied):
        return perm
    return _order_ties_by_docno_desc(perm, tied, doc_words)


def _block_order(codes: np.ndarray, heads: np.ndarray) -> np.ndarray:
    """The permutation that puts blocks of equal codes (one per code, starting at ``heads``)
    in code order, keeping the order within each block."""
    n = codes.shape[0]
    by_code = np.argsort(codes[heads])
    sizes = np.diff(np.append(heads, n))[by_code]
    shift = heads[by_code] - (np.cumsum(sizes) - sizes)  # old start - new start of each block
    return np.repeat(shift, sizes) + np.arange(n)


def _order_ties_by_docno_desc(perm: np.ndarray, tied: np.ndarray, doc_words: np.ndarray) -> np.ndarray:
    """Within each block of equal (topic, score) in ``perm``, put docnos in descending byte order.

    ``tied[i]`` says that positions i and i + 1 of ``perm`` hold equal scores. Docnos are
    compared as their big-endian 64-bit words (``doc_words``, zero past each docno's end,
    byte-swapped), which orders them as their bytes do.
    """
    n = perm.shape[0]
    in_block = np.zeros(n, dtype=bool)
    in_block[1:] |= tied
    in_block[:-1] |= tied
    idx = np.flatnonzero(in_block)
    block_head = np.ones(idx.shape[0], dtype=bool)
    block_head[1:] = ~tied[idx[1:] - 1]
    block_id = np.cumsum(block_head)
    words = doc_words[perm[idx]]
    # lexsort's last key is the primary one: block ascending, then docno descending
    # (the complement of each big-endian word, most significant word last).
    keys = [~words[:, j].byteswap() for j in range(words.shape[1] - 1, -1, -1)]
    sub = np.lexsort((*keys, block_id))
    perm = perm.copy()
    perm[idx] = perm[idx][sub]
    return perm


def read_run(path: str | os.PathLike[str], order: RunOrder | str = RunOrder.SCORE) -> Run:
    return parse_run(_read_bytes(path), str(path), order)
