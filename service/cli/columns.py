"""Whole columns of numbers as text, for the long tables of ``cranfield compare`` (half a million
pairs at 1,000 runs): numpy's string operations over a column at a time instead of Python's
formatting value by value (issue 26, item 2), with the same text:

- :func:`fixed` is ``f"{v:.{decimals}f}"`` of each value;
- :func:`p_texts` is :func:`service.metrics.stats.presentation.format_p_many`;
- :func:`rows` joins columns with tabs, one line per row.

The digits come from the integer nearest to |v| 10^decimals, which is the correctly rounded one
whenever |v| 10^decimals lies below 2^31 and its fraction is more than 1e-6 away from one half
(the product's rounding error is below 2^-22 there); the few other values (ties, near-ties, huge
numbers, NaN, infinities) are formatted by Python. Without numpy's variable-width strings
(numpy < 2) the columns are formatted by Python, value by value. tests/unit/test_cli_columns.py
holds both paths to Python's text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

try:  # numpy >= 2
    from numpy.dtypes import StringDType

    FAST = hasattr(np, "strings")
except ImportError:  # pragma: no cover - numpy 1.x
    StringDType = None
    FAST = False

#: Below this, |v| 10^decimals is exact enough for its nearest integer to be the rounded digits.
_EXACT_BELOW = float(2**31)
#: How far from one half the fraction of |v| 10^decimals must be (its error is below 2^-22).
_HALF_MARGIN = 1e-6


def as_text(values: Sequence[str] | np.ndarray) -> Any:
    """A column of texts (run names...) in the form :func:`rows` joins."""
    if FAST:
        return np.asarray(values, dtype=StringDType())
    return list(values)


def fixed(values: np.ndarray, decimals: int) -> Any:
    """``f"{v:.{decimals}f}"`` of each value (decimals >= 1), as a column."""
    v = np.asarray(values, dtype=np.float64)
    spec = f".{decimals}f"
    if not FAST:
        return [format(x, spec) for x in v.tolist()]
    with np.errstate(invalid="ignore", over="ignore"):
        scaled = np.abs(v) * 10.0**decimals
        nearest = np.rint(scaled)
        exact = (scaled < _EXACT_BELOW) & (np.abs(scaled - np.floor(scaled) - 0.5) > _HALF_MARGIN)
    k = np.where(exact, nearest, 0.0).astype(np.int64)
    unit = 10**decimals
    text = np.strings.add(np.where(np.signbit(v), "-", "").astype(StringDType()),
                          (k // unit).astype(StringDType()))
    text = np.strings.add(np.strings.add(text, "."), np.strings.zfill((k % unit).astype(StringDType()), decimals))
    others = np.flatnonzero(~exact)
    if len(others):
        text[others] = [format(x, spec) for x in v[others].tolist()]
    return text


def p_texts(values: np.ndarray, alpha: float, decimals: int = 3, missing: str = "–") -> Any:
    """``presentation.format_p_many(values, alpha, decimals, missing)`` as a column: the values far
    from alpha and above the floor through :func:`fixed`, those below the floor as the floor's
    text, the rest (near alpha, or with fewer than two significant digits at ``decimals``, or
    NaN) through ``format_p`` itself."""
    from service.metrics.stats.presentation import format_p, format_p_many, p_floor, p_safe_from

    v = np.asarray(values, dtype=np.float64)
    if not FAST:
        return format_p_many(v.tolist(), alpha, decimals, missing)
    floor = p_floor(alpha)
    plain = (v >= p_safe_from(alpha, decimals)) & (np.abs(v - alpha) > 10.0**-decimals)
    text = fixed(np.where(plain, v, 0.0), decimals)
    below = v < floor
    if below.any():
        text[below] = format_p(0.0, alpha, decimals, missing)  # "< 0.001": the same for every p below
    others = np.flatnonzero(~plain & ~below)
    if len(others):
        text[others] = [format_p(x, alpha, decimals, missing) for x in v[others].tolist()]
    return text


def where(mask: np.ndarray, yes: str, no: str) -> Any:
    """A column of ``yes`` where ``mask``, ``no`` elsewhere."""
    if FAST:
        return np.where(mask, yes, no).astype(StringDType())
    return [yes if m else no for m in np.asarray(mask).tolist()]


def put(column: Any, index: np.ndarray, texts: Sequence[str]) -> None:
    """``column[index] = texts``."""
    if FAST:
        column[index] = list(texts)
    else:
        for i, text in zip(index.tolist(), texts):
            column[i] = text


def pick(column: Any, index: np.ndarray) -> Any:
    """``column[index]`` (a column of :func:`as_text` or :func:`fixed`)."""
    if FAST:
        return column[index]
    return [column[i] for i in index.tolist()]


def rows(columns: Sequence[Any], sep: str = "\t", end: str = "\n") -> str:
    """The columns (of the same length; a str is a constant column) joined: one line per row."""
    if FAST:
        line: Any = columns[0]
        for col in columns[1:]:
            line = np.strings.add(np.strings.add(line, sep), col)
        return end.join(np.asarray(line, dtype=StringDType()).tolist()) + end if np.size(line) else ""
    length = max(len(c) for c in columns if not isinstance(c, str))
    full = [[c] * length if isinstance(c, str) else c for c in columns]
    return "".join(sep.join(cells) + end for cells in zip(*full))
