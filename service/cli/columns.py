"""Whole columns of numbers as text, for the long tables of ``cranfield compare`` (half a million
pairs at 1,000 runs): array operations over a column at a time instead of Python's formatting
value by value (issue 26, item 2), with the same text.

A column is a (rows, width) matrix of UTF-8 bytes, each cell's text padded with NUL bytes
(so no text may hold a NUL: ``cranfield compare`` passes its names through ``terminal_safe``,
which escapes it). :func:`lines` puts the columns side by side with a tab between them and a
line end after each row and drops the padding: the text of the rows, in one string.

- :func:`fixed` is ``f"{v:.{decimals}f}"`` of each value. Its digits come from the integer
  nearest to |v| 10^decimals, which is the correctly rounded one whenever |v| 10^decimals lies
  below 2^31 and its fraction is more than 1e-6 from one half (the product's rounding error is
  below 2^-22 there); the few other values (ties and near-ties, huge numbers, NaN, infinities)
  are formatted by Python.
- :func:`p_values` is :func:`service.metrics.stats.presentation.format_p_many`.
- :func:`texts` is a column of given texts (run names, verdicts).

tests/unit/test_cli_columns.py holds them to Python's text.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: Below this, |v| 10^decimals is exact enough for its nearest integer to be the rounded digits.
_EXACT_BELOW = float(2**31)
#: How far from one half the fraction of |v| 10^decimals must be (its error is below 2^-22).
_HALF_MARGIN = 1e-6
_MINUS, _POINT, _ZERO = ord("-"), ord("."), ord("0")


def texts(values: Sequence[str]) -> np.ndarray:
    """A column of the texts ``values`` (none holding a NUL)."""
    if any("\x00" in v for v in values):
        raise ValueError("a column's text cannot hold a NUL character")
    encoded = [v.encode("utf-8") for v in values]
    width = max(1, max((len(e) for e in encoded), default=1))
    return np.array(encoded, dtype=f"S{width}").view(np.uint8).reshape(len(encoded), width)


def constant(text: str, rows: int) -> np.ndarray:
    """A column of ``rows`` times ``text``."""
    return np.broadcast_to(np.frombuffer(text.encode("utf-8"), dtype=np.uint8), (rows, len(text.encode("utf-8"))))


def put(column: np.ndarray, index: np.ndarray, values: Sequence[str] | str) -> np.ndarray:
    """``column`` with the cells ``index`` holding ``values`` (one text for all when a str;
    the column widened when a text needs it)."""
    if not len(index):
        return column
    new = texts([values]) if isinstance(values, str) else texts(values)
    if new.shape[1] > column.shape[1]:
        column = np.hstack([column, np.zeros((column.shape[0], new.shape[1] - column.shape[1]), dtype=np.uint8)])
    column[index] = 0
    column[index, : new.shape[1]] = new
    return column


def fixed(values: np.ndarray, decimals: int) -> np.ndarray:
    """A column of ``f"{v:.{decimals}f}"`` of each value (decimals >= 1)."""
    v = np.asarray(values, dtype=np.float64).ravel()
    with np.errstate(invalid="ignore", over="ignore"):
        scaled = np.abs(v) * 10.0**decimals
        exact = (scaled < _EXACT_BELOW) & (np.abs(scaled - np.floor(scaled) - 0.5) > _HALF_MARGIN)
        k = np.where(exact, np.rint(scaled), 0.0).astype(np.int64)
    whole, fraction = np.divmod(k, 10**decimals)
    digits = len(str(int(whole.max()))) if len(v) else 1  # of the whole part
    column = np.zeros((len(v), 1 + digits + 1 + decimals), dtype=np.uint8)
    column[:, 0] = np.where(np.signbit(v), _MINUS, 0)
    for i in range(digits):  # the digit of 10^i, shown when the number has it (always the units)
        shown = (whole >= 10**i) if i else np.ones(len(v), dtype=bool)
        column[:, digits - i] = np.where(shown, _ZERO + (whole // 10**i) % 10, 0)
    column[:, digits + 1] = _POINT
    for j in range(decimals - 1, -1, -1):
        column[:, digits + 2 + j] = _ZERO + fraction % 10
        fraction //= 10
    others = np.flatnonzero(~exact)
    return put(column, others, [f"{x:.{decimals}f}" for x in v[others].tolist()])


def exact(values: np.ndarray) -> np.ndarray:
    """A column of ``repr(v)`` of each value: the shortest text that reads back as the same float
    (data for a program, issue 37: a p printed so can be compared with alpha exactly)."""
    return texts([repr(x) for x in np.asarray(values, dtype=np.float64).ravel().tolist()])


def whole(values: np.ndarray | None, rows: int) -> np.ndarray:
    """A column of integers (a float column's values, whole numbers); empty cells for None."""
    if values is None:
        return constant("", rows)
    return texts([str(int(x)) if x == x else "" for x in np.asarray(values, dtype=np.float64).ravel().tolist()])


def p_values(values: np.ndarray, alpha: float, decimals: int = 3, missing: str = "–") -> np.ndarray:
    """A column of ``presentation.format_p_many(values, alpha, decimals, missing)``: the values far
    from alpha and above the floor through :func:`fixed`, those below the floor as the floor's
    text, the rest (near alpha, with fewer than two significant digits at ``decimals``, or NaN)
    through ``format_p`` itself."""
    from service.metrics.stats.presentation import format_p, p_floor, p_safe_from

    v = np.asarray(values, dtype=np.float64).ravel()
    with np.errstate(invalid="ignore"):
        plain = (v >= p_safe_from(alpha, decimals)) & (np.abs(v - alpha) > 10.0**-decimals)
        below = v < p_floor(alpha)  # "< 0.001" for every p under the floor
    column = fixed(np.where(plain, v, 0.0), decimals)
    under = np.flatnonzero(below)
    column = put(column, under, format_p(0.0, alpha, decimals, missing))
    others = np.flatnonzero(~plain & ~below)
    return put(column, others, [format_p(x, alpha, decimals, missing) for x in v[others].tolist()])


def lines(columns: Sequence[np.ndarray], sep: str = "\t", end: str = "\n") -> str:
    """The rows of the columns (of the same length), their cells joined by ``sep``, each row
    ended by ``end``, in one string."""
    if not len(columns) or not columns[0].shape[0]:
        return ""
    rows = columns[0].shape[0]
    parts: list[np.ndarray] = []
    for k, column in enumerate(columns):
        parts += [column, constant(sep if k < len(columns) - 1 else end, rows)]
    matrix = np.concatenate(parts, axis=1)
    return matrix[matrix != 0].tobytes().decode("utf-8")
