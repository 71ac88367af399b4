"""Server-side SVG charts for the portal pages (matplotlib, no JavaScript needed to read them).

Every function takes plain data (what the views return) and gives an inline ``<svg>`` string
with labelled axes. Colours come from the Okabe-Ito palette and the cividis colour map, both
distinguishable with the common colour-vision deficiencies; series also differ by marker or
line style, so no information is carried by colour alone. Rendered charts are cached by their
input, so a busy leaderboard renders each chart once per change of the stored results.
"""

from __future__ import annotations

import hashlib
import io
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")
from matplotlib.figure import Figure  # noqa: E402  (after choosing the backend)

OKABE_ITO = {"blue": "#0072B2", "orange": "#E69F00", "green": "#009E73", "vermillion": "#D55E00",
             "purple": "#CC79A7", "sky": "#56B4E9", "yellow": "#F0E442", "black": "#000000"}
SERIES = [OKABE_ITO[c] for c in ("blue", "vermillion", "green", "purple", "orange", "sky", "black")]
MARKERS = ["o", "s", "^", "D", "v", "P", "X"]
LINESTYLES = ["-", "--", "-.", ":", (0, (5, 1)), (0, (3, 1, 1, 1, 1, 1)), (0, (1, 1))]

matplotlib.rcParams.update({
    "svg.fonttype": "none",  # text stays text: searchable, scalable, read by screen readers
    "text.parse_math": False,  # run tags are user input: "$" is a character, not TeX
    "svg.hashsalt": "cranfield",  # stable element ids, so equal charts are equal bytes
    "font.size": 9, "axes.titlesize": 10, "axes.labelsize": 9,
    "axes.spines.top": False, "axes.spines.right": False,
})

_CACHE: OrderedDict[str, str] = OrderedDict()
_LOCK = threading.Lock()
_CACHE_SIZE = 256


def _cached(kind: str, data: Any, draw: Callable[[], Figure], label: str) -> str:
    key = kind + hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()
    with _LOCK:
        if key in _CACHE:
            _CACHE.move_to_end(key)
            return _CACHE[key]
    svg = _to_svg(draw(), label)
    with _LOCK:
        _CACHE[key] = svg
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return svg


def _to_svg(fig: Figure, label: str) -> str:
    out = io.StringIO()
    fig.savefig(out, format="svg", bbox_inches="tight", metadata={"Date": None, "Title": label})
    text = out.getvalue()
    svg = text[text.index("<svg"):]
    # An accessible name for the whole image; the page carries the data as a table too.
    head_end = svg.index(">")
    return svg[:head_end] + f' role="img" aria-label="{_attr(label)}"' + svg[head_end:]


def _attr(text: str) -> str:
    return text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")


def _figure(width: float, height: float) -> Figure:
    return Figure(figsize=(width, height), layout="constrained")


# ---------------------------------------------------------------------------------- charts
#: A chart drawn for a phone is this many inches wide: 3.65 in = 263 pt = 350 CSS px (saved with its
#: tight bounding box, a few points more), within the 366 px of content of a 390 px screen, so it is
#: shown at its drawn size (text of 7 to 10 pt stays 9 px or more).
PHONE_WIDTH = 3.65


def for_each_width(wide: str, narrow: str) -> str:
    """A chart drawn twice, for a laptop and for a phone: the page's style shows one of the two
    (``.chart-wide`` above 640 px, ``.chart-narrow`` below; the other is not displayed, so it is
    neither seen nor read out)."""
    return f'<div class="chart-wide">{wide}</div><div class="chart-narrow">{narrow}</div>'


