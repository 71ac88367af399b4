"""Partitions between hosts (issue 34, item 7): workers and the API in network namespaces of
their own, PostgreSQL, Redis and the scheduler in the root namespace, faults made by iptables
dropping a host's packets silently (tests/support/netns.py). What docs/operations.md
("Partitions") promises is checked here, with short settings (lease 6 s, a sweep every
second, a silent connection dead after 4 s) so that the module takes about three minutes:

- a partitioned worker's claimed items are taken over within lease + two sweep intervals of
  the cut although 100 evaluations wait in the queue (the sweeper is the scheduler's own
  work, never queued behind them), and the worker resumes within its stated bound once the
  cut heals;
- its stale attempts are refused when they come back (the lease fencing): each run stored
  exactly once, one round of tests, the scores equal a clean evaluation by the core;
- the API answers 503 within its queue timeout while PostgreSQL drops its packets;
- workers whose clocks are 120 s slow and 120 s fast cause no takeover of a live attempt, and a
  killed one's items are taken over in time: leases live on the database's clock.

It needs root (namespaces, iptables); where namespaces cannot be made it is skipped, and
under CI it fails instead. Exclusive: it changes the machine's firewall, and it measures
recovery times that a loaded machine (the parallel run) would blur.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import httpx
import pytest
from sqlalchemy import func, select

from service.evaluation.organising.planning import plan_job
from service.evaluation.organising.setup import ConfigSpec, add_qrels, add_run, ensure_collection
from service.sample import CollectionSpec, generate
from service.store.db import transaction
from service.store.models import Job, JobItem, RunEvaluation, Significance
from tests.integration.conftest import REPO, Backend, wait_for
from tests.integration.test_pipeline import METRICS, check_scores_equal_the_core
from tests.support.netns import Host, Lab, unavailable
from tests.support.ports import free_port

pytestmark = [pytest.mark.parametrize("backend", ["postgres"], indirect=True), pytest.mark.exclusive]

LEASE, SWEEP, NET, CONNECT, QUEUE = 6.0, 1.0, 4.0, 2.0, 2.0
SETTINGS = {"CRANFIELD_LEASE": str(LEASE), "CRANFIELD_SWEEP_INTERVAL": str(SWEEP), "CRANFIELD_NET_TIMEOUT": str(NET),
            "CRANFIELD_DB_CONNECT_TIMEOUT": str(CONNECT), "CRANFIELD_API_QUEUE_SECONDS": str(QUEUE),
            # no countdown on the tests round: a Celery ETA is a wall-clock time, which the skewed
            # workers of the clock test would read wrong (docs/operations.md, "Clocks")
            "CRANFIELD_TESTS_DEBOUNCE": "0"}
TAKEOVER = LEASE + 2 * SWEEP  # docs/operations.md: a dead or cut-off attempt's work is taken over by then
RESUME = NET + CONNECT + 5.0  # ... and a worker cut off resumes by then once the network heals (RECONNECT_MAX 5 s)
SKEW = 120  # seconds of the clock test's offsets


@pytest.fixture
def lab(backend: Backend, tmp_path: Path) -> Iterator[Lab]:
    reason = unavailable()
    if reason is not None:
        if os.environ.get("CI"):
            pytest.fail(f"the partition tests cannot build their hosts: {reason}", pytrace=False)
        pytest.skip(reason)
    made = Lab(tmp_path)
    backend.env.update(SETTINGS)
    backend.activate()
    try:
        yield made
    finally:
        backend.stop_all()
        made.close()


def load(be: Backend, n_runs: int, seed: int) -> tuple[int, str, dict[str, str], list]:  # type: ignore[type-arg]
    """A collection with ``n_runs`` runs and its job planned (its messages not sent yet)."""
    qrels, runs = generate(CollectionSpec(topics=5, runs=n_runs, depth=20, docs_per_topic=60, judged_per_topic=30,
                                          seed=seed))
    with transaction(be.factory()) as s:
        coll = ensure_collection(s, "task", ConfigSpec(official_metric="AP", metrics=METRICS), "test")
        add_qrels(s, coll, qrels.encode(), "qrels", "test")
        for tag, text in runs.items():
            add_run(s, coll, text.encode(), f"{tag}.run")
        job, followups = plan_job(s, coll, "load")
        job_id = job.id
    return job_id, qrels, runs, followups


def send_all(be: Backend, followups: list) -> None:  # type: ignore[type-arg]
    from workers.tasks import send

    send(followups, be.celery())


def start_worker(be: Backend, name: str, host: Host | None = None, lab: Lab | None = None,
                 **env: str) -> subprocess.Popen:
    """A `celery worker` (2 processes) on ``host`` (reaching PostgreSQL and Redis through its
    link), or in the root namespace."""
    settings = {**os.environ, **be.env, "PYTHONPATH": str(REPO), **env}
    prefix: list[str] = []
    if host is not None and lab is not None:
        prefix = host.prefix()
        settings["CRANFIELD_DATABASE_URL"] = lab.database_url(host, be.database_url)
        settings["CRANFIELD_BROKER_URL"] = lab.redis_url(host, be.env["CRANFIELD_BROKER_URL"])
    log = open(be.tmp / f"worker-{name}.log", "w")  # noqa: SIM115
    proc = subprocess.Popen(
        [*prefix, sys.executable, "-m", "celery", "-A", "workers.app", "worker", "-Q", be.env["CRANFIELD_QUEUE"],
         "-c", "2", "--loglevel", "INFO", "-n", f"{name}-{uuid.uuid4().hex[:6]}@%h"],
        cwd=be.tmp, env=settings, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    be.workers.append(proc)
    return proc


def items(be: Backend, job_id: int) -> dict[int, tuple[str, int]]:
    """item id -> (status, attempts)"""
    with be.factory()() as s:
        return {i: (st, a) for i, st, a in s.execute(select(JobItem.id, JobItem.status, JobItem.attempts)
                                                     .where(JobItem.job_id == job_id))}


def evaluating(be: Backend, job_id: int) -> set[int]:
    return {i for i, (st, _) in items(be, job_id).items() if st == "evaluating"}


def claims(be: Backend, job_id: int, n: int, others: frozenset[int] = frozenset()) -> set[int] | None:
    """The items being evaluated but ``others``, once there are ``n`` in all (else None)."""
    now = evaluating(be, job_id)
    return now - others if len(now) == n else None


def taken_over(be: Backend, job_id: int, held: set[int]) -> bool:
    """Every one of ``held`` (claimed once, by the attempt that was cut off or killed) has left
    that attempt: re-queued by the sweeper, or claimed again already."""
    now = items(be, job_id)
    return all(now[i] != ("evaluating", 1) for i in held)


def consistent(be: Backend, job_id: int, qrels: str, runs: dict[str, str]) -> None:
    """The job done with every run, each run's results stored exactly once, one round of tests,
    and every stored score what a clean evaluation by the core gives."""
    with be.factory()() as s:
        job = s.get(Job, job_id)
        assert job is not None and (job.done, job.failed, job.total) == (len(runs), 0, len(runs)), job.error
        per_run = list(s.execute(select(RunEvaluation.run_id, func.count()).group_by(RunEvaluation.run_id)))
        assert len(per_run) == len(runs) and {n for _, n in per_run} == {1}
        tested = list(s.scalars(select(Significance.metric)))
        assert sorted(tested) == sorted(METRICS)  # one round: each metric's matrix once
        assert job.tests_attempts == 1
    check_scores_equal_the_core(be, qrels, runs, version=1)


def job_done(be: Backend, job_id: int) -> bool:
    with be.factory()() as s:
        job = s.get(Job, job_id)
        return job is not None and job.status in ("done", "failed")


LOG_TIME = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}): INFO/MainProcess\] Task cranfield\.evaluate_item\[")


def first_received_after(log: Path, since: float) -> float | None:
    """The wall-clock time of the first evaluation a worker received after ``since`` (epoch)."""
    for line in log.read_text().splitlines():
        m = LOG_TIME.match(line)
        if m and "received" in line:
            at = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").astimezone().timestamp()
            if at > since:
                return at
    return None


def test_a_partitioned_worker_with_a_backlog(backend: Backend, lab: Lab) -> None:
    """Worker A holds two evaluations when its host is cut off; 100 evaluations wait in the
    queue and worker B, on another host, works through them. A's items are taken over within
    lease + two sweeps; once the cut heals, A's stale attempts store nothing (fencing) and A
    takes work again within its bound; the results are whole and exact."""
    job_id, qrels, runs, followups = load(backend, 100, seed=5)
    a, b = lab.add_host("a"), lab.add_host("b")
    lab.start_forwarder()
    backend.start_beat()
    # A "computes" 30 s per run: its two attempts are alive on A's side through the whole cut
    start_worker(backend, "a", a, lab, CRANFIELD_TASK_DELAY="30")
    send_all(backend, followups)
    held = wait_for(lambda: claims(backend, job_id, 2), 60, "worker A's two claims", backend, every=0.05)
    cut = lab.cut(a)
    start_worker(backend, "b", b, lab, CRANFIELD_TASK_DELAY="0.5")  # ~25 s for the backlog on two processes

    wait_for(lambda: taken_over(backend, job_id, held), 60, "the takeover of A's items", backend, every=0.05)
    took = time.monotonic() - cut
    waiting = sum(1 for st, _ in items(backend, job_id).values() if st == "queued")
    print(f"\nA's items taken over {took:.1f} s after the cut, {waiting} evaluations queued")
    assert waiting >= 50, "the backlog was gone before the takeover: the test proves nothing"
    assert took <= TAKEOVER, f"taken over {took:.1f} s after the cut; docs/operations.md promises {TAKEOVER:g} s"

    time.sleep(max(0.0, cut + 12 - time.monotonic()))  # the cut lasts 12 s, longer than NET: sockets die
    healed_at = time.time()
    lab.heal(a)
    resumed = wait_for(lambda: first_received_after(backend.tmp / "worker-a.log", healed_at), 60,
                       "worker A to take work again", backend, every=0.2)
    print(f"A resumed {resumed - healed_at:.1f} s after the cut healed")
    assert resumed - healed_at <= RESUME, f"A resumed {resumed - healed_at:.1f} s after the heal (bound {RESUME:g} s)"

    wait_for(lambda: job_done(backend, job_id), 240, "the job", backend)
    consistent(backend, job_id, qrels, runs)
    final = items(backend, job_id)
    assert all(final[i][1] == 2 for i in held)  # taken over once, stored by the second attempt
    log = (backend.tmp / "worker-a.log").read_text()
    for i in held:  # A's stale attempts came back and were refused
        assert f"item {i} was taken over from attempt 1; its results are not stored" in log, log[-3000:]


def test_the_api_answers_503_in_time_while_postgres_drops_packets(backend: Backend, lab: Lab) -> None:
    api = lab.add_host("api")
    lab.start_forwarder()
    port = free_port()
    env = {**os.environ, **backend.env, "PYTHONPATH": str(REPO),
           "CRANFIELD_DATABASE_URL": lab.database_url(api, backend.database_url),
           "CRANFIELD_BROKER_URL": lab.redis_url(api, backend.env["CRANFIELD_BROKER_URL"])}
    server = subprocess.Popen([*api.prefix(), sys.executable, "-m", "service.cli", "serve", "--no-worker",
                               "--host", api.address, "--port", str(port)], cwd=backend.tmp, env=env,
                              stdout=open(backend.tmp / "worker-api.log", "w"),  # noqa: SIM115
                              stderr=subprocess.STDOUT, start_new_session=True)
    backend.workers.append(server)
    base = f"http://{api.address}:{port}"

    def ready() -> bool:
        try:
            return httpx.get(f"{base}/health/ready", timeout=5).status_code == 200
        except httpx.HTTPError:
            return False

    wait_for(ready, 60, "the API", backend)
    paths = ("/health/ready", "/api/collections/")
    with httpx.Client(base_url=base, timeout=60) as c:
        assert [c.get(p).status_code for p in paths] == [200, 200]
        lab.cut(api, port=lab.pg_port)  # PostgreSQL drops the API's packets; Redis still answers
        answers: list[tuple[str, int, float]] = []

        def ask(path: str) -> None:
            end = time.monotonic() + 10
            while time.monotonic() < end:
                t0 = time.monotonic()
                status = c.get(path).status_code
                answers.append((path, status, time.monotonic() - t0))

        threads = [threading.Thread(target=ask, args=(p,)) for p in paths for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        slowest = max(seconds for _, _, seconds in answers)
        print(f"\n{len(answers)} answers while PostgreSQL dropped packets, the slowest in {slowest:.2f} s; first "
              + ", ".join(f"{p} {sec:.2f}" for p, _, sec in answers[:8]) + "; over 1.5 s: "
              + ", ".join(f"{p} {sec:.2f}" for p, _, sec in answers if sec > 1.5))
        assert {status for _, status, _ in answers} == {503}, answers
        # A second of slack for a loaded machine's scheduling (measured 1.8 s at most): the fault
        # this guards against was a 26.6 s hang, and the API's own deadline is the queue timeout.
        assert slowest <= QUEUE + 1.0, f"a 503 took {slowest:.2f} s (queue timeout {QUEUE:g} s)"
        healed = lab.heal(api, port=lab.pg_port)
        wait_for(lambda: c.get("/health/ready").status_code == 200, 30, "the API after the cut", backend)
        print(f"ready again {time.monotonic() - healed:.1f} s after the cut healed")
        assert c.get("/api/collections/").status_code == 200


def test_workers_with_wrong_clocks_take_over_nothing_alive(backend: Backend, lab: Lab) -> None:
    """A worker 120 s slow and one 120 s fast (CRANFIELD_TEST_CLOCK_OFFSET shifts the service's
    wall clock in those processes), the scheduler on the right time: on the worker's own clock
    the slow one's leases were expired when written and the fast one's lived 126 s. On the
    database's clock, nothing alive is taken over, and the fast worker's items are taken over
    within lease + two sweeps once it is killed.

    (libfaketime would shift the whole process, Celery's clock too, but Debian's 0.9.10 breaks
    Python's time.sleep: EINVAL with DONT_FAKE_MONOTONIC, sleeps 120 s too long without it.)"""
    job_id, qrels, runs, followups = load(backend, 4, seed=9)
    backend.start_beat()
    delay = str(3 * LEASE)  # each attempt outlives its lease three times: only its renewals keep it
    start_worker(backend, "slow", CRANFIELD_TASK_DELAY=delay, CRANFIELD_TEST_CLOCK_OFFSET=f"-{SKEW}")
    send_all(backend, followups)
    slow = wait_for(lambda: claims(backend, job_id, 2), 60, "the slow worker's claims", backend, every=0.05)
    fast_worker = start_worker(backend, "fast", CRANFIELD_TASK_DELAY=delay, CRANFIELD_TEST_CLOCK_OFFSET=str(SKEW))
    fast = wait_for(lambda: claims(backend, job_id, 4, frozenset(slow)), 60, "the fast worker's claims", backend,
                    every=0.05)
    time.sleep(LEASE + 2 * SWEEP)  # long enough for a wrong lease to be swept
    assert evaluating(backend, job_id) == slow | fast and all(a == 1 for _, a in items(backend, job_id).values())
    backend.kill(fast_worker)
    killed = time.monotonic()
    wait_for(lambda: taken_over(backend, job_id, fast), 60, "the takeover of the killed worker's items", backend,
             every=0.05)
    took = time.monotonic() - killed
    print(f"\nthe killed fast-clock worker's items taken over {took:.1f} s after the kill")
    assert took <= TAKEOVER
    wait_for(lambda: job_done(backend, job_id), 180, "the job", backend)
    consistent(backend, job_id, qrels, runs)
    final = items(backend, job_id)
    assert all(final[i][1] == 1 for i in slow), final  # the slow worker's live attempts were never taken over
    assert all(final[i][1] == 2 for i in fast), final
    assert "taken over" not in (backend.tmp / "worker-slow.log").read_text()
