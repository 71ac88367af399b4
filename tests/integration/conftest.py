"""Real components for the store and worker tests: PostgreSQL, Redis, SQLite, Celery workers.

PostgreSQL (127.0.0.1:5432, trust auth) and Redis (127.0.0.1:6379) must be running; locally a
missing service skips its tests with the reason, under CI=true it fails them. Each test gets a
fresh database (created and dropped here) and its own Celery queue, migrated with Alembic.
"""

from __future__ import annotations

import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
PG_ADMIN = os.environ.get("CRANFIELD_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
REDIS = os.environ.get("CRANFIELD_TEST_REDIS", "redis://127.0.0.1:6379/0")


def _unavailable(what: str, exc: Exception) -> None:
    message = f"{what} is not reachable ({type(exc).__name__}: {exc})"
    if os.environ.get("CI"):
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def _pg_admin():  # type: ignore[no-untyped-def]
    from sqlalchemy import create_engine

    return create_engine(PG_ADMIN, isolation_level="AUTOCOMMIT")


@dataclass
class Backend:
    name: str
    database_url: str
    env: dict[str, str]
    tmp: Path
    workers: list[subprocess.Popen] = field(default_factory=list)
    copied_from: str | None = None  # the template its database is a copy of ("migrated", "world")

    def activate(self) -> None:
        """Point this process's settings at the backend."""
        from service.config import settings

        os.environ.update(self.env)
        settings.cache_clear()

    def celery(self):  # type: ignore[no-untyped-def]
        from workers.app import make_app

        self.activate()
        return make_app()

    def factory(self):  # type: ignore[no-untyped-def]
        from service.store.db import session_factory

        return session_factory(self.database_url)

    def start_worker(self, *, concurrency: int = 2, beat: bool = True, **extra_env: str) -> subprocess.Popen:
        """A `celery worker` process; with ``beat`` it runs the scheduler too (the sweeper),
        as `cranfield worker --beat` does; without, start one with :meth:`start_beat`."""
        env = {**os.environ, **self.env, **extra_env, "PYTHONPATH": str(REPO)}
        log = open(self.tmp / f"worker-{len(self.workers)}.log", "w")  # noqa: SIM115
        scheduler = ["-B", "-s", str(self.tmp / f"beat-{len(self.workers)}")] if beat else []
        proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "workers.app", "worker", "-Q", self.env["CRANFIELD_QUEUE"],
             "-c", str(concurrency), *scheduler,
             "--loglevel", "INFO", "-n", f"w{len(self.workers)}-{uuid.uuid4().hex[:6]}@%h"],
            cwd=self.tmp, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        self.workers.append(proc)
        return proc

    def start_beat(self, **extra_env: str) -> subprocess.Popen:
        """The scheduler alone (`cranfield beat`): the sweeper and the refresh, as in production."""
        env = {**os.environ, **self.env, **extra_env, "PYTHONPATH": str(REPO)}
        log = open(self.tmp / f"worker-{len(self.workers)}-beat.log", "w")  # noqa: SIM115
        proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "workers.app", "beat", "-s",
             str(self.tmp / f"beat-{len(self.workers)}"), "--loglevel", "INFO"],
            cwd=self.tmp, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        self.workers.append(proc)
        return proc

    def kill(self, proc: subprocess.Popen) -> None:
        """SIGKILL the worker and every process it forked."""
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=30)

    def stop_all(self) -> None:
        for proc in self.workers:
            if proc.poll() is None:
                self.kill(proc)

    def logs(self) -> str:
        return "\n".join(p.read_text()[-4000:] for p in sorted(self.tmp.glob("worker-*.log")))


#: The tests round's debounce in the suite's workers and clients (the default, 5 s, is a burst's
#: window in production: here every job would wait it out). The tests of the debounce itself set
#: theirs (test_recovery's burst, test_broker_outage).
TESTS_DEBOUNCE = {"CRANFIELD_TESTS_DEBOUNCE": "1"}


def _sqlite_backend(tmp: Path) -> Backend:
    url = f"sqlite:///{tmp / 'cranfield.sqlite'}"
    env = {"CRANFIELD_DATABASE_URL": url, "CRANFIELD_BROKER_URL": "filesystem://",
           "CRANFIELD_BROKER_FOLDER": str(tmp / "broker"), "CRANFIELD_QUEUE": f"q-{uuid.uuid4().hex[:8]}",
           **TESTS_DEBOUNCE}
    return Backend("sqlite", url, env, tmp)


