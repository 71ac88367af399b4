"""The bytes a stored pairwise test takes per metric, before and after migration 0022 (issue 26).

    python benchmarks/bench_significance_store.py [--runs 1000] [--topics 50] [--B 1000]
        [--no-postgres] [--json out.json]

One all-pairs bootstrap test of ``--runs`` runs x ``--topics`` topics (random scores, seed 0;
B = ``--B``, the per-pair B, Monte Carlo SE and degenerate columns included, as the workers
store them), once without a correction (the default of stored tests) and once with Holm's. On
SQLite (a temporary file) and, unless ``--no-postgres``, PostgreSQL (a database made for the
run and dropped; ``CRANFIELD_TEST_PG``, default ``postgresql+psycopg://postgres@127.0.0.1:5432/postgres``):

1. the schema at revision 0021 and each test stored as the worker stored it until then
   (``diff``, ``statistic``, ``p``, ``p_adjusted`` and the Monte Carlo columns);
2. the bytes of each row's columns (SQLite ``length``, PostgreSQL ``pg_column_size``: after
   TOAST compression) and of the table (SQLite ``dbstat`` when the library has it, PostgreSQL
   ``pg_total_relation_size`` after a VACUUM FULL);
3. ``alembic upgrade head`` (migration 0022 on those rows), then the same measures; and a row
   stored by the worker's code as it is now (``significance_tests.stored_arrays``), which must
   take what the migrated row takes.

Prints a table per database and, with ``--json``, writes the figures.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
PG = os.environ.get("CRANFIELD_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")

ARRAYS = ("diff", "statistic", "p", "p_adjusted", "resamples", "mc_se", "undecided", "degenerate")


def results(runs: int, topics: int, resamples: int) -> dict[str, Any]:
    """The test without a correction and with Holm's (the same resamples)."""
    import numpy as np

    from service.metrics.stats.correction import adjust
    from service.metrics.stats.pairwise import pairwise

    scores = np.random.default_rng(0).random((topics, runs))
    plain = pairwise(scores, [f"r{i:04d}" for i in range(runs)], "bootstrap", resamples=resamples, seed=0)
    holm = dataclasses.replace(plain, p_adjusted=adjust(plain.p, "holm"), correction="holm")
    return {"none": plain, "holm": holm}


def _fixture(url: str) -> tuple[int, int]:
    """A collection with one qrels version (what a significance row refers to)."""
    from service.evaluation.organising.setup import ConfigSpec, add_qrels, ensure_collection
    from service.store.db import session_factory, transaction

    with transaction(session_factory(url)) as s:
        coll = ensure_collection(s, "bench-significance", ConfigSpec(official_metric="AP", metrics=("AP",)))
        version = add_qrels(s, coll, b"1 0 d1 1\n", "qrels")
        return coll.id, version.id


def _store_before(url: str, cid: int, vid: int, name: str, res: Any) -> None:
    """The row as the worker wrote it at revision 0021: every array."""
    import sqlalchemy as sa

    from service.evaluation.computing.significance_tests import monte_carlo_columns
    from service.store.arrays import pack
    from service.store.db import engine_for

    cols = ["collection_id", "qrels_version_id", "metric", "test", "settings_hash", "evaluator_version", "runs_hash",
            "params_hash", "subset", "params", "run_ids", "n_topics", "computed_at", "letters", *ARRAYS]
    table = sa.table("significance", *(sa.column(c, sa.JSON() if c in ("params", "run_ids", "letters") else None)
                                       for c in cols))
    row = {"collection_id": cid, "qrels_version_id": vid, "metric": name, "test": res.test, "settings_hash": "s",
           "evaluator_version": "v", "runs_hash": "r", "params_hash": name, "subset": "all", "params": {},
           "run_ids": list(range(len(res.runs))), "n_topics": res.n_topics, "letters": None,
           "computed_at": sa.func.current_timestamp(), "diff": pack(res.diff), "statistic": pack(res.statistic),
           "p": pack(res.p), "p_adjusted": pack(res.p_adjusted), **monte_carlo_columns(res)}
    with engine_for(url).begin() as conn:
        conn.execute(table.insert().values(**row))


def _store_after(url: str, cid: int, vid: int, name: str, res: Any) -> None:
    """The row as the worker writes it now."""
    from service.evaluation.computing.significance_tests import stored_arrays
    from service.store.db import session_factory, transaction
    from service.store.models import Significance

    with transaction(session_factory(url)) as s:
        s.add(Significance(collection_id=cid, qrels_version_id=vid, metric=name, test=res.test, settings_hash="s",
                           evaluator_version="v", runs_hash="r", params_hash=name, subset="all", params={},
                           run_ids=list(range(len(res.runs))), n_topics=res.n_topics, **stored_arrays(res)))


