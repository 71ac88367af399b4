"""Printed p-values never round across alpha (issue 25, item 3), corrections and intervals are
named (items 4 and 5): service/metrics/stats/presentation.py."""

from __future__ import annotations

import math

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from service.metrics.stats.presentation import (
    correction_name,
    format_p,
    format_p_many,
    interval_name,
    p_floor,
    read_p,
    verdict_words,
)

ALPHAS = st.one_of(st.sampled_from([0.05, 0.01, 0.1, 0.001, 0.0005, 0.005]),
                   st.floats(min_value=1e-6, max_value=0.5, allow_nan=False))


def _same_side(p: float, alpha: float, text: str) -> None:
    shown, bound = read_p(text)
    if bound:  # "< b": p is below b and b is at or below alpha, so p < alpha is told truly
        assert p < shown <= alpha or (p < shown and shown == p_floor(alpha)), (p, alpha, text)
        assert p < alpha, (p, alpha, text)
    else:
        assert (shown < alpha) == (p < alpha), (p, alpha, text)
        assert (shown == alpha) == (p == alpha), (p, alpha, text)


@settings(max_examples=3000, deadline=None)
@given(p=st.floats(min_value=0.0, max_value=1.0, allow_nan=False), alpha=ALPHAS, decimals=st.integers(1, 5))
@example(p=0.049995, alpha=0.05, decimals=4)
@example(p=0.050001, alpha=0.05, decimals=4)
@example(p=math.nextafter(0.05, 0.0), alpha=0.05, decimals=3)
@example(p=math.nextafter(0.05, 1.0), alpha=0.05, decimals=3)
@example(p=0.05, alpha=0.05, decimals=3)
@example(p=0.0004, alpha=0.0005, decimals=3)
@example(p=0.0006, alpha=0.0005, decimals=3)
def test_printed_p_is_on_the_side_of_alpha_p_is_on(p: float, alpha: float, decimals: int) -> None:
    _same_side(p, alpha, format_p(p, alpha, decimals))


@settings(max_examples=500, deadline=None)
@given(alpha=ALPHAS, offset=st.floats(min_value=-1e-3, max_value=1e-3, allow_nan=False))
def test_p_near_alpha_is_on_its_side(alpha: float, offset: float) -> None:
    """The hard region: p within 0.001 of alpha."""
    p = min(max(alpha + offset * alpha, 0.0), 1.0)
    _same_side(p, alpha, format_p(p, alpha))


@pytest.mark.parametrize(("p", "alpha", "text"), [
    (0.049995, 0.05, "0.04999"),  # the case: never "0.0500"
    (0.050001, 0.05, "0.050001"),  # not "0.050", which reads as p = alpha
    (0.05, 0.05, "0.050"),
    (0.3, 0.05, "0.300"),
    (0.0123, 0.05, "0.012"),
    (0.0012, 0.05, "0.0012"),  # two significant digits, not 0.001
    (0.0009, 0.05, "< 0.001"),
    (0.0, 0.05, "< 0.001"),
    (0.00004, 0.0005, "< 0.0001"),  # a tiny alpha: the floor is below it
    (0.0007, 0.0005, "0.00070"),
    (None, 0.05, "–"),
    (float("nan"), 0.05, "–"),
])
def test_format_p_cases(p: float | None, alpha: float, text: str) -> None:
    assert format_p(p, alpha) == text


def test_the_old_formats_rounded_across_alpha() -> None:
    """What the pages and the CLI printed before: the test would fail on them."""
    assert f"{0.049995:.4f}" == "0.0500" and f"{0.04999999:.6g}" == "0.05"
    assert format_p(0.049995, 0.05, 4) != "0.0500" and format_p(0.04999999, 0.05) == "0.04999999"


def test_names() -> None:
    from service.metrics.stats import differences, presentation

    assert presentation.CORRECTION_NAMES == differences.CORRECTION_NAMES
    assert presentation.FAMILY_WISE_TESTS == differences.FAMILY_WISE_TESTS
    assert correction_name("bootstrap", "holm") == "Holm"
    assert correction_name("t", "none") == "none: unadjusted"
    assert correction_name("t", None) == "none: unadjusted"
    assert correction_name("tukey", "holm") == "family-wise, by the test itself"
    assert interval_name("bca", 0.95, 1000) == "95% BCa bootstrap interval, B = 1000"
    assert interval_name("percentile", 0.95, 10000) == "95% bootstrap percentile interval, B = 10000"
    assert interval_name("t", 0.95, 1000) == "95% Student t interval"
    assert verdict_words(0.049995, 0.05) == "significant at α = 0.05"
    assert verdict_words(0.05, 0.05) == "not significant at α = 0.05"
    assert verdict_words(0.05, 0.05, verdict="undecided", resamples=100000).startswith("undecided at B = 100000")


@settings(max_examples=300, deadline=None)
@given(values=st.lists(st.one_of(st.floats(min_value=0.0, max_value=1.0), st.just(float("nan")),
                                 st.floats(min_value=0.049, max_value=0.051)), max_size=50),
       alpha=ALPHAS, decimals=st.integers(1, 5))
def test_format_p_many_gives_format_ps_texts(values: list[float], alpha: float, decimals: int) -> None:
    assert format_p_many(values, alpha, decimals) == [format_p(v, alpha, decimals) for v in values]
