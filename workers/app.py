"""The Celery application, configured from service.config (environment variables)."""

from __future__ import annotations

from datetime import timedelta

from celery import Celery
from celery.signals import worker_process_init

from service.config import settings
from service.evaluation.common.work import TaskName
from workers.broker import TRANSPORT, redis_socket_options, transport_for

#: How often an idle worker lists the filesystem broker's folder for messages. kombu's default
#: (1 s) capped the embedded default at about one prefetch (the worker's concurrency) of tasks
#: a second however short they were: 20 runs of 30 ms each took 10 s to evaluate. A listing of
#: the folder costs microseconds; Redis needs no polling (it blocks on the queue).
FILESYSTEM_POLL_SECONDS = 0.05


def make_app() -> Celery:
    cfg, store = settings().worker, settings().store
    app = Celery("cranfield", include=["workers.tasks"])
    transport_options: dict[str, object] = {}
    if transport_for(cfg.broker_url) == TRANSPORT:
        # Redis: a silent partition is noticed in CRANFIELD_NET_TIMEOUT (docs/operations.md, "Partitions")
        transport_options = redis_socket_options(store.net_timeout, store.connect_timeout)
    if cfg.broker_folder is not None:
        # The server-less broker of the embedded default: messages are files in one folder.
        cfg.broker_folder.mkdir(parents=True, exist_ok=True)
        folder = str(cfg.broker_folder)
        transport_options = {"data_folder_in": folder, "data_folder_out": folder, "store_processed": False,
                             "control_folder": str(cfg.broker_folder / "control"),
                             "polling_interval": FILESYSTEM_POLL_SECONDS}
    app.conf.update(
        broker_url=cfg.broker_url,
        # Redis through workers.broker: kombu's transport with the fault fixed that made a
        # worker exit when Redis went away while it held an unacknowledged message.
        broker_transport=transport_for(cfg.broker_url),
        broker_transport_options=transport_options,
        # A worker (and beat) outlives a broker restart: it reconnects, however long that takes,
        # and a task running meanwhile goes on (its result is in the database, not the broker).
        broker_connection_retry_on_startup=True,
        broker_connection_retry=True,
        broker_connection_max_retries=None,
        broker_connection_timeout=store.connect_timeout,
        # ... and tries again every second, then every 5 s at most (workers.broker.Consumer)
        worker_consumer="workers.broker:Consumer",
        worker_cancel_long_running_tasks_on_connection_loss=False,
        result_backend=cfg.result_backend,
        task_ignore_result=True,
        task_default_queue=cfg.queue,
        # A task is acknowledged only when it has finished, and a worker that dies mid-task
        # hands it back; the sweeper covers brokers that lose such messages anyway. A
        # redelivered message for an attempt that is alive does nothing (its lease holds);
        # for a dead one it takes the work over (service.evaluation.organising.planning).
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        worker_concurrency=cfg.concurrency,
        task_serializer="json",
        accept_content=["json"],
        # The sweeper runs inside beat (workers.beat), never queued behind the work it supervises.
        beat_scheduler="workers.beat:Scheduler",
        beat_schedule={
            "refresh-stale-results": {"task": TaskName.REFRESH.value,
                                      "schedule": timedelta(seconds=cfg.refresh_interval)},
            # Bookkeeping rows nobody needs any more; a prune that waited past the next is dropped.
            "prune-old-rows": {"task": TaskName.PRUNE.value, "schedule": timedelta(seconds=cfg.prune_interval),
                               "options": {"expires": cfg.prune_interval}},
        },
    )
    return app


app = make_app()


@worker_process_init.connect
def _fresh_connections(**_: object) -> None:
    """A forked worker process must not reuse its parent's database connections."""
    from service.store.db import reset_after_fork

    reset_after_fork()
