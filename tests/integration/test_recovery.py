"""Recovery from faults during a re-evaluation, on the production topology: PostgreSQL, Redis,
two `celery worker` processes and one `celery beat`, with the DEFAULT lease, sweep and
lost-message settings (only CRANFIELD_TASK_DELAY makes evaluations slow enough to be caught
in flight). Each fault must leave the service consistent within 60 s of the fault ending:
the job done, every run's results stored exactly once, one round of tests.

Also the debounce of the tests: a burst of 30 submissions (30 jobs) while the workers run
costs one round of tests, and every run is evaluated exactly once.
"""

from __future__ import annotations

import subprocess
import time

import pytest
from sqlalchemy import func, select

from service.evaluation.computing.task_table import run_here
from service.evaluation.organising.planning import plan_job
from service.evaluation.organising.setup import ConfigSpec, add_qrels, add_run, ensure_collection
from service.sample import CollectionSpec, generate
from service.store.db import transaction
from service.store.models import Job, JobItem, QrelsVersion, RunEvaluation, Significance
from tests.integration.conftest import Backend, load_evaluated, restart_postgres, restart_redis, wait_for
from tests.integration.test_pipeline import METRICS, collection, upload_corrected_qrels

# It restarts the shared PostgreSQL and Redis: alone, after the rest (README's test command).
pytestmark = [pytest.mark.parametrize("backend", ["postgres"], indirect=True), pytest.mark.exclusive]

DELAY = "2"  # seconds each evaluation takes: 20 runs on 4 worker processes take ~10 s
RECOVERY = 60.0  # seconds from the end of the fault to a consistent state (the target)


def production(be: Backend) -> tuple[dict[str, str], int, subprocess.Popen]:
    """Qrels v1 and 20 runs evaluated (in-process, quickly), then two workers and one beat
    with the default settings, and the re-evaluation on qrels v2 sent to them."""
    qrels1, runs, qrels2 = collection()
    load_evaluated(be.factory(), qrels1, runs, METRICS)
    workers = [be.start_worker(beat=False, CRANFIELD_TASK_DELAY=DELAY) for _ in range(2)]
    be.start_beat()
    time.sleep(3)  # let them connect
    job = upload_corrected_qrels(be, qrels2)
    return runs, job, workers[0]


def statuses(be: Backend, job_id: int) -> list[str]:
    with be.factory()() as s:
        return list(s.scalars(select(JobItem.status).where(JobItem.job_id == job_id)))


def consistent(be: Backend, job_id: int, n_runs: int) -> bool:
    """The job done with every run, each run's results stored once, one round of tests."""
    with be.factory()() as s:
        job = s.get(Job, job_id)
        if job is None or job.status != "done":
            return False
        assert (job.done, job.failed, job.total) == (n_runs, 0, n_runs), job.error
        evaluations = s.scalar(select(func.count()).select_from(RunEvaluation).join(QrelsVersion)
                               .where(QrelsVersion.version == 2))
        assert evaluations == n_runs
        assert s.scalar(select(func.count(func.distinct(RunEvaluation.run_id))).join(QrelsVersion)
                        .where(QrelsVersion.version == 2)) == n_runs
        tested = s.scalars(select(Significance.metric)
                           .where(Significance.qrels_version_id == job.qrels_version_id)).all()
        assert tested and len(tested) == len(set(tested))  # one test per metric, none twice
        assert "meta" in job.report and len(job.report["runs"]) == n_runs
        return True


def recovered(be: Backend, job_id: int, n_runs: int, since: float, fault: str) -> float:
    wait_for(lambda: consistent(be, job_id, n_runs), RECOVERY, f"consistency after {fault}", be)
    elapsed = time.monotonic() - since
    print(f"\n{fault}: consistent {elapsed:.1f} s after the fault ended")
    return elapsed


def attempts(be: Backend, job_id: int) -> list[int]:
    with be.factory()() as s:
        return list(s.scalars(select(JobItem.attempts).where(JobItem.job_id == job_id)))


