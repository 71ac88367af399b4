"""Multiple-comparison corrections for a family of p-values."""

from __future__ import annotations

from typing import Literal

import numpy as np

Correction = Literal["none", "holm", "bh"]


def adjust(p: np.ndarray, method: Correction = "none") -> np.ndarray:
    """Adjusted p-values: Holm's step-down (family-wise error) or Benjamini-Hochberg (false discovery rate)."""
    p = np.asarray(p, dtype=np.float64)
    m = p.shape[0]
    if method == "none" or m == 0:
        return p.copy()
    order = np.argsort(p, kind="stable")
    ranked = p[order]
    if method == "holm":
        # p_(i) * (m - i + 1), made monotone from the smallest p upwards.
        adj = np.maximum.accumulate(ranked * (m - np.arange(m)))
    elif method == "bh":
        # p_(i) * m / i, made monotone from the largest p downwards.
        adj = np.minimum.accumulate((ranked * m / np.arange(1, m + 1))[::-1])[::-1]
    else:
        raise ValueError(f"correction must be none, holm or bh, not {method!r}")
    out = np.empty(m)
    out[order] = np.minimum(adj, 1.0)
    return out