def create_database(template: str | None = None) -> tuple[str, str]:
    """A new PostgreSQL database, empty or a copy of the database ``template`` (its name and
    URL); the caller drops it."""
    name = f"cranfield_test_{uuid.uuid4().hex[:10]}"
    try:
        with _pg_admin().connect() as conn:
            conn.exec_driver_sql(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else ""))
    except Exception as exc:  # noqa: BLE001
        _unavailable(f"PostgreSQL at {PG_ADMIN}", exc)
    return name, PG_ADMIN.rsplit("/", 1)[0] + f"/{name}"


def load_evaluated(factory, qrels: str, runs: dict[str, str], metrics: tuple[str, ...]) -> None:  # type: ignore[no-untyped-def]
    """Collection "task" (AP official) with ``qrels`` as version 1 and ``runs``, evaluated in
    this process (quickly, before any worker starts)."""
    from service.evaluation.computing.task_table import run_here
    from service.evaluation.organising.planning import plan_job
    from service.evaluation.organising.setup import ConfigSpec, add_qrels, add_run, ensure_collection
    from service.store.db import transaction

    with transaction(factory) as s:
        coll = ensure_collection(s, "task", ConfigSpec(official_metric="AP", metrics=metrics), "test")
        add_qrels(s, coll, qrels.encode(), "qrels-v1", "test")
        for tag, text in runs.items():
            add_run(s, coll, text.encode(), f"{tag}.run")
        _, followups = plan_job(s, coll, "load")
    run_here(factory, followups)


class Templates:
    """Databases made once per test session and copied for each test: the migrated schema
    (every ``backend``) and the ``world`` (issue 26: the suite's time went into building the
    same state again for every test). A copy is a new database, so a test that writes to its
    world changes nobody else's. SQLite: a file copied after a WAL checkpoint; PostgreSQL:
    ``CREATE DATABASE ... TEMPLATE`` (a template has no connection while it is copied)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.made: dict[tuple[str, str], str] = {}  # (backend, what) -> file path or database name
        self.made_on: dict[tuple[str, str], date] = {}  # (backend, what) -> the UTC day it was made
        self.seeds: dict[str, Any] = {}  # backend -> the world's ids and tokens
        self.dropping: queue.Queue[str | None] = queue.Queue()
        self.dropper = threading.Thread(target=self._drop_in_turn, name="drop-test-databases", daemon=True)
        self.dropper.start()

    def drop_later(self, name: str) -> None:
        """Drop the PostgreSQL database ``name`` while the next tests run: DROP DATABASE waits
        for a checkpoint (1-3 s on these machines), which no test needs to wait for."""
        self.dropping.put(name)

    def _drop_in_turn(self) -> None:
        while (name := self.dropping.get()) is not None:
            try:
                with _pg_admin().connect() as conn:
                    conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            except Exception as exc:  # noqa: BLE001  (a database left behind fails no test)
                print(f"could not drop the test database {name}: {exc}", file=sys.stderr)

    def has(self, backend: str, what: str, *, made_today: bool = False) -> bool:
        """Whether the template ``what`` exists (with ``made_today``: made on today's UTC day,
        for a template whose rows' timestamps count, such as the runs of a daily quota)."""
        return (backend, what) in self.made and (not made_today or self.made_on[(backend, what)] == _utc_today())

    def keep(self, be: Backend, what: str, *, begun_on: date | None = None) -> None:
        """Make ``be``'s database (its engine disposed here) the template ``what``, whose
        making began on the UTC day ``begun_on`` (today by default)."""
        _release(be.database_url)
        self.made_on[(be.name, what)] = begun_on or _utc_today()
        if be.name == "sqlite":
            path = self.folder / f"{what}.sqlite"
            shutil.copyfile(_sqlite_path(be.database_url), path)
            self.made[("sqlite", what)] = str(path)
        else:
            # (named per pytest-xdist worker: each worker makes its own)
            worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
            name, source = f"cranfield_tpl_{worker}_{what}_{uuid.uuid4().hex[:8]}", be.database_url.rsplit("/", 1)[1]
            with _pg_admin().connect() as conn:
                for attempt in range(50):
                    # A connection the test's app has not handed back yet (closed when collected)
                    # would make the copy fail: end it (pooled ones reconnect: pool_pre_ping).
                    conn.exec_driver_sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                         "WHERE datname = %s AND pid <> pg_backend_pid()", (source,))
                    try:
                        conn.exec_driver_sql(f'CREATE DATABASE "{name}" TEMPLATE "{source}"')
                        break
                    except Exception:  # noqa: BLE001  (ObjectInUse until the ended session is gone)
                        if attempt == 49:
                            raise
                        time.sleep(0.1)
                replaced = self.made.get(("postgres", what))  # (made again on a new day)
                if replaced is not None:
                    conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{replaced}" WITH (FORCE)')
            self.made[("postgres", what)] = name

    def restore(self, be: Backend, what: str) -> None:
        """Replace ``be``'s database by a copy of the template ``what``."""
        _release(be.database_url)
        source = self.made[(be.name, what)]
        if be.name == "sqlite":
            target = _sqlite_path(be.database_url)
            for leftover in (target.with_name(target.name + "-wal"), target.with_name(target.name + "-shm")):
                leftover.unlink(missing_ok=True)
            shutil.copyfile(source, target)
        else:
            name = be.database_url.rsplit("/", 1)[1]
            with _pg_admin().connect() as conn:
                conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
                conn.exec_driver_sql(f'CREATE DATABASE "{name}" TEMPLATE "{source}"')

    def drop_all(self) -> None:
        self.dropping.put(None)
        self.dropper.join()
        names = [name for (kind, _), name in self.made.items() if kind == "postgres"]
        if names:
            with _pg_admin().connect() as conn:
                for name in names:
                    conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _utc_today() -> date:
    return datetime.now(UTC).date()


