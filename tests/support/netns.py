"""Hosts in network namespaces for the partition tests (tests/integration/test_partitions.py).

Each host is a namespace joined to the root namespace by a veth pair on a /30 of its own in
10.231.0.0/16 (a private range this machine does not route). PostgreSQL and Redis stay where
they are (127.0.0.1 in the root namespace); a forwarder (tests/support/forwarder.py) listens
on each link's root-side address and relays to them, so a host's traffic to either crosses
its link. A partition is iptables DROP rules on that link, both ways (this kernel has no
netem): packets vanish silently, as on a real network, and nothing is reset.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tests.support.ports import free_port

REPO = Path(__file__).resolve().parents[2]


def unavailable() -> str | None:
    """Why namespaces cannot be made here (None: they can)."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    for tool in ("ip", "iptables"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (.ci/run installs iptables from Debian's packages)"
    name = f"cfprobe{os.getpid() % 100000}"
    made = subprocess.run(["ip", "netns", "add", name], check=False, capture_output=True, text=True)
    if made.returncode != 0:
        return f"ip netns add failed: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", name], check=False, capture_output=True)
    probe = subprocess.run(["iptables", "-L", "INPUT", "-n"], check=False, capture_output=True, text=True)
    if probe.returncode != 0:
        return f"iptables cannot list INPUT: {probe.stderr.strip()}"
    return None


def _run(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True, text=True)


@dataclass(frozen=True)
class Host:
    name: str
    netns: str
    link: str  # the veth end in the root namespace
    gateway: str  # the root namespace's address on the link (the forwarder's)
    address: str  # the host's own address

    def prefix(self) -> list[str]:
        """The command prefix that runs a program on this host."""
        return ["ip", "netns", "exec", self.netns]


class Lab:
    """Hosts, the forwarder and the cuts; :meth:`close` undoes everything, whatever happened."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.tag = f"{random.randrange(16 ** 4):04x}"
        self.block = random.randrange(0, 250)  # 10.231.<block>.0/24: 64 links of /30
        self.hosts: dict[str, Host] = {}
        self.rules: list[list[str]] = []
        self.forwarder: subprocess.Popen | None = None
        self.pg_port = free_port()
        self.redis_port = free_port()

    def add_host(self, name: str) -> Host:
        i = len(self.hosts)
        host = Host(name, f"cf{self.tag}{name}", f"cf{self.tag}h{i}", f"10.231.{self.block}.{4 * i + 1}",
                    f"10.231.{self.block}.{4 * i + 2}")
        peer = f"cf{self.tag}n{i}"
        _run("ip", "netns", "add", host.netns)
        self.hosts[name] = host
        _run("ip", "link", "add", host.link, "type", "veth", "peer", "name", peer)
        _run("ip", "link", "set", peer, "netns", host.netns)
        _run("ip", "addr", "add", f"{host.gateway}/30", "dev", host.link)
        _run("ip", "link", "set", host.link, "up")
        _run(*host.prefix(), "ip", "addr", "add", f"{host.address}/30", "dev", peer)
        _run(*host.prefix(), "ip", "link", "set", peer, "up")
        _run(*host.prefix(), "ip", "link", "set", "lo", "up")
        return host

    def start_forwarder(self) -> None:
        """Relay each host's PostgreSQL and Redis ports on its link to the services."""
        specs = []
        for host in self.hosts.values():
            specs += [f"{host.gateway}:{self.pg_port}=127.0.0.1:5432", f"{host.gateway}:{self.redis_port}=127.0.0.1:6379"]
        log = open(self.tmp / "forwarder.log", "w")  # noqa: SIM115
        self.forwarder = subprocess.Popen([sys.executable, "-m", "tests.support.forwarder", *specs], cwd=REPO,
                                          env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=log,
                                          stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while "listening" not in (self.tmp / "forwarder.log").read_text():
            if self.forwarder.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the forwarder did not start: " + (self.tmp / "forwarder.log").read_text())
            time.sleep(0.05)

    def database_url(self, host: Host, url: str) -> str:
        """``url`` (the suite's PostgreSQL at 127.0.0.1:5432) as seen from ``host``."""
        assert "@127.0.0.1:5432/" in url, url
        return url.replace("@127.0.0.1:5432/", f"@{host.gateway}:{self.pg_port}/")

    def redis_url(self, host: Host, url: str) -> str:
        assert url.startswith("redis://127.0.0.1:6379/"), url
        return url.replace("127.0.0.1:6379", f"{host.gateway}:{self.redis_port}")

    def _rules(self, host: Host, port: int | None) -> list[list[str]]:
        inbound = ["INPUT", "-i", host.link, "-p", "tcp"] + (["--dport", str(port)] if port else []) + ["-j", "DROP"]
        outbound = ["OUTPUT", "-o", host.link, "-p", "tcp"] + (["--sport", str(port)] if port else []) + ["-j", "DROP"]
        return [inbound, outbound]

    def cut(self, host: Host, port: int | None = None) -> float:
        """Drop every packet (or those of one service ``port``) between ``host`` and the rest,
        silently, both ways; returns the monotonic time of the cut."""
        for rule in self._rules(host, port):
            _run("iptables", "-I", *rule)
            self.rules.append(rule)
        return time.monotonic()

    def heal(self, host: Host, port: int | None = None) -> float:
        for rule in self._rules(host, port):
            _run("iptables", "-D", *rule)
            self.rules.remove(rule)
        return time.monotonic()

    def close(self) -> None:
        for rule in list(self.rules):
            subprocess.run(["iptables", "-D", *rule], check=False, capture_output=True)
        self.rules.clear()
        if self.forwarder is not None and self.forwarder.poll() is None:
            self.forwarder.kill()
            self.forwarder.wait(timeout=30)
        for host in self.hosts.values():
            subprocess.run(["ip", "link", "del", host.link], check=False, capture_output=True)
            subprocess.run(["ip", "netns", "del", host.netns], check=False, capture_output=True)