def interval_chart(rows: Sequence[dict[str, Any]], metric: str, narrow: bool = False) -> str:
    """The leaderboard's means with their 95% intervals, best run on top; baselines as squares.

    The interval drawn is the board's (``service.evaluation.publishing.board_intervals``): the stored bootstrap
    interval, else the t interval truncated at the metric's range, a truncated end marked with a
    bar at the bound. No point or line lies outside the metric's range. ``narrow``: drawn for a
    phone's width (:data:`PHONE_WIDTH`), the axis label on two lines."""
    from service.evaluation.publishing.board_intervals import bounds_of, interval_label, interval_view

    limits = bounds_of(metric)
    views = [interval_view(r, limits) for r in rows]
    data = [[r["run"], r["mean"], v["low"], v["high"], bool(r.get("baseline")), v["low_clipped"], v["high_clipped"]]
            for r, v in zip(rows, views)]
    label = interval_label(rows)

    def draw() -> Figure:
        n = max(len(data), 1)
        fig = _figure(PHONE_WIDTH if narrow else 7.0, (1.2 if narrow else 0.9) + 0.24 * n)
        ax = fig.add_subplot()
        for i, (run, mean, lo, hi, base, lo_cut, hi_cut) in enumerate(data):
            y = n - 1 - i
            colour = OKABE_ITO["vermillion"] if base else OKABE_ITO["blue"]
            if lo is not None and hi is not None:
                ax.plot([lo, hi], [y, y], color=colour, linewidth=1.6, solid_capstyle="butt")
                for end, cut in ((lo, lo_cut), (hi, hi_cut)):
                    if cut:  # a t interval truncated at the metric's range: a bar at the bound
                        ax.plot([end], [y], marker="|", color=colour, markersize=9, markeredgewidth=1.6)
            ax.plot([mean], [y], marker="s" if base else "o", color=colour, markersize=5)
        ax.set_yticks(range(n), [d[0] + (" (baseline)" if d[4] else "") for d in reversed(data)] or [""])
        if narrow:  # in three short lines, within the phone's width
            ax.set_xlabel(f"{metric}: mean over topics,\nwith 95% interval\n({label.replace('95% ', '')})", fontsize=9)
            ax.tick_params(axis="x", labelsize=8)
        else:
            ax.set_xlabel(f"{metric}: mean over topics, with 95% interval ({label.replace('95% ', '')})")
        view = ax.get_xlim()  # no tick labelled with a value the metric cannot take
        ticks = [round(t, 12) for t in ax.get_xticks()]  # (0.2 * 5 is 1.0000000000000002)
        ax.set_xticks([t for t in ticks if limits[0] <= t <= limits[1] and view[0] <= t <= view[1]])
        ax.set_xlim(view)
        ax.grid(axis="x", color="#dddddd", linewidth=0.6)
        ax.set_axisbelow(True)
        return fig

    return _cached("interval", [data, metric, label, narrow], draw, f"{metric} means with their {label}, by run")


def per_topic_chart(topics: Sequence[str], values: Sequence[float | None], median: Sequence[float | None],
                    best: Sequence[float | None], run: str, metric: str,
                    marks: Sequence[str | None] = (), narrow: bool = False) -> str:
    """A run's score per topic as bars, with the topic's median and best over all runs as markers.

    ``marks`` tells a topic whose bar is not a score apart from a score of 0: "missing" (the run
    has no line for the topic; it counts as 0) is drawn as a cross, "unscored" (no score) as a
    hollow circle, both on the axis. ``narrow``: drawn for a phone's width (:data:`PHONE_WIDTH`):
    the bars lie along the topics, one row each, and the legend sits under the plot."""
    marks = list(marks) or [None] * len(topics)
    data = [list(topics), list(values), list(median), list(best), run, metric, marks, narrow]

    def draw() -> Figure:
        n = max(len(topics), 1)
        if narrow:
            fig = _figure(PHONE_WIDTH, 1.9 + 0.2 * n)
        else:
            fig = _figure(min(max(6.0, 0.22 * n + 1.5), 14.0), 3.2)
        ax = fig.add_subplot()
        # along x on a laptop, along y (best topic order kept, first at the top) on a phone
        xs = list(range(len(topics))) if not narrow else [n - 1 - i for i in range(len(topics))]
        heights = [v if v is not None else 0.0 for v in values]
        if narrow:
            ax.barh(xs, heights, color=OKABE_ITO["sky"], edgecolor=OKABE_ITO["blue"], linewidth=0.5, label=run)
        else:
            ax.bar(xs, heights, color=OKABE_ITO["sky"], edgecolor=OKABE_ITO["blue"], linewidth=0.5, label=run)

        def points(at: Sequence[int], ys: Sequence[float], **style: Any) -> None:
            ax.plot(*((ys, at) if narrow else (at, ys)), linestyle="none", **style)

        if any(m is not None for m in median):  # shown once the leaderboard is released
            points(xs, [m if m is not None else float("nan") for m in median], marker="|" if narrow else "_",
                   markersize=10, markeredgewidth=2, color=OKABE_ITO["black"], label="median of all runs")
            points(xs, [b if b is not None else float("nan") for b in best], marker="<" if narrow else "v",
                   markersize=5, color=OKABE_ITO["vermillion"], label="best of all runs")
        for kind, marker, label in (("missing", "x", "missing from the run"), ("unscored", "o", "not scored")):
            at = [xs[i] for i, m in enumerate(marks) if m == kind]
            if at:
                points(at, [0.0] * len(at), marker=marker, markersize=7, markeredgewidth=1.6, clip_on=False,
                       color=OKABE_ITO["vermillion"] if kind == "missing" else OKABE_ITO["purple"],
                       markerfacecolor="none" if marker == "o" else None, label=label)
        if narrow:
            ax.set_yticks(xs, list(topics), fontsize=7)
            ax.set_ylabel("topic")
            ax.set_xlabel(metric)
            ax.set_ylim(-0.6, n - 0.4)
            ax.legend(loc="upper left", bbox_to_anchor=(0.0, -0.12 - 1.2 / (1.9 + 0.2 * n)), frameon=False,
                      fontsize=8, ncol=2)
        else:
            ax.set_xticks(xs, list(topics), rotation=90, fontsize=7)
            ax.set_xlabel("topic")
            ax.set_ylabel(metric)
            ax.set_xlim(-0.6, len(topics) - 0.4)
            ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
        return fig

    return _cached("per_topic", data, draw, f"{metric} of {run} per topic against the median and best run")


