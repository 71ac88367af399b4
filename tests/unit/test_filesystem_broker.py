"""The embedded default's filesystem broker: a consumer never reads a message half written.

kombu's own ``_put`` created the message file under its final name before writing it; a
consumer listing the folder in between read an empty file and the worker died on a
JSONDecodeError (workers/broker.py). Here each message appears whole, by an atomic rename."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from kombu import Connection

from workers.broker import FilesystemTransport, transport_for


def _channel(folder: Path):  # type: ignore[no-untyped-def]
    conn = Connection(transport=FilesystemTransport, transport_options={
        "data_folder_in": str(folder), "data_folder_out": str(folder)})
    return conn, conn.default_channel


def test_the_embedded_broker_url_gets_the_fixed_transport() -> None:
    assert transport_for("filesystem://") == "workers.broker:FilesystemTransport"
    assert transport_for("redis://127.0.0.1:6379/0") == "workers.broker:Transport"
    assert transport_for("amqp://guest@localhost//") is None


def test_a_message_is_renamed_into_place_whole(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    conn, channel = _channel(tmp_path)
    seen: list[tuple[str, str, list[str]]] = []
    real = os.replace

    def replace(src, dst):  # type: ignore[no-untyped-def]
        seen.append((Path(src).read_text(), str(dst), sorted(os.listdir(tmp_path))))
        return real(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    channel._put("q", {"body": "x" * 100_000})
    assert len(seen) == 1, "the message was not written aside and renamed"
    text, final, before = seen[0]
    assert '"body"' in text and text.endswith("}")  # whole before it gets its name
    assert not [n for n in before if n.endswith(".q.msg")]  # no consumer could see it yet
    assert final.endswith(".q.msg") and os.listdir(tmp_path) == [Path(final).name]
    assert channel._size("q") == 1 and channel._get("q") == {"body": "x" * 100_000}
    conn.release()


def test_a_consumer_polling_while_messages_are_put_reads_each_whole(tmp_path: Path) -> None:
    conn, producer = _channel(tmp_path)
    conn2, consumer = _channel(tmp_path)
    sent, got, errors = 400, [], []
    done = threading.Event()

    def consume() -> None:
        from queue import Empty

        while len(got) < sent and not done.is_set():
            try:
                got.append(consumer._get("q")["n"])
            except Empty:
                continue
            except Exception as exc:  # noqa: BLE001 (what killed the worker)
                errors.append(exc)
                return

    reader = threading.Thread(target=consume)
    reader.start()
    payload = "y" * 200_000  # large writes widen the window kombu's own _put left open
    for n in range(sent):
        producer._put("q", {"n": n, "pad": payload})
    reader.join(timeout=60)
    done.set()
    assert not errors and sorted(got) == list(range(sent))
    conn.release()
    conn2.release()


def test_an_idle_worker_on_the_embedded_broker_looks_for_messages_every_50_ms(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """kombu polls a filesystem queue once a second by default, which held the embedded default
    to one prefetch of tasks a second (20 evaluations of 30 ms took 10 s). The application's
    connection, as a worker opens it, polls every FILESYSTEM_POLL_SECONDS."""
    from service.config import settings
    from workers.app import FILESYSTEM_POLL_SECONDS, make_app

    monkeypatch.setenv("CRANFIELD_BROKER_URL", "filesystem://")
    monkeypatch.setenv("CRANFIELD_BROKER_FOLDER", str(tmp_path / "broker"))
    settings.cache_clear()
    try:
        with make_app().connection_for_read() as conn:
            assert type(conn.transport) is FilesystemTransport
            assert conn.transport.polling_interval == FILESYSTEM_POLL_SECONDS == 0.05
    finally:
        monkeypatch.undo()
        settings.cache_clear()