def measure(url: str) -> dict[str, Any]:
    """Per row (metric name): each array column's bytes and their sum; the table's bytes."""
    import sqlalchemy as sa

    from service.store.db import engine_for

    engine = engine_for(url)
    sqlite = url.startswith("sqlite")
    with engine.connect() as conn:
        present = [c["name"] for c in sa.inspect(conn).get_columns("significance") if c["name"] in ARRAYS]
        size = "COALESCE(length({c}), 0)" if sqlite else "COALESCE(pg_column_size({c}), 0)"
        rows = conn.execute(sa.text(f"SELECT metric, {', '.join(size.format(c=c) for c in present)} "
                                    "FROM significance ORDER BY id")).all()
    out: dict[str, Any] = {"rows": {}}
    for metric, *sizes in rows:
        columns = dict(zip(present, (int(v) for v in sizes)))
        out["rows"][metric] = {"columns": columns, "bytes": sum(columns.values())}
    if sqlite:
        import sqlite3

        engine.dispose()
        conn = sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None)  # VACUUM: outside a transaction
        try:
            conn.execute("VACUUM")
            out["table_bytes"] = int(conn.execute(
                "SELECT SUM(pgsize) FROM dbstat WHERE name = 'significance'").fetchone()[0] or 0)
        except sqlite3.OperationalError:  # the sqlite3 library was built without dbstat
            out["table_bytes"] = None
        finally:
            conn.close()
    else:
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.exec_driver_sql("VACUUM FULL significance")
            out["table_bytes"] = int(conn.exec_driver_sql("SELECT pg_total_relation_size('significance')").scalar())
    return out


def one_database(url: str, tests: dict[str, Any]) -> dict[str, Any]:
    from service.store.db import engine_for
    from service.store.migrate import upgrade

    upgrade(url, "0021")
    cid, vid = _fixture(url)
    for name, res in tests.items():
        _store_before(url, cid, vid, name, res)
    before = measure(url)
    engine_for(url).dispose()
    upgrade(url, "head")
    engine_for(url).dispose()
    after = measure(url)
    for name, res in tests.items():
        _store_after(url, cid, vid, f"{name} (written now)", res)
    written = measure(url)
    for name in tests:  # the migration leaves a row as the worker now writes it
        assert written["rows"][f"{name} (written now)"]["columns"] == after["rows"][name]["columns"], name
    return {"before": before, "after": after}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--topics", type=int, default=50)
    ap.add_argument("--B", type=int, default=1000)
    ap.add_argument("--no-postgres", action="store_true")
    ap.add_argument("--json")
    args = ap.parse_args()
    tests = results(args.runs, args.topics, args.B)
    pairs = args.runs * (args.runs - 1) // 2
    report: dict[str, Any] = {"runs": args.runs, "topics": args.topics, "pairs": pairs, "B": args.B, "databases": {}}
    with tempfile.TemporaryDirectory() as tmp:
        report["databases"]["sqlite"] = one_database(f"sqlite:///{tmp}/bench.sqlite", tests)
    if not args.no_postgres:
        import sqlalchemy as sa

        name = f"cranfield_bench_sig_{uuid.uuid4().hex[:8]}"
        admin = sa.create_engine(PG, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
        url = PG.rsplit("/", 1)[0] + f"/{name}"
        try:
            report["databases"]["postgres"] = one_database(url, tests)
        finally:
            from service.store.db import engine_for

            engine_for(url).dispose()
            with admin.connect() as conn:
                conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    print(f"{args.runs} runs x {args.topics} topics: {pairs:,} pairs, bootstrap B = {args.B}; "
          f"bytes per stored test (one metric), MB = 10^6 bytes")
    for db, got in report["databases"].items():
        print(f"\n{db}")
        print(f"{'correction':<11}{'columns before':<60}{'before MB':>10}{'after MB':>10}{'ratio':>8}")
        for corr in tests:
            b, a = got["before"]["rows"][corr], got["after"]["rows"][corr]
            cols = " ".join(f"{c}={v / 1e6:.1f}" for c, v in b["columns"].items() if v)
            print(f"{corr:<11}{cols:<60}{b['bytes'] / 1e6:>10.2f}{a['bytes'] / 1e6:>10.2f}"
                  f"{a['bytes'] / b['bytes']:>8.2f}")
        tb, ta = got["before"]["table_bytes"], got["after"]["table_bytes"]
        if tb and ta:
            print(f"table (both rows): {tb / 1e6:.2f} MB before, {ta / 1e6:.2f} MB after (vacuumed)")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
