"""Meta-evaluating a judge (service.metrics.stats.judge_meta) against independent implementations.

* scipy.stats.bootstrap: a one-sample bootstrap of the topic indices, ``bootstrap((arange(T),),
  statistic, n_resamples=B, rng=default_rng(seed), method="percentile", vectorized=False)``,
  whose statistic takes the drawn topics' rows of both matrices (so they stay paired). scipy
  draws ``rng.integers(0, T, (B, T))`` in one batch (``_bootstrap_resample``), which is the draw
  judge_meta documents, so the bootstrap distributions are the same resamples and the intervals
  agree to round-off (scipy's ``stats.quantile`` and numpy's ``quantile`` are both the linear
  method). The statistic is scipy's own ``kendalltau`` (tau-b), ``spearmanr`` or ``pearsonr`` of
  the runs' ``np.nanmean``.
* autojudge-evaluate (TREC AutoJudge's leaderboard meta-evaluation): its ``pyircore.tauap_b``
  (loaded as a file, see tests/peers/test_agreement_peers.py for why) as the statistic of the same
  scipy bootstrap, and its ``kendall@k`` (the truth's first k runs by decreasing score, then
  Kendall between the two leaderboards on those; written out here with scipy since its
  ``evaluation.py`` cannot be imported offline) for tau_top_k. The inputs are continuous scores
  with no missing cell, where none of these is undefined and no tie sits at the k-th place: there
  pyircore's and Cranfield's conventions for undefined cases (test_agreement_peers.py) do not
  matter.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
import pytest

from service.metrics.stats.judge_meta import judge_agreement
from tests.support.peers import load_peer_file, require_peer

pytestmark = [pytest.mark.peer, pytest.mark.filterwarnings("ignore")]

scipy_stats = require_peer("scipy.stats", "scipy")
pyircore = load_peer_file("autojudge-evaluate", "autojudge_evaluate/pyircore.py", "autojudge_evaluate_pyircore")


def autojudge_kendall_at_k(truth: np.ndarray, judge: np.ndarray, k: int) -> float:
    top = np.argsort(-truth, kind="stable")[:k]
    return float(scipy_stats.kendalltau(truth[top], judge[top]).statistic)


PEERS: dict[str, Callable[[np.ndarray, np.ndarray], float]] = {
    "kendall": lambda a, b: float(scipy_stats.kendalltau(a, b).statistic),
    "spearman": lambda a, b: float(scipy_stats.spearmanr(a, b).statistic),
    "pearson": lambda a, b: float(scipy_stats.pearsonr(a, b).statistic),
    "tau_ap_b": lambda a, b: float(pyircore.tauap_b(a, b)),
    "tau_top_k": lambda a, b: autojudge_kendall_at_k(a, b, 10),
}


def scipy_percentile_bootstrap(x: np.ndarray, y: np.ndarray, peer: Callable[[np.ndarray, np.ndarray], float],
                               resamples: int, level: float, seed: int):  # type: ignore[no-untyped-def]
    def statistic(rows: np.ndarray) -> float:
        rows = rows.astype(np.int64)
        return peer(np.nanmean(x[rows], axis=0), np.nanmean(y[rows], axis=0))

    return scipy_stats.bootstrap((np.arange(x.shape[0]),), statistic, n_resamples=resamples, vectorized=False,
                                 method="percentile", confidence_level=level, rng=np.random.default_rng(seed))


def leaderboards(seed: int, topics: int, runs: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = np.clip(rng.random(runs)[None, :] + rng.normal(0, 0.3, (topics, runs)), 0, 1)
    return x, np.clip(x + rng.normal(0, 0.2, x.shape), 0, 1)


@pytest.mark.parametrize("measure", sorted(PEERS))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_interval_matches_scipy_bootstrap_with_peer_statistics(measure: str, seed: int) -> None:
    x, y = leaderboards(seed, 20, 18)
    ours = judge_agreement(x, y, measure, resamples=400, level=0.9, seed=seed)
    theirs = scipy_percentile_bootstrap(x, y, PEERS[measure], 400, 0.9, seed)
    assert ours.undefined_resamples == 0 and not np.isnan(theirs.bootstrap_distribution).any()
    assert ours.low == pytest.approx(theirs.confidence_interval.low, abs=1e-12)
    assert ours.high == pytest.approx(theirs.confidence_interval.high, abs=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert ours.value == pytest.approx(PEERS[measure](x.mean(axis=0), y.mean(axis=0)), abs=1e-12)


def test_tau_ap_b_point_values_on_leaderboards_with_missing_cells() -> None:
    """The point value on leaderboards whose runs miss some topics (means over the scored ones)."""
    for seed in range(20):
        x, y = leaderboards(100 + seed, 30, 25)
        rng = np.random.default_rng(seed)
        x[rng.random(x.shape) < 0.1] = np.nan
        ours = judge_agreement(x, y, "tau_ap_b", resamples=1)
        assert ours.value == pytest.approx(float(pyircore.tauap_b(np.nanmean(x, axis=0), np.nanmean(y, axis=0))),
                                           abs=1e-12)
