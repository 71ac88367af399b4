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
- Stage 0 draws B0 resamples. While pairs straddle, stage s >= 1 draws N_s - N_(s-1) more
  from a child stream of the seed (the same draws whatever else is resampled), so that after
  stage s a pair has exactly the first N_s draws of the stream. The checkpoints N_s
  (:func:`checkpoints`) are fixed before anything is drawn: B0 * sqrt(2)^s, rounded, while
  within ``max_resamples``, then ``max_resamples`` itself (issue 38; they were B0 * 2^s). Only
  the straddling pairs are resampled (a shared null such as Tukey's resamples all pairs). A pair
  that straddles again after sitting out a stage is brought to N_s with the stages it missed
  (regenerated from their streams). Stages stop when nothing straddles, at the last checkpoint,
  or when the stage would pass the work budget ``max_work``; a pair still straddling then is
  *undecided at B = N*.
- The guarantee is spent over the checkpoints and the pairs (``family``: every pair of every
  test settled under it, all the metrics of a round): at the last checkpoint FINAL_SHARE of it,
  at each other one an equal part of the rest, each divided by the pairs (:func:`stage_gamma`:
  gamma_s, summing to the guarantee over s and the pairs). The events "pair i's interval on its
  first N_s draws holds p_inf" are fixed in advance (whether or not the stage is drawn), and
  their failure probabilities sum to at most the guarantee (a union bound: no independence is
  needed, so the metrics may share every draw). Without a correction, pair i's verdict can only
  be wrong through the one tail on the far side of alpha from its p_inf, so each tail may spend
  gamma_s (the interval's level is 1 - 2 gamma_s); with a correction every pair's verdict
  depends on every interval's two ends, and each tail spends gamma_s / 2. Hence, with
  probability at least 1 - guarantee, every settled verdict equals the B -> infinity verdict,
  simultaneously for all pairs (and metrics).

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


def clopper_pearson(count: np.ndarray, trials: np.ndarray, gamma: float) -> tuple[np.ndarray, np.ndarray]:
    """The two-sided Clopper-Pearson interval at level 1 - gamma for count successes in trials
    (0 trials: [0, 1])."""
    from scipy import stats  # here: importing scipy.stats is most of a second of a short command

    c = np.asarray(count, dtype=np.float64)
    n = np.asarray(trials, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        low = np.where(c > 0, stats.beta.ppf(gamma / 2, np.maximum(c, 1), np.maximum(n - c + 1, 1)), 0.0)
        high = np.where(c < n, stats.beta.ppf(1 - gamma / 2, c + 1, np.maximum(n - c, 1)), 1.0)
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
#: The share of the guarantee spent at the last checkpoint (N = max_resamples), where the pairs
#: closest to alpha are decided or left undecided; the rest is spread evenly over the others.
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


def stage_gamma(stage: int, pairs: int, guarantee: float = GUARANTEE, stages: int = 1) -> float:
    """The error spent on each pair at checkpoint ``stage`` of ``stages``: ``FINAL_SHARE`` of the
    guarantee at the last, the rest evenly at the others, each divided by ``pairs``. Summed over
    the checkpoints and pairs: the guarantee."""
    if stages <= 1:
        share = 1.0
    elif stage == stages - 1:
        share = FINAL_SHARE
    else:
        share = (1.0 - FINAL_SHARE) / (stages - 1)
    return guarantee * share / max(pairs, 1)


def stage_rows(stage: int, b0: int, max_resamples: int = MAX_RESAMPLES) -> int:
    """Draws of stage ``stage``: N_stage - N_(stage-1) of :func:`checkpoints` (B0 at stage 0)."""
    grid = checkpoints(b0, max_resamples)
    return grid[stage] - (grid[stage - 1] if stage else 0)


def settle(count: np.ndarray, trials: np.ndarray, draw: StageDraw, *, b0: int, alpha: float,
           correction: Correction, exact: np.ndarray | None = None, shared: bool = False,
           cost_per_draw: float = 1.0, max_resamples: int = MAX_RESAMPLES, max_work: float = MAX_WORK,
           guarantee: float = GUARANTEE, segments: np.ndarray | None = None,
           family: int | None = None) -> MonteCarlo:
    """Resample the straddling pairs (see the module's docstring) from stage 0's ``count`` out of
    ``trials`` (B0 draws each). ``exact``: pairs never resampled (they never straddle).
    ``shared``: every stage resamples every pair of a segment that has a straddling pair (one
    null distribution for all, as Tukey's).
    ``cost_per_draw``: the cells one draw of one pair costs (or, ``shared``, one draw of all pairs).

    ``segments`` (one id per pair; default: one segment): several tests settled together, one
    per segment (a metric each, issue 38), sharing every stage's draws. Each segment has its own
    correction (over its own pairs) and its own work budget ``max_work``; a segment whose next
    stage would pass its budget stops there (its straddling pairs end undecided) while the others
    go on. ``family``: the pairs the guarantee is split over (default: every pair given; more
    when other calls settle further pairs under the same guarantee)."""
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

    def level(stage: int) -> float:
        return min(sides * stage_gamma(stage, family, guarantee, len(grid)), 1.0)

    low, high = bracket(count, trials, level(0))
    stages = np.ones(m, dtype=np.int64)  # per pair: the stages of its segment (1: the first only)
    work = {k: 0.0 for k in members}
    live = set(members)  # segments still resampling

    def straddle() -> np.ndarray:
        out = np.zeros(m, dtype=bool)
        for rows in members.values():
            out[rows] = straddling(low[rows], high[rows], fixed[rows], alpha, correction)
        return out

    stage = 0
    while live:
        mask = straddle()
        nxt = stage + 1
        if nxt >= len(grid):
            break
        chosen = []
        for k in sorted(live):
            rows = members[k]
            if not mask[rows].any():
                live.discard(k)
                continue
            idx_k = rows if shared else rows[mask[rows]]
            more = grid[nxt] - drawn[idx_k]  # draws that bring each pair to N_nxt
            cost = float(more.max() if shared else more.sum()) * cost_per_draw
            if work[k] + cost > max_work:
                live.discard(k)
                continue
            work[k] += cost
            chosen.append(idx_k)
        if not chosen:
            break
        idx = np.sort(np.concatenate(chosen))
        for t in range(int(done[idx].min()), nxt + 1):
            sub = idx[done[idx] <= t]
            c, n = draw(t, sub)
            count[sub] += c
            trials[sub] += n
        done[idx] = nxt + 1
        drawn[idx] = grid[nxt]
        for k in live:
            stages[members[k]] = nxt + 1
        low[idx], high[idx] = bracket(count[idx], trials[idx], level(nxt))
        stage = nxt
    undecided = straddle()
    return MonteCarlo(count, trials, drawn, undecided, int(stages.max()), True)


def stage_stream(seed: int, stage: int) -> np.random.Generator:
    """Stage ``stage``'s (>= 1) generator: a child stream of ``seed``, the same whatever is resampled."""
    return np.random.default_rng([int(seed) % 2**63, int(stage)])
