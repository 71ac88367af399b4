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
- Stage 0 draws B0 resamples. While pairs straddle, stage s >= 1 draws B0 * 2^(s-1) more from
  a child stream of the seed (the same draws whatever else is resampled), so that after stage
  s a pair has exactly the first N_s = B0 * 2^s draws of the stream; only the straddling pairs
  are resampled (a shared null such as Tukey's resamples all pairs). A pair that straddles
  again after sitting out a stage is brought to N_s with the stages it missed (regenerated
  from their streams). Stages stop when nothing straddles, when N_s would pass
  ``max_resamples``, or when the stage would pass the work budget ``max_work``; a pair
  still straddling then is *undecided at B = N*.
- gamma at stage s is guarantee * 2^-(s+1) / pairs, for every pair. The events "pair i's
  interval on its first N_s draws holds p_inf" are fixed in advance (whether or not the stage
  is drawn), and their failure probabilities sum to at most guarantee * sum_s 2^-(s+1) <=
  guarantee. Hence, with probability at least 1 - guarantee, every interval ever computed holds
  its p_inf and every settled verdict equals the B -> infinity verdict (simultaneously for all
  pairs).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from service.metrics.stats.common import monte_carlo_p
from service.metrics.stats.correction import Correction, adjust

#: The probability that some settled verdict differs from the B -> infinity verdict is below this.
GUARANTEE = 0.01
#: No pair is resampled beyond this many draws (the last doubling that stays within it: 5,120,000 from B0 = 10,000).
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
    """The Clopper-Pearson interval of p_inf widened to hold the reported (count + 1)/(B + 1)."""
    low, high = clopper_pearson(count, trials, gamma)
    p = monte_carlo_p(count, trials)
    return np.minimum(low, p), np.minimum(np.maximum(high, p), 1.0)


def straddling(low: np.ndarray, high: np.ndarray, settled: np.ndarray, alpha: float,
               correction: Correction) -> np.ndarray:
    """Pairs whose verdict (adjusted p < alpha) differs with every resampled p at its interval's low
    end and at its high end; ``settled`` (exact tests' pairs) have low = high and never straddle."""
    return ((adjust(low, correction) < alpha) != (adjust(high, correction) < alpha)) & ~settled


def stage_gamma(stage: int, pairs: int, guarantee: float = GUARANTEE) -> float:
    """The per-pair interval error at ``stage``: guarantee * 2^-(stage+1) / pairs."""
    return guarantee * 0.5 ** (stage + 1) / max(pairs, 1)


def stage_rows(stage: int, b0: int) -> int:
    """Draws of stage ``stage``: B0, then B0 * 2^(stage-1), so that N_stage = B0 * 2^stage."""
    return b0 if stage == 0 else b0 * 2 ** (stage - 1)


def settle(count: np.ndarray, trials: np.ndarray, draw: StageDraw, *, b0: int, alpha: float,
           correction: Correction, exact: np.ndarray | None = None, shared: bool = False,
           cost_per_draw: float = 1.0, max_resamples: int = MAX_RESAMPLES, max_work: float = MAX_WORK,
           guarantee: float = GUARANTEE) -> MonteCarlo:
    """Resample the straddling pairs (see the module's docstring) from stage 0's ``count`` out of
    ``trials`` (B0 draws each). ``exact``: pairs never resampled (they never straddle).
    ``shared``: every stage resamples every pair (one null distribution for all, as Tukey's).
    ``cost_per_draw``: the cells one draw of one pair costs (or, ``shared``, one draw of all pairs)."""
    count = np.asarray(count, dtype=np.float64).copy()
    trials = np.asarray(trials, dtype=np.float64).copy()
    m = count.shape[0]
    fixed = np.zeros(m, dtype=bool) if exact is None else np.asarray(exact, dtype=bool)
    drawn = np.full(m, float(b0))
    done = np.ones(m, dtype=np.int64)  # stages each pair has drawn (0 .. done - 1)
    low, high = bracket(count, trials, stage_gamma(0, m, guarantee))
    stage, work = 0, 0.0
    while True:
        mask = straddling(low, high, fixed, alpha, correction)
        nxt = stage + 1
        if not mask.any() or b0 * 2**nxt > max_resamples:
            break
        idx = np.arange(m) if shared else np.flatnonzero(mask)
        more = b0 * 2**nxt - drawn[idx]  # draws that bring each pair to N_nxt
        cost = float(more.max() if shared else more.sum()) * cost_per_draw
        if work + cost > max_work:
            break
        for t in range(int(done[idx].min()), nxt + 1):
            sub = idx[done[idx] <= t]
            c, n = draw(t, sub)
            count[sub] += c
            trials[sub] += n
        done[idx] = nxt + 1
        drawn[idx] = b0 * 2**nxt
        work += cost
        low[idx], high[idx] = bracket(count[idx], trials[idx], stage_gamma(nxt, m, guarantee))
        stage = nxt
    undecided = straddling(low, high, fixed, alpha, correction)
    return MonteCarlo(count, trials, drawn, undecided, stage + 1, True)


def stage_stream(seed: int, stage: int) -> np.random.Generator:
    """Stage ``stage``'s (>= 1) generator: a child stream of ``seed``, the same whatever is resampled."""
    return np.random.default_rng([int(seed) % 2**63, int(stage)])
