"""Compact letter display (Piepho 2004, "An algorithm for a letter-based representation of
all-pairwise comparisons", J. Computational and Graphical Statistics 13(2)).

Given which pairs of runs are significantly different, letters are assigned so that

- two runs share a letter **if and only if** they are not significantly different, and
- no letter can be dropped from a run without breaking that rule (Piepho's sweep).

A letter is a set of runs (a *column*); every column is a clique of the "not significantly
different" graph and every non-significant pair lies in some column. The fewest columns with
that property is an edge clique cover, NP-hard in general, so the count is the one Piepho's
insert-absorb-sweep reaches, not always the absolute minimum.

Piepho's insert-and-absorb step splits columns pair by pair and can pass through thousands
of columns for a few hundred runs (minutes of work at 1,000 runs on noisy patterns). The
letters are instead built as a greedy edge clique cover (Gramm, Guo, Hüffner, Niedermeier,
Piepho & Schmid 2007, "Algorithms for compact letter displays: comparison and evaluation",
Computational Statistics & Data Analysis 52(2)), which gives the same guarantee, and then
Piepho's sweep removes every letter a run does not need. Columns are Python ints used as
bit sets (bit i = run i).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def members(column: int) -> list[int]:
    """The runs (indices, ascending) of a letter's bit set."""
    out = []
    while column:
        low = column & -column
        out.append(low.bit_length() - 1)
        column ^= low
    return out


def _absorb(columns: list[int]) -> list[int]:
    """Drop empty columns, duplicates and every column contained in another (keeping order)."""
    unique = list(dict.fromkeys(c for c in columns if c))
    bigger_first = sorted(unique, key=lambda c: -c.bit_count())
    kept: list[int] = []
    for c in bigger_first:
        if not any(c & k == c for k in kept):
            kept.append(c)
    keep = set(kept)
    return [c for c in unique if c in keep]


def _cover(same: np.ndarray, order: list[int]) -> list[int]:
    """A greedy edge clique cover of the "not significantly different" graph (Gramm et al.).

    Runs are taken in ``order``; while run i has a not-different partner j whose pair no
    letter covers yet (the best-ordered such j), a letter is grown from {i, j}: among the
    runs not different from every member, the one closing the most uncovered pairs with the
    members joins (ties: the best-ordered), until none is left, so every letter is a maximal
    clique. A run different from every other run gets a letter of its own.
    """
    m = same.shape[0]
    rank = np.empty(m, dtype=np.int64)
    rank[order] = np.arange(m)
    uncovered = same.copy()
    columns: list[int] = []
    for i in order:
        if not same[i].any():
            columns.append(1 << i)
            continue
        while uncovered[i].any():
            partners = np.flatnonzero(uncovered[i])
            j = int(partners[np.argmin(rank[partners])])
            clique = [i, j]
            candidates = same[i] & same[j]
            while candidates.any():
                idx = np.flatnonzero(candidates)
                gain = uncovered[np.ix_(idx, clique)].sum(axis=1)
                k = int(idx[np.lexsort((rank[idx], -gain))[0]])
                clique.append(k)
                candidates &= same[k]
            chosen = np.array(clique)
            uncovered[np.ix_(chosen, chosen)] = False
            columns.append(sum(1 << r for r in clique))
    return columns


def _sweep(columns: list[int], m: int) -> list[int]:
    """Piepho's sweep: drop run x from a column when every pair x forms there is covered by
    another column and x keeps another letter; then absorb the columns left redundant.

    ``cover[x, y]`` counts the columns holding both x and y (``cover[x, x]``: x's letters), so
    a removal is allowed when ``cover[x, members] >= 2`` for the column's members.
    """
    runs_of = [np.array(members(c), dtype=np.int64) for c in columns]
    cover = np.zeros((m, m), dtype=np.int32)
    for mem in runs_of:
        cover[np.ix_(mem, mem)] += 1
    for k, mem in enumerate(runs_of):
        keep = np.ones(mem.shape[0], dtype=bool)
        for pos, x in enumerate(mem.tolist()):
            held = mem[keep]
            if cover[x, held].min() >= 2:  # includes cover[x, x]: x has another letter
                cover[x, held] -= 1
                cover[held, x] -= 1
                cover[x, x] += 1  # subtracted twice above
                keep[pos] = False
                columns[k] &= ~(1 << x)
        runs_of[k] = mem[keep]
    return _absorb(columns)


def sweep_letters(columns: list[int], m: int) -> list[int]:
    """Drop what a display no longer needs (Piepho's sweep and absorption): for a display
    restricted to some of its runs, which keeps its guarantee but may hold redundant letters."""
    return _sweep([c for c in columns if c], m)


def letter_columns(different: np.ndarray, order: Sequence[int] | None = None) -> list[int]:
    """The columns (bit sets of run indices) of a compact letter display.

    ``different`` is an (m, m) boolean matrix, True where runs i and j differ significantly
    (the diagonal and the lower triangle are ignored: the upper triangle is mirrored).
    ``order`` is the order runs are taken in and columns are labelled by (for a board: best
    run first); by default 0..m-1. Columns come out sorted by their best-ordered members.
    """
    d = np.asarray(different, dtype=bool)
    m = d.shape[0]
    if d.shape != (m, m):
        raise ValueError(f"the significance matrix must be square, got shape {d.shape}")
    d = np.triu(d, 1)
    d = d | d.T
    order = list(range(m)) if order is None else [int(i) for i in order]
    if sorted(order) != list(range(m)):
        raise ValueError("order must be a permutation of the runs")
    if m == 0:
        return []
    same = ~d
    np.fill_diagonal(same, False)
    columns = _sweep(_cover(same, order), m)
    rank = {run: pos for pos, run in enumerate(order)}
    return sorted(columns, key=lambda c: sorted(rank[r] for r in members(c)))


def letter_labels(count: int) -> list[str]:
    """a..z, then A..Z, then a1..z1, A1..Z1, a2, ...: a label per column."""
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    return [alphabet[i % 52] + (str(i // 52) if i >= 52 else "") for i in range(count)]


def label_letters(columns: list[int], m: int) -> list[str]:
    """Each run's letters (by run index 0..m-1, the display's order: run 0 gets "a"), the
    columns labelled in the order of their best (lowest-index) members.

    Letters of one run are concatenated while every label is one character; once labels
    carry a number (more than 52 letters) they are separated by spaces.
    """
    ordered = sorted(columns, key=lambda c: members(c))
    labels = letter_labels(len(ordered))
    sep = "" if len(ordered) <= 52 else " "
    per_run: list[list[str]] = [[] for _ in range(m)]
    for label, c in zip(labels, ordered):
        for r in members(c):
            per_run[r].append(label)
    return [sep.join(ls) for ls in per_run]


def compact_letters(different: np.ndarray) -> list[str]:
    """Each run's letters, the runs (rows of ``different``) in display order: run 0 gets "a"."""
    m = np.asarray(different).shape[0]
    return label_letters(letter_columns(different), m)
