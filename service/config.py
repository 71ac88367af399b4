"""Settings, read from environment variables in one place (once per process).

| variable | default | meaning |
| --- | --- | --- |
| CRANFIELD_DATABASE_URL | sqlite:///cranfield.sqlite (working directory) | SQLAlchemy URL; production: postgresql+psycopg://... |
| CRANFIELD_BROKER_URL | filesystem:// in ./cranfield-broker | Celery broker; production: redis://... |
| CRANFIELD_RESULT_BACKEND | (none) | Celery result backend; tasks record their outcome in the database, so none is needed |
| CRANFIELD_QUEUE | cranfield | the Celery queue the workers consume |
| CRANFIELD_WORKER_CONCURRENCY | 2 | worker processes of `cranfield worker` |
| CRANFIELD_STUCK_TIMEOUT | 600 | seconds after which work still "evaluating" is re-queued by the sweeper |
| CRANFIELD_SWEEP_INTERVAL | 60 | seconds between sweeps (celery beat) |
| CRANFIELD_REFRESH_INTERVAL | 3600 | seconds between scheduled refreshes of stale results |
| CRANFIELD_MAX_ATTEMPTS | 3 | attempts before a run's evaluation is marked failed |
| CRANFIELD_TASK_DELAY | 0 | testing only: seconds an evaluation waits after claiming its run (failure-recovery tests) |
| CRANFIELD_MAX_UPLOAD | 268435456 | largest request body the API accepts, in bytes (qrels and run uploads) |
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path


@dataclass(frozen=True)
class StoreSettings:
    database_url: str


@dataclass(frozen=True)
class WorkerSettings:
    broker_url: str
    broker_folder: Path | None  # the filesystem broker's folder (embedded default)
    result_backend: str | None
    queue: str
    concurrency: int
    stuck_timeout: float
    sweep_interval: float
    refresh_interval: float
    max_attempts: int
    task_delay: float


@dataclass(frozen=True)
class Settings:
    store: StoreSettings
    worker: WorkerSettings


def _env(name: str, default: str) -> str:
    value = os.environ.get(name, "").strip()
    return value or default


def load_settings() -> Settings:
    """Read the environment now (tests and commands that change it call this)."""
    cwd = Path.cwd()
    broker = _env("CRANFIELD_BROKER_URL", "filesystem://")
    folder = Path(_env("CRANFIELD_BROKER_FOLDER", str(cwd / "cranfield-broker"))) if broker.startswith("filesystem") else None
    return Settings(
        store=StoreSettings(database_url=_env("CRANFIELD_DATABASE_URL", f"sqlite:///{cwd / 'cranfield.sqlite'}")),
        worker=WorkerSettings(
            broker_url=broker,
            broker_folder=folder,
            result_backend=os.environ.get("CRANFIELD_RESULT_BACKEND") or None,
            queue=_env("CRANFIELD_QUEUE", "cranfield"),
            concurrency=int(_env("CRANFIELD_WORKER_CONCURRENCY", "2")),
            stuck_timeout=float(_env("CRANFIELD_STUCK_TIMEOUT", "600")),
            sweep_interval=float(_env("CRANFIELD_SWEEP_INTERVAL", "60")),
            refresh_interval=float(_env("CRANFIELD_REFRESH_INTERVAL", "3600")),
            max_attempts=int(_env("CRANFIELD_MAX_ATTEMPTS", "3")),
            task_delay=float(_env("CRANFIELD_TASK_DELAY", "0")),
        ),
    )


@lru_cache(maxsize=1)
def settings() -> Settings:
    """The process's settings, read once."""
    return load_settings()