def test_a_sigkilled_worker(backend: Backend) -> None:
    runs, job, victim = production(backend)
    # 3 items evaluating on 2 + 2 processes: the victim holds at least one of them
    wait_for(lambda: statuses(backend, job).count("evaluating") >= 3, 60, "evaluations in flight", backend,
             every=0.05)
    backend.kill(victim)
    recovered(backend, job, len(runs), time.monotonic(), "SIGKILL of a worker")
    assert max(attempts(backend, job)) == 2  # the dead worker's items were taken over, once


def test_a_redis_restart(backend: Backend) -> None:
    runs, job, _ = production(backend)
    wait_for(lambda: (lambda st: st.count("done") >= 2 and st.count("queued") >= 8)(statuses(backend, job)), 60,
             "queued messages in Redis", backend, every=0.05)
    back = restart_redis(down=2.0)  # every queued message is lost
    recovered(backend, job, len(runs), back, "a Redis restart")
    assert max(attempts(backend, job)) == 1  # sent again, never evaluated twice


def test_a_postgres_restart(backend: Backend) -> None:
    runs, job, _ = production(backend)
    wait_for(lambda: (lambda st: st.count("done") >= 2 and st.count("evaluating") >= 3)(statuses(backend, job)), 60,
             "evaluations in flight", backend, every=0.05)
    back = restart_postgres(down=3.0)
    recovered(backend, job, len(runs), back, "a PostgreSQL restart")


def test_a_burst_of_submissions_costs_one_round_of_tests(backend: Backend) -> None:
    """30 runs submitted as 30 jobs while the workers run: each run evaluated once, one round
    of pairwise tests and meta-evaluation for all of them."""
    from workers.tasks import send

    backend.env["CRANFIELD_TESTS_DEBOUNCE"] = "5"  # the production default: the burst's window
    backend.activate()
    spec = CollectionSpec(topics=10, runs=32, depth=30, docs_per_topic=100, judged_per_topic=50, seed=11)
    qrels, runs = generate(spec)
    tags = list(runs)
    factory = backend.factory()
    with transaction(factory) as s:
        coll = ensure_collection(s, "burst", ConfigSpec(official_metric="AP", metrics=("AP", "nDCG@10")), "test")
        add_qrels(s, coll, qrels.encode(), "qrels", "test")
        for tag in tags[:2]:
            add_run(s, coll, runs[tag].encode(), f"{tag}.run")
        _, followups = plan_job(s, coll, "load")
    run_here(factory, followups)  # two runs evaluated and tested: one round so far
    for _ in range(2):
        backend.start_worker(beat=False)
    backend.start_beat()
    time.sleep(3)
    celery = backend.celery()
    burst = []
    for tag in tags[2:]:  # what each submission does: store the run, plan its job, send after the commit
        with transaction(factory) as s:
            coll = ensure_collection(s, "burst", None)
            add_run(s, coll, runs[tag].encode(), f"{tag}.run")
            job, followups = plan_job(s, coll, "submission")
            burst.append(job.id)
        send(followups, celery)
    assert len(set(burst)) == 30

    def all_done() -> bool:
        with factory() as s:
            return all(s.get(Job, j).status == "done" for j in burst)

    wait_for(all_done, 120, "the 30 submissions", backend)
    with factory() as s:
        per_run = list(s.execute(select(RunEvaluation.run_id, func.count()).group_by(RunEvaluation.run_id)))
        assert len(per_run) == 32 and {n for _, n in per_run} == {1}  # every run evaluated exactly once
        assert set(s.scalars(select(JobItem.attempts).where(JobItem.job_id.in_(burst)))) == {1}
        # One test per metric over all 32 runs (the first round's, of two runs, is replaced by it); that one
        # round served the whole burst: every job finished at once, with the same report.
        rounds = list(s.scalars(select(Significance).order_by(Significance.id)))
        assert sorted((x.metric, len(x.run_ids)) for x in rounds) == [("AP", 32), ("nDCG@10", 32)]
        jobs = [s.get(Job, j) for j in burst]
        assert len({j.finished_at for j in jobs}) == 1  # finished together, by that one round
        assert all(j.report == jobs[0].report and "meta" in j.report for j in jobs)
        assert {j.tests_attempts for j in jobs} == {1}
