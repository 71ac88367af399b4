"""Commands that run the service's processes: db, worker, beat, serve, demo.

``serve`` runs the ASGI application built by :func:`service.asgi.create_service_app` (the
composition root); this module imports neither the web layer nor the workers at its top.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TextIO

from service.cli.common import database_url, safe_url, sessions
from service.cli.registry import command
from service.errors import InvalidInput, InvalidMeasure

ASGI_FACTORY = "service.asgi:create_service_app"


def _db_arguments(db: argparse.ArgumentParser) -> None:
    db.add_argument("action", choices=("upgrade", "downgrade"))
    db.add_argument("--revision", help="target revision (default: head for upgrade, one step back for downgrade)")
    db.add_argument("--yes", action="store_true", help="confirm a downgrade to base (drops every table)")


@command("db", "create or migrate the database schema", _db_arguments)
def cmd_db(args: argparse.Namespace, out: TextIO) -> int:
    from service.store import migrate

    url = database_url()
    if args.action == "upgrade":
        migrate.upgrade(url, args.revision or "head")
    else:
        if args.revision == "base" and not args.yes:
            raise InvalidMeasure("downgrading to base drops every table and all results: add --yes to confirm")
        migrate.downgrade(url, args.revision or "-1")
    out.write(f"database {args.action}d: {safe_url(url)}\n")
    return 0


def _worker_arguments(w: argparse.ArgumentParser) -> None:
    w.add_argument("--concurrency", type=int, help="worker processes (default $CRANFIELD_WORKER_CONCURRENCY or 2)")
    w.add_argument("--beat", action="store_true", help="also run the scheduler (sweeper, stale-result refresh)")
    w.add_argument("--loglevel", default="INFO", help="Celery's log level (default: %(default)s)")
    w.add_argument("--quiet", action="store_true", help="no start-up banner (cranfield serve's embedded worker)")
    w.add_argument("--embedded", action="store_true", help=argparse.SUPPRESS)  # started by cranfield serve


@command("worker", "start a Celery worker (evaluations, tests)", _worker_arguments)
def cmd_worker(args: argparse.Namespace, out: TextIO) -> int:
    from service.config import settings
    from workers.app import app

    argv = ["worker", "-Q", settings().worker.queue, "--loglevel", args.loglevel,
            "-c", str(args.concurrency or settings().worker.concurrency)]
    if args.beat:
        argv.append("-B")
    if getattr(args, "embedded", False):
        quiet_embedded_worker()
    app.worker_main(["--quiet", *argv] if args.quiet else argv)
    return 0


#: Celery's warnings that the worker `cranfield serve` starts next to the API prints to a person
#: who asked for neither (issue 37, item 7): the filesystem broker's URL has no host, by design
#: (kombu: "No hostname was supplied. Reverting to default 'localhost'"), and the embedded default
#: is often run as root, in a container (celery.platforms.ROOT_DISCOURAGED, a SecurityWarning).
EMBEDDED_NOISE = ("No hostname was supplied.", "You're running the worker with superuser privileges")


class _DropNoise(logging.Filter):
    """Drops a log record that is one of :data:`EMBEDDED_NOISE`; every other record passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(EMBEDDED_NOISE)


def quiet_embedded_worker() -> None:
    """In the worker `cranfield serve` starts (``cranfield worker --embedded``), and only there:
    silence the two warnings of :data:`EMBEDDED_NOISE`. Only those messages are dropped: any other
    warning or error of kombu or Celery (the root SecurityError that refuses pickle, a broker
    that cannot be reached) is printed as before. A standalone ``cranfield worker`` keeps them."""
    import warnings

    from celery.exceptions import SecurityWarning

    warnings.filterwarnings("ignore", message=re.escape(EMBEDDED_NOISE[1]), category=SecurityWarning)
    logging.getLogger("kombu.connection").addFilter(_DropNoise())


def _beat_arguments(b: argparse.ArgumentParser) -> None:
    b.add_argument("--loglevel", default="INFO")


@command("beat", "start the scheduler: the sweeper and the refresh of stale results", _beat_arguments)
def cmd_beat(args: argparse.Namespace, out: TextIO) -> int:
    from workers.app import app

    app.start(["beat", "--loglevel", args.loglevel])
    return 0


