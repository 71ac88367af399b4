"""The store and the workers end to end, on PostgreSQL + Redis and on the embedded default
(SQLite + the filesystem broker), with real Celery worker processes."""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import func, select

from service.evaluation.organising.planning import plan_job
from service.evaluation.organising.setup import EVALUATOR_VERSION, ConfigSpec, add_qrels, add_run, ensure_collection
from service.evaluation.publishing.reading import leaderboard
from service.formats.readers import parse_qrels, parse_run
from service.metrics import EvalSettings, evaluate
from service.sample import CollectionSpec, generate
from service.store.arrays import unpack
from service.store.db import transaction
from service.store.models import (
    CollectionConfig,
    Job,
    JobItem,
    QrelsVersion,
    Run,
    RunEvaluation,
    Score,
    Significance,
)
from tests.integration.conftest import Backend, sqlite_jobs, wait_for
from workers.tasks import send

METRICS = ("AP", "Q", "nDCG@10", "bpref", "RR")
SPEC = CollectionSpec(topics=10, runs=20, depth=50, docs_per_topic=200, judged_per_topic=80, seed=7)


def collection() -> tuple[str, dict[str, str], str]:
    """(qrels v1, runs, qrels v2): v2 corrects a fifth of the judgments."""
    qrels, runs = generate(SPEC)
    rng = np.random.default_rng(1)
    lines = []
    for line in qrels.splitlines():
        t, d, lv = line.split()
        if rng.random() < 0.2:
            lv = f"L{int(rng.integers(0, 4))}"
        lines.append(f"{t} {d} {lv}")
    return qrels, runs, "\n".join(lines) + "\n"


def load(be: Backend, qrels: str, runs: dict[str, str]) -> int:
    with transaction(be.factory()) as s:
        coll = ensure_collection(s, "task", ConfigSpec(official_metric="AP", metrics=METRICS), "test")
        add_qrels(s, coll, qrels.encode(), "qrels-v1", "test")
        for tag, text in runs.items():
            add_run(s, coll, text.encode(), f"{tag}.run")
        job, followups = plan_job(s, coll, "load")
        job_id = job.id
    send(followups, be.celery())
    return job_id


def upload_corrected_qrels(be: Backend, qrels: str) -> int:
    """A new qrels version of the collection, and the job re-evaluating it (sent after commit)."""
    with transaction(be.factory()) as s:
        coll = ensure_collection(s, "task", None)
        previous = coll.current_qrels_id
        add_qrels(s, coll, qrels.encode(), "qrels-v2", "organiser")
        job, followups = plan_job(s, coll, "qrels", previous_qrels_id=previous)
        job_id = job.id
    send(followups, be.celery())
    return job_id


def job_done(be: Backend, job_id: int) -> Job | None:
    with be.factory()() as s:
        job = s.get(Job, job_id)
        return job if job is not None and job.status == "done" else None


def check_scores_equal_the_core(be: Backend, qrels_text: str, runs: dict[str, str], version: int) -> None:
    """Every stored score of the current version equals a direct evaluation by the core."""
    qrels = parse_qrels(qrels_text.encode())
    from service.evaluation.computing.evaluating import ALWAYS_EVALUATED

    core = evaluate(qrels, [parse_run(t.encode()) for t in runs.values()], [*METRICS, *ALWAYS_EVALUATED],
                    EvalSettings())
    with be.factory()() as s:
        qv = s.scalar(select(QrelsVersion).where(QrelsVersion.version == version))
        evals = list(s.scalars(select(RunEvaluation).where(RunEvaluation.qrels_version_id == qv.id)))
        assert len(evals) == len(runs)  # one result set per run: nothing lost, nothing duplicated
        for ev in evals:
            run = s.get(Run, ev.run_id)
            assert ev.evaluator_version == EVALUATOR_VERSION
            assert tuple(ev.topics) == core.topics
            i = core.runs.index(run.tag)
            assert {s.metric for s in ev.scores} == {str(m) for m in core.measures}  # Judged@10 always stored
            for score in ev.scores:
                expected = core.per_topic(score.metric)[i]
                assert np.array_equal(unpack(score.values), expected, equal_nan=True), (run.tag, score.metric)
                assert score.mean == pytest.approx(float(core.means(score.metric)[i]), abs=1e-12)
                assert score.ci_low <= score.mean <= score.ci_high


