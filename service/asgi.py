"""The composition root of the web service: the API and portal application wired to the workers.

``service.api`` never imports the workers: follow-up work leaves a request through the
``dispatch`` function given to :func:`service.api.app.create_app`. This module supplies it
(``workers.tasks.send``), the settings and the readiness checks. It is the only module, besides
the CLI's process commands and ``workers/``, that may import both the web layer and the workers
(tests/unit/test_layers.py holds that).

    uvicorn --factory service.asgi:create_service_app --host 0.0.0.0 --port 8000

(``cranfield serve`` runs the same factory, after migrating the database.)
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from litestar import Litestar

from service.config import Settings, settings


def broker_readiness(cfg: Settings) -> Callable[[], dict[str, bool]]:
    """The check the readiness probe adds to the database's: is the broker reachable?"""

    def readiness() -> dict[str, bool]:
        if cfg.worker.broker_folder is not None:
            return {"broker": cfg.worker.broker_folder.is_dir()}
        try:
            import redis

            return {"broker": bool(redis.Redis.from_url(cfg.worker.broker_url, socket_connect_timeout=2).ping())}
        except Exception:  # noqa: BLE001 (any failure means "not ready")
            return {"broker": False}

    return readiness


def configure_logging() -> None:
    """Cranfield's own log lines (a 500's traceback with its request id, a broker that could not
    take follow-up work, an overloaded database) to stderr with time and level, once; an
    embedding application that configured the ``cranfield`` logger itself keeps its setup."""
    logger = logging.getLogger("cranfield")
    if logger.handlers:
        return
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False


def create_service_app() -> Litestar:
    """The ASGI application of ``cranfield serve``: settings from the environment, follow-up
    tasks sent to the workers after each commit, the broker in the readiness check."""
    from service.api.app import create_app
    from service.http.admission import ServerLimits
    from service.runtime import one_heap
    from workers.tasks import send

    one_heap()  # before any thread: an upload's memory goes back to the kernel once it is done
    configure_logging()
    cfg = settings()
    web = cfg.web
    limits = ServerLimits(threads=web.api_threads, db_slots=web.api_db_slots, max_in_flight=web.api_max_in_flight,
                          queue_seconds=web.api_queue_seconds, max_waiting=web.api_max_waiting,
                          caller_cache_seconds=web.caller_cache_seconds)
    return create_app(cfg.store.database_url, send, readiness=broker_readiness(cfg), max_body=web.max_upload,
                      board_ttl=web.board_cache_seconds, limits=limits, freeze_heap=True)