def _serve_arguments(srv: argparse.ArgumentParser) -> None:
    srv.add_argument("--host", default="127.0.0.1")
    srv.add_argument("--port", type=int, default=8000)
    srv.add_argument("--no-worker", action="store_true", help="do not start a worker next to the API")
    srv.add_argument("--processes", type=int, default=None, metavar="N",
                     help="server processes (default CRANFIELD_API_PROCESSES, 1; docs/operations.md sizes them)")
    srv.add_argument("--sample", metavar="FOLDER",
                     help="load this sample collection (qrels.ntcir, runs/) as public collection 'sample' first")


@command("serve", "the HTTP API (and, on the embedded default, a worker and the scheduler)", _serve_arguments)
def cmd_serve(args: argparse.Namespace, out: TextIO) -> int:
    import uvicorn

    from service.config import settings
    from service.store import migrate

    url = database_url()
    migrate.upgrade(url)
    sample = _load_public_sample(Path(args.sample), out, url) if args.sample else None
    worker = None
    if not args.no_worker and settings().worker.broker_folder is not None:
        # The embedded default: one worker with the scheduler next to the API, restarted if it exits.
        worker = EmbeddedWorker([sys.executable, "-m", "service.cli", "worker", "--beat", "--quiet", "--embedded",
                                 "--loglevel", "WARNING"])
        worker.start()
    out.write(serving_note(args.host, args.port, sample, worker is not None))
    out.flush()
    try:
        processes = args.processes or settings().web.api_processes
        if processes < 1:
            raise SystemExit("cranfield serve: --processes must be at least 1")
        uvicorn.run(ASGI_FACTORY, factory=True, host=args.host, port=args.port, log_level="info",
                    workers=processes if processes > 1 else None)
    finally:
        if worker is not None:
            worker.stop()
    return 0


def serving_note(host: str, port: int, sample: tuple[int, bool] | None, worker: bool) -> str:
    """What `cranfield serve` says before the server's own log: where to open it and, with a
    sample, whether it was loaded now or found in the database, and when its board fills."""
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host  # a name to open, not a bind
    base = f"http://{shown}:{port}"
    lines = [f"Cranfield: open {base}/ (the portal); the API is at {base}/api, its OpenAPI schema at {base}/schema"]
    if sample is not None:
        cid, fresh = sample
        if fresh:
            filling = ("the worker evaluates its runs in a few seconds; until then its board answers "
                       "reevaluation_in_progress" if worker else "a worker must evaluate its runs before its board fills")
            lines.append(f"Cranfield: the sample collection was loaded now: open {base}/c/{cid} ({filling})")
        else:
            lines.append(f"Cranfield: the sample collection is already in this database and is served as it is: "
                         f"open {base}/c/{cid}")
    return "".join(f"{line}\n" for line in lines)


class EmbeddedWorker:
    """The worker `cranfield serve` starts next to the API on the embedded default, supervised:
    if it exits (a crash, the out-of-memory killer), a watcher thread starts it again after a
    pause that doubles from 1 s up to 30 s (reset once a worker has lived a minute)."""

    def __init__(self, argv: list[str]) -> None:
        import threading

        self.argv = argv
        self.process: subprocess.Popen | None = None
        self.restarts = 0
        self._stopping = threading.Event()
        self._watcher = threading.Thread(target=self._watch, name="embedded-worker", daemon=True)

    def _spawn(self) -> None:
        self.process = subprocess.Popen(self.argv, start_new_session=True, preexec_fn=_die_with_parent)

    def start(self) -> None:
        self._spawn()
        self._watcher.start()

    def _watch(self) -> None:
        pause = 1.0
        started = time.monotonic()
        while not self._stopping.wait(0.5):
            assert self.process is not None
            code = self.process.poll()
            if code is None:
                if time.monotonic() - started > 60:
                    pause = 1.0
                continue
            print(f"cranfield serve: the worker exited ({code}); starting it again in {pause:.0f} s",
                  file=sys.stderr, flush=True)
            if self._stopping.wait(pause):
                return
            pause = min(2 * pause, 30.0)
            self._spawn()
            self.restarts += 1
            started = time.monotonic()

    def stop(self) -> None:
        self._stopping.set()
        self._watcher.join(timeout=5)
        process = self.process
        if process is not None and process.poll() is None:
            os.kill(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)


