"""Shared parameter declarations and small array helpers for the measure kernels.

A kernel has the signature ``kernel(lists, measure, scale) -> (rows,) float64``.
``judged_only`` is applied before the kernel runs (see ``evaluate``), so a kernel
sees the condensed lists when it is set; the cutoff is the kernel's to apply,
because its meaning differs by metric (nDCG also cuts the ideal list, AP@k may
change its normaliser, P@k divides by k).
"""

from __future__ import annotations

import numpy as np

from service.errors import InvalidMeasure
from service.metrics.lists import GainTable, RankedLists, Scale, resolve_gains
from service.metrics.spec import Measure, Param


def at_least_check(lo: float, strict: bool = False):  # type: ignore[no-untyped-def]
    def check(v: float) -> str | None:
        if (v <= lo) if strict else (v < lo):
            return f"must be {'>' if strict else '>='} {lo}"
        return None

    return check


def _probability(v: float) -> str | None:
    return None if 0 < v < 1 else "must lie strictly between 0 and 1"


GAINS = Param("gains", "gains", None, "gain of each level, e.g. {1:1,2:5,3:10}; default: the evaluation's gain profile")
JUDGED_ONLY = Param("judged_only", "bool", False, "evaluate the condensed list: unjudged documents removed (Sakai 2007)")
REL = Param("rel", "int", 1, "lowest level counted as relevant (trec_eval -l)", check=at_least_check(1))
BETA = Param("beta", "float", 1, "blended-ratio weight of cumulative gain; beta=0 reduces Q to AP", check=at_least_check(0))
NORM = Param(
    "norm", "choice", "R", "AP@k/Q@k/genAP@k normaliser: R (trec_eval map_cut) or minRk (NTCIREVAL)", choices=("R", "minRk")
)
BASE = Param("base", "float", 2, "log base a of J&K's discount (no discount at ranks <= a)", check=at_least_check(1, strict=True))
PERSISTENCE = Param("p", "float", 0.95, "RBP persistence", check=_probability)
STOP = Param(
    "stop", "choice", "exp", "ERR stop probability: exp (2^g-1)/2^gmax (Chapelle) or linear g/(gmax+1) (NTCIREVAL)",
    choices=("exp", "linear"),
)

GRADED = (GAINS, JUDGED_ONLY)
BINARY = (REL, JUDGED_ONLY)


def gain_table(m: Measure, scale: Scale) -> GainTable:
    gains = m.get("gains") if "gains" in m.definition.param_map else None
    if gains is None:
        return scale.default_gains
    try:
        return resolve_gains(gains, scale.max_level, str(m))
    except ValueError as exc:
        raise InvalidMeasure(str(exc)) from None


def safe_div(num: np.ndarray, den: np.ndarray | float) -> np.ndarray:
    """num / den, 0 where den is 0 (a topic with nothing to find scores 0)."""
    den_arr = np.broadcast_to(np.asarray(den, dtype=np.float64), np.shape(num))
    out = np.zeros(np.shape(num), dtype=np.float64)
    np.divide(num, den_arr, out=out, where=den_arr != 0)
    return out


def rowsum(a: np.ndarray) -> np.ndarray:
    """Sum of each row, added left to right.

    numpy's ``sum`` adds pairwise in blocks whose layout depends on the row length, so
    the padding of a batch (set by its longest list) would change the last bits of a
    run's score with the runs evaluated beside it. A running sum does not change when
    zeros are appended: a run's scores are bit-identical whatever it is evaluated with.
    """
    if a.shape[1] == 0:
        return np.zeros(a.shape[0])
    return np.cumsum(a, axis=1)[:, -1]


def last(a: np.ndarray) -> np.ndarray:
    """The last column of a (rows, D) cumulative quantity."""
    return a[:, -1]


def at_rank(cum: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """A cumulative (rows, D) quantity at a per-row rank (>= 0; past D it stays at its last value)."""
    rank = np.asarray(rank, dtype=np.int64)
    d = cum.shape[1]
    vals = cum[np.arange(cum.shape[0]), np.clip(rank, 1, d) - 1]
    return np.where(rank > 0, vals, 0.0)


def extend_cum(cum: np.ndarray, k: int) -> np.ndarray:
    """A cumulative (rows, D) quantity over exactly k ranks (repeating the last value past D)."""
    d = cum.shape[1]
    if k <= d:
        return cum[:, :k]
    return np.concatenate([cum, np.repeat(cum[:, -1:], k - d, axis=1)], axis=1)


def rows_num_rel(lists: RankedLists, rel: int = 1) -> np.ndarray:
    return lists.stats.num_rel(rel)[lists.row_topic].astype(np.float64)


def rows_num_nonrel(lists: RankedLists, rel: int = 1) -> np.ndarray:
    return lists.stats.num_nonrel(rel)[lists.row_topic].astype(np.float64)


def first_true(mask: np.ndarray) -> np.ndarray:
    """1-based rank of the first True per row, 0 when there is none."""
    if mask.shape[1] == 0:
        return np.zeros(mask.shape[0], dtype=np.int64)
    idx = np.argmax(mask, axis=1)
    return np.where(mask[np.arange(mask.shape[0]), idx], idx + 1, 0)