def test_load_evaluate_correct_qrels_and_rank_changes(backend: Backend) -> None:
    qrels1, runs, qrels2 = collection()
    job1 = load(backend, qrels1, runs)
    backend.start_worker()
    wait_for(lambda: job_done(backend, job1), 120, "the first evaluation", backend)
    check_scores_equal_the_core(backend, qrels1, runs, 1)

    # A corrected qrels version: a new immutable version, and the whole collection re-evaluated.
    job2 = upload_corrected_qrels(backend, qrels2)
    done = wait_for(lambda: job_done(backend, job2), 120, "the re-evaluation", backend)
    check_scores_equal_the_core(backend, qrels2, runs, 2)
    check_scores_equal_the_core(backend, qrels1, runs, 1)  # nothing of the old results is lost

    assert done.done == done.total == len(runs) and done.failed == 0
    report = done.report
    assert (report["metric"], report["old_qrels_version"], report["new_qrels_version"]) == ("AP", 1, 2)
    assert len(report["runs"]) == len(runs)
    with backend.factory()() as s:
        metric, rows = leaderboard(s, "task")
        assert metric == "AP" and [r.rank for r in rows] == sorted(r.rank for r in rows)
        assert {r.qrels_version for r in rows} == {2}
        by_run = {r["run"]: r for r in report["runs"]}
        assert all(by_run[r.run]["new_rank"] == r.rank for r in rows)
        # The pairwise tests of every metric of the collection, for both versions.
        sig = list(s.scalars(select(Significance).order_by(Significance.qrels_version_id, Significance.metric)))
        metrics = sorted(s.scalar(select(CollectionConfig.metrics).order_by(CollectionConfig.id.desc()).limit(1)))
        assert [(x.metric, x.test) for x in sig] == [(m, "bootstrap") for m in metrics] * 2
        assert unpack(sig[-1].p_adjusted).shape == (len(runs) * (len(runs) - 1) // 2,)
        assert all(x.p is None for x in sig)  # no correction: the raw p are the adjusted ones, not stored twice
        assert all(x.letters for x in sig)  # each test's compact letter display is stored with it
        stored_v1 = s.scalar(select(QrelsVersion).where(QrelsVersion.version == 1))
        assert zlib.decompress(stored_v1.file) == qrels1.encode()  # kept verbatim


def test_sigkill_mid_reevaluation_loses_and_duplicates_nothing(backend: Backend) -> None:
    qrels1, runs, qrels2 = collection()
    job1 = load(backend, qrels1, runs)
    # Short leases here (tests/integration/test_recovery.py uses the defaults): a claim lives
    # 3 s without its heartbeat, and the sweeper runs every second.
    slow = backend.start_worker(CRANFIELD_TASK_DELAY="0.7", CRANFIELD_SWEEP_INTERVAL="1", CRANFIELD_LEASE="3")
    wait_for(lambda: job_done(backend, job1), 180, "the first evaluation", backend)
    job2 = upload_corrected_qrels(backend, qrels2)

    def some_done_some_evaluating() -> bool:
        with backend.factory()() as s:
            statuses = list(s.scalars(select(JobItem.status).where(JobItem.job_id == job2)))
            return statuses.count("done") >= 2 and "evaluating" in statuses

    wait_for(some_done_some_evaluating, 120, "a re-evaluation in progress", backend, every=0.05)
    backend.kill(slow)  # SIGKILL the worker and all its processes, mid-task
    with backend.factory()() as s:
        assert s.get(Job, job2).status != "done"

    backend.start_worker(CRANFIELD_SWEEP_INTERVAL="1", CRANFIELD_LEASE="3")
    done = wait_for(lambda: job_done(backend, job2), 180, "the re-evaluation to finish after the kill", backend)
    assert done.done == done.total == len(runs) and done.failed == 0
    check_scores_equal_the_core(backend, qrels2, runs, 2)
    with backend.factory()() as s:
        n = s.scalar(select(func.count()).select_from(RunEvaluation).join(QrelsVersion).where(QrelsVersion.version == 2))
        assert n == len(runs)
        n_scores = s.scalar(select(func.count()).select_from(Score).join(RunEvaluation).join(QrelsVersion)
                            .where(QrelsVersion.version == 2))
        assert n_scores == len(runs) * (len(METRICS) + 1)  # + Judged@10
        tested = s.execute(select(Significance.metric).where(
            Significance.qrels_version_id == done.qrels_version_id)).scalars().all()
        assert sorted(tested) == sorted(METRICS)  # one test per metric, none twice
        retaken = s.scalars(select(JobItem.attempts).where(JobItem.job_id == job2, JobItem.attempts > 1)).all()
        assert retaken, "no item of the killed worker was taken over"


def test_a_bad_run_fails_alone_and_a_bad_upload_stores_nothing(backend: Backend) -> None:
    qrels1, runs, _ = collection()
    from service.errors import InvalidInput

    with pytest.raises(InvalidInput, match="broken.run:2: score 'x' is not a number"):
        with transaction(backend.factory()) as s:
            coll = ensure_collection(s, "task", ConfigSpec(official_metric="AP", metrics=METRICS))
            add_qrels(s, coll, qrels1.encode(), "qrels", "t")
            add_run(s, coll, b"0001 Q0 d 1 1 bad\n0001 Q0 e 2 x bad\n", "broken.run")
    with backend.factory()() as s:
        assert s.scalar(select(func.count()).select_from(QrelsVersion)) == 0
        assert s.scalar(select(func.count()).select_from(Run)) == 0

    job_id = load(backend, qrels1, dict(list(runs.items())[:4]))
    with transaction(backend.factory()) as s:  # corrupt one stored run behind the validator's back
        victim = s.scalar(select(Run).order_by(Run.id))
        victim.file = zlib.compress(b"not a run\n")
        victim_tag = victim.tag
    backend.start_worker()
    done = wait_for(lambda: job_done(backend, job_id), 120, "the job", backend)
    assert (done.done, done.failed) == (3, 1)
    with backend.factory()() as s:
        victim = s.scalar(select(Run).where(Run.tag == victim_tag))
        assert victim.status == "failed" and "at least 6" in victim.status_reason
        assert {r.status for r in s.scalars(select(Run).where(Run.tag != victim_tag))} == {"evaluated"}


def test_scheduled_refresh_finds_stale_results(backend: Backend) -> None:
    from service.evaluation.common.work import TaskName
    from service.evaluation.computing.sweeping import refresh_stale
    from service.evaluation.organising.setup import set_config

    qrels1, runs, _ = collection()
    job1 = load(backend, qrels1, dict(list(runs.items())[:5]))
    backend.start_worker()
    wait_for(lambda: job_done(backend, job1), 120, "the first evaluation", backend)
    assert refresh_stale(backend.factory()) == []  # everything is current
    with transaction(backend.factory()) as s:  # the organiser adds a metric: results are stale
        coll = ensure_collection(s, "task", None)
        set_config(s, coll, ConfigSpec(official_metric="AP", metrics=(*METRICS, "nERR@20")), "organiser")
    followups = refresh_stale(backend.factory())
    assert [f.task for f in followups] == [TaskName.EVALUATE_ITEM] * 5
    send(followups, backend.celery())
    with backend.factory()() as s:
        job2 = s.scalar(select(func.max(Job.id)))
    wait_for(lambda: job_done(backend, job2), 120, "the refresh", backend)
    with backend.factory()() as s:
        cfg = s.scalar(select(CollectionConfig).order_by(CollectionConfig.version.desc()))
        assert cfg.version == 2
        metrics = set(s.scalars(select(Score.metric).join(RunEvaluation).where(
            RunEvaluation.settings_hash == cfg.settings_hash)))
        assert "nERR@20" in metrics
    assert refresh_stale(backend.factory()) == []


def test_embedded_default_commands(tmp_path: Path) -> None:
    """`cranfield db upgrade`, `load`, a worker, `leaderboard` and `jobs`, with no server at all."""
    import os
    import subprocess
    import sys

    from tests.integration.conftest import REPO

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for key in ("CRANFIELD_DATABASE_URL", "CRANFIELD_BROKER_URL", "CRANFIELD_BROKER_FOLDER", "CRANFIELD_QUEUE"):
        env.pop(key, None)

    def cli(*args: str) -> str:
        return subprocess.run([sys.executable, "-m", "service.cli", *args], cwd=tmp_path, env=env, check=True,
                              capture_output=True, text=True).stdout

    sample = REPO / "samples" / "ntcir-like"
    cli("db", "upgrade")
    out = cli("load", "--collection", "demo", "--qrels", str(sample / "qrels.ntcir"), "--runs", str(sample / "runs"))
    assert "8 runs stored" in out
    worker = subprocess.Popen([sys.executable, "-m", "service.cli", "worker", "--concurrency", "1"], cwd=tmp_path,
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_for(lambda: any(job[1:] == ("done", 8, 8) for job in sqlite_jobs(tmp_path / "cranfield.sqlite")), 120,
                 "the embedded worker")  # (the command is asked once, after)
        assert "\tdone\t8/8" in cli("jobs")
    finally:
        import signal

        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()
    rows = [line.split("\t") for line in cli("leaderboard", "--collection", "demo").strip().splitlines()]
    assert rows[0] == ["rank", "run", "team", "mean", "t_ci_low", "t_ci_high", "n_topics", "qrels_version",
                       "t_ci_truncated", "boot_ci_low", "boot_ci_high", "boot_ci_method", "boot_ci_resamples"]
    assert all(0.0 <= float(r[i]) <= 1.0 for r in rows[1:] for i in (4, 5, 9, 10))  # AP's range, never beyond
    assert {r[11] for r in rows[1:]} == {"bca"}
    assert [r[1] for r in rows[1:3]] == ["RUN-01", "RUN-02"] and len(rows) == 9
    # Nothing lacks current results: a re-evaluation plans an empty job, audited like the console's
    assert "runs to evaluate" in cli("reevaluate", "--collection", "demo")
    import sqlite3

    with sqlite3.connect(tmp_path / "cranfield.sqlite") as db:
        assert db.execute("select actor from audit_events where action = 'collection.reevaluate'").fetchall() == [
            ("cli",)]
    assert (tmp_path / "cranfield.sqlite").exists() and (tmp_path / "cranfield-broker").is_dir()


def test_demo_command_runs_the_embedded_service(tmp_path: Path) -> None:
    """The README's first command: `cranfield demo` from a folder holding the sample."""
    import os
    import shutil
    import subprocess
    import sys

    from tests.integration.conftest import REPO

    shutil.copytree(REPO / "samples", tmp_path / "samples")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRANFIELD_")}
    env["PYTHONPATH"] = str(REPO)
    out = subprocess.run([sys.executable, "-m", "service.cli", "demo"], cwd=tmp_path, env=env, check=True,
                         capture_output=True, text=True, timeout=300).stdout
    board = out[out.index("rank\trun"):].strip().splitlines()
    assert len(board) == 9 and board[1].startswith("1\tRUN-01\t")
    teams = {line.split("\t")[1]: line.split("\t")[2] for line in board[1:]}  # samples/ntcir-like/teams.tsv
    assert teams["RUN-01"] == teams["RUN-02"] == "alpha" and teams["RUN-08"] == "baselines"
    assert "\tdone\t8/8\t0\t1\t" in out