def topic_difficulty_chart(items: Sequence[dict[str, Any]], own: Sequence[str], metric: str) -> str:
    """Each topic's spread of scores over runs as a box (quartiles, median line, whiskers from the
    least to the best score), topics in the order given (hardest first); the viewer's own runs'
    scores on top, each run with its own colour and marker."""
    data = [[i["topic"], i["min"], i["q1"], i["median"], i["q3"], i["best"], [i["own"].get(r) for r in own]]
            for i in items]
    runs = list(own)

    def draw() -> Figure:
        n = max(len(data), 1)
        fig = _figure(min(max(6.0, 0.26 * n + 1.5), 14.0), 3.4)
        ax = fig.add_subplot()
        ax.bxp([{"label": d[0], "whislo": d[1], "q1": d[2], "med": d[3], "q3": d[4], "whishi": d[5], "fliers": []}
                for d in data], positions=range(len(data)), widths=0.6, showfliers=False, patch_artist=True,
               boxprops={"facecolor": "#dbe9f4", "edgecolor": OKABE_ITO["blue"], "linewidth": 0.8},
               medianprops={"color": OKABE_ITO["black"], "linewidth": 1.6},
               whiskerprops={"color": OKABE_ITO["blue"], "linewidth": 0.8},
               capprops={"color": OKABE_ITO["blue"], "linewidth": 0.8})
        for k, run in enumerate(runs):
            style = series_style(k + 1)
            xs = [i for i, d in enumerate(data) if d[6][k] is not None]
            ax.plot(xs, [data[i][6][k] for i in xs], linestyle="none", marker=style["marker"], markersize=5,
                    color=style["color"], markeredgecolor="black", markeredgewidth=0.4, label=f"{run} (yours)")
        ax.set_xticks(list(range(len(data))), [d[0] for d in data] or [""], rotation=90, fontsize=7)
        ax.set_xlim(-0.6, len(data) - 0.4)
        ax.set_xlabel("topic, hardest (lowest median) first")
        ax.set_ylabel(metric)
        ax.grid(axis="y", color="#eeeeee", linewidth=0.6)
        ax.set_axisbelow(True)
        if runs:
            ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False, fontsize=8)
        return fig

    return _cached("topics", [data, runs, metric], draw,
                   f"{metric} per topic over the runs: boxes of the quartiles, whiskers to the least and best score")