def _sqlite_path(url: str) -> Path:
    return Path(url.removeprefix("sqlite:///"))


def _release(url: str) -> None:
    """Close every pooled connection of ``url`` (SQLite: after folding the WAL into the file)."""
    from service.store.db import engine_for

    engine = engine_for(url)
    if url.startswith("sqlite"):
        with engine.connect() as conn:
            conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    engine.dispose()


@pytest.fixture(scope="session")
def templates(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Templates]:
    made = Templates(tmp_path_factory.mktemp("templates"))
    try:
        yield made
    finally:
        made.drop_all()


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path, templates: Templates) -> Iterator[Backend]:
    from service.store.migrate import upgrade

    saved = dict(os.environ)
    # A test of the world starts from a copy of it (the world fixture then copies nothing).
    start = "world" if "world" in request.fixturenames and templates.has(request.param, "world", made_today=True) \
        else "migrated"
    if request.param == "sqlite":
        be = _sqlite_backend(tmp_path)
        name = None
        if templates.has("sqlite", start):
            templates.restore(be, start)
    else:
        try:
            import redis

            redis.Redis.from_url(REDIS, socket_connect_timeout=3).ping()
        except Exception as exc:  # noqa: BLE001
            _unavailable(f"Redis at {REDIS}", exc)
        name, url = create_database(template=templates.made.get(("postgres", start)))
        be = Backend("postgres", url, {"CRANFIELD_DATABASE_URL": url, "CRANFIELD_BROKER_URL": REDIS,
                                       "CRANFIELD_QUEUE": f"q-{uuid.uuid4().hex[:8]}", **TESTS_DEBOUNCE}, tmp_path)
    if templates.has(be.name, start):
        be.copied_from = start
    else:  # the session's first test on this backend
        upgrade(be.database_url)
        templates.keep(be, "migrated")
        be.copied_from = "migrated"
    be.activate()
    try:
        yield be
    finally:
        be.stop_all()
        from service.store.db import engine_for

        engine_for(be.database_url).dispose()
        os.environ.clear()
        os.environ.update(saved)
        if name is not None:
            templates.drop_later(name)


# ------------------------------------------------------------------ restarting the shared services
def _redis_up() -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(REDIS, socket_connect_timeout=1).ping())
    except Exception:  # noqa: BLE001
        return False


def start_redis() -> None:
    """Start the local Redis (127.0.0.1:6379, no persistence) if it is down, and wait for it."""
    if not _redis_up():
        subprocess.run(["redis-server", "--daemonize", "yes", "--bind", "127.0.0.1", "--port", "6379",
                        "--save", "", "--appendonly", "no"], check=True, capture_output=True)
    wait_for(_redis_up, 30, "Redis to start")


