"""Which interval of a run's mean a board draws, and how it is shown without impossible values.

A stored score carries two intervals of the run's mean over its scored topics
(docs/statistics.md, "Intervals of a run's mean"): the Student t interval (``ci_low``,
``ci_high``) and, for results stored since revision 0012, a bootstrap interval (``boot_low``,
``boot_high``, ``boot_method``, ``boot_resamples``). The bootstrap interval of a mean never leaves
the metric's range; the t interval can (RR [0.68, 1.0038]). So a board draws the bootstrap
interval when it is stored, else the t interval, and shows a t interval's end beyond the range
at the bound, marked as truncated. The API returns the raw figures with the metric's bounds.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from service.errors import InvalidMeasure
from service.metrics import bounds as metric_bounds
from service.metrics.stats.differences import bootstrap_method_name

LEVEL = 0.95  # the stored intervals' level (t and bootstrap alike)
TRUNCATED_NOTE = "† t interval truncated at the metric's range"


def bounds_of(metric: str) -> tuple[float, float]:
    """The metric's range of values, (0, inf) for a name that cannot be read (an old snapshot)."""
    try:
        return metric_bounds(metric)
    except InvalidMeasure:  # a stored name the registry no longer knows: no clipping beyond 0..inf
        return (0.0, math.inf)


def bounds_doc(bounds: tuple[float, float]) -> dict[str, float | None]:
    """The bounds as JSON has them: an infinite end is null."""
    low, high = bounds
    return {"low": low if math.isfinite(low) else None, "high": high if math.isfinite(high) else None}


def _clip(value: float | None, bounds: tuple[float, float]) -> tuple[float | None, bool]:
    if value is None:
        return None, False
    low, high = bounds
    if value < low:
        return low, True
    if value > high:
        return high, True
    return value, False


def interval_view(row: Mapping[str, Any], bounds: tuple[float, float]) -> dict[str, Any]:
    """What a board shows of one row: the drawn interval (``kind`` "bootstrap", "t" or None when
    there is none) and the t interval, each end within ``bounds`` (a t end beyond them is shown
    at the bound, ``t_low_clipped`` / ``t_high_clipped`` set)."""
    t_low, low_cut = _clip(row.get("ci_low"), bounds)
    t_high, high_cut = _clip(row.get("ci_high"), bounds)
    view: dict[str, Any] = {"t_low": t_low, "t_high": t_high, "t_low_clipped": low_cut, "t_high_clipped": high_cut}
    boot_low, boot_high = row.get("boot_low"), row.get("boot_high")
    if boot_low is not None and boot_high is not None:
        view.update(kind="bootstrap", low=_clip(boot_low, bounds)[0], high=_clip(boot_high, bounds)[0],
                    low_clipped=False, high_clipped=False)
    elif t_low is not None and t_high is not None:
        view.update(kind="t", low=t_low, high=t_high, low_clipped=low_cut, high_clipped=high_cut)
    else:
        view.update(kind=None, low=None, high=None, low_clipped=False, high_clipped=False)
    return view


def bootstrap_name(method: str | None, resamples: int | None) -> str:
    """E.g. "95% BCa bootstrap interval, B = 1000"."""
    name = bootstrap_method_name(method or "")
    b = f", B = {resamples}" if resamples else ""
    return f"{LEVEL:.0%} {name} bootstrap interval{b}".replace("  ", " ")


T_NAME = f"{LEVEL:.0%} t interval"


def interval_label(rows: Iterable[Mapping[str, Any]]) -> str:
    """The interval a board draws, in words: the bootstrap interval when its rows store one, the
    t interval otherwise; rows evaluated before bootstrap intervals were stored are named."""
    kinds = {(r.get("boot_method"), r.get("boot_resamples")) for r in rows
             if r.get("boot_low") is not None and r.get("boot_high") is not None}
    with_t = [r for r in rows if (r.get("boot_low") is None or r.get("boot_high") is None)
              and r.get("ci_low") is not None]
    if not kinds:
        return T_NAME
    label = "; ".join(bootstrap_name(m, b) for m, b in sorted(kinds, key=lambda k: (str(k[0]), k[1] or 0)))
    if with_t:
        label += f" ({T_NAME} for runs evaluated before bootstrap intervals were stored)"
    return label


#: A board row's intervals by the names the API, the CSV, the LaTeX note and ``cranfield
#: leaderboard`` give them (issue 25, item 5): the kind first (t, boot), then what it is. The old
#: names (``ci_low``, ``boot_low``, ...) stay in the API beside them: frozen snapshots hold them.
INTERVAL_FIELDS = {"t_ci_low": "ci_low", "t_ci_high": "ci_high", "boot_ci_low": "boot_low",
                   "boot_ci_high": "boot_high", "boot_ci_method": "boot_method", "boot_ci_resamples": "boot_resamples"}


def interval_fields(row: Mapping[str, Any]) -> dict[str, Any]:
    """A row's intervals under their named fields (:data:`INTERVAL_FIELDS`), as stored (the t
    interval unclipped)."""
    return {new: row.get(new, row.get(old)) for new, old in INTERVAL_FIELDS.items()}


def truncated_ends(view: Mapping[str, Any]) -> str:
    """Which ends of an :func:`interval_view`'s t interval are shown at the bound: "low",
    "high", "both" or "" (the ``t_ci_truncated`` column of the CSV and of ``cranfield leaderboard``)."""
    return {(True, True): "both", (True, False): "low", (False, True): "high"}.get(
        (bool(view["t_low_clipped"]), bool(view["t_high_clipped"])), "")