def gain_curve_chart(series: dict[str, dict[str, Sequence[float]]], depth: int, log_base: float = 2) -> str:
    """J&K's curves: average DCG by rank for the run, the best run and the ideal ranking (left),
    and their normalised nDCG curves (right). ``series``: name -> {"dcg": [...], "ndcg": [...]}."""
    cut = min(depth, 200)
    data = {k: {kk: list(v[kk])[:cut] for kk in ("dcg", "ndcg") if kk in v} for k, v in series.items()}

    def draw() -> Figure:
        fig = _figure(8.5, 3.2)
        left, right = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
        for i, (name, curves) in enumerate(data.items()):
            style = dict(color=SERIES[i % len(SERIES)], linestyle=LINESTYLES[i % len(LINESTYLES)], linewidth=1.5)
            if "dcg" in curves:
                left.plot(range(1, len(curves["dcg"]) + 1), curves["dcg"], label=name, **style)
            if "ndcg" in curves:
                right.plot(range(1, len(curves["ndcg"]) + 1), curves["ndcg"], label=name, **style)
        left.set_xlabel("rank")
        left.set_ylabel(f"average DCG (log base {log_base:g})")
        left.set_title("DCG curves")
        right.set_xlabel("rank")
        right.set_ylabel("average nDCG")
        right.set_ylim(0, 1.02)
        right.set_title("nDCG curves")
        left.legend(frameon=False, fontsize=8)
        for ax in (left, right):
            ax.grid(color="#eeeeee", linewidth=0.6)
        return fig

    return _cached("curves", [data, depth, log_base], draw, "DCG and nDCG curves against the ideal and the best run")


def difference_chart(differences: dict[str, float], a: str, b: str, metric: str,
                     missing: Sequence[str] = ()) -> str:
    """Per-topic differences a - b, sorted: wins above the axis, losses below; a topic of
    ``missing`` (a run has no line for it: no win or loss) grey with crosses, "(missing)" in its
    label."""
    items = sorted(differences.items(), key=lambda kv: -kv[1])
    gone = set(missing)

    def draw() -> Figure:
        n = max(len(items), 1)
        fig = _figure(min(max(6.0, 0.2 * n + 1.5), 14.0), 3.0)
        ax = fig.add_subplot()
        colours = ["#bbbbbb" if t in gone else OKABE_ITO["blue"] if v > 0 else OKABE_ITO["orange"] for t, v in items]
        hatches = ["xx" if t in gone else "" if v > 0 else "//" for t, v in items]
        bars = ax.bar(range(len(items)), [v for _, v in items], color=colours, edgecolor="#333333", linewidth=0.4)
        for bar, hatch in zip(bars, hatches):
            bar.set_hatch(hatch)
        ax.axhline(0, color="#333333", linewidth=0.8)
        ax.set_xticks(range(len(items)), [f"{t} (missing)" if t in gone else t for t, _ in items], rotation=90,
                      fontsize=7)
        ax.set_xlabel("topic (sorted by difference)")
        ax.set_ylabel(f"{metric}: {a} − {b}")
        ax.set_xlim(-0.6, len(items) - 0.4)
        return fig

    return _cached("diff", [items, a, b, metric, sorted(gone)], draw,
                   f"per-topic {metric} differences of {a} minus {b}" + (
                       f" ({len(gone)} topics missing from a run, marked)" if gone else ""))


#: The heat map's colour bins of p: each decade below 0.05 gets its own colour, so small
#: p-values are told apart (a linear scale spends everything below 0.2 on one colour).
P_BINS = (0.0, 0.001, 0.01, 0.05, 0.1, 0.2, 0.5, 1.0)


def p_value_bins(alpha: float) -> list[float]:
    """The colour bins' edges: :data:`P_BINS` with ``alpha`` as an edge, so a colour never holds
    both significant and non-significant pairs."""
    return sorted(set(P_BINS) | {float(alpha)}) if 0 < alpha < 1 else list(P_BINS)


def p_value_norm(alpha: float):  # type: ignore[no-untyped-def]
    """The heat map's colour scale: one colour of cividis per bin of :func:`p_value_bins`."""
    from matplotlib.colors import BoundaryNorm

    bins = p_value_bins(alpha)
    return BoundaryNorm(bins, ncolors=len(bins) - 1)


