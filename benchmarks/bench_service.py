"""The evaluation service end to end on PostgreSQL + Redis with 2 worker processes.

    python benchmarks/bench_service.py [--runs 100 --topics 50 --depth 1000] [--concurrency 2]

Workload (issue 4): the benchmark collection of bench_eval.py (50 topics, 100 runs of depth
1000, graded qrels). Steps, each timed by wall clock:
  1. load: register the collection, store the qrels version and the 100 runs (validated,
     compressed) in one transaction, enqueue the job;
  2. evaluate: until the job is done: every run's default metric set stored, then the
     bootstrap test (B = 1000) of all 4950 pairs of the official metric;
  3. correct: a new qrels version (a fifth of the judgments changed), from the upload until
     all results of the re-evaluation are stored (the issue's measure).
The worker is a real Celery worker (`-c 2`) started before step 1. Needs PostgreSQL on
127.0.0.1:5432 and Redis on 127.0.0.1:6379 (as the tests do).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_eval import ensure_collection as ensure_benchmark_collection  # noqa: E402

PG = os.environ.get("CRANFIELD_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
REDIS = os.environ.get("CRANFIELD_TEST_REDIS", "redis://127.0.0.1:6379/0")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--topics", type=int, default=50)
    ap.add_argument("--depth", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=20261121)
    ap.add_argument("--concurrency", type=int, default=2)
    args = ap.parse_args()

    qrels_path, run_paths, _ = ensure_benchmark_collection(args.topics, args.runs, args.depth, args.seed)
    from sqlalchemy import create_engine, func, select

    name = f"cranfield_bench_{uuid.uuid4().hex[:8]}"
    admin = create_engine(PG, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    url = PG.rsplit("/", 1)[0] + f"/{name}"
    env = {"CRANFIELD_DATABASE_URL": url, "CRANFIELD_BROKER_URL": REDIS, "CRANFIELD_QUEUE": f"bench-{name}"}
    os.environ.update(env)
    from service.config import settings
    from service.evaluation.organising.planning import plan_job
    from service.evaluation.organising.setup import ConfigSpec, add_qrels, add_run, ensure_collection
    from service.store.db import session_factory, transaction
    from service.store.migrate import upgrade
    from service.store.models import Job, JobItem, RunEvaluation, Significance
    from workers.app import make_app
    from workers.tasks import send

    settings.cache_clear()
    upgrade(url)
    factory = session_factory(url)
    celery = make_app()
    tmp = Path(tempfile.mkdtemp())
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "workers.app", "worker", "-Q", env["CRANFIELD_QUEUE"], "-c",
         str(args.concurrency), "--loglevel", "WARNING"],
        cwd=tmp, env={**os.environ, "PYTHONPATH": str(REPO)}, start_new_session=True,
        stdout=open(tmp / "worker.log", "w"), stderr=subprocess.STDOUT,  # noqa: SIM115
    )
    try:
        time.sleep(3)  # the worker's processes start while nothing is queued
        qrels_bytes = qrels_path.read_bytes()
        runs = [p.read_bytes() for p in run_paths]
        print(f"collection: {args.topics} topics, {len(runs)} runs of depth {args.depth}, "
              f"{sum(len(r) for r in runs) / 1e6:.0f} MB of runs; PostgreSQL + Redis; worker -c {args.concurrency}")

        t0 = time.perf_counter()
        with transaction(factory) as s:
            coll = ensure_collection(s, "bench", ConfigSpec(official_metric="nDCG@10"), "bench")
            add_qrels(s, coll, qrels_bytes, qrels_path.name, "bench")
            for p, data in zip(run_paths, runs):
                add_run(s, coll, data, p.name)
            job, followups = plan_job(s, coll, "load")
            job1 = job.id
        t_load = time.perf_counter() - t0
        send(followups, celery)
        t_eval = wait_done(factory, job1) - t0 - t_load
        print(f"1. load (validate + store qrels and {len(runs)} runs, one transaction): {t_load:7.2f} s")
        print(f"2. evaluate (default set for every run + bootstrap of all pairs): {t_eval:7.2f} s")

        rng = np.random.default_rng(1)
        lines = []
        for line in qrels_bytes.decode().splitlines():
            t, it, d, lv = line.split()
            if rng.random() < 0.2:
                lv = str(int(rng.integers(0, 4)))
            lines.append(f"{t} {it} {d} {lv}")
        corrected = ("\n".join(lines) + "\n").encode()
        t1 = time.perf_counter()
        with transaction(factory) as s:
            coll = ensure_collection(s, "bench", None)
            previous = coll.current_qrels_id
            add_qrels(s, coll, corrected, "qrels-v2", "bench")
            job, followups = plan_job(s, coll, "qrels", previous_qrels_id=previous)
            job2 = job.id
        t_upload = time.perf_counter() - t1
        send(followups, celery)
        t_done = wait_done(factory, job2) - t1
        with factory() as s:
            j = s.get(Job, job2)
            compute = s.scalar(select(func.sum(RunEvaluation.seconds)).where(
                RunEvaluation.qrels_version_id == j.qrels_version_id))
            n = s.scalar(select(func.count()).select_from(RunEvaluation).where(
                RunEvaluation.qrels_version_id == j.qrels_version_id))
            sig = s.scalar(select(func.count()).select_from(Significance).where(
                Significance.qrels_version_id == j.qrels_version_id))
            first, last = s.execute(select(func.min(JobItem.started_at), func.max(JobItem.finished_at))
                                    .where(JobItem.job_id == job2)).one()
            created, finished = j.created_at, j.finished_at
        print(f"3. qrels upload -> all results stored: {t_done:7.2f} s (upload and store of the version "
              f"{t_upload:.2f} s; {n} run evaluations, {sig} significance matrix; metric computation "
              f"{compute:.2f} s summed over the worker processes)")
        # where the correction's time went, from the database's timestamps (one clock)
        print(f"   job planned -> first evaluation starts {(first - created).total_seconds():6.2f} s; "
              f"evaluations {(last - first).total_seconds():6.2f} s; last evaluation -> tests stored "
              f"{(finished - last).total_seconds():6.2f} s")
    finally:
        os.killpg(worker.pid, 9)
        worker.wait()
        from service.store.db import engine_for

        engine_for(url).dispose()
        with admin.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def wait_done(factory, job_id: int, timeout: float = 600) -> float:  # type: ignore[no-untyped-def]
    from service.store.models import Job

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with factory() as s:
            if s.get(Job, job_id).status == "done":
                return time.perf_counter()
        time.sleep(0.1)
    raise TimeoutError(f"job {job_id} not done after {timeout} s")


if __name__ == "__main__":
    main()
