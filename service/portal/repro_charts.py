"""The ER/DeltaRI plane of a reproducibility board (Breuer et al., SIGIR 2020, Fig. 2), as an
inline SVG (issue 28): each pair reproduction a point at (ER, DeltaRI) with its bootstrap
intervals as error bars; the ideal reproduction at (1, 0) marked by the two reference lines."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from service.portal.charts import MARKERS, SERIES, _cached, _figure


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and math.isfinite(v)


def er_dri_plane(rows: Sequence[dict[str, Any]], metric: str) -> str:
    """``rows``: the board's pair rows (``label``, ``effect`` with ER, DeltaRI and their
    intervals); rows without a finite ER and DeltaRI are left out (the table says why)."""
    points = [{"label": r["label"], **{k: r["effect"].get(k) for k in (
        "ER", "ER_low", "ER_high", "DeltaRI", "DeltaRI_low", "DeltaRI_high")}}
              for r in rows if r.get("effect") and _finite(r["effect"].get("ER"))
              and _finite(r["effect"].get("DeltaRI"))]

    def draw():  # type: ignore[no-untyped-def]
        fig = _figure(5.2, 3.6)
        ax = fig.add_subplot()
        ax.axvline(1.0, color="#777777", linewidth=0.8, linestyle="--")
        ax.axhline(0.0, color="#777777", linewidth=0.8, linestyle="--")
        for i, p in enumerate(points):
            color = SERIES[i % len(SERIES)]
            # the intervals as drawn segments, not error bars: a percentile interval need not
            # hold its point estimate (with few topics ER may lie outside it; matplotlib refuses
            # the negative error bar that would make)
            if _finite(p["ER_low"]) and _finite(p["ER_high"]):
                ax.plot([p["ER_low"], p["ER_high"]], [p["DeltaRI"]] * 2, color=color, linewidth=1, marker="|")
            if _finite(p["DeltaRI_low"]) and _finite(p["DeltaRI_high"]):
                ax.plot([p["ER"]] * 2, [p["DeltaRI_low"], p["DeltaRI_high"]], color=color, linewidth=1, marker="_")
            ax.plot([p["ER"]], [p["DeltaRI"]], MARKERS[i % len(MARKERS)], color=color, label=p["label"])
        ax.set_xlabel(f"Effect ratio (ER) on {metric}")
        ax.set_ylabel("ΔRI (original − reproduction)")
        if points:
            # below the axes: a point never hides behind its own name
            ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), fontsize=8, frameon=False,
                      ncols=min(2, len(points)))
        return fig

    label = (f"ER/DeltaRI plane on {metric}: " + "; ".join(
        f"{p['label']} ER {p['ER']:.2f}, DeltaRI {p['DeltaRI']:.2f}" for p in points)) if points else \
        f"ER/DeltaRI plane on {metric}: no pair reproduction with a defined effect"
    return _cached("er_dri", {"points": points, "metric": metric}, draw, label)


def persistence_lines(systems: Sequence[dict[str, Any]], metric: str) -> str:
    """A longitudinal track's systems (:func:`service.evaluation.reproducing.board.longitudinal`):
    each system's mean on ``metric`` in every snapshot, oldest first, one line per system
    (LongEval's persistence view); a snapshot where a mean is hidden or missing breaks the line."""
    series = [{"label": f"{s['team']}: {s['points'][-1]['tag']}" + ("" if s["part"] == "baseline" else " (advanced)"),
               "x": [p["collection_name"] for p in s["points"]],
               "y": [p["mean"] if _finite(p["mean"]) else None for p in s["points"]]} for s in systems]
    series = [s for s in series if any(v is not None for v in s["y"])]
    snapshots = list(dict.fromkeys(x for s in series for x in s["x"]))

    def draw():  # type: ignore[no-untyped-def]
        fig = _figure(5.2, 3.2)
        ax = fig.add_subplot()
        for i, s in enumerate(series):
            xs = [snapshots.index(x) for x in s["x"]]
            ys = [math.nan if v is None else v for v in s["y"]]
            ax.plot(xs, ys, marker=MARKERS[i % len(MARKERS)], color=SERIES[i % len(SERIES)], linewidth=1.2,
                    label=s["label"])
        ax.set_xticks(range(len(snapshots)), snapshots, fontsize=8)
        ax.set_xlabel("Snapshot (collection), oldest first")
        ax.set_ylabel(f"Mean {metric}")
        if series:
            ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.22), fontsize=8, frameon=False,
                      ncols=min(2, len(series)))
        return fig

    label = (f"Mean {metric} per snapshot: " + "; ".join(
        f"{s['label']} " + ", ".join("--" if v is None else f"{v:.3f}" for v in s["y"]) for s in series)
             ) if series else f"Mean {metric} per snapshot: no system with a stored mean"
    return _cached("persistence", {"series": series, "metric": metric}, draw, label)
