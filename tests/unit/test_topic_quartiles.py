"""The topic analysis's quartiles in arrays equal numpy's percentile of each topic's scored runs
taken alone (the loop they replace), bit for bit, whatever the pattern of unscored cells."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from service.evaluation.analysing.topic_analysis import _quartiles

CELLS = st.one_of(st.just(np.nan), st.sampled_from([0.0, 0.25, 0.5, 1.0]), st.floats(0, 1, allow_nan=False))


@settings(max_examples=300, deadline=None)
@given(arrays(float, st.tuples(st.integers(1, 9), st.integers(1, 12)), elements=CELLS))
def test_quartiles_equal_each_columns_percentile_alone(x: np.ndarray) -> None:
    counts = (~np.isnan(x)).sum(axis=0)
    got = _quartiles(x, counts)
    for j in range(x.shape[1]):
        column = x[:, j][~np.isnan(x[:, j])]
        if column.size == 0:
            assert np.isnan(got[:, j]).all()
        else:
            assert got[:, j].tolist() == np.percentile(column, [25, 50, 75]).tolist(), j


def test_a_topic_scored_by_fewer_runs_is_not_pulled_by_the_unscored() -> None:
    x = np.array([[0.1, np.nan], [0.2, 0.9], [0.9, np.nan], [0.4, 0.3]])
    got = _quartiles(x, (~np.isnan(x)).sum(axis=0))
    assert got[:, 1].tolist() == [0.45, 0.6, 0.75]  # of 0.9 and 0.3 alone
    assert got[1, 0] == 0.30000000000000004
