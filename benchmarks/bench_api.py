"""Leaderboard latency under a fixed request rate (open loop), from a second process.

    python benchmarks/bench_api.py [--rates 100,200,400] [--seconds 10] [--runs 100]

A 100-run collection (50 topics, depth 100; public, released, with the bootstrap matrix of
its official metric) is loaded into a fresh PostgreSQL database and evaluated by a worker;
`cranfield serve` (one uvicorn process) answers, and a load generator in a separate process
sends GET /api/collections/{id}/leaderboard at a fixed rate (requests are sent on schedule
whether or not earlier ones have returned), recording each latency. Reported: p50 / p99 per
rate, errors, and the highest tested rate whose p99 stays under 50 ms. Server and load
generator share this 2-core machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
PG = os.environ.get("CRANFIELD_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
REDIS = os.environ.get("CRANFIELD_TEST_REDIS", "redis://127.0.0.1:6379/0")


def load_generator(url: str, rate: float, seconds: float) -> dict:
    """Open-loop: request i is sent at t0 + i/rate."""
    import httpx

    async def run() -> tuple[list[float], int]:
        latencies: list[float] = []
        errors = 0
        limits = httpx.Limits(max_connections=512, max_keepalive_connections=512)
        async with httpx.AsyncClient(timeout=10, limits=limits) as client:
            async def one() -> None:
                nonlocal errors
                t = time.perf_counter()
                try:
                    r = await client.get(url)
                    if r.status_code != 200:
                        errors += 1
                except httpx.HTTPError:
                    errors += 1
                latencies.append(time.perf_counter() - t)

            tasks = []
            t0 = time.perf_counter()
            n = int(rate * seconds)
            for i in range(n):
                delay = t0 + i / rate - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
                tasks.append(asyncio.create_task(one()))
            done, pending = await asyncio.wait(tasks, timeout=15)
            for task in pending:  # still unanswered 15 s after the last send: failures
                task.cancel()
                errors += 1
        return latencies, errors

    latencies, errors = asyncio.run(run())
    latencies.sort()
    pick = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000  # noqa: E731
    return {"rate": rate, "requests": len(latencies), "errors": errors, "p50_ms": pick(0.5), "p99_ms": pick(0.99)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rates", default="100,200,400")
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--generator", nargs=3, metavar=("URL", "RATE", "SECONDS"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.generator:  # the load generator's own process
        print(json.dumps(load_generator(args.generator[0], float(args.generator[1]), float(args.generator[2]))))
        return

    from sqlalchemy import create_engine

    from service.sample import CollectionSpec, write

    name = f"cranfield_apibench_{uuid.uuid4().hex[:8]}"
    admin = create_engine(PG, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    url = PG.rsplit("/", 1)[0] + f"/{name}"
    tmp = Path(tempfile.mkdtemp())
    env = {**os.environ, "CRANFIELD_DATABASE_URL": url, "CRANFIELD_BROKER_URL": REDIS,
           "CRANFIELD_QUEUE": f"apibench-{name}", "PYTHONPATH": str(REPO)}
    cli = [sys.executable, "-m", "service.cli"]
    procs: list[subprocess.Popen] = []
    try:
        write(CollectionSpec(topics=50, runs=args.runs, depth=100, docs_per_topic=400, judged_per_topic=150,
                             missing_topic_rate=0.0), tmp / "coll")
        subprocess.run([*cli, "db", "upgrade"], env=env, check=True, capture_output=True)
        procs.append(subprocess.Popen([*cli, "worker", "--concurrency", "2", "--loglevel", "WARNING"], env=env,
                                      cwd=tmp, start_new_session=True, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL))
        subprocess.run([*cli, "load", "--collection", "bench", "--qrels", str(tmp / "coll" / "qrels.ntcir"),
                        "--runs", str(tmp / "coll" / "runs")], env=env, check=True, capture_output=True)
        deadline = time.time() + 300
        while "\tdone\t" not in subprocess.run([*cli, "jobs"], env=env, capture_output=True, text=True).stdout:
            if time.time() > deadline:
                raise TimeoutError("evaluation did not finish")
            time.sleep(1)
        from service.store.db import session_factory, transaction
        from service.store.models import Collection

        with transaction(session_factory(url)) as s:
            coll = s.query(Collection).one()
            coll.visibility, coll.leaderboard_released = "public", True
            cid = coll.id
        port = _free_port()
        procs.append(subprocess.Popen([*cli, "serve", "--port", str(port), "--no-worker"], env=env, cwd=tmp,
                                      start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        target = f"http://127.0.0.1:{port}/api/collections/{cid}/leaderboard"
        import httpx

        for _ in range(100):
            try:
                if httpx.get(target, timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        rows = len(httpx.get(target).json()["rows"])
        print(f"leaderboard of {rows} runs, PostgreSQL, one uvicorn process; open-loop load from a second process",
              flush=True)
        best = None
        for rate in [float(r) for r in args.rates.split(",")]:
            out = subprocess.run([sys.executable, __file__, "--generator", target, str(rate), str(args.seconds)],
                                 capture_output=True, text=True, check=True, timeout=args.seconds + 120).stdout
            res = json.loads(out)
            print(f"rate {rate:5.0f}/s: {res['requests']} requests, {res['errors']} errors, "
                  f"p50 {res['p50_ms']:.1f} ms, p99 {res['p99_ms']:.1f} ms", flush=True)
            if res["p99_ms"] < 50 and res["errors"] == 0:
                best = rate if best is None else max(best, rate)
        print(f"highest tested rate with p99 < 50 ms: {best}")
    finally:
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        from service.store.db import engine_for

        engine_for(url).dispose()
        with admin.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    main()
