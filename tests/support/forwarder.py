"""A TCP forwarder for the partition tests (tests/support/netns.py), run as a process of its own:

    python -m tests.support.forwarder LISTEN_HOST:PORT=TARGET_HOST:PORT [...]

PostgreSQL and Redis listen on 127.0.0.1 only (trust authentication there), which a network
namespace cannot reach; the forwarder, in the root namespace, listens on a veth address and
connects to them from 127.0.0.1, so the hosts' traffic crosses a link that iptables can cut.
A packet dropped on the link is never seen here: the forwarder keeps its side of a silent
connection open, as a real server would until its own keepalives gave up.
"""

from __future__ import annotations

import asyncio
import sys


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        try:
            writer.close()
        except OSError:
            pass


def _handler(host: str, port: int):  # type: ignore[no-untyped-def]
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(host, port)
        except OSError:
            writer.close()
            return
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
    return handle


async def main(specs: list[str]) -> None:
    servers = []
    for spec in specs:
        listen, target = spec.split("=")
        lhost, lport = listen.rsplit(":", 1)
        thost, tport = target.rsplit(":", 1)
        servers.append(await asyncio.start_server(_handler(thost, int(tport)), lhost, int(lport)))
    print("listening", flush=True)
    await asyncio.gather(*(s.serve_forever() for s in servers))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
