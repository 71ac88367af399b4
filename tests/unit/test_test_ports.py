"""The test servers' ports (tests/support/ports.py): a block per xdist worker, below the
ephemeral range that outgoing connections take, skipping a port that is held."""

from __future__ import annotations

import itertools
import socket

import pytest

from tests.support import ports


@pytest.mark.parametrize("worker", ["", "gw0", "gw1", "gw2", "gw5"])
def test_each_worker_has_a_block_of_its_own_below_the_ephemeral_range(worker: str,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
    index = int(worker[2:]) if worker else 0
    port = ports.free_port()
    assert ports.FIRST + index * ports.BLOCK <= port < ports.FIRST + (index + 1) * ports.BLOCK
    assert port < ports._ephemeral_start()
    with socket.socket() as s:  # it is free
        s.bind(("127.0.0.1", port))


def test_a_held_port_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw3")
    first = ports.FIRST + 3 * ports.BLOCK
    monkeypatch.setattr(ports, "_next", itertools.count(0))
    held = ports.free_port()
    with socket.create_server(("127.0.0.1", held)):
        monkeypatch.setattr(ports, "_next", itertools.count(held - first))  # it would come next
        assert ports.free_port() == held + 1
