"""kombu's Redis and filesystem transports, each with a fault fixed that made a worker die.

**Filesystem** (the embedded default's server-less broker). kombu's ``_put`` creates the
message file under its final name and only then writes it, while a consumer lists the folder,
moves every ``*.QUEUE.msg`` file it finds and parses it: a consumer that came between the two
read an empty file, ``json.loads`` failed, the worker's main process exited ("Unrecoverable
error: JSONDecodeError") and the message was gone (a CI run: the pooled late run never
evaluated). Here a message is written under a name no consumer picks up (``….msg.part``) and
renamed into place (``os.replace``, atomic on POSIX), so a consumer sees a whole message or none.

**Redis.**

The fault (kombu 5.7.0 with celery 5.7.0, and every earlier release we read): when the broker
connection breaks, Celery's consumer first *collects* the connection (which detaches the
transport from it: ``transport.client = None``) and then *closes* it. Closing the default
channel hands its unacknowledged messages back (``QoS.restore_unacked_once``), which needs a
new Redis connection pool, built from ``transport.client``: ``None.hostname`` raises an
``AttributeError``. Celery ignores only the transport's connection and channel errors on that
path, so the ``AttributeError`` escapes the consumer and the worker's main process exits
("Unrecoverable error"). A worker holds unacknowledged messages most of the time (acks-late
tasks, the tests round's countdown), so most outages killed one.

The fix here is the smallest correct one: a channel whose transport has been detached cannot
reach Redis, so asking it for connection parameters raises redis-py's own
``ConnectionError``, which every caller already treats as a recoverable broker error. The
messages it could not hand back are not lost: they stay in Redis' unacknowledged index (and
return after the visibility timeout), or were lost with a Redis that keeps nothing; either way
the sweeper re-sends queued work whose message is missing (service.evaluation.computing.sweeping), and
every task is idempotent. docs/decisions.md records the choice.
"""

from __future__ import annotations

import functools
import os
import socket
import time
import uuid

from celery.worker.consumer import Consumer as CeleryConsumer
from kombu.transport import filesystem as kombu_filesystem
from kombu.transport import redis as kombu_redis
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps
from redis.exceptions import ConnectionError as RedisConnectionError

#: Celery's ``broker_transport`` for redis:// and rediss:// URLs.
TRANSPORT = "workers.broker:Transport"
#: ... and for filesystem:// (the embedded default).
FILESYSTEM_TRANSPORT = "workers.broker:FilesystemTransport"


class Channel(kombu_redis.Channel):
    def _connparams(self, asynchronous: bool = False) -> dict:  # type: ignore[override]
        transport = self.connection
        if transport is None or transport.client is None:
            raise RedisConnectionError("the broker connection is closed (its channel outlived it)")
        return super()._connparams(asynchronous=asynchronous)


class Transport(kombu_redis.Transport):
    Channel = Channel


class FilesystemChannel(kombu_filesystem.Channel):
    def _put(self, queue: str, payload: dict, **kwargs: object) -> None:  # type: ignore[override]
        """Put a message on ``queue``: written whole under a name no consumer reads, then
        renamed to kombu's ``<ms>_<uuid>.<queue>.msg`` (consumers and ``_size`` match that suffix)."""
        final = os.path.join(self.data_folder_out, f"{int(time.monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg")
        part = final + ".part"
        try:
            with open(part, "wb", buffering=0) as f:
                f.write(str_to_bytes(dumps(payload)))
            os.replace(part, final)
        except OSError as exc:
            raise kombu_filesystem.ChannelError(f"Cannot add file {final!r} to directory") from exc


class FilesystemTransport(kombu_filesystem.Transport):
    Channel = FilesystemChannel


#: Longest pause between two attempts to reach a broker that cannot be reached. kombu's is 30 s
#: (2, 4, ... 30): a worker whose broker came back after a long partition waited up to that
#: long, listening to nothing (issue 34, item 7: 105-111 s after a 229 s cut).
RECONNECT_MAX = 5.0


class Consumer(CeleryConsumer):
    """Celery's consumer, reconnecting every second at first and then every
    :data:`RECONNECT_MAX` seconds at most (a connection attempt is cheap for Redis)."""

    def ensure_connected(self, conn):  # type: ignore[no-untyped-def]
        conn.ensure_connection = functools.partial(conn.ensure_connection, interval_start=1, interval_step=1,
                                                   interval_max=RECONNECT_MAX)
        return super().ensure_connected(conn)


def redis_socket_options(net_timeout: float, connect_timeout: float) -> dict[str, object]:
    """Transport options that make a silent Redis (a partition, a host gone without a FIN) an
    error within about ``net_timeout`` seconds instead of TCP's retransmission back-off:
    keepalives and TCP_USER_TIMEOUT on every socket, a timeout on blocking commands (a publish),
    and kombu's check of the BRPOP connection (dropped once its reply is overdue by more than
    ``health_check_interval``; see the Redis transport's documentation)."""
    from service.store.db import keepalive_timings

    idle, interval, count = keepalive_timings(net_timeout)
    return {
        "socket_keepalive": True,
        "socket_keepalive_options": {socket.TCP_KEEPIDLE: idle, socket.TCP_KEEPINTVL: interval,
                                     socket.TCP_KEEPCNT: count, socket.TCP_USER_TIMEOUT: int(net_timeout * 1000)},
        # above kombu's BRPOP timeout (1 s), which a live Redis always answers within
        "socket_timeout": max(net_timeout, 2.0),
        "socket_connect_timeout": connect_timeout,
        "health_check_interval": max(1, round(net_timeout / 2)),
        "retry_on_timeout": True,
    }


def transport_for(broker_url: str) -> str | None:
    """The transport Celery should use for ``broker_url`` (None: kombu's own choice)."""
    scheme = broker_url.split("://", 1)[0].lower()
    if scheme in ("redis", "rediss"):
        return TRANSPORT
    return FILESYSTEM_TRANSPORT if scheme == "filesystem" else None
