"""The network timeouts on PostgreSQL and Redis connections, and the scheduler's own sweeper
(issue 34, item 7; the behaviour under real partitions is tests/integration/test_partitions.py)."""

from __future__ import annotations

import itertools
import socket
import threading
import time

import pytest

from service.config import SettingsError, load_settings, settings
from service.store.db import keepalive_timings, postgres_connect_args
from workers.broker import redis_socket_options

URL = "postgresql+psycopg://cranfield@db.example:5432/cranfield"


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    def set_(**values: str) -> None:
        for k, v in values.items():
            monkeypatch.setenv(k, v)
        settings.cache_clear()

    yield set_
    settings.cache_clear()


def test_postgres_connections_give_up_on_a_silent_server(env) -> None:  # type: ignore[no-untyped-def]
    env(CRANFIELD_NET_TIMEOUT="10", CRANFIELD_DB_CONNECT_TIMEOUT="5", CRANFIELD_DB_STATEMENT_TIMEOUT="300")
    args = postgres_connect_args(URL)
    assert args == {"connect_timeout": 5, "keepalives": 1, "keepalives_idle": 5, "keepalives_interval": 1,
                    "keepalives_count": 3, "tcp_user_timeout": 10000, "options": "-c statement_timeout=300000"}
    # the API: a third of its queue timeout for a dead pooled connection; libpq's 2 s floor to connect
    api = postgres_connect_args(URL, bound=2.0)
    assert api["tcp_user_timeout"] == 666 and api["connect_timeout"] == 2


def test_the_url_wins_and_a_zero_statement_timeout_is_none(env) -> None:  # type: ignore[no-untyped-def]
    env(CRANFIELD_DB_STATEMENT_TIMEOUT="0")
    args = postgres_connect_args(URL + "?keepalives_idle=60&connect_timeout=30")
    assert "options" not in args and "keepalives_idle" not in args and "connect_timeout" not in args
    assert args["tcp_user_timeout"] == 10000


def test_keepalives_declare_a_peer_dead_within_the_timeout() -> None:
    for net in (1, 4, 10, 60):
        idle, interval, count = keepalive_timings(net)
        assert idle >= 1 and interval >= 1 and count >= 1 and idle + interval * count <= max(net, 2)


def test_redis_sockets_have_keepalives_timeouts_and_health_checks() -> None:
    options = redis_socket_options(10.0, 5.0)
    assert options["socket_keepalive"] is True and options["retry_on_timeout"] is True
    assert options["socket_keepalive_options"][socket.TCP_USER_TIMEOUT] == 10000  # type: ignore[index]
    assert options["socket_timeout"] == 10.0 and options["socket_connect_timeout"] == 5.0
    assert options["health_check_interval"] == 5


def test_the_redis_app_uses_them_and_beat_sweeps_itself(env) -> None:  # type: ignore[no-untyped-def]
    from workers.app import make_app

    env(CRANFIELD_BROKER_URL="redis://127.0.0.1:6379/0", CRANFIELD_NET_TIMEOUT="4")
    app = make_app()
    assert app.conf.broker_transport_options["socket_timeout"] == 4.0
    assert app.conf.worker_consumer == "workers.broker:Consumer"
    assert app.conf.beat_scheduler == "workers.beat:Scheduler"
    assert "sweep-stuck-work" not in app.conf.beat_schedule


@pytest.mark.parametrize("name, value", [("CRANFIELD_NET_TIMEOUT", "0.5"), ("CRANFIELD_DB_CONNECT_TIMEOUT", "0"),
                                         ("CRANFIELD_DB_STATEMENT_TIMEOUT", "-1")])
def test_bad_values_name_their_variable(env, name: str, value: str) -> None:  # type: ignore[no-untyped-def]
    env(**{name: value})
    with pytest.raises(SettingsError, match=name):
        load_settings()


def test_the_sweeper_thread_keeps_its_interval_and_outlives_a_failed_sweep(monkeypatch: pytest.MonkeyPatch) -> None:
    import workers.tasks
    from workers.beat import Sweeper

    calls: list[float] = []
    done = threading.Event()

    def sweep_once() -> None:
        calls.append(time.monotonic())
        if len(calls) == 1:
            raise ConnectionError("the database is away")
        if len(calls) == 3:
            done.set()

    monkeypatch.setattr(workers.tasks, "sweep_once", sweep_once)
    sweeper = Sweeper(0.2)
    sweeper.start()
    try:
        assert done.wait(10), "the sweeper stopped after a failed sweep"
    finally:
        sweeper.stop()
        sweeper.join(5)
    assert not sweeper.is_alive()
    assert all(b - a >= 0.15 for a, b in itertools.pairwise(calls))