def restart_redis(down: float = 2.0) -> float:
    """Shut the local Redis down without saving (every queued message is lost), wait ``down``
    seconds, start it again; returns the monotonic time it is back. Redis is running
    afterwards whatever happens."""
    try:
        subprocess.run(["redis-cli", "-p", "6379", "shutdown", "nosave"], capture_output=True, timeout=30)
        wait_for(lambda: not _redis_up(), 30, "Redis to stop")
        time.sleep(down)
    finally:
        start_redis()
    return time.monotonic()


def _pg_cluster() -> list[str]:
    version = sorted(os.listdir("/etc/postgresql"))[-1]
    return ["pg_ctlcluster", "--skip-systemctl-redirect", version, "main"]


def _pg_up() -> bool:
    return subprocess.run(["pg_isready", "-h", "127.0.0.1", "-p", "5432", "-t", "1"],
                          capture_output=True).returncode == 0


def restart_postgres(down: float = 3.0) -> float:
    """Stop the local PostgreSQL (fast: every connection is cut), wait ``down`` seconds, start
    it again; returns the monotonic time it accepts connections. PostgreSQL is running
    afterwards whatever happens (other tests share it)."""
    try:
        subprocess.run([*_pg_cluster(), "stop"], check=True, capture_output=True, timeout=60)
        time.sleep(down)
    finally:
        if not _pg_up():
            subprocess.run([*_pg_cluster(), "start"], capture_output=True, timeout=120)
        wait_for(_pg_up, 60, "PostgreSQL to start")
    return time.monotonic()


def wait_for(predicate, timeout: float, what: str, backend: Backend | None = None, every: float = 0.3):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    logs = backend.logs() if backend else ""
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}\n{logs}")


def sqlite_jobs(path: Path) -> list[tuple[int, str, int, int]]:
    """The jobs of an embedded-default database file (id, status, done, total), read directly:
    cheap enough to poll, where a `cranfield jobs` process every 0.3 s would cost a core."""
    import sqlite3

    with sqlite3.connect(path) as db:
        return db.execute("select id, status, done, total from jobs order by id").fetchall()


# ------------------------------------------------------------------ an API world for HTTP tests
from service.sample import CollectionSpec, generate  # noqa: E402

SPEC = CollectionSpec(topics=6, runs=3, depth=20, docs_per_topic=60, judged_per_topic=30, seed=3)


@dataclass
class World:
    client: Any  # litestar.testing.TestClient
    tokens: dict[str, str]  # role name -> secret
    cid: int
    other_cid: int
    runs: dict[str, str]  # tag -> run text
    qrels: str
    run_ids: dict[str, int]
    factory: Any = None  # sessionmaker of the world's database


