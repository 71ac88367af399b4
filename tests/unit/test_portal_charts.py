"""The ASL-curve chart and the significance heat map (service/portal/charts.py; issue 14, items 2
and 6), checked on the drawn matplotlib figures: styles, legend placement, colour scale, labels."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import BoundaryNorm, to_hex
from matplotlib.figure import Figure

from service.portal import charts

DEFAULT_METRICS = ["AP", "Q", "nDCG@1000", "nDCG@10", "MSnDCG@10", "nERR@10", "Pplus", "bpref", "Q'", "P@10", "RR"]


@pytest.fixture
def drawn(monkeypatch: pytest.MonkeyPatch) -> list[Figure]:
    """The figures the chart functions draw (instead of their SVG), laid out as when saved."""
    figures: list[Figure] = []

    def keep(fig: Figure, label: str) -> str:
        FigureCanvasAgg(fig).draw()  # lays the figure out (constrained layout) as saving does
        figures.append(fig)
        return f"<svg aria-label='{label}'></svg>"

    monkeypatch.setattr(charts, "_to_svg", keep)
    monkeypatch.setattr(charts, "_CACHE", type(charts._CACHE)())
    return figures


def test_every_series_style_is_unique() -> None:
    styles = [tuple(map(str, charts.series_style(i).values())) for i in range(7**3)]
    assert len(set(styles)) == len(styles)
    first = [(s[0], s[1]) for s in styles[:49]]  # the first 49 already differ in colour and dash
    assert len(set(first)) == 49
    # neighbours differ in every one of the three, so no curve is told from the next by one cue alone
    for i in range(48):
        assert all(x != y for x, y in zip(styles[i], styles[i + 1])), i


def test_the_asl_curves_have_distinct_styles_and_the_legend_beside_the_axes(drawn: list[Figure]) -> None:
    rng = np.random.default_rng(0)
    curves = {m: [[i + 1, float(v)] for i, v in enumerate(np.sort(rng.uniform(0, 0.2, 28)))] for m in DEFAULT_METRICS}
    charts.asl_chart(curves, 0.05, 28)
    fig = drawn[-1]
    ax = fig.axes[0]
    lines = [ln for ln in ax.get_lines() if ln.get_label() in curves]
    assert [ln.get_label() for ln in lines] == DEFAULT_METRICS
    styles = [(to_hex(ln.get_color()), str(ln.get_linestyle()), str(ln._dash_pattern), ln.get_marker())
              for ln in lines]
    for (i, a), (j, b) in itertools.combinations(enumerate(styles), 2):
        assert a != b, (DEFAULT_METRICS[i], DEFAULT_METRICS[j], a)
    # AP and bpref (0 and 7), Q and Q' (1 and 8) used to share colour and dash
    assert styles[0][:3] != styles[7][:3] and styles[1][:3] != styles[8][:3]
    renderer = fig.canvas.get_renderer()
    legend = ax.get_legend().get_window_extent(renderer)
    assert legend.x0 >= ax.get_window_extent(renderer).x1  # outside the axes, not over the curves
    assert legend.x1 <= fig.bbox.x1 + 1  # and inside the figure


def test_the_heat_map_resolves_small_p_values_and_marks_alpha(drawn: list[Figure]) -> None:
    assert charts.p_value_bins(0.05) == [0.0, 0.001, 0.01, 0.05, 0.1, 0.2, 0.5, 1.0]
    assert 0.025 in charts.p_value_bins(0.025)  # alpha is always a bin edge
    norm = charts.p_value_norm(0.05)
    assert isinstance(norm, BoundaryNorm)
    colours = [int(norm(v)) for v in (0.0005, 0.005, 0.03, 0.07, 0.15, 0.3, 0.9)]
    assert len(set(colours)) == 7  # every bin its own colour (linearly, all of these below 0.2 were one)
    assert int(norm(0.049)) != int(norm(0.05))  # significant and not never share a colour

    runs = [f"run-with-a-long-name-{i}" for i in range(8)]
    p = np.full((8, 8), 0.5)
    p[0, 1:] = p[1:, 0] = [0.0004, 0.004, 0.02, 0.06, 0.15, 0.3, 0.8]
    charts.p_value_heatmap(runs, p.tolist(), 0.05, "AP", "bootstrap", correction="none", resamples=1000)
    fig = drawn[-1]
    ax, bar = fig.axes
    title = ax.get_title(loc="left")
    assert "paired bootstrap test (studentised), B = 1000, α = 0.05" in title
    assert "no correction for multiple comparisons" in title and "adjusted" not in title
    assert bar.get_ylabel() == "p-value (no correction); binned scale"
    assert [t.get_text() for t in bar.get_yticklabels()] == ["0", "0.001", "0.01", "0.05", "0.1", "0.2", "0.5", "1"]
    assert any(abs(ln.get_ydata()[0] - 0.05) < 1e-12 for ln in bar.get_lines())  # alpha drawn on the scale
    image = ax.get_images()[0]
    cells = [to_hex(image.cmap(image.norm(v))) for v in p[0, 1:]]
    assert len(set(cells)) == 7
    # the legend of the dots is clear of the run names under the matrix
    renderer = fig.canvas.get_renderer()
    legend = ax.get_legend().get_window_extent(renderer)
    for label in ax.get_xticklabels():
        assert not legend.overlaps(label.get_window_extent(renderer))
    assert legend.y0 >= ax.get_window_extent(renderer).y1 - 1  # above the matrix

    charts.p_value_heatmap(runs, p.tolist(), 0.05, "AP", "t", correction="holm")
    ax, bar = drawn[-1].axes
    assert "paired t-test, α = 0.05" in ax.get_title(loc="left") and "B = " not in ax.get_title(loc="left")
    assert "Holm-adjusted for the 28 comparisons" in ax.get_title(loc="left")
    assert bar.get_ylabel() == "p-value (Holm-adjusted); binned scale"
    charts.p_value_heatmap(runs, p.tolist(), 0.05, "AP", "tukey", correction="none", resamples=500)
    ax, bar = drawn[-1].axes
    assert "randomised Tukey HSD test, B = 500" in ax.get_title(loc="left")
    assert "adjusted" not in ax.get_title(loc="left") + bar.get_ylabel()


def test_the_heat_map_svg_is_labelled_with_the_correction() -> None:
    svg = charts.p_value_heatmap(["a", "b", "c"], [[1, 0.01, 0.2], [0.01, 1, 0.03], [0.2, 0.03, 1]], 0.05, "AP",
                                 "bootstrap", correction="bh", resamples=1000)
    assert 'role="img"' in svg and "Benjamini-Hochberg-adjusted for the 3 comparisons" in svg


def test_the_heat_map_marks_undecided_pairs_with_a_question_mark(drawn: list[Figure]) -> None:
    # Issue 37, item 8: an undecided pair (its Monte Carlo p still straddles alpha at the largest
    # B) gets a "?" in the heat map, never the dot of a significant pair, whichever side of alpha
    # its p lies; the letters count it as not significant.
    runs = ["a", "b", "c", "d"]
    p = [[1, 0.01, 0.049, 0.3], [0.01, 1, 0.051, 0.2], [0.049, 0.051, 1, 0.6], [0.3, 0.2, 0.6, 1]]
    undecided = [[False, False, True, False], [False, False, True, False], [True, True, False, False],
                 [False] * 4]
    charts.p_value_heatmap(runs, p, 0.05, "AP", "bootstrap", correction="none", resamples=10_000, undecided=undecided)
    ax = drawn[-1].axes[0]
    dots, questions = ax.collections[0], ax.collections[1]
    # the significant dots: (a, b) and (b, a) only; (a, c) at p = 0.049 is undecided
    assert sorted(map(tuple, dots.get_offsets().tolist())) == [(0.0, 1.0), (1.0, 0.0)]
    assert sorted(map(tuple, questions.get_offsets().tolist())) == [(0.0, 2.0), (1.0, 2.0), (2.0, 0.0), (2.0, 1.0)]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(label.startswith("undecided") for label in labels)
    # without undecided pairs nothing is marked "?"
    charts.p_value_heatmap(runs, p, 0.05, "AP", "bootstrap", correction="none", resamples=10_000)
    ax = drawn[-1].axes[0]
    assert len(ax.collections) == 1  # dots only: (a, b), (a, c) and their mirrors
    assert sorted(map(tuple, ax.collections[0].get_offsets().tolist())) == [(0.0, 1.0), (0.0, 2.0), (1.0, 0.0),
                                                                           (2.0, 0.0)]
