"""kombu's Redis transport, with the one fault that made a worker die in a Redis outage fixed.

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

from kombu.transport import redis as kombu_redis
from redis.exceptions import ConnectionError as RedisConnectionError

#: Celery's ``broker_transport`` for redis:// and rediss:// URLs.
TRANSPORT = "workers.broker:Transport"


class Channel(kombu_redis.Channel):
    def _connparams(self, asynchronous: bool = False) -> dict:  # type: ignore[override]
        transport = self.connection
        if transport is None or transport.client is None:
            raise RedisConnectionError("the broker connection is closed (its channel outlived it)")
        return super()._connparams(asynchronous=asynchronous)


class Transport(kombu_redis.Transport):
    Channel = Channel


def transport_for(broker_url: str) -> str | None:
    """The transport Celery should use for ``broker_url`` (None: kombu's own choice)."""
    scheme = broker_url.split("://", 1)[0].lower()
    return TRANSPORT if scheme in ("redis", "rediss") else None
