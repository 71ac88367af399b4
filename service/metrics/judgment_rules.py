"""One judgment level per (topic, document) from several assessors' labels.

When a document is labelled by several assessors (a primary and a secondary assessor, crowd
workers, a re-judging round), the qrels need one level per document. Each rule here turns the
labels of one document, in the order they were given (oldest first), into one integer level:

* ``latest``: the last label given (a re-judgment replaces the earlier ones);
* ``majority``: the most frequent level; a tie goes to the **lowest** of the tied levels. That is
  the conservative choice: a document two assessors call 2 and two call 1 is not credited with
  more relevance than half of them saw, and the result never depends on the order of the labels;
* ``mean``: the arithmetic mean rounded half **up** to an integer level, floor(mean + 1/2), so
  1.5 gives 2 and 2.5 gives 3. Python's ``round`` rounds halves to even (1.5 -> 2 but 2.5 -> 2),
  which would make the level of a two-way split depend on the parity of the levels; the integer
  form (2 * sum + n) // (2 * n) is exact for any sum;
* ``max`` and ``min``: the most lenient and the strictest assessor.

**Negative labels** (trec_eval's "pooled but unjudged") are no opinion: an assessor who did not
judge the document must not outvote, pull down the mean of, or become the minimum of those who
did. So a rule sees only the labels >= 0 when there is at least one; when every label is
negative the document stays unjudged and gets its latest label, as the last file would say.

Sakai's unanimity-aware gain (EVIA 2017) is not among the rules: its exact definition could not be
checked against the paper (docs/statistics.md, "Deriving one judgment from several assessors").

:func:`derive_level` is the definition, label by label, in plain Python; :func:`derive` computes
the same for every document at once on flat numpy arrays, in time linear in the number of labels
(the majority rule counts with one ``bincount`` when the levels span a small range, and sorts
otherwise). The definitions are in docs/statistics.md.
"""

from __future__ import annotations

import numbers
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from itertools import chain

import numpy as np

RULES: tuple[str, ...] = ("latest", "majority", "mean", "max", "min")

#: Largest |level| accepted. Relevance scales are small; this bound keeps every integer sum of
#: the mean rule exact in int64 (2 * sum + n stays below 2^63 for fewer than 2^31 labels).
MAX_ABS_LEVEL = 2**31

#: The majority rule counts (document, level) cells with one bincount when there are at most
#: this many cells per label (or at most _MIN_CELLS in all); otherwise it sorts the labels.
_CELLS_PER_LABEL = 4
_MIN_CELLS = 1 << 16


def _check_rule(rule: str) -> None:
    if rule not in RULES:
        raise ValueError(f"unknown rule {rule!r}: the rules are {', '.join(RULES)}")


def _integer(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"levels must be integers, got {value!r}")
    v = int(value)
    if abs(v) > MAX_ABS_LEVEL:
        raise ValueError(f"level {v} is outside the supported range [-{MAX_ABS_LEVEL}, {MAX_ABS_LEVEL}]")
    return v


def derive_level(levels: Sequence[int], rule: str) -> int:
    """The one level ``rule`` derives from one document's labels (``levels``, oldest first).

    Labels < 0 (pooled but unjudged) are ignored when at least one label is >= 0; when all are
    negative the latest label is returned whatever the rule. ``majority`` breaks ties towards
    the lowest tied level; ``mean`` rounds half up. An empty ``levels``, an unknown rule or a level
    beyond +-:data:`MAX_ABS_LEVEL` is a ``ValueError``; a level that is not an integer (a float, a
    string, a bool) a ``TypeError``.
    """
    _check_rule(rule)
    values = [_integer(v) for v in levels]
    if not values:
        raise ValueError("no label to derive a level from")
    judged = [v for v in values if v >= 0]
    if not judged:
        return values[-1]
    if rule == "latest":
        return judged[-1]
    if rule == "max":
        return max(judged)
    if rule == "min":
        return min(judged)
    if rule == "mean":
        n = len(judged)
        return (2 * sum(judged) + n) // (2 * n)  # floor(sum / n + 1/2), exactly
    counts = Counter(judged)
    most = max(counts.values())
    return min(level for level, count in counts.items() if count == most)


def _flatten(values: list[Sequence[int]], total: int) -> np.ndarray:
    """Every label of every document in one int64 vector, after checking they are integers
    (``np.fromiter`` alone would truncate 1.5 to 1 and read "2" as 2)."""
    kinds = set(map(type, chain.from_iterable(values)))
    for kind in kinds:
        if issubclass(kind, bool) or not issubclass(kind, numbers.Integral):
            bad = next(v for v in chain.from_iterable(values) if type(v) is kind)
            raise TypeError(f"levels must be integers, got {bad!r}")
    try:
        flat = np.fromiter(chain.from_iterable(values), dtype=np.int64, count=total)
    except OverflowError:
        raise ValueError(f"a level is outside the supported range [-{MAX_ABS_LEVEL}, {MAX_ABS_LEVEL}]") from None
    if total and int(np.abs(flat).max()) > MAX_ABS_LEVEL:
        bad = int(flat[np.flatnonzero(np.abs(flat) > MAX_ABS_LEVEL)[0]])
        raise ValueError(f"level {bad} is outside the supported range [-{MAX_ABS_LEVEL}, {MAX_ABS_LEVEL}]")
    return flat