def auth(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


@dataclass
class _WorldSeed:
    """What a test needs to know of a world besides its database: ids and tokens."""

    tokens: dict[str, str]
    cid: int
    other_cid: int
    runs: dict[str, str]
    qrels: str
    run_ids: dict[str, int]


def _seed_world(backend: Backend) -> _WorldSeed:
    """Build the world through the API in ``backend``'s database (its runs evaluated in this
    process, as the worker would)."""
    from litestar.testing import TestClient

    from service.api.app import create_app
    from service.evaluation.permissions.access import create_token
    from service.store.db import transaction

    factory = backend.factory()
    with transaction(factory) as s:
        admin, _ = create_token(s, "admin", name="root")
    app = create_app(backend.database_url, lambda followups: run_inline(factory, followups))
    with TestClient(app=app) as client:
        a = auth(admin)
        for team in ("alpha", "beta"):
            assert client.post("/api/teams", json={"name": team}, headers=a).status_code == 201
        cid = client.post("/api/collections", json={"name": "task", "official_metric": "nDCG@10",
                                                    "metrics": ["AP", "nDCG@10"]}, headers=a).json()["id"]
        other = client.post("/api/collections", json={"name": "other"}, headers=a).json()["id"]
        for team in ("alpha", "beta"):  # teams take part by enrolment
            r = client.post(f"/api/collections/{cid}/teams", json={"team": team}, headers=a)
            assert r.status_code == 201, r.text
        tokens = {"admin": admin}
        tokens["organiser"] = client.post("/api/tokens", json={"role": "organiser", "collections": [cid]},
                                          headers=a).json()["token"]
        tokens["other_organiser"] = client.post("/api/tokens", json={"role": "organiser", "collections": [other]},
                                                headers=a).json()["token"]
        # The admin's (unscoped) team tokens: tests enrol the teams in collections of their own,
        # which an organiser-made token would not reach (docs/api.md, "Who a token reaches").
        for team in ("alpha", "beta"):
            tokens[team] = client.post("/api/tokens", json={"role": "participant", "team": team},
                                       headers=a).json()["token"]
        qrels, runs = generate(SPEC)
        r = client.post(f"/api/collections/{cid}/qrels", content=qrels, headers=auth(tokens["organiser"]))
        assert r.status_code == 201, r.text
        r = client.post("/api/tokens", json={"role": "assessor", "name": "assessor", "collections": [cid],
                                             "topics": ["0001"]}, headers=auth(tokens["organiser"]))
        assert r.status_code == 201, r.text
        tokens["assessor"] = r.json()["token"]
        run_ids = {}
        for (tag, text), team in zip(runs.items(), ("alpha", "alpha", "beta")):
            r = client.post(f"/api/collections/{cid}/runs", content=text, headers=auth(tokens[team]))
            assert r.status_code == 201, r.text
            run_ids[tag] = r.json()["id"]
    return _WorldSeed(tokens, cid, other, runs, qrels, run_ids)


@pytest.fixture
def world(backend: Backend, templates: Templates) -> Iterator[World]:
    """A private, unreleased collection ("task", nDCG@10 official) with qrels and three runs
    (two of team alpha, one of beta; both teams enrolled), and a second collection ("other",
    no team enrolled); one token per role. Built once per test session and backend, then
    copied into each test's own database (:class:`Templates`): the same ids and tokens, and
    nothing a test writes is seen by another. A session that passes midnight (UTC) builds it
    again: its runs count in today's quota (test_deadline_rules, test_api) as if just made."""
    from litestar.testing import TestClient

    from service.api.app import create_app

    if backend.copied_from == "world" and templates.has(backend.name, "world", made_today=True):
        pass  # (the backend fixture made its database a copy of the world)
    elif templates.has(backend.name, "world", made_today=True):
        templates.restore(backend, "world")
    else:
        if backend.copied_from != "migrated":  # (a world of yesterday: built again from the schema)
            templates.restore(backend, "migrated")
        begun_on = _utc_today()
        templates.seeds[backend.name] = _seed_world(backend)
        templates.keep(backend, "world", begun_on=begun_on)
    seed: _WorldSeed = templates.seeds[backend.name]
    factory = backend.factory()
    app = create_app(backend.database_url, lambda followups: run_inline(factory, followups))
    with TestClient(app=app) as client:
        yield World(client, dict(seed.tokens), seed.cid, seed.other_cid, dict(seed.runs), seed.qrels,
                    dict(seed.run_ids), factory)


def run_inline(factory, followups) -> None:  # type: ignore[no-untyped-def]
    """Do what the workers' tasks do, in this process, until no follow-up remains (the one
    table of task names to use cases; an unknown task name fails loudly)."""
    from service.evaluation.computing.task_table import run_here

    run_here(factory, followups)



def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A module that sets ``SQLITE_ONLY_BUT = {...test names...}`` runs its tests on SQLite only,
    but for the named ones (which depend on the database: locks, savepoints, COPY, concurrency)
    and those parametrized over ``backend`` explicitly: a question of pages, forms or rules is
    answered the same on both databases, and running it twice only costs the suite's time."""
    kept, dropped = [], []
    names_of: dict[Any, set[str]] = {}
    for item in items:
        names_of.setdefault(getattr(item, "module", None), set()).add(getattr(item, "originalname", item.name))
    for module, names in names_of.items():
        unknown = set(getattr(module, "SQLITE_ONLY_BUT", None) or ()) - names
        if unknown and len(names) > 1:  # (a run of one test of the module names only that one)
            raise pytest.UsageError(f"{module.__name__}.SQLITE_ONLY_BUT names no test: {', '.join(sorted(unknown))}")
    for item in items:
        keep_pg = getattr(getattr(item, "module", None), "SQLITE_ONLY_BUT", None)
        params = getattr(getattr(item, "callspec", None), "params", {})
        explicit = any(m.args and m.args[0] == "backend" for m in item.iter_markers("parametrize"))
        name = getattr(item, "originalname", item.name)
        if keep_pg is not None and params.get("backend") == "postgres" and not explicit and name not in keep_pg:
            dropped.append(item)
        else:
            kept.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