def p_value_heatmap(runs: Sequence[str], p: Sequence[Sequence[float | None]], alpha: float, metric: str,
                    test: str, *, correction: str | None = "none", resamples: int | None = None,
                    undecided: Sequence[Sequence[bool]] | None = None) -> str:
    """Every run pair's p-value as the stored test computed it; cells below alpha are marked with a
    dot, and pairs whose verdict is ``undecided`` (the Monte Carlo p still straddles alpha at the
    largest B) with a "?" instead, whichever side of alpha their p lies: they count as not
    significant. The title names the test, B (when it resamples), alpha and the correction as
    stored with the test; the colour scale is binned (0.001, 0.01, alpha, 0.1, 0.2, 0.5) with alpha
    marked."""
    from service.metrics.stats.differences import adjusted, comparisons, correction_tag, named_test, p_value_label

    marks = [[bool(v) for v in row] for row in undecided] if undecided else None
    data = [list(runs), [list(r) for r in p], alpha, metric, test, correction, resamples, marks]
    label = p_value_label(test, correction, comparisons(len(runs)))
    title = f"{named_test(test, resamples)}, α = {alpha:g}\n{label.replace('p-values', f'p-values of {metric}', 1)}"

    def draw() -> Figure:
        import numpy as np

        n = max(len(runs), 1)
        size = min(max(4.5, 0.22 * n + 2.5), 16.0)
        fig = _figure(size + 1.2, size)
        ax = fig.add_subplot()
        m = np.array([[np.nan if v is None else v for v in row] for row in p], dtype=float).reshape(len(runs),
                                                                                                   len(runs))
        np.fill_diagonal(m, np.nan)  # a run against itself: no test, drawn blank
        bins = p_value_bins(alpha)
        cmap = matplotlib.colormaps["cividis"].resampled(len(bins) - 1).with_extremes(bad="#f2f2f2")
        image = ax.imshow(m, cmap=cmap, norm=p_value_norm(alpha), interpolation="nearest")
        open_ = np.zeros(m.shape, dtype=bool) if marks is None else np.array(marks, dtype=bool).reshape(m.shape)
        np.fill_diagonal(open_, False)
        ys, xs = np.nonzero((m < alpha) & ~open_)
        qy, qx = np.nonzero(open_)
        if (len(xs) or len(qx)) and n <= 60:
            if len(xs):
                ax.scatter(xs, ys, s=max(4, 60 - n), color="white", edgecolors="black", linewidths=0.4,
                           label=f"significant ({'adjusted ' if adjusted(test, correction) else ''}p < {alpha:g})")
            if len(qx):
                ax.scatter(qx, qy, s=max(9, 90 - n), marker="$?$", color="white", edgecolors="black", linewidths=0.3,
                           label="undecided (p still straddles α at the largest B)")
            # Above the matrix, clear of the rotated run names under it.
            ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), frameon=False, fontsize=8, borderaxespad=0.2)
        fontsize = 8 if n <= 30 else 6 if n <= 60 else 4
        ax.set_xticks(range(len(runs)), list(runs), rotation=90, fontsize=fontsize)
        ax.set_yticks(range(len(runs)), list(runs), fontsize=fontsize)
        ax.set_xlabel("runs in leaderboard order")
        ax.set_title(title, fontsize=9, loc="left", pad=(18 if len(xs) and len(qx) == 0 else 30 if len(qx) else 6)
                     if n <= 60 else 6)
        bar = fig.colorbar(image, ax=ax, shrink=0.8, ticks=bins, spacing="uniform",
                           label=f"p-value ({correction_tag(test, correction)}); binned scale")
        bar.ax.set_yticklabels([f"{b:g}" for b in bins], fontsize=7)
        bar.ax.axhline(alpha, color=OKABE_ITO["vermillion"], linewidth=2.0)
        bar.ax.text(-0.15, alpha, "α", transform=bar.ax.get_yaxis_transform(), ha="right", va="center",
                    color=OKABE_ITO["vermillion"], fontsize=9, fontweight="bold")
        return fig

    return _cached("pheat", data, draw, f"heat map of {test} p-values for {metric} over all run pairs ({label})")


def tau_heatmap(metrics: Sequence[str], tau: dict[tuple[str, str], float], threshold: float | None) -> str:
    """Kendall's tau between the system rankings of every pair of metrics, values written in the cells."""
    names = list(metrics)
    data = [names, sorted([list(k) + [v] for k, v in tau.items()]), threshold]

    def draw() -> Figure:
        import numpy as np

        n = len(names)
        m = np.eye(n)
        for i, a in enumerate(names):
            for j, b in enumerate(names):
                if i != j:
                    v = tau.get((a, b), tau.get((b, a)))
                    m[i, j] = np.nan if v is None else v
        size = min(max(3.5, 0.55 * n + 2.0), 14.0)
        fig = _figure(size + 1.0, size)
        ax = fig.add_subplot()
        low = float(np.nanmin(m)) if n else 0.0
        vmin = -1.0 if low < 0 else 0.0  # most tau values are positive: spend the colour range there
        image = ax.imshow(m, cmap="cividis", vmin=vmin, vmax=1.0, interpolation="nearest")
        for i in range(n):
            for j in range(n):
                if not np.isnan(m[i, j]):
                    ax.text(j, i, f"{m[i, j]:.2f}", ha="center", va="center", fontsize=7,
                            color="white" if m[i, j] < vmin + 0.45 * (1 - vmin) else "black")
        ax.set_xticks(range(n), names, rotation=90)
        ax.set_yticks(range(n), names)
        title = "Kendall's tau between the metrics' system rankings"
        if threshold is not None:
            title += f"\n(significant at 0.01 above {threshold:.3f})"
        ax.set_title(title)
        fig.colorbar(image, ax=ax, shrink=0.7, label="Kendall's tau")
        return fig

    return _cached("tau", data, draw, "heat map of Kendall's tau between metrics")


