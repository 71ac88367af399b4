"""Settings, read from environment variables in one place (once per process).

Nothing else reads the environment: every knob is a field of :class:`Settings`, one dataclass
per subsystem. A value that does not parse (``CRANFIELD_MAX_UPLOAD=abc``) raises
:class:`SettingsError` naming the variable.

| variable | default | meaning |
| --- | --- | --- |
| CRANFIELD_DATABASE_URL | sqlite:///cranfield.sqlite (working directory) | SQLAlchemy URL; production: postgresql+psycopg://... |
| CRANFIELD_BROKER_URL | filesystem:// in ./cranfield-broker | Celery broker; production: redis://... |
| CRANFIELD_BROKER_FOLDER | ./cranfield-broker (working directory) | the filesystem broker's folder (only with filesystem://) |
| CRANFIELD_RESULT_BACKEND | (none) | Celery result backend; tasks record their outcome in the database, so none is needed |
| CRANFIELD_QUEUE | cranfield | the Celery queue the workers consume |
| CRANFIELD_WORKER_CONCURRENCY | 2 | worker processes of `cranfield worker` |
| CRANFIELD_LEASE | 30 | seconds a worker's claim lives unless its heartbeat renews it (every third); only an expired one is taken over |
| CRANFIELD_SWEEP_INTERVAL | 5 | seconds between sweeps (run by the scheduler itself, never queued): expired claims re-queued, lost messages re-sent |
| CRANFIELD_DB_CONNECT_TIMEOUT | 5 | seconds a new PostgreSQL connection may take (libpq's minimum is 2); then the caller's 503 or retry |
| CRANFIELD_DB_STATEMENT_TIMEOUT | 300 | seconds one PostgreSQL statement may run before the server cancels it (0: no limit) |
| CRANFIELD_NET_TIMEOUT | 10 | seconds of silence after which a PostgreSQL or Redis connection counts as dead (TCP keepalives, TCP_USER_TIMEOUT, Redis health checks); the API at most a third of CRANFIELD_API_QUEUE_SECONDS |
| CRANFIELD_LOST_AFTER | 15 | seconds before queued work is sent again when the broker holds fewer messages than there is queued work |
| CRANFIELD_STUCK_TIMEOUT | 600 | seconds before queued work is sent again in any case (a backstop); the lease of pre-0009 claims |
| CRANFIELD_EVAL_TIME_BUDGET | 900 | seconds of computing per run evaluation; beyond it the run fails with that reason (not retried) |
| CRANFIELD_EVAL_MAX_LINES | 20000000 | largest run (lines) evaluated; a larger one fails with that reason |
| CRANFIELD_TESTS_DEBOUNCE | 5 | seconds a submission's tests wait for the collection's other jobs (one round per burst; at most 12 times this); a whole collection's re-evaluation does not wait |
| CRANFIELD_REFRESH_INTERVAL | 3600 | seconds between scheduled refreshes of stale results |
| CRANFIELD_MAX_ATTEMPTS | 3 | claims of a run's evaluation (a tests round, an analysis) before it is marked failed |
| CRANFIELD_TASK_DELAY | 0 | testing only: seconds an evaluation computes longer after claiming its run (failure-recovery tests) |
| CRANFIELD_TEST_CLOCK_OFFSET | 0 | testing only: seconds added to this process's wall clock (a host whose clock is wrong; tests/integration/test_partitions.py) |
| CRANFIELD_PRUNE_INTERVAL | 3600 | seconds between prunes (celery beat) of old idempotency keys and ended sessions |
| CRANFIELD_IDEMPOTENCY_RETENTION | 604800 | seconds an upload's Idempotency-Key and answer are kept (at least 1 day) |
| CRANFIELD_SESSION_GRACE | 86400 | seconds an expired or signed-out portal session is kept before it is deleted |
| CRANFIELD_MAX_UPLOAD | 268435456 | largest request body the API accepts, in bytes (qrels and run uploads) |
| CRANFIELD_BOARD_CACHE_SECONDS | 1.0 | seconds a rendered leaderboard is served from memory (new results show within that time) |
| CRANFIELD_SESSION_LIFETIME | 1209600 | seconds the portal's sign-in cookie lasts (14 days) |
| CRANFIELD_API_PROCESSES | 1 | server processes of `cranfield serve` (PostgreSQL: up to one per core; docs/operations.md) |
| CRANFIELD_API_THREADS | 16 | worker threads per API process (database work and rendering) |
| CRANFIELD_API_DB_SLOTS | 16 | requests per process holding a database session at once; the pool is slots + threads + 1 |
| CRANFIELD_API_MAX_IN_FLIGHT | 256 | requests in the application at once per process; the next ones wait for a slot |
| CRANFIELD_API_QUEUE_SECONDS | 2 | longest wait for a request slot, then for a database slot, before a 503 with Retry-After |
| CRANFIELD_API_MAX_WAITING | 1024 | requests waiting for a request slot per process; beyond it an immediate 503 with Retry-After |
| CRANFIELD_CALLER_CACHE_SECONDS | 1.0 | seconds a resolved API token is kept in memory (this process's writes clear it) |
| CRANFIELD_MAX_TOPICS | 100000 | topics of one uploaded qrels, label or intent probability file, and of a collection |
| CRANFIELD_MAX_INTENTS_PER_TOPIC | 100 | intents (subtopics) of one topic in diversity qrels or an intent probability file |
| CRANFIELD_MAX_INTENT_CELLS | 10000000 | judged documents x intents of one topic in diversity qrels (the matrix the intent-aware measures build per topic) |
| CRANFIELD_MAX_STRATA_PER_TOPIC | 100 | strata of one topic in sampled qrels |
| CRANFIELD_MAX_ASSESSORS | 1000 | assessors in one label file |
| CRANFIELD_MAX_LABELS_PER_DOCUMENT | 100 | labels of one document (topic, docno) in one label file |

The remote client (`cranfield remote`, docs/client.md) is not the service: its settings are
read apart, by :func:`remote_settings`, so that a bad service variable never stops it.

| variable | default | meaning |
| --- | --- | --- |
| CRANFIELD_URL | (the config file's) | the server `cranfield remote` talks to; overrides `remote login` |
| CRANFIELD_TOKEN | (the config file's) | the bearer token `cranfield remote` sends; overrides `remote login` |
| XDG_CONFIG_HOME | ~/.config | the folder of `cranfield/remote.json`, where `remote login` keeps URL and token |
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from service.errors import CranfieldError


class SettingsError(CranfieldError, ValueError):
    """An environment variable whose value cannot be used; the message names the variable.

    A configuration error, not a caller's: the web layers show it as an internal error, the
    CLI as ``cranfield: error: ...`` with exit code 1.
    """


@dataclass(frozen=True)
class StoreSettings:
    database_url: str
    connect_timeout: float = 5.0  # seconds a new PostgreSQL connection may take (CRANFIELD_DB_CONNECT_TIMEOUT)
    statement_timeout: float = 300.0  # seconds a PostgreSQL statement may run; 0: none (CRANFIELD_DB_STATEMENT_TIMEOUT)
    #: seconds of silence after which a connection to PostgreSQL or Redis counts as dead and is
    #: made again (a silent partition, a peer gone without a FIN): CRANFIELD_NET_TIMEOUT
    net_timeout: float = 10.0


@dataclass(frozen=True)
class WorkerSettings:
    broker_url: str
    broker_folder: Path | None  # the filesystem broker's folder (embedded default)
    result_backend: str | None
    queue: str
    concurrency: int
    stuck_timeout: float  # backstop for lost messages while the broker looks busy; pre-0009 claims
    sweep_interval: float
    refresh_interval: float
    max_attempts: int
    task_delay: float
    lease: float = 30.0  # seconds a claim lives unless its heartbeat renews it (every lease / 3)
    lost_after: float = 15.0  # seconds before queued work whose message is missing is sent again
    eval_time_budget: float = 900.0  # seconds of computing per run evaluation
    eval_max_lines: int = 20_000_000  # largest run evaluated, in lines
    tests_debounce: float = 5.0  # seconds a submission's tests round waits for other jobs of the collection
    run_cache_mb: float = 128.0  # parsed runs kept by each worker process for the next re-evaluation (MB)
    prune_interval: float = 3600.0  # seconds between prunes of old idempotency keys and ended sessions
    idempotency_retention: float = 7 * 24 * 3600.0  # seconds an Idempotency-Key and its answer are kept
    session_grace: float = 24 * 3600.0  # seconds an ended portal session is kept before it is deleted
    clock_offset: float = 0.0  # testing only: seconds added to the process's wall clock (service.store.models.utcnow)


@dataclass(frozen=True)
class WebSettings:
    """The API and the portal."""

    max_upload: int  # largest request body, bytes (CRANFIELD_MAX_UPLOAD)
    board_cache_seconds: float  # a rendered leaderboard's time in memory (CRANFIELD_BOARD_CACHE_SECONDS)
    session_cookie_lifetime: int  # the portal's sign-in cookie max-age, seconds (CRANFIELD_SESSION_LIFETIME)
    api_threads: int  # worker threads per API process (CRANFIELD_API_THREADS)
    api_db_slots: int  # requests holding a database session at once, per process (CRANFIELD_API_DB_SLOTS)
    api_max_in_flight: int  # requests in the application at once, per process (CRANFIELD_API_MAX_IN_FLIGHT)
    api_queue_seconds: float  # longest wait for a request slot, then a database slot (CRANFIELD_API_QUEUE_SECONDS)
    api_max_waiting: int  # requests waiting for a request slot before immediate 503s (CRANFIELD_API_MAX_WAITING)
    caller_cache_seconds: float  # a resolved API token's life in memory (CRANFIELD_CALLER_CACHE_SECONDS)
    api_processes: int  # server processes of `cranfield serve` (CRANFIELD_API_PROCESSES)


@dataclass(frozen=True)
class FileSettings:
    """Counts an uploaded file can inflate beyond its size (docs/operations.md, "Limits")."""

    max_topics: int = 100_000  # topics of one qrels, label or probability file, and of a collection
    max_intents_per_topic: int = 100  # intents of one diversity topic (CRANFIELD_MAX_INTENTS_PER_TOPIC)
    max_intent_cells: int = 10_000_000  # judged documents x intents of one diversity topic
    max_strata_per_topic: int = 100  # strata of one topic of sampled qrels (CRANFIELD_MAX_STRATA_PER_TOPIC)
    max_assessors: int = 1000  # assessors of one label file (CRANFIELD_MAX_ASSESSORS)
    max_labels_per_document: int = 100  # labels of one (topic, docno) in one label file


@dataclass(frozen=True)
class Settings:
    store: StoreSettings
    worker: WorkerSettings
    web: WebSettings
    files: FileSettings = FileSettings()


def _env(name: str, default: str) -> str:
    value = os.environ.get(name, "").strip()
    return value or default


def _int(name: str, default: int, minimum: int) -> int:
    text = _env(name, str(default))
    try:
        value = int(text)
    except ValueError:
        raise SettingsError(f"{name}={text!r} is not an integer (default {default})") from None
    if value < minimum:
        raise SettingsError(f"{name}={text!r}: must be at least {minimum} (default {default})")
    return value


def max_upload() -> int:
    """CRANFIELD_MAX_UPLOAD alone: the API's largest body, and the bound on the uncompressed
    size of a gzipped file read locally (the CLI sets it in ``service.formats.compressed``)."""
    return _int("CRANFIELD_MAX_UPLOAD", 256 * 1024 * 1024, minimum=1)


def _float(name: str, default: float, minimum: float, *, strict: bool = False) -> float:
    """A finite number >= ``minimum`` (> ``minimum`` if ``strict``)."""
    text = _env(name, str(default))
    try:
        value = float(text)
    except ValueError:
        raise SettingsError(f"{name}={text!r} is not a number (default {default:g})") from None
    if not math.isfinite(value) or value < minimum or (strict and value == minimum):
        bound = f"greater than {minimum:g}" if strict else f"at least {minimum:g}"
        raise SettingsError(f"{name}={text!r}: must be a finite number {bound} (default {default:g})")
    return value


def load_settings() -> Settings:
    """Read the environment now (tests and commands that change it call this)."""
    cwd = Path.cwd()
    broker = _env("CRANFIELD_BROKER_URL", "filesystem://")
    folder = Path(_env("CRANFIELD_BROKER_FOLDER", str(cwd / "cranfield-broker"))) if broker.startswith("filesystem") else None
    return Settings(
        store=StoreSettings(database_url=_env("CRANFIELD_DATABASE_URL", f"sqlite:///{cwd / 'cranfield.sqlite'}"),
                            connect_timeout=_float("CRANFIELD_DB_CONNECT_TIMEOUT", 5, minimum=0, strict=True),
                            statement_timeout=_float("CRANFIELD_DB_STATEMENT_TIMEOUT", 300, minimum=0),
                            net_timeout=_float("CRANFIELD_NET_TIMEOUT", 10, minimum=1)),
        worker=WorkerSettings(
            broker_url=broker,
            broker_folder=folder,
            result_backend=os.environ.get("CRANFIELD_RESULT_BACKEND") or None,
            queue=_env("CRANFIELD_QUEUE", "cranfield"),
            concurrency=_int("CRANFIELD_WORKER_CONCURRENCY", 2, minimum=1),
            stuck_timeout=_float("CRANFIELD_STUCK_TIMEOUT", 600, minimum=0, strict=True),
            sweep_interval=_float("CRANFIELD_SWEEP_INTERVAL", 5, minimum=0, strict=True),
            refresh_interval=_float("CRANFIELD_REFRESH_INTERVAL", 3600, minimum=0, strict=True),
            max_attempts=_int("CRANFIELD_MAX_ATTEMPTS", 3, minimum=1),
            task_delay=_float("CRANFIELD_TASK_DELAY", 0, minimum=0),
            lease=_float("CRANFIELD_LEASE", 30, minimum=0, strict=True),
            lost_after=_float("CRANFIELD_LOST_AFTER", 15, minimum=0, strict=True),
            eval_time_budget=_float("CRANFIELD_EVAL_TIME_BUDGET", 900, minimum=0, strict=True),
            eval_max_lines=_int("CRANFIELD_EVAL_MAX_LINES", 20_000_000, minimum=1),
            tests_debounce=_float("CRANFIELD_TESTS_DEBOUNCE", 5, minimum=0),
            run_cache_mb=_float("CRANFIELD_RUN_CACHE_MB", 128, minimum=0),
            prune_interval=_float("CRANFIELD_PRUNE_INTERVAL", 3600, minimum=0, strict=True),
            # longer than any client retries an upload: a retry is answered as the first request was
            idempotency_retention=_float("CRANFIELD_IDEMPOTENCY_RETENTION", 7 * 24 * 3600, minimum=24 * 3600),
            session_grace=_float("CRANFIELD_SESSION_GRACE", 24 * 3600, minimum=0),
            clock_offset=_float("CRANFIELD_TEST_CLOCK_OFFSET", 0, minimum=-math.inf),
        ),
        web=WebSettings(
            max_upload=max_upload(),
            board_cache_seconds=_float("CRANFIELD_BOARD_CACHE_SECONDS", 1.0, minimum=0),
            session_cookie_lifetime=_int("CRANFIELD_SESSION_LIFETIME", 14 * 24 * 3600, minimum=1),
            api_threads=_int("CRANFIELD_API_THREADS", 16, minimum=1),
            api_db_slots=_int("CRANFIELD_API_DB_SLOTS", 16, minimum=1),
            api_max_in_flight=_int("CRANFIELD_API_MAX_IN_FLIGHT", 256, minimum=1),
            api_queue_seconds=_float("CRANFIELD_API_QUEUE_SECONDS", 2.0, minimum=0),
            api_max_waiting=_int("CRANFIELD_API_MAX_WAITING", 1024, minimum=0),
            caller_cache_seconds=_float("CRANFIELD_CALLER_CACHE_SECONDS", 1.0, minimum=0),
            api_processes=_int("CRANFIELD_API_PROCESSES", 1, minimum=1),
        ),
        files=FileSettings(
            max_topics=_int("CRANFIELD_MAX_TOPICS", 100_000, minimum=1),
            max_intents_per_topic=_int("CRANFIELD_MAX_INTENTS_PER_TOPIC", 100, minimum=1),
            max_intent_cells=_int("CRANFIELD_MAX_INTENT_CELLS", 10_000_000, minimum=1),
            max_strata_per_topic=_int("CRANFIELD_MAX_STRATA_PER_TOPIC", 100, minimum=1),
            max_assessors=_int("CRANFIELD_MAX_ASSESSORS", 1000, minimum=1),
            max_labels_per_document=_int("CRANFIELD_MAX_LABELS_PER_DOCUMENT", 100, minimum=1),
        ),
    )


@lru_cache(maxsize=1)
def settings() -> Settings:
    """The process's settings, read once."""
    return load_settings()


@dataclass(frozen=True)
class RemoteSettings:
    """The remote client's settings: ``url`` and ``token`` from the environment (None when
    unset), and the folder of its config file."""

    url: str | None
    token: str | None
    config_dir: Path


def remote_settings() -> RemoteSettings:
    """Read now (not cached): the client is a short-lived command, and its tests change them."""
    base = os.environ.get("XDG_CONFIG_HOME", "").strip()
    # XDG: a relative XDG_CONFIG_HOME is invalid and is ignored
    root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".config"
    return RemoteSettings(url=os.environ.get("CRANFIELD_URL", "").strip() or None,
                          token=os.environ.get("CRANFIELD_TOKEN", "").strip() or None,
                          config_dir=root / "cranfield")
