"""The Monte Carlo side of a stored test, as the API and pages read it (issue 25, item 1).

A stored resampling test keeps per pair the B of its p, its Monte Carlo standard error and
whether its verdict is undecided at that B (``Significance.resamples``, ``mc_se``,
``undecided``, ``degenerate``: migration 0020; docs/statistics.md, "Monte Carlo precision").
They are read on demand (a board needs only the adjusted p), a few per process cached. A row
stored before migration 0020 has none: its B is the params' one for every pair, its SE is
computed from p and that B, and no pair is undecided (the former rule made no such claim).
Exact tests have SE 0, no B and are never undecided.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from service.store.arrays import unpack
from service.store.models import Significance

RESAMPLING_TESTS = ("bootstrap", "randomisation", "tukey")


@dataclass(frozen=True, eq=False)
class Precision:
    """Per pair (condensed, in the stored pair order): B, Monte Carlo SE, undecided, degenerate
    resamples (None where the test has none)."""

    resamples: np.ndarray | None
    mc_se: np.ndarray
    undecided: np.ndarray  # bool
    degenerate: np.ndarray | None
    sequential: bool  # stored under the sequential rule (else: a row from before it)


_CACHE: dict[tuple[str, int], Precision] = {}


def precision(s: Session, sig: Any) -> Precision:
    """The Monte Carlo fields of the stored test ``sig`` (a ``reading.StoredTest``)."""
    pairs = int(sig.p_condensed.size)
    row_id = getattr(sig, "row_id", None)
    key = (str(s.get_bind().url), int(row_id)) if row_id is not None else None
    if key is not None and key in _CACHE:
        return _CACHE[key]
    row = None if row_id is None else s.execute(
        select(Significance.resamples, Significance.mc_se, Significance.undecided, Significance.degenerate,
               Significance.p).where(Significance.id == row_id)).one_or_none()
    if sig.test not in RESAMPLING_TESTS or (sig.test == "randomisation" and sig.resamples is None):
        out = Precision(None, np.zeros(pairs), np.zeros(pairs, dtype=bool), None, False)
    elif row is not None and row.resamples is not None:
        out = Precision(unpack(row.resamples), unpack(row.mc_se), unpack(row.undecided) > 0.5,
                        unpack(row.degenerate) if row.degenerate is not None else None, True)
    else:  # stored before migration 0020: one B for all, the SE from the raw p
        b = float(sig.resamples or 0)
        p = unpack(row.p) if row is not None and row.p is not None else sig.p_condensed  # NULL: as adjusted
        se = np.sqrt(p * (1.0 - p) / max(b, 1.0))
        out = Precision(np.full(pairs, b), se, np.zeros(pairs, dtype=bool), None, False)
    if key is not None:
        if len(_CACHE) > 64:
            _CACHE.clear()
        _CACHE[key] = out
    return out


def pair_precision(s: Session, sig: Any, a: str, b: str) -> dict[str, Any] | None:
    """The pair (a, b)'s B, Monte Carlo SE, undecided flag and verdict ("significant", "not
    significant", "undecided"); None if either run was not tested."""
    k = sig.pair(a, b)
    if k is None:
        return None
    prec = precision(s, sig)
    undecided = bool(prec.undecided[k])
    p = float(sig.p_condensed[k])
    return {"resamples": None if prec.resamples is None else int(prec.resamples[k]),
            "mc_se": float(prec.mc_se[k]), "undecided": undecided,
            "degenerate": None if prec.degenerate is None else int(prec.degenerate[k]),
            "verdict": "undecided" if undecided else "significant" if p < sig.alpha else "not significant"}


def matrix_fields(s: Session, sig: Any, positions: np.ndarray) -> dict[str, Any]:
    """The significance matrix's Monte Carlo fields among the runs at ``positions``: per pair B
    (``resamples_matrix``, None for exact tests), ``mc_se`` (0 on the diagonal), ``undecided``
    (False on the diagonal), the bootstrap's ``degenerate`` resamples (None for other tests), with
    the rule they were stored under."""
    prec = precision(s, sig)
    k, diag = sig.positions(positions)

    def pick(values: np.ndarray, fill: Any) -> list[Any]:
        return np.where(diag, fill, values[k]).tolist()

    return {"resamples_matrix": None if prec.resamples is None else
            [[int(v) for v in row] for row in pick(prec.resamples, 0)],
            "mc_se": pick(prec.mc_se, 0.0), "undecided": pick(prec.undecided, False),
            "degenerate": None if prec.degenerate is None else
            [[int(v) for v in row] for row in pick(prec.degenerate, 0)],
            "undecided_pairs": int(prec.undecided.sum()),
            "monte_carlo_rule": "sequential" if prec.sequential else
            ("exact" if prec.resamples is None else "fixed B")}
