"""A p-value just below alpha is printed below alpha on every page and in every answer that shows
it (issue 25, item 3): the stored test's p of every pair of the world's nDCG@10 test is set to
0.049995 (raw and adjusted), and the compare page, the significance page (its table) and the API
are read. Before, the compare page printed "p = 0.0500" and the matrix a bold "0.050".

The world (conftest.py): a private collection "task" with three runs, tested with the default test
on nDCG@10, without a correction.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import numpy as np
import pytest
from sqlalchemy import select

from service.evaluation.publishing import reading
from service.store.arrays import pack, unpack
from service.store.models import Significance
from tests.integration.conftest import World, auth
from tests.integration.test_compare_page import compare_page, visible_text
from tests.integration.test_portal import as_role

P = 0.049995  # below alpha = 0.05; "%.4f" gives "0.0500", "%.3f" gives "0.050"
SQLITE_ONLY_BUT: set[str] = set()  # pages and their printing: the same on both databases


def _clear_caches() -> None:
    """Stored tests are decoded once per process (keyed by database and row): the rows change here."""
    reading._SIG_CACHE.clear()
    reading._RAW_P_CACHE.clear()
    reading._ANNOTATION_CACHE.clear()


@pytest.fixture
def near_alpha(world: World) -> Iterator[World]:
    with world.factory() as s:
        rows = s.scalars(select(Significance).where(Significance.collection_id == world.cid,
                                                    Significance.metric == "nDCG@10")).all()
        assert rows
        for row in rows:
            n = unpack(row.p_adjusted).size
            row.p = pack(np.full(n, P))
            row.p_adjusted = pack(np.full(n, P))
        s.commit()
    _clear_caches()
    try:
        yield world
    finally:
        _clear_caches()


def test_a_p_just_below_alpha_is_printed_below_alpha_everywhere(near_alpha: World) -> None:
    world = near_alpha
    a, b = world.run_ids["RUN-01"], world.run_ids["RUN-02"]
    doc = world.client.get(f"/api/collections/{world.cid}/compare", params={"a": a, "b": b, "metric": "nDCG@10"},
                           headers=auth(world.tokens["organiser"])).json()
    assert doc["p"] == doc["p_adjusted"] == P  # the API keeps the full float
    text = visible_text(compare_page(world, a, b))
    assert "p = 0.04999 (correction: none: unadjusted)" in text
    assert "the difference is significant at α = 0.05" in text
    page = world.client.get(f"/c/{world.cid}/significance", params={"metric": "nDCG@10"},
                            headers=as_role(world, "organiser")).text
    table = re.search(r'<table id="p-matrix">.*?</table>', page, flags=re.DOTALL).group(0)
    assert table.count("<strong>0.04999</strong>") == 6  # every off-diagonal cell of 3 runs, bold: below alpha
    p_line = text[text.index("Stored test:"):text.index("the difference is")]
    for shown in (p_line, visible_text(table)):  # where the page prints p: no "0.05", "0.050", "0.0500"
        assert not re.search(r"0\.050*(?!\d)", shown.replace("α = 0.05", "")), shown


def test_the_metric_analysis_says_its_counts_are_unadjusted_beside_the_boards_test(world: World) -> None:
    """Issue 25, item 4: discriminative power counts pairs at alpha without a correction; the page
    says so and gives the board's stored test's count, after its correction, beside it."""
    c, admin = world.client, auth(world.tokens["organiser"])
    assert c.patch(f"/api/collections/{world.cid}", json={"significance": {"test": "t", "correction": "holm"}},
                   headers=admin).status_code == 200
    page = c.get(f"/c/{world.cid}/analysis", headers=as_role(world, "organiser")).text
    text = visible_text(page)
    assert "Significant pairs (unadjusted)" in text and "each pair unadjusted" in text
    matrix = c.get(f"/api/collections/{world.cid}/significance", params={"metric": "nDCG@10"}, headers=admin).json()
    assert matrix["correction_name"] == "Holm"
    pairs = [(i, j) for i in range(3) for j in range(i + 1, 3)]
    significant = sum(matrix["p_adjusted"][i][j] < matrix["alpha"] for i, j in pairs)
    row = re.search(r'<tr data-metric="nDCG@10">.*?</tr>', page, flags=re.DOTALL).group(0)
    assert f"{significant} of 3 significant (t, α = 0.05, correction: Holm" in visible_text(row)


def test_an_undecided_pair_is_not_counted_significant_on_the_metric_analysis(near_alpha: World) -> None:
    """Issue 25, item 1: a pair whose Monte Carlo verdict is undecided at its B counts as not
    significant in the board test's count, as in the board's letters, and the page says how many
    are undecided. Here every pair's p is just below alpha (significant) and one is marked undecided."""
    world = near_alpha
    with world.factory() as s:
        row = s.scalars(select(Significance).where(Significance.collection_id == world.cid,
                                                   Significance.metric == "nDCG@10", Significance.subset == "all")).one()
        assert row.test == "bootstrap" and unpack(row.p_adjusted).size == 3
        row.undecided = pack(np.array([0.0, 1.0, 0.0]))
        s.commit()
    _clear_caches()
    page = world.client.get(f"/c/{world.cid}/analysis", headers=as_role(world, "organiser")).text
    row_html = re.search(r'<tr data-metric="nDCG@10">.*?</tr>', page, flags=re.DOTALL).group(0)
    assert "2 of 3 significant, 1 undecided (bootstrap" in visible_text(row_html)