def _majority(values: np.ndarray, docs: np.ndarray, n_docs: int) -> np.ndarray:
    """Per document, the most frequent of its ``values`` (ties: the lowest); documents without
    any value get an arbitrary level (the caller overwrites them)."""
    out = np.zeros(n_docs, dtype=np.int64)
    if not values.shape[0]:
        return out
    lo = int(values.min())
    span = int(values.max()) - lo + 1
    if n_docs * span <= max(_CELLS_PER_LABEL * values.shape[0], _MIN_CELLS):
        counts = np.bincount(docs * span + (values - lo), minlength=n_docs * span).reshape(n_docs, span)
        return counts.argmax(axis=1) + lo  # argmax takes the first maximum: the lowest level
    # Sparse levels: runs of equal (document, level) after sorting by document, then level.
    order = np.lexsort((values, docs))
    d, v = docs[order], values[order]
    head = np.ones(d.shape[0], dtype=bool)
    head[1:] = (d[1:] != d[:-1]) | (v[1:] != v[:-1])
    start = np.flatnonzero(head)
    size = np.diff(np.append(start, d.shape[0]))
    run_doc, run_level = d[start], v[start]
    best = np.lexsort((run_level, -size, run_doc))  # per document: largest run first, then lowest level
    first = best[np.r_[True, run_doc[best][1:] != run_doc[best][:-1]]]
    out[run_doc[first]] = run_level[first]
    return out


def derive_flat(levels: np.ndarray, sizes: np.ndarray, rule: str) -> np.ndarray:
    """:func:`derive_level` of consecutive groups of ``levels``: group i is the next ``sizes[i]``
    labels (oldest first; every size >= 1). Returns one int64 level per group. Linear in the
    number of labels, but for the sort of the majority rule over a wide span of levels."""
    _check_rule(rule)
    flat = np.asarray(levels, dtype=np.int64)
    sizes = np.asarray(sizes, dtype=np.int64)
    if sizes.ndim != 1 or flat.ndim != 1 or int(sizes.sum()) != flat.shape[0]:
        raise ValueError("sizes must split the levels into consecutive groups")
    if sizes.shape[0] and int(sizes.min()) < 1:
        raise ValueError(f"group {int(np.flatnonzero(sizes < 1)[0])} has no label")
    n_docs = sizes.shape[0]
    if not n_docs:
        return np.zeros(0, dtype=np.int64)
    starts = np.cumsum(sizes) - sizes
    judged = flat >= 0
    n_judged = np.add.reduceat(judged.astype(np.int64), starts)
    out = flat[starts + sizes - 1].copy()  # every label negative: the latest one
    has = n_judged > 0
    if rule == "latest":
        where = np.where(judged, np.arange(flat.shape[0], dtype=np.int64), -1)
        derived = flat[np.maximum.reduceat(where, starts)]  # the last judged label (index -1 only without one)
    elif rule == "max":
        derived = np.maximum.reduceat(np.where(judged, flat, -1), starts)
    elif rule == "min":
        derived = np.minimum.reduceat(np.where(judged, flat, np.iinfo(np.int64).max), starts)
    elif rule == "mean":
        total = np.add.reduceat(np.where(judged, flat, 0), starts)
        count = np.maximum(n_judged, 1)
        derived = (2 * total + count) // (2 * count)  # floor(mean + 1/2); sums of levels >= 0
    else:
        docs = np.repeat(np.arange(n_docs, dtype=np.int64), sizes)
        derived = _majority(flat[judged], docs[judged], n_docs)
    out[has] = derived[has]
    return out


def derive(labels: Mapping[tuple[str, str], Sequence[int]], rule: str) -> dict[tuple[str, str], int]:
    """:func:`derive_level` for every (topic, docno) of ``labels``, at once.

    ``labels`` maps each (topic, docno) to its labels, oldest first (as
    :func:`service.formats.labels.labels_by_document` gives them). Returns {(topic, docno):
    level} in the input's order. A document with no label or an unknown rule is a ``ValueError``,
    a level that is not an integer a ``TypeError`` (as for :func:`derive_level`). Time is linear in
    the number of labels.
    """
    _check_rule(rule)
    keys: list[Hashable] = list(labels.keys())
    values: list[Sequence[int]] = list(labels.values())
    sizes = np.fromiter(map(len, values), dtype=np.int64, count=len(values))
    if sizes.shape[0] and int(sizes.min()) < 1:
        raise ValueError(f"no label for {keys[int(np.flatnonzero(sizes < 1)[0])]!r}")
    flat = _flatten(values, int(sizes.sum()))
    return dict(zip(keys, derive_flat(flat, sizes, rule).tolist()))  # type: ignore[arg-type]
