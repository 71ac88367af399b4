"""Service commands: db, worker, beat, load, qrels add, reevaluate, leaderboard, jobs.

Configuration comes from the environment (service/config.py). Work is enqueued only
after the transaction that created it has committed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path
from typing import TextIO

from service.errors import InvalidInput, InvalidMeasure


def add_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    db = sub.add_parser("db", help="create or migrate the database schema")
    db.add_argument("action", choices=("upgrade", "downgrade"))
    db.add_argument("--revision", help="target revision (default: head for upgrade, one step back for downgrade)")
    db.add_argument("--yes", action="store_true", help="confirm a downgrade to base (drops every table)")

    w = sub.add_parser("worker", help="start a Celery worker (evaluations, tests)")
    w.add_argument("--concurrency", type=int, help="worker processes (default $CRANFIELD_WORKER_CONCURRENCY or 2)")
    w.add_argument("--beat", action="store_true", help="also run the scheduler (sweeper, stale-result refresh)")
    w.add_argument("--loglevel", default="INFO")
    b = sub.add_parser("beat", help="start the scheduler: the sweeper and the refresh of stale results")
    b.add_argument("--loglevel", default="INFO")

    load = sub.add_parser("load", help="register a collection, a qrels version and runs; enqueue their evaluation")
    load.add_argument("--collection", required=True)
    load.add_argument("--qrels", required=True)
    load.add_argument("--runs", nargs="+", required=True, metavar="PATH", help="run files or folders of run files")
    load.add_argument("--team", help="team of every run (default: each run's tag names its team)")
    load.add_argument("--official-metric", help="the leaderboard's metric (default AP)")
    load.add_argument("--metric", action="append", dest="metrics", help="metrics to compute (default: the default set)")
    load.add_argument("--actor", default="cli")

    q = sub.add_parser("qrels", help="qrels versions")
    qsub = q.add_subparsers(dest="qrels_command", required=True)
    qa = qsub.add_parser("add", help="add a qrels version and enqueue the re-evaluation")
    qa.add_argument("--collection", required=True)
    qa.add_argument("file")
    qa.add_argument("--actor", default="cli")

    re = sub.add_parser("reevaluate", help="enqueue the evaluation of every run lacking current results")
    re.add_argument("--collection", required=True)

    lb = sub.add_parser("leaderboard", help="the stored leaderboard (never computed here)")
    lb.add_argument("--collection", required=True)
    lb.add_argument("-m", "--metric")
    lb.add_argument("--format", choices=("tsv", "json"), default="tsv")

    demo = sub.add_parser("demo", help="the whole service on the embedded default: migrate, load the sample "
                                       "collection, evaluate it with a worker, print the leaderboard")
    demo.add_argument("--sample", default="samples/ntcir-like", help="folder with qrels.ntcir and runs/")
    demo.add_argument("--collection", default="sample")
    demo.add_argument("--serve", action="store_true", help="keep the worker (and scheduler) running afterwards")

    tok = sub.add_parser("token", help="API tokens")
    tsub = tok.add_subparsers(dest="token_command", required=True)
    tc = tsub.add_parser("create", help="create a token (printed once; only its hash is stored)")
    tc.add_argument("--role", required=True, choices=("admin", "organiser", "participant", "assessor"))
    tc.add_argument("--name", default="")
    tc.add_argument("--team", help="participant tokens: the team")
    tc.add_argument("--collection", action="append", dest="collections", default=[],
                    help="organiser and assessor tokens: a collection they organise or judge (repeatable)")
    tc.add_argument("--topic", action="append", dest="topics", default=[],
                    help="assessor tokens: a topic they judge (repeatable)")

    pl = sub.add_parser("pool", help="build a depth-k pool of the submitted runs (less what is judged) and write "
                                     "one file per topic for the assessors")
    pl.add_argument("--collection", required=True)
    pl.add_argument("--depth", type=int, required=True)
    pick = pl.add_mutually_exclusive_group()
    pick.add_argument("--primary-only", action="store_true", help="only each team's primary runs")
    pick.add_argument("--max-priority", type=int, help="only runs within this judging priority (TREC)")
    pl.add_argument("--out", required=True, help="folder for the per-topic files (documents in a seeded random order)")

    jd = sub.add_parser("judgments", help="judgments of a pool")
    jsub = jd.add_subparsers(dest="judgments_command", required=True)
    ja = jsub.add_parser("add", help="check judgments against a pool; they become a new qrels version")
    ja.add_argument("--pool", type=int, required=True, help="the pool's id")
    ja.add_argument("file")

    ru = sub.add_parser("reusability", help="pool statistics and leave-one-team-out (computed by the workers)")
    ru.add_argument("--collection", required=True)
    ru.add_argument("--metric", help="default: the official metric")
    ru.add_argument("--depth", type=int, help="default: the newest pool's depth (or 100)")
    ru.add_argument("--wait", type=float, default=0, metavar="SECONDS", help="wait for the result and print it")

    srv = sub.add_parser("serve", help="the HTTP API (and, on the embedded default, a worker and the scheduler)")
    srv.add_argument("--host", default="127.0.0.1")
    srv.add_argument("--port", type=int, default=8000)
    srv.add_argument("--no-worker", action="store_true", help="do not start a worker next to the API")
    srv.add_argument("--sample", metavar="FOLDER",
                     help="load this sample collection (qrels.ntcir, runs/) as public collection 'sample' first")

    jb = sub.add_parser("jobs", help="evaluation jobs with status and progress")
    jb.add_argument("--collection")
    jb.add_argument("--format", choices=("tsv", "json"), default="tsv")


COMMANDS = ("db", "worker", "beat", "load", "qrels", "reevaluate", "leaderboard", "jobs", "demo", "token", "serve",
            "pool", "judgments", "reusability")


def run(args: argparse.Namespace, out: TextIO) -> int:
    from service.config import settings

    url = settings().store.database_url
    if args.command == "db":
        from service.store import migrate

        if args.action == "upgrade":
            migrate.upgrade(url, args.revision or "head")
        else:
            if args.revision == "base" and not args.yes:
                raise InvalidMeasure("downgrading to base drops every table and all results: add --yes to confirm")
            migrate.downgrade(url, args.revision or "-1")
        out.write(f"database {args.action}d: {_safe(url)}\n")
        return 0
    if args.command in ("worker", "beat"):
        from workers.app import app

        if args.command == "worker":
            argv = ["worker", "-Q", settings().worker.queue, "--loglevel", args.loglevel,
                    "-c", str(args.concurrency or settings().worker.concurrency)]
            if args.beat:
                argv.append("-B")
            app.worker_main(argv)
        else:
            app.start(["beat", "--loglevel", args.loglevel])
        return 0
    return {"load": _load, "qrels": _qrels_add, "reevaluate": _reevaluate, "leaderboard": _leaderboard,
            "jobs": _jobs, "demo": _demo, "token": _token, "serve": _serve, "pool": _pool, "judgments": _judgments,
            "reusability": _reusability}[args.command](args, out, url)


def _safe(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)


def _factory(url: str):  # type: ignore[no-untyped-def]
    from service.store.db import session_factory

    return session_factory(url)


def _send(followups) -> None:  # type: ignore[no-untyped-def]
    from workers.tasks import send

    send(followups)


def _run_files(paths: list[str]) -> list[Path]:
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files.extend(sorted(f for f in p.iterdir() if f.is_file() and not f.name.startswith(".")))
        elif p.is_file():
            files.append(p)
        else:
            raise InvalidInput(str(p), None, "no such file or folder")
    if not files:
        raise InvalidMeasure("no run files found")
    return files


def _read(path: str | Path) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise InvalidInput(str(path), None, f"cannot read the file: {exc.strerror}") from None


def _load(args: argparse.Namespace, out: TextIO, url: str) -> int:
    from service.evaluation.pipeline import plan_job
    from service.evaluation.setup import ConfigSpec, add_qrels, add_run, ensure_collection
    from service.metrics.scoring import DEFAULT_MEASURES
    from service.store.db import transaction

    from sqlalchemy import select

    from service.formats.readers import parse_qrels, parse_run
    from service.store.models import Collection

    spec = None
    if args.official_metric or args.metrics:
        spec = ConfigSpec(official_metric=args.official_metric or "AP",
                          metrics=tuple(args.metrics or DEFAULT_MEASURES))
    with _factory(url)() as s:  # the collection's rank order, if it exists already
        existing = s.scalar(select(Collection).where(Collection.name == args.collection))
        config = existing.current_config if existing is not None else None
        order = config.evaluation.get("order", "score") if config is not None else "score"
    # Validate every file before the write transaction: errors name file and line, and the
    # database's write lock is held only while storing.
    qrels_data = _read(args.qrels)
    qrels = parse_qrels(qrels_data, args.qrels)
    uploads = [(str(f), data, parse_run(data, str(f), order)) for f in _run_files(args.runs) for data in [_read(f)]]
    with transaction(_factory(url)) as s:  # all or nothing: a bad file stores nothing
        coll = ensure_collection(s, args.collection, spec, args.actor)
        current = coll.current_qrels
        if current is None or current.checksum != hashlib.sha256(qrels_data).hexdigest():
            previous = coll.current_qrels_id
            version = add_qrels(s, coll, qrels_data, args.qrels, args.actor, parsed=qrels)
        else:
            previous, version = None, current
        runs = [add_run(s, coll, data, name, team=args.team, actor=args.actor, parsed=parsed)
                for name, data, parsed in uploads]
        job, followups = plan_job(s, coll, "load", previous_qrels_id=previous)
        job_id = job.id
        summary = (f"collection {coll.name!r}: qrels version {version.version} ({version.n_judgments} judgments), "
                   f"{len(runs)} runs stored; job {job_id} queued ({job.total} runs to evaluate)")
    _send(followups)
    out.write(summary + "\n")
    return 0


def _qrels_add(args: argparse.Namespace, out: TextIO, url: str) -> int:
    from service.evaluation.pipeline import plan_job
    from service.evaluation.setup import add_qrels, get_collection
    from service.store.db import transaction

    data = _read(args.file)
    with transaction(_factory(url)) as s:
        coll = get_collection(s, args.collection)
        previous = coll.current_qrels_id
        version = add_qrels(s, coll, data, args.file, args.actor)
        job, followups = plan_job(s, coll, "qrels", previous_qrels_id=previous)
        text = f"qrels version {version.version} of {coll.name!r}; job {job.id} re-evaluates {job.total} runs"
    _send(followups)
    out.write(text + "\n")
    return 0


def _reevaluate(args: argparse.Namespace, out: TextIO, url: str) -> int:
    from service.evaluation.pipeline import plan_job
    from service.evaluation.setup import get_collection
    from service.store.db import transaction

    with transaction(_factory(url)) as s:
        coll = get_collection(s, args.collection)
        job, followups = plan_job(s, coll, "manual")
        text = f"job {job.id}: {job.total} runs to evaluate"
    _send(followups)
    out.write(text + "\n")
    return 0


def _leaderboard(args: argparse.Namespace, out: TextIO, url: str) -> int:
    from service.evaluation.reading import leaderboard

    with _factory(url)() as s:
        metric, rows = leaderboard(s, args.collection, args.metric)
    if args.format == "json":
        json.dump({"collection": args.collection, "metric": metric, "rows": [r.__dict__ for r in rows]}, out, indent=1)
        out.write("\n")
        return 0
    out.write("rank\trun\tteam\tmean\tci_low\tci_high\tn_topics\tqrels_version\n")

    def num(v: float | None) -> str:
        return "" if v is None else f"{v:.6f}"

    for r in rows:
        out.write(f"{r.rank}\t{r.run}\t{r.team}\t{num(r.mean)}\t{num(r.ci_low)}\t{num(r.ci_high)}\t{r.n_topics}\t"
                  f"{r.qrels_version}\n")
    return 0


def _jobs(args: argparse.Namespace, out: TextIO, url: str) -> int:
    from service.evaluation.reading import jobs

    with _factory(url)() as s:
        rows = jobs(s, args.collection)
    if args.format == "json":
        json.dump(rows, out, indent=1)
        out.write("\n")
        return 0
    out.write("job\tkind\tstatus\tprogress\tfailed\tqrels_version\tcreated_at\tfinished_at\terror\n")
    for j in rows:
        out.write(f"{j['id']}\t{j['kind']}\t{j['status']}\t{j['done']}/{j['total']}\t{j['failed']}\t"
                  f"{j['qrels_version']}\t{j['created_at']}\t{j['finished_at'] or ''}\t{j['error']}\n")
    return 0




def _demo(args: argparse.Namespace, out: TextIO, url: str) -> int:
    """db upgrade + load + a real worker process + the stored leaderboard, in one command."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from service.config import settings
    from service.store import migrate
    from service.store.db import session_factory
    from service.store.models import Job

    sample = Path(args.sample)
    if not (sample / "qrels.ntcir").is_file():
        raise InvalidInput(str(sample), None, "no qrels.ntcir here: run the demo from the repository's top folder "
                                              "or give --sample")
    migrate.upgrade(url)
    out.write(f"database: {_safe(url)}\nbroker: {settings().worker.broker_url} "
              f"{settings().worker.broker_folder or ''}\n")
    from sqlalchemy import select

    from service.store.models import Collection

    with session_factory(url)() as s:
        exists = s.scalar(select(Collection.id).where(Collection.name == args.collection)) is not None
    if exists:
        _reevaluate(argparse.Namespace(collection=args.collection), out, url)
    else:
        _load(argparse.Namespace(collection=args.collection, qrels=str(sample / "qrels.ntcir"),
                                 runs=[str(sample / "runs")], team=None, official_metric="AP", metrics=None,
                                 actor="demo"), out, url)
    out.flush()
    log = Path("cranfield-worker.log").open("a")  # noqa: SIM115 (closed with the worker)
    out.write(f"worker: started, logging to {log.name}\n")
    worker = subprocess.Popen([sys.executable, "-m", "service.cli", "worker", "--beat", "--loglevel", "INFO"],
                              start_new_session=True, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            with session_factory(url)() as s:
                job = s.scalars(select(Job).join(Collection, Collection.id == Job.collection_id)
                                .where(Collection.name == args.collection).order_by(Job.id.desc())).first()
                if job is not None and job.status in ("done", "failed"):
                    break
            time.sleep(0.3)
        else:
            raise InvalidMeasure("the worker did not finish within 5 minutes; see `cranfield jobs`")
        _jobs(argparse.Namespace(collection=args.collection, format="tsv"), out, url)
        out.write("\n")
        _leaderboard(argparse.Namespace(collection=args.collection, metric=None, format="tsv"), out, url)
        if args.serve:
            out.write("\nworker and scheduler running; Ctrl-C stops them\n")
            out.flush()
            worker.wait()
    except KeyboardInterrupt:
        pass
    finally:
        if worker.poll() is None:
            os.kill(worker.pid, signal.SIGTERM)  # a warm shutdown of the worker and its pool
            try:
                worker.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(worker.pid, signal.SIGKILL)
        log.close()
    return 0


def _token(args: argparse.Namespace, out: TextIO, url: str) -> int:
    from sqlalchemy import select

    from service.evaluation.access import create_token
    from service.store import migrate
    from service.store.db import transaction
    from service.store.models import Collection

    migrate.upgrade(url)  # the first admin token is often the first command on a new database
    with transaction(_factory(url)) as s:
        ids = []
        for name in args.collections:
            cid = s.scalar(select(Collection.id).where(Collection.name == name))
            if cid is None:
                raise InvalidMeasure(f"no collection named {name!r}")
            ids.append(cid)
        secret, token = create_token(s, args.role, name=args.name, team=args.team, collections=ids,
                                 topics=args.topics or None, actor="cli")
    out.write(f"{secret}\n")
    import sys

    print(f"{args.role} token {token.prefix}... created; it is shown only this once", file=sys.stderr)
    return 0


def api_app():  # type: ignore[no-untyped-def]
    """The API wired to the workers (the composition root: the API itself never imports them)."""
    from service.api.app import create_app
    from service.config import settings
    from workers.tasks import send

    cfg = settings()

    def readiness() -> dict[str, bool]:
        if cfg.worker.broker_folder is not None:
            return {"broker": cfg.worker.broker_folder.is_dir()}
        try:
            import redis

            return {"broker": bool(redis.Redis.from_url(cfg.worker.broker_url, socket_connect_timeout=2).ping())}
        except Exception:  # noqa: BLE001
            return {"broker": False}

    import os

    max_body = int(os.environ.get("CRANFIELD_MAX_UPLOAD", str(256 * 1024 * 1024)))
    return create_app(cfg.store.database_url, send, readiness=readiness, max_body=max_body)


def _serve(args: argparse.Namespace, out: TextIO, url: str) -> int:
    import os
    import signal
    import subprocess
    import sys

    import uvicorn

    from service.config import settings
    from service.store import migrate

    migrate.upgrade(url)
    if args.sample:
        _load_public_sample(Path(args.sample), out, url)
    worker = None
    if not args.no_worker and settings().worker.broker_folder is not None:
        # The embedded default: one worker with the scheduler next to the API.
        worker = subprocess.Popen([sys.executable, "-m", "service.cli", "worker", "--beat", "--loglevel", "WARNING"],
                                  start_new_session=True, preexec_fn=_die_with_parent)
    try:
        uvicorn.run("service.cli_service:api_app", factory=True, host=args.host, port=args.port, log_level="info")
    finally:
        if worker is not None and worker.poll() is None:
            os.kill(worker.pid, signal.SIGTERM)
            try:
                worker.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(worker.pid, signal.SIGKILL)
    return 0


def _die_with_parent() -> None:
    """In the worker started next to the API: get SIGTERM when `cranfield serve` ends, however
    it ends (uvicorn re-raises the signal that stopped it, so no `finally` of ours runs)."""
    import ctypes
    import signal

    try:
        ctypes.CDLL("libc.so.6").prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def _load_public_sample(folder: Path, out: TextIO, url: str) -> None:
    """Load a sample collection once, public with its leaderboard released (for a first look)."""
    from sqlalchemy import select

    from service.store.db import transaction
    from service.store.models import Collection

    with _factory(url)() as s:
        exists = s.scalar(select(Collection.id).where(Collection.name == "sample")) is not None
    if not exists:
        if not (folder / "qrels.ntcir").is_file():
            raise InvalidInput(str(folder), None, "no qrels.ntcir here")
        _load(argparse.Namespace(collection="sample", qrels=str(folder / "qrels.ntcir"), runs=[str(folder / "runs")],
                                 team=None, official_metric="AP", metrics=None, actor="serve"), out, url)
        with transaction(_factory(url)) as s:
            coll = s.scalar(select(Collection).where(Collection.name == "sample"))
            coll.visibility, coll.leaderboard_released = "public", True


# The CLI acts with an administrator's rights (it runs where the database is).
def _cli_principal():  # type: ignore[no-untyped-def]
    from service.evaluation.access import Principal

    return Principal(role="admin", name="cli")


def _pool(args: argparse.Namespace, out: TextIO, url: str) -> int:
    import json

    from service.evaluation import judging
    from service.evaluation.setup import get_collection

    me = _cli_principal()
    selection = "primary" if args.primary_only else "priority" if args.max_priority is not None else "all"
    from service.store.models import Pool

    with _factory(url)() as s:
        cid = get_collection(s, args.collection).id
    pid = judging.create_pool(_factory(url), lambda s: me, cid, args.depth, selection, args.max_priority)
    with _factory(url)() as s:
        pool = s.get(Pool, pid)
        doc = judging.pool_doc(s, pool, me)
        folder = Path(args.out) / f"pool-{pool.number}"
        folder.mkdir(parents=True, exist_ok=True)
        for topic, counts in pool.counts.items():
            if counts["new"]:
                (folder / f"{topic}.txt").write_text(judging.assessment_file(s, pool.id, me, topic))
        (folder / "pool.json").write_text(json.dumps(doc, indent=2, default=str))
    out.write(f"pool {doc['number']} (id {doc['id']}) of {args.collection}: depth {doc['depth']}, "
              f"{len(doc['runs'])} runs ({selection}), {doc['size']} documents to judge over "
              f"{sum(1 for c in doc['counts'].values() if c['new'])} topics")
    if doc["excludes_judged_in_qrels_version"]:
        out.write(f", leaving out what qrels version {doc['excludes_judged_in_qrels_version']} judges")
    out.write(f"\nfiles: {folder}\n")
    return 0


def _judgments(args: argparse.Namespace, out: TextIO, url: str) -> int:
    from service.evaluation import judging

    doc, followups = judging.submit_judgments(_factory(url), lambda s: _cli_principal(), args.pool,
                                              Path(args.file).read_bytes(), source=args.file)
    _send(followups)
    out.write(f"qrels version {doc['qrels_version']}: {doc['judgments']} judgments of {len(doc['topics'])} topics "
              f"accepted; job {doc['job']} re-evaluates the runs\n")
    return 0


def _reusability(args: argparse.Namespace, out: TextIO, url: str) -> int:
    import json
    import time

    from service.evaluation import analyses
    from service.evaluation.setup import get_collection
    from service.store.db import transaction
    from service.store.models import Analysis

    me = _cli_principal()
    with transaction(_factory(url)) as s:
        row, followups = analyses.request(s, get_collection(s, args.collection), me, args.metric, None, args.depth)
        analysis_id = row.id
    _send(followups)
    deadline = time.monotonic() + args.wait
    while True:
        with _factory(url)() as s:
            row = s.get(Analysis, analysis_id)
            doc = analyses.doc(s, row, me)
        if doc["status"] in ("done", "failed") or time.monotonic() >= deadline:
            break
        time.sleep(0.5)
    out.write(json.dumps(doc, indent=2) + "\n" if args.wait else f"analysis {analysis_id} queued\n")
    return 0 if doc["status"] != "failed" else 1

