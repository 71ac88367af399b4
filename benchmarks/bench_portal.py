"""Portal page times and pool building on a 100-run collection (in-process, SQLite).

    python benchmarks/bench_portal.py [--runs 100] [--topics 50] [--depth 100] [--repeat 5]

A generated collection (graded qrels, runs of graded quality) is stored and evaluated as the
workers would (in this process), then each page is requested through Litestar's test client:
the first request renders its charts (matplotlib, cold cache), the next ones are served with
the charts cached. Also timed: building a depth-20 pool of every run (the organiser's
request) and the reusability analysis (the worker's part). No peer does this; the figures are
for regressions and for sizing.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--topics", type=int, default=50)
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    from litestar.testing import TestClient

    from service.api.app import create_app
    from service.evaluation.analysing import analyses
    from service.evaluation.judging import pools
    from service.evaluation.organising.planning import plan_job
    from service.evaluation.organising.setup import ConfigSpec, add_qrels, add_run, ensure_collection
    from service.evaluation.permissions.access import Principal, create_token
    from service.sample import CollectionSpec, generate
    from service.store.db import session_factory, transaction
    from service.store.migrate import upgrade
    from tests.integration.conftest import run_inline

    tmp = Path(tempfile.mkdtemp(prefix="cranfield-bench-portal-"))
    url = f"sqlite:///{tmp / 'bench.sqlite'}"
    upgrade(url)
    factory = session_factory(url)
    qrels, runs = generate(CollectionSpec(topics=args.topics, runs=args.runs, depth=args.depth,
                                          docs_per_topic=max(400, 4 * args.depth), judged_per_topic=150))
    t = time.perf_counter()
    with transaction(factory) as s:
        coll = ensure_collection(s, "bench", ConfigSpec(official_metric="nDCG@10",
                                                        metrics=("nDCG@10", "AP", "Q", "ERR@10", "P@10")))
        add_qrels(s, coll, qrels.encode(), "qrels")
        for tag, text in runs.items():
            add_run(s, coll, text.encode(), tag, team=f"team-{tag}")
        coll.visibility, coll.leaderboard_released = "public", True
        _, followups = plan_job(s, coll, "load")
        admin, _ = create_token(s, "admin", name="bench")
        cid = coll.id
    run_inline(factory, followups)
    print(f"setup: {args.runs} runs x {args.topics} topics x depth {args.depth} stored and evaluated "
          f"in {time.perf_counter() - t:.1f} s")

    app = create_app(url, lambda f: run_inline(factory, f))
    with TestClient(app=app) as c:
        cookie = {"Cookie": f"cranfield_token={admin}"}
        run_id = c.get(f"/api/collections/{cid}/leaderboard").json()["rows"][0]["run_id"]
        pages = {"leaderboard": f"/c/{cid}", "run page": f"/runs/{run_id}",
                 "significance heat map": f"/c/{cid}/significance", "metric analysis": f"/c/{cid}/analysis",
                 "leaderboard by AP": f"/c/{cid}?metric=AP"}
        print(f"{'page':24} {'first (ms)':>11} {'cached median (ms)':>19}  bytes")
        for name, path in pages.items():
            t = time.perf_counter()
            r = c.get(path, headers=cookie)
            first = (time.perf_counter() - t) * 1000
            assert r.status_code == 200, (path, r.status_code)
            warm = []
            for _ in range(args.repeat):
                t = time.perf_counter()
                c.get(path, headers=cookie)
                warm.append((time.perf_counter() - t) * 1000)
            print(f"{name:24} {first:11.0f} {statistics.median(warm):19.1f}  {len(r.content)}")

    me = Principal(role="admin", name="bench")
    from service.store.models import Collection, Pool

    t = time.perf_counter()
    pid = pools.create_pool(factory, lambda s: me, cid, 20)
    pooled = time.perf_counter() - t
    with transaction(factory) as s:
        size = s.get(Pool, pid).size
        followups = analyses.request(s, s.get(Collection, cid), me, "AP").followups
    print(f"pool of {args.runs} runs at depth 20: {size} documents to judge, built and stored in {pooled:.2f} s")
    t = time.perf_counter()
    run_inline(factory, followups)
    print(f"reusability analysis (pool statistics + leave-one-team-out, {args.runs} teams, AP): "
          f"{time.perf_counter() - t:.2f} s")


if __name__ == "__main__":
    main()
