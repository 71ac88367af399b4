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


def _group_consecutive(table: TokenTable, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Codes of field ``k`` via its runs of equal consecutive values.

    Files are grouped by topic, so only the group heads (a handful) are copied
    out of the file and sorted by ``np.unique``, instead of every line.
    Returns (sorted unique, codes).
    """
    starts, ends = table.starts[:, k], table.ends[:, k]
    n = starts.shape[0]
    heads = np.flatnonzero(consecutive_heads(table.buffer, starts, ends))
    uniq, inv = np.unique(gather_fixed_width(table.buffer, starts[heads], ends[heads]), return_inverse=True)
    codes = np.repeat(inv.reshape(-1), np.diff(np.append(heads, n)))
    return uniq, codes


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
    uniq, codes = _group_consecutive(table, 0)
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
    data: bytes, source: str = "<run>", order: RunOrder | str = RunOrder.SCORE
) -> Run:
    """Parse a TREC run and put each topic's documents in rank order."""
    order = RunOrder(order)
    table = tokenize(data, source, 6)
    _check_ids(table, 2, 5)
    other_tag = np.flatnonzero(~spans_equal_to(table.buffer, table.starts[:, 5], table.ends[:, 5], 0))
    if other_tag.shape[0]:
        r = int(other_tag[0])
        raise InvalidInput(
            source,
            int(table.line_numbers[r]),
            f"run tag {table.field_text(r, 5)!r} differs from {table.field_text(0, 5)!r} "
            "on the first line: one file holds one run",
        )
    scores = parse_floats(table, 4, "score")
    uniq, codes = _group_consecutive(table, 0)

    # Duplicate (topic, docno) pairs: equal 64-bit keys, confirmed on the bytes.
    doc_words, width = gather_words(table.buffer, table.starts[:, 2], table.ends[:, 2])
    docnos = words_to_bytes(doc_words, width)
    doc_hashes = hash_words(doc_words, table.field_lengths(2))
    del doc_words
    keys = KeyTable(topic_keys(doc_hashes, codes))
    dup = _first_duplicate(keys.equal_pairs, codes, docnos)
    if dup is not None:
        a, b = dup
        raise InvalidInput(
            source,
            int(table.line_numbers[b]),
            f"document {table.field_text(b, 2)!r} is retrieved twice for topic "
            f"{table.field_text(b, 0)!r} (first on line {int(table.line_numbers[a])})",
        )

    perm = _rank_order(order, table, codes, scores, docnos)
    if perm is not None:
        codes, scores, docnos, doc_hashes = codes[perm], scores[perm], docnos[perm], doc_hashes[perm]
    offsets = np.searchsorted(codes, np.arange(uniq.shape[0] + 1)).astype(np.int64)
    return Run(
        tag=table.field_text(0, 5),
        topics=_decode_all(uniq),
        offsets=offsets,
        docnos=docnos,
        scores=scores,
        source=source,
        doc_hashes=doc_hashes,
    )


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
    order: RunOrder, table: TokenTable, codes: np.ndarray, scores: np.ndarray, docnos: np.ndarray
) -> np.ndarray | None:
    """Permutation into (topic, rank) order, or None when the file already is."""
    n = codes.shape[0]
    if order is RunOrder.FILE:
        if np.all(codes[1:] >= codes[:-1]):
            return None
        return np.argsort(codes, kind="stable")
    if order is RunOrder.RANK:
        ranks = parse_ints(table, 3, "rank")
        ok = (codes[1:] > codes[:-1]) | ((codes[1:] == codes[:-1]) & (ranks[1:] >= ranks[:-1]))
        if np.all(ok):
            return None
        return np.lexsort((ranks, codes))
    # trec_eval: score descending, ties broken by docno descending.
    same = codes[1:] == codes[:-1]
    grouped = bool(np.all(codes[1:] >= codes[:-1]))
    if grouped and bool(np.all(~same | (scores[1:] <= scores[:-1]))):
        # The usual file: topics grouped, scores already descending. Only blocks of
        # tied scores may need re-ordering (by docno descending).
        perm = np.arange(n)
        tied = same & (scores[1:] == scores[:-1])
        if not np.any(tied) or bool(np.all(docnos[1:][tied] < docnos[:-1][tied])):
            return None
    else:
        perm = np.lexsort((-scores, codes))
        cs, ss = codes[perm], scores[perm]
        tied = (cs[1:] == cs[:-1]) & (ss[1:] == ss[:-1])
        if not np.any(tied):
            return perm
    return _order_ties_by_docno_desc(perm, tied, docnos)


def _order_ties_by_docno_desc(perm: np.ndarray, tied: np.ndarray, docnos: np.ndarray) -> np.ndarray:
    """Within each block of equal (topic, score) in ``perm``, put docnos in descending byte order.

    ``tied[i]`` says that positions i and i + 1 of ``perm`` hold equal scores.
    """
    n = perm.shape[0]
    in_block = np.zeros(n, dtype=bool)
    in_block[1:] |= tied
    in_block[:-1] |= tied
    idx = np.flatnonzero(in_block)
    block_head = np.ones(idx.shape[0], dtype=bool)
    block_head[1:] = ~tied[idx[1:] - 1]
    block_id = np.cumsum(block_head)
    # lexsort: block descending, docno ascending; reversed: block ascending, docno descending.
    sub = np.lexsort((docnos[perm[idx]], -block_id))[::-1]
    perm = perm.copy()
    perm[idx] = perm[idx][sub]
    return perm


def read_run(path: str | os.PathLike[str], order: RunOrder | str = RunOrder.SCORE) -> Run:
    return parse_run(_read_bytes(path), str(path), order)