def series_style(i: int) -> dict[str, Any]:
    """The i-th series' colour, dash and marker: no two of the first 343 series share all three,
    and the first 49 already differ in colour and dash (the markers come on top)."""
    colour = SERIES[i % len(SERIES)]
    dash = LINESTYLES[(i + i // len(SERIES)) % len(LINESTYLES)]
    marker = MARKERS[(i + 2 * (i // len(SERIES)) + 3 * (i // len(SERIES) ** 2)) % len(MARKERS)]
    return {"color": colour, "linestyle": dash, "marker": marker}


def asl_styles(names: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The ASL chart's style of each curve, in the order given (the legend's order)."""
    return {name: series_style(i) for i, name in enumerate(names)}


def asl_chart(curves: dict[str, Sequence[Sequence[float]]], alpha: float, pairs: int) -> str:
    """Sakai's ASL curves: each metric's achieved significance levels over the run pairs, sorted.
    Each curve has its own colour, dash and marker; the legend sits beside the axes, in the order
    of ``curves``."""
    data = [{k: [list(p) for p in v] for k, v in curves.items()}, alpha, pairs]
    styles = asl_styles(list(curves))

    def draw() -> Figure:
        fig = _figure(8.0, 3.6)
        ax = fig.add_subplot()
        count = max(len(curves), 1)
        for i, (name, points) in enumerate(curves.items()):
            step = max(1, len(points) // 6)  # a few markers per curve, staggered between the curves
            ax.plot([p[0] for p in points], [p[1] for p in points], label=name, linewidth=1.4, markersize=4,
                    markevery=((i * step) // count % step, step), **styles[name])
        ax.axhline(alpha, color="#555555", linewidth=0.8, linestyle=":")
        ax.text(1, alpha, f" α = {alpha:g}", va="bottom", fontsize=8)
        ax.set_xlabel(f"run pairs sorted by ASL (of {pairs})")
        ax.set_ylabel("achieved significance level (ASL)")
        ax.set_ylim(0, max(0.1, 2 * alpha))  # the low end, as in Sakai's figures: where the curves cross alpha
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, fontsize=8, handlelength=3.2)
        ax.grid(color="#eeeeee", linewidth=0.6)
        return fig

    return _cached("asl", data, draw, "ASL curves of the metrics (paired bootstrap)")


def reduction_chart(rows: Sequence[dict[str, Any]]) -> str:
    """The reduced-judgment experiment: each metric's discriminative power (left) and Kendall's
    tau with its full-judgment ranking (right) against the share of judgments kept."""
    data = [[r["metric"], r["kept"], r["power"], r["tau_vs_full"]] for r in rows]

    def draw() -> Figure:
        fig = _figure(8.5, 3.3)
        left, right = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
        metrics = list(dict.fromkeys(d[0] for d in data))
        for i, m in enumerate(metrics):
            points = sorted((d[1], d[2], d[3]) for d in data if d[0] == m)
            style = dict(color=SERIES[i % len(SERIES)], linestyle=LINESTYLES[i % len(LINESTYLES)],
                         marker=MARKERS[i % len(MARKERS)], markersize=4, linewidth=1.3, label=m)
            left.plot([p[0] for p in points], [100 * p[1] for p in points], **style)
            right.plot([p[0] for p in points], [p[2] for p in points], **style)
        for ax in (left, right):
            ax.set_xlabel("judgments kept (%)")
            ax.invert_xaxis()
            ax.grid(color="#eeeeee", linewidth=0.6)
        left.set_ylabel("discriminative power (%)")
        right.set_ylabel("Kendall's tau with the full ranking")
        left.legend(frameon=False, fontsize=7, ncols=2)
        return fig

    return _cached("reduction", data, draw, "discriminative power and Kendall's tau against the judgments kept")

