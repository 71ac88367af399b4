"""Deriving one level per document from several assessors' labels (service.metrics.judgment_rules).

Expected values are worked by hand from the definitions in docs/statistics.md ("Deriving one
judgment from several assessors"); the vectorised :func:`derive` is checked against the
label-by-label :func:`derive_level` and against independent computations: ``collections.Counter``
and ``scipy.stats.mode`` (which returns the smallest of tied modes, the rule's tie-break) for the
majority, numpy's mean with explicit floor(mean + 1/2) for the mean.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from scipy import stats

from service.metrics import judgment_rules as jr
from service.metrics.judgment_rules import MAX_ABS_LEVEL, RULES, derive, derive_flat, derive_level


def judged(levels: list[int]) -> list[int]:
    return [v for v in levels if v >= 0]


# ------------------------------------------------------------------ hand-worked cases
@pytest.mark.parametrize(("levels", "expected"), [
    # latest, majority, mean, max, min
    ([2], (2, 2, 2, 2, 2)),
    ([0], (0, 0, 0, 0, 0)),
    ([1, 3, 3], (3, 3, 2, 3, 1)),  # mean 7/3 = 2.33 -> 2
    ([3, 1], (1, 1, 2, 3, 1)),  # majority tie 1-1 -> the lower; mean 1.5 -> 2 (half up)
    ([2, 3], (3, 2, 3, 3, 2)),  # mean 2.5 -> 3 (round() would give 2)
    ([0, 1], (1, 0, 1, 1, 0)),  # mean 0.5 -> 1 (round() would give 0)
    ([0, 0, 1], (1, 0, 0, 1, 0)),  # mean 0.33 -> 0
    ([0, 1, 1], (1, 1, 1, 1, 0)),  # mean 0.67 -> 1
    ([3, 3, 1, 1, 2], (2, 1, 2, 3, 1)),  # majority: 3 and 1 twice each -> 1; mean 2
    ([2, 2, 0, 0, 3, 3], (3, 0, 2, 3, 0)),  # three-way tie -> 0; mean 10/6 = 1.67 -> 2
    ([4, 0, 0, 0], (0, 0, 1, 4, 0)),  # mean 1.0 exactly
    ([4, 0, 0, 1], (1, 0, 1, 4, 0)),  # mean 1.25 -> 1
    ([4, 0, 1, 2], (2, 0, 2, 4, 0)),  # all differ: majority the lowest; mean 1.75 -> 2
])
def test_every_rule_by_hand(levels: list[int], expected: tuple[int, ...]) -> None:
    for rule, want in zip(RULES, expected):
        assert derive_level(levels, rule) == want, (levels, rule)
        assert derive({("1", "d"): levels}, rule) == {("1", "d"): want}


@pytest.mark.parametrize(("levels", "expected"), [
    # negative labels are ignored when some label is >= 0 ...
    ([-1, 2], (2, 2, 2, 2, 2)),
    ([2, -1], (2, 2, 2, 2, 2)),  # latest is the last *judged* label, not the -1
    ([1, -1, -1, -1, 3], (3, 1, 2, 3, 1)),  # three -1s do not make -1 the majority
    ([-2, 0, -1], (0, 0, 0, 0, 0)),  # min is 0, not -2
    ([3, -1, 0], (0, 0, 2, 3, 0)),  # mean of 3 and 0 (1.5 -> 2), not of 3, -1, 0
    # ... and when every label is negative the latest one is kept, whatever the rule
    ([-1], (-1, -1, -1, -1, -1)),
    ([-1, -2], (-2, -2, -2, -2, -2)),
    ([-2, -1, -1], (-1, -1, -1, -1, -1)),
])
def test_negative_labels(levels: list[int], expected: tuple[int, ...]) -> None:
    for rule, want in zip(RULES, expected):
        assert derive_level(levels, rule) == want, (levels, rule)
        assert derive({("1", "d"): levels}, rule) == {("1", "d"): want}


def test_rules_are_the_documented_five() -> None:
    assert RULES == ("latest", "majority", "mean", "max", "min")
    assert "unanimity" not in RULES  # not implemented: its definition could not be checked


def test_majority_does_not_depend_on_the_order_of_the_labels() -> None:
    rng = np.random.default_rng(7)
    for _ in range(200):
        levels = rng.integers(-1, 4, rng.integers(1, 8)).tolist()
        assert len({derive_level(list(p), "majority") for p in (levels, levels[::-1], sorted(levels))}) == 1


def test_mean_rounds_half_up_not_to_even() -> None:
    for low in range(6):  # [low, low + 1]: mean low + 1/2
        assert derive_level([low, low + 1], "mean") == low + 1
    assert round(2.5) == 2 and derive_level([2, 3], "mean") == 3  # Python rounds half to even


def test_numpy_integers_are_levels() -> None:
    assert derive_level([np.int64(2), np.int32(3)], "mean") == 3
    assert derive({("1", "d"): np.array([1, 1, 2])}, "majority") == {("1", "d"): 1}


# ------------------------------------------------------------------ errors
def test_unknown_rule() -> None:
    for call in (lambda: derive_level([1], "median"), lambda: derive({("1", "d"): [1]}, "median"),
                 lambda: derive_flat(np.array([1]), np.array([1]), "median")):
        with pytest.raises(ValueError, match=r"unknown rule 'median'.*latest, majority, mean, max, min"):
            call()


def test_empty_label_list() -> None:
    with pytest.raises(ValueError, match="no label"):
        derive_level([], "max")
    with pytest.raises(ValueError, match=r"no label for \('1', 'd2'\)"):
        derive({("1", "d1"): [1], ("1", "d2"): [], ("1", "d3"): []}, "max")
    with pytest.raises(ValueError, match="no label"):
        derive_flat(np.array([1]), np.array([1, 0]), "max")
    assert derive({}, "max") == {}


@pytest.mark.parametrize("bad", [1.5, 2.0, "2", True, None])
def test_levels_must_be_integers(bad: object) -> None:
    with pytest.raises(TypeError, match="levels must be integers"):
        derive_level([1, bad], "max")  # type: ignore[list-item]
    with pytest.raises(TypeError, match="levels must be integers"):
        derive({("1", "a"): [1], ("1", "b"): [0, bad]}, "max")  # type: ignore[list-item]


def test_levels_out_of_range() -> None:
    for bad in (MAX_ABS_LEVEL + 1, -MAX_ABS_LEVEL - 1, 2**70):
        with pytest.raises(ValueError, match="outside the supported range"):
            derive_level([bad], "mean")
        with pytest.raises(ValueError, match="outside the supported range"):
            derive({("1", "d"): [0, bad]}, "mean")
    assert derive({("1", "d"): [MAX_ABS_LEVEL, MAX_ABS_LEVEL - 1]}, "mean") == {("1", "d"): MAX_ABS_LEVEL}


# ------------------------------------------------------------------ derive against independent computations
def random_labels(rng: np.random.Generator, docs: int, low: int, high: int,
                  most: int = 7) -> dict[tuple[str, str], list[int]]:
    """Up to ``most`` labels per document in [low, high), with ties, negatives (when low < 0)
    and documents labelled once."""
    return {(str(i % 13), f"d{i}"): rng.integers(low, high, rng.integers(1, most + 1)).tolist() for i in range(docs)}


def counter_majority(levels: list[int]) -> int:
    """The most common judged level, ties to the lowest; the latest label if none is judged."""
    js = judged(levels)
    if not js:
        return levels[-1]
    return min(Counter(js).items(), key=lambda kv: (-kv[1], kv[0]))[0]


def scipy_majority(levels: list[int]) -> int:
    js = judged(levels)
    return int(stats.mode(js).mode) if js else levels[-1]  # scipy: the smallest of tied modes


def numpy_mean(levels: list[int]) -> int:
    js = judged(levels)
    return math.floor(np.mean(js) + 0.5) if js else levels[-1]


@pytest.mark.parametrize(("low", "high"), [(-1, 4), (0, 2), (-3, 11), (0, 1)])
def test_derive_matches_counter_scipy_numpy_and_derive_level(low: int, high: int) -> None:
    rng = np.random.default_rng((low + 10) * 100 + high)
    labels = random_labels(rng, 2000, low, high)
    majority = derive(labels, "majority")
    mean = derive(labels, "mean")
    for key, levels in labels.items():
        assert majority[key] == counter_majority(levels) == scipy_majority(levels), levels
        assert mean[key] == numpy_mean(levels), levels
    for rule in RULES:
        got = derive(labels, rule)
        assert list(got) == list(labels)  # input order
        assert got == {k: derive_level(v, rule) for k, v in labels.items()}, rule


def test_majority_with_sparse_levels_sorts_instead_of_counting() -> None:
    """Levels spread over a huge range (a few documents, few labels) take the sorting path; it
    must give what the counting path and the definition give."""
    rng = np.random.default_rng(11)
    choices = np.array([-1, 0, 5, 1_000_000, MAX_ABS_LEVEL - 1])
    labels = {("t", f"d{i}"): choices[rng.integers(0, 5, rng.integers(1, 6))].tolist() for i in range(2000)}
    values = np.concatenate([np.array(v) for v in labels.values()])
    assert len(labels) * (int(values[values >= 0].max()) + 1) > jr._CELLS_PER_LABEL * values.shape[0]
    got = derive(labels, "majority")
    assert got == {k: counter_majority(v) for k, v in labels.items()}
    # the same labels mapped onto a dense range take the counting path and agree after mapping back
    dense = {k: [int(np.flatnonzero(choices == x)[0]) - 1 for x in v] for k, v in labels.items()}
    back = {k: int(choices[v + 1]) for k, v in derive(dense, "majority").items()}
    assert back == got


def test_derive_flat_on_groups() -> None:
    levels = np.array([1, 3, -1, -1, 2, 2, 0, -2, 4])
    sizes = np.array([2, 1, 3, 1, 2])  # [1, 3] [-1] [-1, 2, 2] [0] [-2, 4]
    assert derive_flat(levels, sizes, "latest").tolist() == [3, -1, 2, 0, 4]
    assert derive_flat(levels, sizes, "mean").tolist() == [2, -1, 2, 0, 4]
    assert derive_flat(levels, sizes, "min").tolist() == [1, -1, 2, 0, 4]
    assert derive_flat(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), "max").tolist() == []
    with pytest.raises(ValueError, match="consecutive groups"):
        derive_flat(levels, np.array([2, 2]), "max")


# ------------------------------------------------------------------ a million labels
def test_a_million_labels() -> None:
    """Linear-time smoke test with the answer known by construction: document i has a planted
    level p (0..3) given by 3 or 4 of its labels and, shuffled among them, at most two other
    judged levels and at most two -1s, so p is its majority. No timing assertion (timings are
    flaky); a quadratic implementation would take far longer than the suite allows."""
    rng = np.random.default_rng(2024)
    n_docs = 250_000
    planted = rng.integers(0, 4, n_docs)
    n_planted, n_other, n_unjudged = rng.integers(3, 5, n_docs), rng.integers(0, 3, n_docs), rng.integers(0, 3, n_docs)
    sizes = n_planted + n_other + n_unjudged
    doc = np.repeat(np.arange(n_docs), sizes)
    offset = np.arange(doc.shape[0]) - np.repeat(np.cumsum(sizes) - sizes, sizes)  # position within the document
    kind = np.where(offset < np.repeat(n_planted, sizes), 0, np.where(offset < np.repeat(n_planted + n_other, sizes), 1, 2))
    flat = np.where(kind == 0, planted[doc], np.where(kind == 1, rng.integers(0, 4, doc.shape[0]), -1))
    flat = flat[np.lexsort((rng.random(doc.shape[0]), doc))].tolist()  # shuffled within each document
    ends = np.cumsum(sizes).tolist()
    labels = {(str(i % 50), f"doc{i}"): flat[end - size:end] for i, (end, size) in enumerate(zip(ends, sizes.tolist()))}
    assert len(flat) >= 1_000_000
    majority = derive(labels, "majority")
    assert list(majority.values()) == planted.tolist()
    highest, lowest, latest, mean = (derive(labels, r) for r in ("max", "min", "latest", "mean"))
    for i, (key, levels) in enumerate(labels.items()):
        js = [v for v in levels if v >= 0]
        assert highest[key] == max(js) and lowest[key] == min(js) and latest[key] == js[-1]
        assert mean[key] == (2 * sum(js) + len(js)) // (2 * len(js))
        if i == 5000:  # max/min/latest/mean checked label by label on a prefix; majority on every document
            break
