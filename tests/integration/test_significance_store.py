"""A stored test keeps what is read of it (issue 26, item 4; migration 0022).

A significance row holds the adjusted p of every pair, the raw p only where a correction
changed it (NULL: the same), and the Monte Carlo columns; not the differences or the test
statistics, which nothing read. What the API serves from a stored test stays the same, with
and without a correction, and across the migration. On SQLite and PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from sqlalchemy import inspect, select

from service.evaluation.publishing import monte_carlo, reading
from service.store.arrays import pack, unpack
from service.store.models import Significance
from tests.integration.conftest import World, auth


@pytest.fixture(autouse=True)
def _fresh_caches() -> Iterator[None]:
    """Stored tests are decoded once per process, keyed by database and row: rows change here."""
    def clear() -> None:
        for cache in (reading._SIG_CACHE, reading._RAW_P_CACHE, reading._ANNOTATION_CACHE, monte_carlo._CACHE):
            cache.clear()
    clear()
    yield
    clear()


def _served(world: World) -> dict[str, Any]:
    """The p-values the API serves from the board's stored test of nDCG@10."""
    c, admin = world.client, auth(world.tokens["organiser"])
    r = c.get(f"/api/collections/{world.cid}/significance", params={"metric": "nDCG@10"}, headers=admin)
    assert "p" in r.json(), r.text
    matrix = r.json()
    a, b = world.run_ids["RUN-01"], world.run_ids["RUN-03"]
    pair = c.get(f"/api/collections/{world.cid}/compare", params={"a": a, "b": b, "metric": "nDCG@10"},
                 headers=admin).json()
    return {"p": matrix["p"], "p_adjusted": matrix["p_adjusted"], "pair": (pair["p"], pair["p_adjusted"]),
            "correction": matrix["correction_name"], "mc_se": matrix["mc_se"]}


def _rows(world: World) -> list[Significance]:
    with world.factory() as s:
        return list(s.scalars(select(Significance).where(Significance.collection_id == world.cid)
                              .order_by(Significance.id)))


def test_the_raw_p_is_stored_only_where_a_correction_changed_it(world: World) -> None:
    engine = world.factory.kw["bind"]
    assert {"diff", "statistic"}.isdisjoint(c["name"] for c in inspect(engine).get_columns("significance"))
    rows = _rows(world)
    assert rows and all(r.p is None and unpack(r.p_adjusted).size == 3 for r in rows)  # bootstrap, no correction
    served = _served(world)
    assert served["correction"] == "none: unadjusted"
    assert served["p"] == served["p_adjusted"] and served["pair"][0] == served["pair"][1] is not None
    stored = unpack(next(r for r in rows if r.metric == "nDCG@10" and r.subset == "all").p_adjusted)
    assert [served["p_adjusted"][0][1], served["p_adjusted"][0][2], served["p_adjusted"][1][2]] == stored.tolist()

    r = world.client.patch(f"/api/collections/{world.cid}", json={"significance": {"test": "t", "correction": "holm"}},
                           headers=auth(world.tokens["admin"]))
    assert r.status_code == 200, r.text
    holm = [x for x in _rows(world) if x.test == "t"]
    assert holm and all(x.p is not None for x in holm)
    row = next(x for x in holm if x.metric == "nDCG@10" and x.subset == "all")
    raw, adjusted = unpack(row.p), unpack(row.p_adjusted)
    assert not np.array_equal(raw, adjusted)  # Holm changed them: both kept
    served = _served(world)
    assert served["correction"] == "Holm"
    assert [served["p"][0][1], served["p"][0][2], served["p"][1][2]] == raw.tolist()
    assert [served["p_adjusted"][0][1], served["p_adjusted"][0][2], served["p_adjusted"][1][2]] == adjusted.tolist()


def test_migration_0022_drops_what_was_never_read_and_serves_the_same(world: World) -> None:
    """Back at 0021 every row has its four arrays (raw p = adjusted p without a correction); one
    row is given raw p that differ, as a correction makes them. Up again: the equal raw p become
    NULL, the differing ones stay, and the API serves what it served at 0021."""
    from service.store.migrate import downgrade, upgrade

    engine = world.factory.kw["bind"]
    url = engine.url.render_as_string(hide_password=False)
    before = _served(world)
    engine.dispose()
    downgrade(url, "0021")
    engine.dispose()
    columns = {c["name"]: c for c in inspect(engine).get_columns("significance")}
    assert {"diff", "statistic"} <= set(columns) and not columns["p"]["nullable"]
    with engine.begin() as conn:
        rows = conn.execute(select(Significance.id, Significance.p, Significance.p_adjusted, Significance.metric,
                                   Significance.subset).order_by(Significance.id)).all()
        assert rows and all(p == adjusted for _, p, adjusted, _, _ in rows)  # p back from p_adjusted
        changed = next(rid for rid, _, _, metric, subset in rows if metric == "AP" and subset == "all")
        raw = pack(np.array([0.01, 0.02, 0.03]))
        conn.execute(Significance.__table__.update().where(Significance.id == changed).values(p=raw))
    engine.dispose()
    upgrade(url, "head")
    engine.dispose()
    after = {r.id: r for r in _rows(world)}
    assert after[changed].p == raw
    assert all(r.p is None for rid, r in after.items() if rid != changed)
    assert {"diff", "statistic"}.isdisjoint(c["name"] for c in inspect(engine).get_columns("significance"))
    assert _served(world) == before
