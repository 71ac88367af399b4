"""Ports for the servers the tests start (`cranfield serve`, a private redis-server).

Asking the kernel for a free port (bind to port 0, close, hand the number to the server) can
fail by chance: between the close and the server's own bind, the port is free for anyone, and
the suite opens thousands of client connections (to PostgreSQL, Redis, the servers), each from
an ephemeral port of the same range. So the ports here come from below the kernel's ephemeral
range, which outgoing connections never take, and each pytest-xdist worker has a block of its
own, which no other worker of the run takes: only a port a server of this same worker still
holds can be busy, and the bind check skips it.
"""

from __future__ import annotations

import itertools
import os
import re
import socket
from pathlib import Path

FIRST = 10_000  # below the ephemeral range (Linux default 32768-60999), above the services' ports
BLOCK = 400  # ports per xdist worker: gw0 10000-10399, gw1 10400-10799, ...
_next = itertools.count()


def _ephemeral_start() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _worker_index() -> int:
    """0 for the serial run (no xdist), N for the xdist worker gwN."""
    match = re.fullmatch(r"gw(\d+)", os.environ.get("PYTEST_XDIST_WORKER", ""))
    return int(match.group(1)) if match else 0


def free_port() -> int:
    """A port on 127.0.0.1 that no other test worker uses and no outgoing connection takes."""
    first = FIRST + _worker_index() * BLOCK
    if first + BLOCK > _ephemeral_start():
        raise RuntimeError(f"worker block {first}-{first + BLOCK - 1} reaches the ephemeral range")
    for _ in range(BLOCK):
        port = first + next(_next) % BLOCK
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:  # held by a server of this worker's (or in TIME_WAIT): the next one
                continue
            return port
    raise RuntimeError(f"no free port in {first}-{first + BLOCK - 1}")