def _die_with_parent() -> None:
    """In the worker started next to the API: get SIGTERM when `cranfield serve` ends, however
    it ends (uvicorn re-raises the signal that stopped it, so no `finally` of ours runs)."""
    import ctypes

    try:
        ctypes.CDLL("libc.so.6").prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def _teams_file(folder: Path) -> str | None:
    """The sample folder's teams.tsv (its runs' teams), if it has one."""
    return str(folder / "teams.tsv") if (folder / "teams.tsv").is_file() else None


def _load_public_sample(folder: Path, out: TextIO, url: str) -> tuple[int, bool]:
    """Load a sample collection once, public with its leaderboard released (for a first look):
    its id, and whether it was loaded now (False: this database already holds it, reused as is)."""
    from sqlalchemy import select

    from service.cli.organising import cmd_load
    from service.store.db import transaction
    from service.store.models import Collection

    with sessions(url)() as s:
        existing = s.scalar(select(Collection.id).where(Collection.name == "sample"))
    if existing is not None:
        return existing, False
    if not (folder / "qrels.ntcir").is_file():
        raise InvalidInput(str(folder), None, "no qrels.ntcir here")
    cmd_load(argparse.Namespace(collection="sample", qrels=str(folder / "qrels.ntcir"), runs=[str(folder / "runs")],
                                team=None, teams=_teams_file(folder), official_metric="AP", metrics=None,
                                actor="serve"), out)
    with transaction(sessions(url)) as s:
        coll = s.scalar(select(Collection).where(Collection.name == "sample"))
        coll.visibility, coll.leaderboard_released = "public", True
        return coll.id, True


def _demo_arguments(demo: argparse.ArgumentParser) -> None:
    demo.add_argument("--sample", default="samples/ntcir-like", help="folder with qrels.ntcir and runs/")
    demo.add_argument("--collection", default="sample")
    demo.add_argument("--serve", action="store_true", help="keep the worker (and scheduler) running afterwards")


@command("demo", "the whole service on the embedded default: migrate, load the sample collection, evaluate it "
                 "with a worker, print the leaderboard", _demo_arguments)
def cmd_demo(args: argparse.Namespace, out: TextIO) -> int:
    """db upgrade + load + a real worker process + the stored leaderboard, in one command."""
    from sqlalchemy import select

    from service.cli.organising import cmd_jobs, cmd_leaderboard, cmd_load, cmd_reevaluate
    from service.config import settings
    from service.store import migrate
    from service.store.models import Collection, Job

    url = database_url()
    sample = Path(args.sample)
    if not (sample / "qrels.ntcir").is_file():
        raise InvalidInput(str(sample), None, "no qrels.ntcir here: run the demo from the repository's top folder "
                                              "or give --sample")
    migrate.upgrade(url)
    out.write(f"database: {safe_url(url)}\nbroker: {settings().worker.broker_url} "
              f"{settings().worker.broker_folder or ''}\n")
    with sessions(url)() as s:
        exists = s.scalar(select(Collection.id).where(Collection.name == args.collection)) is not None
    if exists:
        cmd_reevaluate(argparse.Namespace(collection=args.collection), out)
    else:
        cmd_load(argparse.Namespace(collection=args.collection, qrels=str(sample / "qrels.ntcir"),
                                    runs=[str(sample / "runs")], team=None, teams=_teams_file(sample),
                                    official_metric="AP", metrics=None, actor="demo"), out)
    out.flush()
    log = Path("cranfield-worker.log").open("a")  # noqa: SIM115 (closed with the worker)
    out.write(f"worker: started, logging to {log.name}\n")
    worker = subprocess.Popen([sys.executable, "-m", "service.cli", "worker", "--beat", "--loglevel", "INFO"],
                              start_new_session=True, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            with sessions(url)() as s:
                job = s.scalars(select(Job).join(Collection, Collection.id == Job.collection_id)
                                .where(Collection.name == args.collection).order_by(Job.id.desc())).first()
                if job is not None and job.status in ("done", "failed"):
                    break
            time.sleep(0.3)
        else:
            raise InvalidMeasure("the worker did not finish within 5 minutes; see `cranfield jobs`")
        cmd_jobs(argparse.Namespace(collection=args.collection, format="tsv"), out)
        out.write("\n")
        cmd_leaderboard(argparse.Namespace(collection=args.collection, metric=None, format="tsv"), out)
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
