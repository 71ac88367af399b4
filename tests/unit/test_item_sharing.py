"""An evaluation item computes its parts once (issue 38): the run's matching against the qrels is
shared by the metrics and the gain curves (``matching.matches_reused``), and the bootstrap
intervals of the measures scored on the same topics come from one resampling
(``evaluating._boots``). Both must give the figures of the separate computations, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from service.evaluation.computing import evaluating
from service.formats.readers import parse_qrels, parse_run
from service.formats.types import Qrels, Run
from service.metrics import evaluate
from service.metrics.curves import gain_curves
from service.metrics.matching import level_matrix, matches_reused
from service.metrics.scoring import EvalSettings
from service.metrics.stats.intervals import bootstrap_interval


def _collection(seed: int = 3) -> tuple[Qrels, list[Run]]:
    rng = np.random.default_rng(seed)
    lines = []
    for t in range(12):
        for d in range(40):
            if rng.random() < 0.6:  # a third or so of the retrieved documents stay unjudged
                lines.append(f"q{t} 0 d{t}-{d} {int(rng.integers(0, 4))}")
    qrels = parse_qrels(("\n".join(lines) + "\n").encode(), "qrels")
    runs = []
    for r in range(3):
        run_lines = []
        for t in range(12 if r else 10):  # the first run lacks two topics
            docs = rng.permutation(60)[: int(rng.integers(5, 50))]
            scores = np.round(rng.random(len(docs)), 1)  # ties in score
            run_lines += [f"q{t} Q0 d{t}-{d} {i + 1} {s} r{r}" for i, (d, s) in enumerate(zip(docs, scores))]
        runs.append(parse_run(("\n".join(run_lines) + "\n").encode(), f"r{r}", "score"))
    return qrels, runs


@pytest.mark.parametrize("missing", ["zero", "skip"])
def test_the_metrics_and_curves_within_matches_reused_equal_those_made_apart(missing: str) -> None:
    qrels, runs = _collection()
    settings = EvalSettings(missing=missing, depth=30)
    measures = ["AP", "nDCG@10", "Q", "bpref", "Q(judged_only=true)", "ERR@20", "P@5", "Judged@10"]
    for run in runs:
        apart = evaluate(qrels, [run], measures, settings)
        (curve_apart,) = gain_curves(qrels, [run], 30, settings=settings)
        with matches_reused():
            shared = evaluate(qrels, [run], measures, settings)
            (curve_shared,) = gain_curves(qrels, [run], 30, settings=settings)
        for m in apart.measures:
            assert np.array_equal(apart.per_topic(m), shared.per_topic(m), equal_nan=True), m
        for part in ("cg", "dcg", "ncg", "ndcg", "ideal_cg", "ideal_dcg"):
            assert np.array_equal(getattr(curve_apart, part), getattr(curve_shared, part)), part


def test_matches_reused_matches_each_run_once_and_never_mixes_runs() -> None:
    qrels, runs = _collection()
    topics = list(range(len(qrels.topics)))
    col_of = {qrels.topics[i]: i for i in topics}
    with matches_reused():
        first = level_matrix(qrels, [runs[0]], topics, col_of, 30)
        again = level_matrix(qrels, [runs[0]], topics, col_of, 30)
        other = level_matrix(qrels, [runs[1]], topics, col_of, 30)
        deeper = level_matrix(qrels, [runs[0]], topics, col_of, None)
        assert again[0] is first[0] and again[1] is first[1]  # not matched again
        assert other[0] is not first[0] and deeper[0] is not first[0]
        with pytest.raises(ValueError, match="read-only"):  # shared: nobody writes into them
            first[0][0, 0] = 1
    plain = level_matrix(qrels, [runs[0]], topics, col_of, 30)
    assert plain[0] is not first[0] and plain[0].flags.writeable  # outside, a fresh matching
    assert np.array_equal(plain[0], first[0]) and np.array_equal(plain[1], first[1])
    assert np.array_equal(level_matrix(qrels, [runs[1]], topics, col_of, 30)[0], other[0])


def test_the_intervals_of_measures_on_the_same_topics_equal_one_call_per_measure() -> None:
    rng = np.random.default_rng(8)
    n = 25
    columns = [rng.random(n) for _ in range(4)]
    columns.append(np.where(rng.random(n) < 0.3, np.nan, rng.random(n)))  # other topics scored
    columns.append(columns[-1] * 0.5)  # the same topics as the one before
    columns.append(np.full(n, np.nan))  # scored nowhere
    columns.append(np.r_[np.nan * np.ones(n - 1), 0.4])  # one topic: no interval
    columns.append(np.full(n, 0.25))  # every value equal: a point
    got = evaluating._boots(columns)
    for values, (low, high) in zip(columns, got):
        b = bootstrap_interval(values[~np.isnan(values)], resamples=evaluating.BOOT_RESAMPLES,
                               method=evaluating.BOOT_METHOD, seed=evaluating.BOOT_SEED)
        expected = tuple(None if not np.isfinite(v) else float(v) for v in (b.low, b.high))
        assert (low, high) == expected
    assert got[-3] == (None, None) and got[-2] == (None, None) and got[-1] == (0.25, 0.25)
