"""How a verdict is printed: p-values that never round across alpha, the name of a correction,
the name of an interval by its kind (issue 25, items 3-5; docs/statistics.md, "How verdicts are
printed"). Pure functions of numbers (no HTTP, no database): the portal, the exports, the CLI
and the client all print through them.

:func:`format_p` prints a p-value with the digits needed to show which side of alpha it is on:
p = 0.049995 at alpha = 0.05 is "0.049995", never "0.0500"; p = 0.050001 is "0.050001", never
"0.050"; a p below the floor (0.001, or the power of ten at or below alpha when alpha is
smaller) is "< 0.001". Read back as a number (or as the bound after "<"), the printed text is
on the same side of alpha as p, and equals alpha only when p does.

:func:`verdict_words` is the one place a pair's verdict is put in words, so that a Monte Carlo
"undecided" verdict (a p whose Monte Carlo interval still straddles alpha at the largest B) is
printed the same way everywhere.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

#: The corrections' names and the tests that need none (as ``differences`` has them; this module
#: imports nothing of the core, which prints through it: a test checks they agree).
CORRECTION_NAMES = {"holm": "Holm", "bh": "Benjamini-Hochberg"}
FAMILY_WISE_TESTS = frozenset({"tukey", "friedman"})
#: Below this, a p-value is printed as "< 0.001" (or a smaller power of ten when alpha is smaller).
P_FLOOR = 0.001
#: The fewest decimals a p-value is printed with (more when needed to keep it on its side of alpha).
P_DECIMALS = 3
_TENTHS = {d: 10.0 ** -(d - 1) for d in range(20)}  # below it, d decimals show fewer than 2 digits


@lru_cache(maxsize=64)
def p_floor(alpha: float) -> float:
    """The bound under which p is printed as "< bound": 0.001, or the largest power of ten at or
    below alpha when alpha is smaller, so that "< bound" is always below alpha."""
    if not (alpha > 0 and math.isfinite(alpha)):
        return P_FLOOR
    if alpha >= P_FLOOR:
        return P_FLOOR
    return 10.0 ** math.floor(math.log10(alpha) + 1e-12)


@lru_cache(maxsize=64)
def _bound_text(bound: float) -> str:
    digits = max(0, -math.floor(math.log10(bound) + 1e-12))
    return f"{bound:.{digits}f}"


def format_p(p: float | None, alpha: float, decimals: int = P_DECIMALS, missing: str = "–") -> str:
    """``p`` with at least ``decimals`` decimals, and as many more as needed so that the printed
    number lies on the same side of ``alpha`` as ``p`` (p < alpha stays below alpha; p >= alpha
    stays at or above it) and equals alpha only if p does; "< 0.001" below :func:`p_floor`.
    ``missing`` for None or NaN. At least two significant digits are kept (0.0012, not 0.001)."""
    if p is None:
        return missing
    p = float(p)
    if math.isnan(p):
        return missing
    floor = p_floor(alpha)
    if p < floor:
        return f"< {_bound_text(floor)}"
    below, equal = p < alpha, p == alpha
    # two significant digits at least: more decimals only below 10^-(decimals - 1)
    digits = decimals if p >= _TENTHS.get(decimals, 10.0 ** (1 - decimals)) else max(decimals, 1 - math.floor(math.log10(p)))
    text = f"{p:.{digits}f}"  # the common case, far from alpha: one format, one parse
    shown = float(text)
    if (shown < alpha) == below and (shown == alpha) == equal:
        return text
    for d in range(digits + 1, 18):
        text = f"{p:.{d}f}"
        shown = float(text)
        if (shown < alpha) == below and (shown == alpha) == equal:
            return text
    return repr(p)  # 17 significant digits tell any two doubles apart


def format_p_many(values: Sequence[float], alpha: float, decimals: int = P_DECIMALS, missing: str = "–") -> list[str]:
    """:func:`format_p` of each value, the same texts, faster for many (``cranfield compare``'s
    half a million pairs): a p at least 10^-decimals away from alpha, with two significant digits
    at ``decimals`` and above the floor, cannot round onto or across alpha, so it is formatted
    once without the check."""
    safe_from = p_safe_from(alpha, decimals)
    margin = 10.0 ** -decimals
    spec = f".{decimals}f"
    return [format(p, spec) if p >= safe_from and abs(p - alpha) > margin else format_p(p, alpha, decimals, missing)
            for p in (float(v) for v in values)]


def p_safe_from(alpha: float, decimals: int = P_DECIMALS) -> float:
    """The smallest p that :func:`format_p` prints with plain ``decimals`` decimals when it is more
    than 10^-decimals away from alpha: the floor, or where ``decimals`` still show two
    significant digits."""
    return max(p_floor(alpha), _TENTHS.get(decimals, 10.0 ** (1 - decimals)))


def read_p(text: str) -> tuple[float, bool]:
    """The number a :func:`format_p` text shows and whether it is an upper bound ("< 0.001")."""
    text = text.strip()
    if text.startswith("<"):
        return float(text[1:]), True
    return float(text), False


def correction_name(test: str, correction: str | None) -> str:
    """The correction of a stored test's p-values in words: "Holm", "Benjamini-Hochberg",
    "none: unadjusted", or "family-wise, by the test itself" (Tukey HSD, Nemenyi)."""
    if test in FAMILY_WISE_TESTS:
        return "family-wise, by the test itself"
    if correction in CORRECTION_NAMES:
        return CORRECTION_NAMES[correction]
    return "none: unadjusted"


#: The kinds of interval Cranfield prints, by the name their fields carry (``t_ci_low``, ...).
INTERVAL_KINDS = {"t": "Student t interval", "percentile": "bootstrap percentile interval",
                  "bca": "BCa bootstrap interval"}


def interval_name(kind: str, level: float = 0.95, resamples: int | None = None) -> str:
    """"95% BCa bootstrap interval, B = 1000", "95% Student t interval": an interval named by
    its kind, its level and, for a bootstrap interval, its B."""
    name = f"{100 * level:g}% {INTERVAL_KINDS.get(kind, kind + ' interval')}"
    if kind != "t" and resamples:
        name += f", B = {resamples}"
    return name


def verdict_words(p: float | None, alpha: float, *, verdict: str | None = None,
                  resamples: int | None = None) -> str:
    """A pair's verdict in words: "significant at α = 0.05", "not significant at α = 0.05", or,
    when the stored test says its Monte Carlo p could not settle which side of alpha it is on
    (``verdict`` "undecided"), "undecided at B = 100000 (α = 0.05)". No p: "not tested"."""
    if verdict == "undecided":
        at = f" at B = {resamples}" if resamples else ""
        return f"undecided{at} (α = {alpha:g}): the Monte Carlo p straddles α"
    if p is None or math.isnan(float(p)):
        return "not tested"
    return f"significant at α = {alpha:g}" if p < alpha else f"not significant at α = {alpha:g}"
