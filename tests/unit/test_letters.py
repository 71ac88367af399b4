"""Compact letter display: two runs share a letter if and only if they are not
significantly different, every run has a letter, and no letter of a run can be dropped."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from service.metrics.stats.letters import compact_letters, letter_columns, letter_labels


def members(column: int) -> set[int]:
    return {i for i in range(column.bit_length()) if column >> i & 1}


def check_display(different: np.ndarray, columns: list[int]) -> None:
    m = different.shape[0]
    sets = [members(c) for c in columns]
    for i, j in itertools.combinations(range(m), 2):
        share = any(i in s and j in s for s in sets)
        assert share == (not different[i, j]), (i, j)
    for i in range(m):
        assert any(i in s for s in sets), f"run {i} has no letter"
    # Piepho's sweep leaves nothing to drop: removing run x from a letter either strips x of
    # its last letter or separates x from a run it is not different from.
    for k, s in enumerate(sets):
        for x in s:
            others = [t for j, t in enumerate(sets) if j != k and x in t]
            covered = set().union(*others) if others else set()
            assert not others or not (s - {x}) <= covered, (k, x)
    assert len(set(columns)) == len(columns)
    assert not any(a != b and a & b == a for a in columns for b in columns), "a letter inside another"


@st.composite
def significance_matrices(draw: st.DrawFn) -> np.ndarray:
    m = draw(st.integers(min_value=1, max_value=14))
    upper = draw(st.lists(st.booleans(), min_size=m * (m - 1) // 2, max_size=m * (m - 1) // 2))
    d = np.zeros((m, m), dtype=bool)
    d[np.triu_indices(m, 1)] = upper
    return d | d.T


@given(significance_matrices(), st.randoms(use_true_random=False))
@settings(max_examples=400, deadline=None)
def test_letters_share_exactly_when_not_different(different: np.ndarray, rnd) -> None:  # type: ignore[no-untyped-def]
    order = list(range(different.shape[0]))
    rnd.shuffle(order)
    check_display(different, letter_columns(different, order))


def test_the_issue_example_is_not_a_chain_of_consecutive_ranks() -> None:
    # RUN-01 is not significantly different from RUN-04 (p = 0.052) nor from RUN-07 (0.064),
    # but RUN-04 and RUN-07 differ: consecutive-rank grouping gave a, b, c; a true display
    # gives RUN-01 both letters of the two groups it belongs to.
    different = np.array([[False, False, False], [False, False, True], [False, True, False]])
    assert compact_letters(different) == ["ab", "a", "b"]


def test_interval_patterns_need_one_letter_per_maximal_band() -> None:
    # Runs in board order, each not different from its next k neighbours (a band): the
    # maximal cliques are the windows, and the fewest letters is their number.
    for m, k in [(10, 2), (26, 3), (60, 5)]:
        idx = np.arange(m)
        different = np.abs(idx[:, None] - idx[None, :]) > k
        columns = letter_columns(different)
        check_display(different, columns)
        assert len(columns) == m - k
        assert compact_letters(different)[0] == "a"


def test_the_minimum_is_reached_on_small_matrices() -> None:
    # The exact minimum edge clique cover, by brute force, against the display on every
    # pattern of 5 runs: the display never needs more than one letter above it.
    m = 5
    pairs = list(itertools.combinations(range(m), 2))
    cliques = [set(c) for r in range(1, m + 1) for c in itertools.combinations(range(m), r)]
    worse = 0
    for bits in range(1 << len(pairs)):
        different = np.zeros((m, m), dtype=bool)
        for b, (i, j) in enumerate(pairs):
            if bits >> b & 1:
                different[i, j] = different[j, i] = True
        valid = [c for c in cliques if not any(different[i, j] for i, j in itertools.combinations(c, 2))]
        need = [(i, j) for i, j in pairs if not different[i, j]] + [(i, i) for i in range(m)]
        best = next(r for r in range(1, len(pairs) + m + 1) for combo in itertools.combinations(valid, r)
                    if all(any(i in c and j in c for c in combo) for i, j in need))
        got = len(letter_columns(different))
        assert got <= best + 1, (bits, got, best)
        worse += got > best
    assert worse <= (1 << len(pairs)) // 20  # rarely above the minimum, never by more than one


def test_labels_and_degenerate_inputs() -> None:
    assert letter_labels(3) == ["a", "b", "c"]
    assert letter_labels(54)[51:] == ["Z", "a1", "b1"]
    assert compact_letters(np.zeros((0, 0), dtype=bool)) == []
    assert compact_letters(np.zeros((1, 1), dtype=bool)) == ["a"]
    assert compact_letters(np.ones((3, 3), dtype=bool)) == ["a", "b", "c"]
    assert compact_letters(np.zeros((3, 3), dtype=bool)) == ["a", "a", "a"]
    # The lower triangle is ignored: the upper one is the matrix.
    lower_only = np.tril(np.ones((3, 3), dtype=bool), -1)
    assert compact_letters(lower_only) == ["a", "a", "a"]
