"""Monte Carlo precision of resampling p-values, and sequential resampling until verdicts settle.

A resampling test's p = (count + 1)/(B + 1) estimates the p it would give with B -> infinity
(p_inf). With B = 1000 and Holm over 28 pairs the verdict "adjusted p < alpha" of a pair whose
p_inf lies near alpha/28 depends on the seed. :func:`settle` makes a stored verdict the
B -> infinity one with probability at least 1 - ``guarantee`` (docs/statistics.md, "Monte
Carlo precision"):

- Each pair's count of extreme resamples out of its N (informative) resamples is a binomial
  draw with success probability p_inf; its Clopper-Pearson interval at level 1 - gamma covers
  p_inf with probability at least 1 - gamma, whatever p_inf. The interval is widened to hold the
  reported p itself, so the reported p's verdict is the interval's when it settles.
- Holm's, Bonferroni's and Benjamini-Hochberg's adjusted p (and no correction) are
  non-decreasing in every raw p. So if every pair's interval holds its p_inf, the adjusted p of
  each pair evaluated with every raw p at its interval's low end and at its high end bracket
  the B -> infinity adjusted p: where both brackets fall on the same side of alpha, the verdict
  is the B -> infinity verdict. A pair whose two brackets differ *straddles*.
- Stage 0 draws B0 resamples. While pairs straddle, stage s >= 1 draws N_s - N_(s-1) more,
  a chunk at a time, each chunk from a child stream of the seed of its own (the same draws
  whatever else is resampled and whichever thread draws them), so that after
  stage s a pair has exactly the first N_s draws of the stream. The checkpoints N_s
  (:func:`checkpoints`) are fixed before anything is drawn: B0 * sqrt(2)^s, rounded, while
  within ``max_resamples``, then ``max_resamples`` itself (issue 38; they were B0 * 2^s). Only
  the straddling pairs are resampled (a shared null such as Tukey's resamples all pairs). A pair
  that straddles again after sitting out a stage is brought to N_s with the stages it missed
  (regenerated from their streams). Stages stop when nothing straddles, at the last checkpoint,
  or when the stage would pass the work budget ``max_work``; a pair still straddling then is
  *undecided at B = N*.
- The guarantee is spent in two parts (rule 2, issue 38). The first checkpoint spends
  FIRST_SHARE of it over every pair of the ``family`` (every pair of every test settled under
  it, all the metrics of a round; :func:`first_gamma`). Given what the first stage drew, which
  pairs straddle is fixed and the later draws (other streams) are independent of it: each
  test's share of the rest is split over its pairs that straddle after the first checkpoint,
  FINAL_SHARE of it at the last checkpoint and an equal part at each other one
  (:func:`later_gamma`), and a later checkpoint's interval is that of the pair's later draws
  alone, intersected with its first interval. The failure probabilities of all these intervals
  sum to at most the guarantee (a union bound, conditional on the first stage for the later
  part: no independence between pairs is needed, so the metrics may share every draw). Without
  a correction, pair i's verdict can only be wrong through the one tail on the far side of alpha
  from its p_inf, so each tail may spend gamma (the interval's level is 1 - 2 gamma); with a
  correction every pair's verdict depends on every interval's two ends, and each tail spends
  gamma / 2. Hence, with probability at least 1 - guarantee, every settled verdict equals the
  B -> infinity verdict, simultaneously for all pairs (and metrics).
- A futility stop (without a correction, for a test whose pairs are resampled on their own):
  a straddling pair whose chance of settling by the last checkpoint is below FUTILITY
  (:func:`futile`) is left undecided where it is. The pairs that end undecided at the cap are
  the ones closest to alpha, and they took the last, dearest checkpoints; stopping a pair
  never settles it, so the guarantee above is untouched.

The stopping rule is a truncated sequential Monte Carlo test in the sense of Fay, Kim and
Hachey (2007, "Using truncated sequential probability ratio test boundaries for Monte Carlo
implementation of hypothesis tests", JCGS 16(4); R package MChtest) with the error spent along the checkpoints as in
Gandy (2009, "Sequential implementation of Monte Carlo tests with uniformly bounded resampling
risk", JASA): its resampling risk (the probability of a verdict other than the B -> infinity
one) is at most the guarantee for every p_inf, and a pair stops as soon as its interval clears
alpha. The risk is bounded by the union over the checkpoints rather than computed exactly as
Gandy's recursion does (which would allow slightly narrower boundaries);
tests/unit/test_settled_boundary.py computes it exactly for one pair and checks the bound.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from service.metrics.stats.common import monte_carlo_p
from service.metrics.stats.correction import Correction, adjust

#: The version of the settling rule: stored tests are identified by it (with their parameters), so
#: a change that alters what the rule draws or decides makes the sweeper recompute them. 2: the
#: first checkpoint's share of the guarantee over every pair, the later ones' over the pairs that
#: straddle after it, each chunk of draws from a stream of its own (issue 38). 3: the futility stop
#: (:func:`futile`), and the later stages' bootstrap draws topics as 32-bit integers (other draws
#: from the same streams, in half the time).
RULE = 3
#: The probability that some settled verdict differs from the B -> infinity verdict is below this.
GUARANTEE = 0.01
#: No pair is resampled beyond this many draws (the last checkpoint, whatever B0).
MAX_RESAMPLES = 10_000_000
#: The later stages' work budget, in (draws x topics) cells per pair resampled (a resampling test
#: of one pair over one draw costs about one multiply-add per topic): 2.5e10 cells is about the
#: work of the bootstrap over 1,000 runs x 50 topics at B = 1000 (20 s on one machine).
MAX_WORK = 25 * 10**9

#: Draw stage ``stage`` (rows: B0 for stage 0, B0 * 2^(stage-1) after) for the pairs ``pairs``:
#: (extreme counts, informative resamples), one entry per pair asked.
StageDraw = Callable[[int, np.ndarray], tuple[np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class MonteCarlo:
    """Per pair of a resampling test: the Monte Carlo side of its p."""

    count: np.ndarray  # extreme resamples
    resamples: np.ndarray  # the resamples p is over (for the bootstrap: the informative ones)
    drawn: np.ndarray  # the resamples drawn (for the bootstrap: informative and degenerate)
    undecided: np.ndarray  # bool: the verdict straddled alpha at the last stage
    stages: int  # stages drawn (1: the first B only)
    sequential: bool

    @property
    def p(self) -> np.ndarray:
        return monte_carlo_p(self.count, self.resamples)

    @property
    def se(self) -> np.ndarray:
        """The Monte Carlo standard error of p: sqrt(p (1 - p) / B)."""
        p = self.p
        return np.sqrt(p * (1.0 - p) / np.maximum(self.resamples, 1.0))

    @property
    def degenerate(self) -> np.ndarray:
        return self.drawn - self.resamples


def clopper_pearson(count: np.ndarray, trials: np.ndarray, gamma: float | np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
    """The two-sided Clopper-Pearson interval at level 1 - gamma for count successes in trials
    (0 trials: [0, 1]); ``gamma`` may be one per pair. Beta quantiles by scipy.special.betaincinv,
    the floats of scipy.stats.beta.ppf (for these arguments, inside the support) without importing
    scipy.stats, most of a second of a short command (tests/unit/test_significance_precision.py
    holds the two equal)."""
    from scipy import special

    c = np.asarray(count, dtype=np.float64)
    n = np.asarray(trials, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        low = np.where(c > 0, special.betaincinv(np.maximum(c, 1), np.maximum(n - c + 1, 1), gamma / 2), 0.0)
        high = np.where(c < n, special.betaincinv(c + 1, np.maximum(n - c, 1), 1 - gamma / 2), 1.0)
    return np.nan_to_num(low, nan=0.0), np.nan_to_num(high, nan=1.0)


def bracket(count: np.ndarray, trials: np.ndarray, gamma: float) -> tuple[np.ndarray, np.ndarray]:
    """The Clopper-Pearson interval of p_inf (level 1 - gamma: gamma/2 in each tail) widened to hold
    the reported (count + 1)/(B + 1)."""
    low, high = clopper_pearson(count, trials, gamma)
    p = monte_carlo_p(count, trials)
    return np.minimum(low, p), np.minimum(np.maximum(high, p), 1.0)


def straddling(low: np.ndarray, high: np.ndarray, settled: np.ndarray, alpha: float,
               correction: Correction) -> np.ndarray:
    """Pairs whose verdict (adjusted p < alpha) differs with every resampled p at its interval's low
    end and at its high end; ``settled`` (exact tests' pairs) have low = high and never straddle."""
    return ((adjust(low, correction) < alpha) != (adjust(high, correction) < alpha)) & ~settled


#: Consecutive checkpoints N_s grow by this factor (issue 38; it was 2): a pair stops within
#: about sqrt(2) of the draws it needs, at the price of twice as many checkpoints to spend the
#: guarantee over (whose cost grows with the logarithm of their number only).
RATIO = 2**0.5
#: The share of the guarantee spent at the first checkpoint (B0 draws of every pair), split over
#: every pair of the family; the rest goes to the later checkpoints, split over the pairs that
#: still straddle after the first one (issue 38: a few hundred pairs near alpha instead of every
#: pair of every metric, so each of them may spend about a hundred times more).
FIRST_SHARE = 0.25
#: The share of the later checkpoints' part spent at the last one (N = max_resamples), where the
#: pairs closest to alpha are decided or left undecided; the rest is spread evenly over the others.
FINAL_SHARE = 0.5


def checkpoints(b0: int, max_resamples: int = MAX_RESAMPLES) -> tuple[int, ...]:
    """The resamples N_0 = B0 < N_1 < ... after which a pair's verdict is checked, fixed before
    anything is drawn: round(B0 RATIO^s) while within ``max_resamples``, then ``max_resamples``
    itself (B0 alone when ``max_resamples`` <= B0)."""
    grid = [int(b0)]
    s = 1
    while True:
        n = round(b0 * RATIO**s)
        if n >= max_resamples:
            break
        if n > grid[-1]:
            grid.append(n)
        s += 1
    if max_resamples > grid[-1]:
        grid.append(int(max_resamples))
    return tuple(grid)


def first_gamma(family: int, guarantee: float = GUARANTEE, stages: int = 1) -> float:
    """The error spent on each pair at the first checkpoint: ``FIRST_SHARE`` of the guarantee
    (all of it when there is no later checkpoint) divided by the ``family``'s pairs."""
    return guarantee * (FIRST_SHARE if stages > 1 else 1.0) / max(family, 1)


def later_gamma(stage: int, live: int, share: float, stages: int) -> float:
    """The error spent on each pair at later checkpoint ``stage`` (1 .. ``stages`` - 1) of a test
    whose share of the guarantee is ``share`` and of whose pairs ``live`` straddled after the first
    checkpoint: the later part of the share (1 - ``FIRST_SHARE``), ``FINAL_SHARE`` of it at the
    last checkpoint and the rest evenly at the others, divided by the live pairs. Summed over the
    later checkpoints and the live pairs: (1 - FIRST_SHARE) ``share``."""
    later = stages - 1
    if later <= 1:
        part = 1.0
    elif stage == stages - 1:
        part = FINAL_SHARE
    else:
        part = (1.0 - FINAL_SHARE) / (later - 1)
    return share * (1.0 - FIRST_SHARE) * part / max(live, 1)


def stage_rows(stage: int, b0: int, max_resamples: int = MAX_RESAMPLES) -> int:
    """Draws of stage ``stage``: N_stage - N_(stage-1) of :func:`checkpoints` (B0 at stage 0)."""
    grid = checkpoints(b0, max_resamples)
    return grid[stage] - (grid[stage - 1] if stage else 0)


def settle(count: np.ndarray, trials: np.ndarray, draw: StageDraw, *, b0: int, alpha: float,
           correction: Correction, exact: np.ndarray | None = None, shared: bool = False,
           cost_per_draw: float = 1.0, max_resamples: int = MAX_RESAMPLES, max_work: float = MAX_WORK,
           guarantee: float = GUARANTEE, segments: np.ndarray | None = None,
           family: int | None = None, futility: float | None = None) -> MonteCarlo:
    """Resample the straddling pairs (see the module's docstring) from stage 0's ``count`` out of
    ``trials`` (B0 draws each). ``exact``: pairs never resampled (they never straddle).
    ``shared``: every stage resamples every pair of a segment that has a straddling pair (one
    null distribution for all, as Tukey's).
    ``cost_per_draw``: the cells one draw of one pair costs (or, ``shared``, one draw of all pairs).

    ``segments`` (one id per pair; default: one segment): several tests settled together, one
    per segment (a metric each, issue 38), sharing every stage's draws. Each segment has its own
    correction (over its own pairs), its own share of the guarantee (its pairs' part of the
    family) and its own work budget ``max_work``; a segment whose next stage would pass its
    budget stops there (its straddling pairs end undecided) while the others go on. A segment's
    verdicts are therefore the ones it would get settled alone with its share. ``family``: the
    pairs the guarantee is split over (default: every pair given; more when other calls settle
    further pairs under the same guarantee). ``futility``: :func:`futile`'s threshold (default
    FUTILITY; 0 resamples every straddling pair to the cap)."""
    count = np.asarray(count, dtype=np.float64).copy()
    trials = np.asarray(trials, dtype=np.float64).copy()
    m = count.shape[0]
    seg = np.zeros(m, dtype=np.int64) if segments is None else np.asarray(segments, dtype=np.int64)
    ids = np.unique(seg)
    members = {int(k): np.flatnonzero(seg == k) for k in ids.tolist()}
    family = m if family is None else max(int(family), m)
    fixed = np.zeros(m, dtype=bool) if exact is None else np.asarray(exact, dtype=bool)
    drawn = np.full(m, float(b0))
    done = np.ones(m, dtype=np.int64)  # stages each pair has drawn (0 .. done - 1)
    grid = checkpoints(b0, max_resamples)
    # Without a correction a pair's verdict is wrong only if the one tail on the side of its own
    # p_inf misses it: each tail may spend the pair's whole share (the interval's level is 1 - 2
    # gamma). A correction's verdicts depend on every pair's two ends: a tail spends half.
    sides = 2.0 if correction == "none" else 1.0
    # The later checkpoints count only the draws after the first one: given the first stage (and
    # so which pairs straddle after it), those draws are independent of it, which is what lets
    # their share of the guarantee be split over the straddling pairs alone.
    late_count, late_trials = np.zeros(m), np.zeros(m)
    # A pair's interval at a later checkpoint is the one on its later draws intersected with its
    # first checkpoint's (both hold p_inf outside the union of the failure events), widened to
    # hold the reported p (over all its draws).
    first_low, first_high = clopper_pearson(count, trials,
                                            min(sides * first_gamma(family, guarantee, len(grid)), 1.0))
    cp_low, cp_high = first_low.copy(), first_high.copy()
    stages = np.ones(m, dtype=np.int64)  # per pair: the stages of its segment (1: the first only)
    work = {k: 0.0 for k in members}

    def brackets(idx: np.ndarray | slice) -> tuple[np.ndarray, np.ndarray]:
        p = monte_carlo_p(count[idx], trials[idx])
        return np.minimum(cp_low[idx], p), np.minimum(np.maximum(cp_high[idx], p), 1.0)

    def straddle() -> np.ndarray:
        low, high = brackets(slice(None))
        out = np.zeros(m, dtype=bool)
        for rows in members.values():
            out[rows] = straddling(low[rows], high[rows], fixed[rows], alpha, correction)
        return out

    # The pairs the later checkpoints' share is split over: those straddling after the first
    # (for a shared null, every pair of a segment that has one). Only they are resampled: with a
    # correction another pair's verdict could straddle again if a live pair's interval widened
    # (it stays within the first one's, so only through the reported p); it would end undecided.
    first = straddle()
    live = np.zeros(m, dtype=bool)
    for rows in members.values():
        live[rows] = first[rows].any() if shared else first[rows]
    share = {k: guarantee * len(rows) / family for k, rows in members.items()}
    later_level = {k: [min(sides * later_gamma(s, int(live[rows].sum()), share[k], len(grid)), 1.0)
                       for s in range(len(grid))] for k, rows in members.items()}
    alive = {k for k, rows in members.items() if live[rows].any()}  # segments still resampling

    futility = FUTILITY if futility is None else futility
    stopped = np.zeros(m, dtype=bool)  # pairs given up as undecided by the futility stop
    stage = 0
    while alive:
        mask = straddle() & live & ~stopped
        if stage and futility and correction == "none" and not shared and mask.any():
            hopeless = np.flatnonzero(mask)
            hopeless = hopeless[futile(late_count[hopeless], late_trials[hopeless], drawn[hopeless], b0, grid[-1],
                                       np.array([later_level[int(k)][-1] for k in seg[hopeless].tolist()]), alpha,
                                       futility)]
            stopped[hopeless] = True
            mask[hopeless] = False
        nxt = stage + 1
        if nxt >= len(grid):
            break
        chosen = _within_budget(alive, members, mask, shared, grid[nxt] - drawn, cost_per_draw, work, max_work)
        if not chosen:
            break
        idx = np.sort(np.concatenate(chosen))
        for t in range(int(done[idx].min()), nxt + 1):
            sub = idx[done[idx] <= t]
            c, n = draw(t, sub)
            count[sub] += c
            trials[sub] += n
            late_count[sub] += c
            late_trials[sub] += n
        done[idx] = nxt + 1
        drawn[idx] = grid[nxt]
        for k in alive:
            stages[members[k]] = nxt + 1
        levels = np.array([later_level[int(k)][nxt] for k in seg[idx].tolist()])
        low, high = clopper_pearson(late_count[idx], late_trials[idx], levels)
        cp_low[idx] = np.maximum(first_low[idx], low)
        cp_high[idx] = np.minimum(first_high[idx], high)
        stage = nxt
    undecided = straddle()
    return MonteCarlo(count, trials, drawn, undecided, int(stages.max()), True)


#: The futility stop (issue 38): a straddling pair whose chance of settling by the last checkpoint
#: is below this is left undecided where it is instead of being resampled to the cap.
FUTILITY = 1e-3


def futile(count: np.ndarray, trials: np.ndarray, drawn: np.ndarray, b0: int, cap: int, level: np.ndarray,
           alpha: float, threshold: float = FUTILITY) -> np.ndarray:
    """Per pair (``count`` extreme of ``trials`` informative later draws, ``drawn`` draws so far):
    whether its chance of settling at the last checkpoint (``cap`` draws; there the later draws'
    Clopper-Pearson interval is taken with ``level``, as :func:`settle` takes it) is below
    ``threshold``, for a test without a correction (a pair's verdict is its own interval's).

    The chance is that of the final estimate p_cap falling outside the band around alpha that
    the last checkpoint's interval cannot clear: the interval's half-widths at the pair's
    estimate p, and p_cap's predictive distribution given the draws so far (normal: the
    remaining draws' binomial spread plus the uncertainty of p itself, sd^2 = R p (1 - p) /
    T^2 + (R / T)^2 p (1 - p) / t, with t draws so far, R more to come, T = t + R). Stopping a
    pair never makes a settled verdict wrong (a stopped pair is undecided, and the guarantee's
    union bound is over intervals that are still computed for every pair that settles): it can
    only leave undecided a pair that would have settled, with a chance below ``threshold`` each, while
    the pairs that end undecided at the cap no longer take the last and dearest checkpoints."""
    from scipy import special

    t = np.asarray(trials, dtype=np.float64)
    p = np.where(t > 0, count / np.maximum(t, 1.0), 0.5)
    # the informative draws the pair will have at the cap (the bootstrap leaves the degenerate out)
    total = np.maximum(t * (cap - b0) / np.maximum(drawn - b0, 1.0), t)
    rest = total - t
    var = p * (1.0 - p)
    with np.errstate(divide="ignore", invalid="ignore"):
        sd = np.sqrt(rest * var / total**2 + (rest / total) ** 2 * var / np.maximum(t, 1.0))
    low, high = clopper_pearson(p * total, total, level)
    clear_above, clear_below = alpha + (p - low), alpha - (high - p)  # where p_cap would settle
    with np.errstate(divide="ignore", invalid="ignore"):
        chance = special.ndtr((p - clear_above) / sd) + special.ndtr((clear_below - p) / sd)  # normal tails
    return (t > 0) & (rest > 0) & (sd > 0) & (chance < threshold)


def _within_budget(alive: set[int], members: dict[int, np.ndarray], mask: np.ndarray, shared: bool,
                   more: np.ndarray, cost_per_draw: float, work: dict[int, float], max_work: float
                   ) -> list[np.ndarray]:
    """The pairs of each segment still resampling (``alive``) that the next stage draws: its
    straddling pairs (``mask``; every pair of the segment when ``shared``), unless the ``more``
    draws each needs would pass the segment's work budget. A segment with nothing straddling or
    over its budget leaves ``alive`` (its straddling pairs end undecided); ``work`` is charged."""
    chosen = []
    for k in sorted(alive):
        rows = members[k]
        if not mask[rows].any():
            alive.discard(k)
            continue
        idx_k = rows if shared else rows[mask[rows]]
        cost = float(more[idx_k].max() if shared else more[idx_k].sum()) * cost_per_draw
        if work[k] + cost > max_work:
            alive.discard(k)
            continue
        work[k] += cost
        chosen.append(idx_k)
    return chosen


def chunk_stream(seed: int, stage: int, chunk: int) -> np.random.Generator:
    """The generator of chunk ``chunk`` of stage ``stage`` (>= 1): a child stream of ``seed`` of its
    own, the same whatever else is resampled and whichever thread draws it."""
    return np.random.default_rng([int(seed) % 2**63, int(stage), int(chunk)])
