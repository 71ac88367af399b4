"""Deadline day: leaderboard readers at fixed rates while 30 teams submit, a burst, then
crowds of clients that ignore Retry-After, and the memory of a large upload.

    python benchmarks/bench_deadline.py [--rates 100,200,400] [--seconds 10] [--connections 100]
                                        [--burst 1000] [--clients 100,300,1000] [--overload-seconds 10]
                                        [--rounds 1] [--only all|overload] [--upload-mb 150]
                                        [--api-processes 1] [--json PATH]

The production topology on this machine: PostgreSQL (a fresh database), Redis (a queue of its
own), `cranfield serve --no-worker` (one uvicorn process unless --api-processes), two
`cranfield worker` processes (default concurrency each) and one `cranfield beat`. Everything is
set up through the HTTP API: a collection of 100 teams (50 topics, depth 100, AP official,
the default bootstrap test), 70 runs submitted by the organiser and evaluated first, the board
released and public.

A load generator in a separate process keeps a pool of --connections keep-alive connections
and sends GET /api/collections/{id}/leaderboard open loop (request i leaves at t0 + i/rate
whether or not earlier ones have returned; its latency counts from that moment), with a mix of
callers: anonymous (half), the admin, and 40 participants. Phases:

* rate 100, 200, 400 req/s for --seconds each;
* 200 req/s while the other 30 teams submit one run each at once (each with its participant
  token and an Idempotency-Key; a 503 is retried after its Retry-After). The load lasts at
  least --seconds and until the board is complete; a poller separate from the load measures the
  time from the last submission's 201 to a board of 100 rows with no re-evaluation in progress
  and the stored test covering every run;
* a burst: --burst connections, each sending one request at once; then one request must be
  answered within 1 s (no hang);
* overload (issue 24, item 8): for each number of --clients, that many closed-loop clients that
  ignore Retry-After (each on a keep-alive connection of its own sends its next request the
  moment an answer, a 503 included, arrives) for --overload-seconds; --rounds repeats the
  series. Reported: the served (2xx) rate, the 503 rate and share, 2xx latency, the API's CPU
  seconds per second and the served requests per API CPU second (what the served rate means
  when other work shares the cores). Goal: the served rate at each larger number of clients
  at least 70% of the rate at the smallest, in every round. --only overload skips the phases
  above (the board then has the 70 preloaded runs);
* upload memory (issue 24, item 5): benchmarks/upload_memory.py's upload_memory_multiple(), a
  fresh process submitting a generated run of --upload-mb MB through the API application on
  this database: its peak RSS growth as a multiple of the file (goal <= 3x). If that module is
  missing the report says so.

Reported per phase: requests, p50 / p99 / max latency, 200s, 503s (with Retry-After) and
errors (any other status, a 503 without Retry-After, connection errors, timeouts), then one
PASS/FAIL line per goal. The server's and workers' logs stay in the temporary folder printed
at the start. Server, workers and load generator share this machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
PG = os.environ.get("CRANFIELD_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
REDIS = os.environ.get("CRANFIELD_TEST_REDIS", "redis://127.0.0.1:6379/0")
PRELOADED, SUBMITTERS = 70, 30


# --- the load generator (its own process) -------------------------------------------------

def load_generator(cfg: dict) -> dict:
    """Open loop at cfg["rate"] over cfg["connections"] keep-alive connections, or (rate 0) a
    burst: cfg["connections"] requests at once, each on a connection of its own.

    Each connection is an httpx client of its own (a pool of one), handed out from a FIFO of
    idle ones: one shared httpx pool of 100 connections costs O(connections) CPU per request
    (httpcore checks every idle connection), which alone put p50 in seconds here."""
    import ssl

    import httpx

    _raise_nofile(cfg["connections"] + 256)
    url, mix = cfg["url"], [{"Authorization": f"Bearer {t}"} if t else {} for t in cfg["tokens"]]
    burst = cfg["rate"] == 0
    timeout = cfg["timeout"]

    async def run() -> dict:
        latencies: list[float] = []
        status: Counter[int] = Counter()
        errors: Counter[str] = Counter()
        lag = 0.0
        tls = ssl.create_default_context()  # unused (plain HTTP), but made once, not per client
        limits = httpx.Limits(max_connections=1, max_keepalive_connections=1, keepalive_expiry=None)
        clients = [httpx.AsyncClient(timeout=timeout, limits=limits, verify=tls) for _ in range(cfg["connections"])]
        idle: asyncio.Queue[httpx.AsyncClient] = asyncio.Queue()

        async def one(i: int, start: float, client: httpx.AsyncClient | None = None) -> None:
            # Answered within `timeout` of the moment it was due, or counted as a timeout: while
            # waiting for a free connection (the server is slower than the rate) or once sent.
            sent = False
            try:
                async with asyncio.timeout(timeout):
                    c = client or await idle.get()
                    sent = True
                    try:
                        r = await c.get(url, headers=mix[i % len(mix)])
                    finally:
                        if client is None:
                            idle.put_nowait(c)
                status[r.status_code] += 1
                if r.status_code == 503 and "retry-after" not in r.headers:
                    errors["503 without Retry-After"] += 1
                elif r.status_code not in (200, 503):
                    errors[f"HTTP {r.status_code}"] += 1
            except TimeoutError:
                errors["timeout, sent" if sent else "timeout, all connections busy"] += 1
            except httpx.HTTPError as exc:
                errors[type(exc).__name__] += 1
            latencies.append(time.perf_counter() - start)

        try:
            if not burst:  # open every connection first (the probes are never refused)
                live = url.split("/api/", 1)[0] + "/health/live"
                await asyncio.gather(*(c.get(live) for c in clients))
                for c in clients:
                    idle.put_nowait(c)
            print("ready", flush=True)
            tasks = []
            t0 = time.perf_counter()
            if burst:
                tasks = [asyncio.create_task(one(i, t0, c)) for i, c in enumerate(clients)]
            else:
                i = 0
                while True:
                    due = t0 + i / cfg["rate"]
                    if due - t0 >= cfg["max_seconds"] or (
                            due - t0 >= cfg["seconds"] and (not cfg["stop_file"] or os.path.exists(cfg["stop_file"]))):
                        break
                    delay = due - time.perf_counter()
                    if delay > 0:
                        await asyncio.sleep(delay)
                    lag = max(lag, time.perf_counter() - due)
                    tasks.append(asyncio.create_task(one(i, due)))
                    i += 1
            sent = time.perf_counter() - t0
            _, pending = await asyncio.wait(tasks, timeout=timeout + 5)
            for task in pending:  # cannot happen (each request has its own timeout): a hang of ours
                task.cancel()
                errors["unanswered"] += 1
            elapsed = time.perf_counter() - t0
        finally:
            await asyncio.gather(*(c.aclose() for c in clients), return_exceptions=True)
        latencies.sort()
        def pick(q: float) -> float | None:
            return latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000 if latencies else None

        return {"requests": len(tasks), "seconds": round(sent, 2), "all_answered_s": round(elapsed, 3),
                "p50_ms": pick(0.5), "p99_ms": pick(0.99), "max_ms": latencies[-1] * 1000 if latencies else None,
                "ok": status[200], "s503": status[503] - errors["503 without Retry-After"],
                "errors": sum(errors.values()), "error_kinds": dict(errors),
                "status": {str(k): v for k, v in status.items()}, "max_send_lag_ms": round(lag * 1000, 1)}

    return asyncio.run(run())


def closed_loop(cfg: dict) -> dict:
    """cfg["clients"] clients that ignore Retry-After: each holds a keep-alive connection of its
    own and sends its next request the moment the answer to its last one has arrived, a 503
    included, for cfg["seconds"].

    The client is a bare asyncio protocol over a prepared request (a status line and
    Content-Length parsed, nothing else; uvloop when installed), a few microseconds a request:
    an HTTP library in the generator would cost more CPU per answer than the server spends on a
    refusal, and the generator, not the server, would then set the figures on a shared machine.
    Client k sends as caller k of cfg["tokens"] (the readers' mix)."""
    import urllib.parse

    try:
        import uvloop
    except ImportError:  # pragma: no cover
        uvloop = None
    _raise_nofile(cfg["clients"] + 256)
    u = urllib.parse.urlsplit(cfg["url"])
    requests = [(f"GET {u.path} HTTP/1.1\r\nHost: {u.netloc}\r\n"
                 + (f"Authorization: Bearer {t}\r\n" if t else "") + "\r\n").encode() for t in cfg["tokens"]]
    timeout = cfg["timeout"]
    status: Counter[int] = Counter()
    errors: Counter[str] = Counter()
    latencies: list[float] = []  # of the 2xx answers, in the measured window
    window = [0.0, float("inf")]  # answers counted between these two moments
    clients: list[Client] = []

    class Client(asyncio.Protocol):
        def __init__(self, request: bytes) -> None:
            self.request = request
            self.transport: asyncio.Transport | None = None
            self.sent = 0.0
            self.buf = bytearray()
            self.need = -1
            self.code = 0
            self.retry_after = self.close_after = False
            self.stopped = self.timed_out = False

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            self.transport = transport  # type: ignore[assignment]

        def send(self) -> None:
            self.buf.clear()
            self.need = -1
            self.sent = time.perf_counter()
            self.transport.write(self.request)

        def data_received(self, data: bytes) -> None:
            buf = self.buf
            buf += data
            if self.need < 0:
                end = buf.find(b"\r\n\r\n")
                if end < 0:
                    return
                head = bytes(buf[:end + 2]).lower()
                self.code = int(head[9:12])
                at = head.find(b"\r\ncontent-length:")
                length = int(head[at + 17:head.index(b"\r\n", at + 2)]) if at >= 0 else 0
                if at < 0 and b"\r\ntransfer-encoding:" in head:
                    errors["chunked answer (not read)"] += 1
                    self.transport.close()
                    return
                self.retry_after = b"\r\nretry-after:" in head
                self.close_after = b"\r\nconnection: close" in head
                self.need = end + 4 + length
            if len(buf) < self.need:
                return
            now = time.perf_counter()
            if window[0] <= now <= window[1]:
                status[self.code] += 1
                if 200 <= self.code < 300:
                    latencies.append(now - self.sent)
                elif self.code == 503 and not self.retry_after:
                    errors["503 without Retry-After"] += 1
                elif self.code != 503:
                    errors[f"HTTP {self.code}"] += 1
            if self.stopped or now > window[1]:
                self.stopped = True
                self.transport.close()
            elif self.close_after:
                self.transport.close()  # connection_lost opens another
            else:
                self.send()

        def connection_lost(self, exc: Exception | None) -> None:
            if not self.stopped:
                if not self.timed_out and (self.need < 0 or len(self.buf) < self.need):
                    errors[f"connection lost ({type(exc).__name__ if exc else 'closed by the server'})"] += 1
                asyncio.get_running_loop().create_task(reopen(self))

    async def open_(c: Client) -> None:
        loop = asyncio.get_running_loop()
        try:
            await loop.create_connection(lambda: c, u.hostname, u.port)
        except OSError as exc:
            errors[f"connect: {type(exc).__name__}"] += 1
            await asyncio.sleep(0.01)
            loop.create_task(reopen(c))

    async def reopen(old: Client) -> None:
        c = Client(old.request)
        clients[clients.index(old)] = c
        await open_(c)
        if c.transport is not None and not c.stopped:
            c.send()

    async def watchdog() -> None:  # a request unanswered for `timeout` is a hang: counted, and its connection dropped
        while True:
            await asyncio.sleep(0.25)
            now = time.perf_counter()
            for c in clients:
                if c.transport is not None and not c.stopped and c.sent and now - c.sent > timeout:
                    errors["timeout"] += 1
                    c.sent, c.timed_out = 0.0, True  # its connection is dropped and opened again
                    c.transport.abort()

    async def run() -> dict:
        clients.extend(Client(requests[k % len(requests)]) for k in range(cfg["clients"]))
        await asyncio.gather(*(open_(c) for c in clients))  # every connection open before the first request
        print("ready", flush=True)
        dog = asyncio.get_running_loop().create_task(watchdog())
        cpu0 = resource.getrusage(resource.RUSAGE_SELF)
        window[0] = t0 = time.perf_counter()
        window[1] = t0 + cfg["seconds"]
        for c in clients:
            if c.transport is not None:
                c.send()
        await asyncio.sleep(cfg["seconds"])
        await asyncio.sleep(min(timeout, 2.0))  # the last answers arrive (not counted) and connections close
        cpu1 = resource.getrusage(resource.RUSAGE_SELF)
        dog.cancel()
        for c in clients:
            c.stopped = True
            if c.transport is not None:
                c.transport.abort()
        seconds = window[1] - t0
        answered = sum(status.values())
        ok = sum(v for k, v in status.items() if 200 <= k < 300)
        refused = status[503] - errors["503 without Retry-After"]
        latencies.sort()

        def pick(q: float) -> float | None:
            return latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000 if latencies else None

        return {"clients": cfg["clients"], "seconds": round(seconds, 2), "answers": answered, "ok": ok,
                "s503": refused, "served_per_s": round(ok / seconds, 1), "s503_per_s": round(refused / seconds, 1),
                "s503_share": round(refused / answered, 4) if answered else None,
                "p50_ms": pick(0.5), "p99_ms": pick(0.99), "errors": sum(errors.values()),
                "error_kinds": dict(errors), "status": {str(k): v for k, v in status.items()},
                "generator_cpu_per_s": round((cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime)
                                             / (time.perf_counter() - t0), 2)}

    if uvloop is not None:
        return uvloop.run(run())
    return asyncio.run(run())


def _raise_nofile(need: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(need, hard) if hard != resource.RLIM_INFINITY else need, hard))


# --- the benchmark ------------------------------------------------------------------------

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rates", default="100,200,400", help="open-loop rates, req/s")
    ap.add_argument("--seconds", type=float, default=10, help="length of each rate phase")
    ap.add_argument("--connections", type=int, default=100, help="keep-alive connections of the readers")
    ap.add_argument("--submit-rate", type=float, default=200, help="reader rate while the 30 teams submit")
    ap.add_argument("--burst", type=int, default=1000, help="connections of the burst (0: no burst)")
    ap.add_argument("--api-processes", type=int, default=1, help="cranfield serve --processes")
    ap.add_argument("--board-timeout", type=float, default=240, help="longest wait for a complete board, s")
    ap.add_argument("--readers", choices=("mixed", "anonymous"), default="mixed",
                    help="mixed: half anonymous, the admin, 40 participants; anonymous: no token at all")
    ap.add_argument("--clients", default="100,300,1000",
                    help="overload: closed-loop clients that ignore Retry-After, one phase per number ('' for none)")
    ap.add_argument("--overload-seconds", type=float, default=10, help="length of each overload phase")
    ap.add_argument("--rounds", type=int, default=1, help="overload: run the --clients phases this many times")
    ap.add_argument("--only", choices=("all", "overload"), default="all",
                    help="overload: the set-up, then the overload phases only")
    ap.add_argument("--upload-mb", type=float, default=150,
                    help="upload memory: a run of this many MB through the API (benchmarks/upload_memory.py; 0: none)")
    ap.add_argument("--json", metavar="PATH", help="also write the figures here")
    ap.add_argument("--generator", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.generator:  # the load generator's own process: configuration on stdin
        cfg = json.loads(sys.stdin.readline())
        print(json.dumps(closed_loop(cfg) if "clients" in cfg else load_generator(cfg)), flush=True)
        return
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a kill runs the clean-up too
    clients = [int(n) for n in args.clients.split(",") if n.strip()]
    _raise_nofile(max([args.burst, *clients]) + 256)

    import httpx
    from sqlalchemy import create_engine

    from service.sample import CollectionSpec, generate

    name = f"cranfield_deadline_{uuid.uuid4().hex[:8]}"
    queue = f"deadline-{name}"
    admin_engine = create_engine(PG, isolation_level="AUTOCOMMIT")
    url = PG.rsplit("/", 1)[0] + f"/{name}"
    tmp = Path(tempfile.mkdtemp(prefix="bench_deadline_"))
    env = {**os.environ, "CRANFIELD_DATABASE_URL": url, "CRANFIELD_BROKER_URL": REDIS, "CRANFIELD_QUEUE": queue,
           "PYTHONPATH": str(REPO)}
    env.pop("CRANFIELD_BROKER_FOLDER", None)
    cli = [sys.executable, "-m", "service.cli"]
    procs: list[subprocess.Popen] = []

    def start(label: str, *argv: str) -> subprocess.Popen:
        p = subprocess.Popen([*cli, *argv], env=env, cwd=tmp, start_new_session=True,
                             stdout=open(tmp / f"{label}.log", "w"), stderr=subprocess.STDOUT)  # noqa: SIM115
        procs.append(p)
        return p

    results: dict = {"phases": [], "overload": [], "machine": {"cpus": os.cpu_count(), "load_average": os.getloadavg()[0]},
                     "api_processes": args.api_processes, "commit": _commit()}
    try:
        with admin_engine.connect() as conn:
            conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
        print(f"logs: {tmp}", flush=True)
        qrels, run_texts = generate(CollectionSpec(topics=50, runs=PRELOADED + SUBMITTERS, depth=100,
                                                   docs_per_topic=400, judged_per_topic=150, missing_topic_rate=0.0))
        texts = list(run_texts.values())
        subprocess.run([*cli, "db", "upgrade"], env=env, cwd=tmp, check=True, capture_output=True)
        admin = subprocess.run([*cli, "token", "create", "--role", "admin"], env=env, cwd=tmp, check=True,
                               capture_output=True, text=True).stdout.strip()
        workers = [start("worker-1", "worker", "--loglevel", "INFO"), start("worker-2", "worker", "--loglevel", "INFO")]
        start("beat", "beat", "--loglevel", "INFO")
        port = _free_port()
        server = start("serve", "serve", "--no-worker", "--port", str(port), "--processes", str(args.api_processes))
        roles = {"api": server, "workers": workers}
        base = f"http://127.0.0.1:{port}"
        _wait(lambda: _live(base) or server.poll() is not None, 60, "the API to start")
        if server.poll() is not None:
            raise RuntimeError("cranfield serve exited: " + (tmp / "serve.log").read_text()[-3000:])

        # Set up through the API: 100 teams with participant tokens, qrels, 70 runs, released board.
        teams = [f"team{i:03d}" for i in range(PRELOADED + SUBMITTERS)]
        adm = {"Authorization": f"Bearer {admin}"}
        with httpx.Client(base_url=base, timeout=120, headers=adm) as c:
            cid = _ok(c.post("/api/collections", json={"name": "deadline", "official_metric": "AP"}))["id"]
            tokens = {}
            for team in teams:
                _ok(c.post("/api/teams", json={"name": team}))
                _ok(c.post(f"/api/collections/{cid}/teams", json={"team": team}))
                tokens[team] = _ok(c.post("/api/tokens", json={"role": "participant", "team": team}))["token"]
            _ok(c.post(f"/api/collections/{cid}/qrels", content=qrels))
            _ok(c.patch(f"/api/collections/{cid}", json={"leaderboard_released": True, "visibility": "public"}))
        board = f"{base}/api/collections/{cid}/leaderboard"

        def preload(i: int) -> None:
            with httpx.Client(timeout=120, headers=adm) as own:
                _ok(own.post(f"{base}/api/collections/{cid}/runs", params={"team": teams[i]}, content=texts[i]))

        t = time.perf_counter()
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(preload, range(PRELOADED)))
        done = _wait_board(board, adm, PRELOADED, args.board_timeout)
        if done["complete_after_s"] is None:
            raise TimeoutError(f"the {PRELOADED} preloaded runs were not evaluated within {args.board_timeout:.0f} s")
        print(f"set-up: {PRELOADED} runs submitted by the organiser and evaluated in {time.perf_counter() - t:.0f} s; "
              f"board of {done['rows']} runs", flush=True)

        # Readers: half anonymous, a tenth the admin, 40 participants (20 preloaded teams, 20 submitters).
        rng = random.Random(7)
        readers = [""] * 50 + [admin] * 10 + [tokens[t] for t in teams[:20] + teams[PRELOADED:PRELOADED + 20]]
        rng.shuffle(readers)
        if args.readers == "anonymous":
            readers = [""]
        gen = {"url": board, "tokens": readers, "connections": args.connections, "timeout": 10.0, "stop_file": None}

        def generator(cfg: dict) -> subprocess.Popen:
            """The load generator's process, given ``cfg``, once it says it is ready."""
            p = subprocess.Popen([sys.executable, __file__, "--generator"], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True, start_new_session=True)
            procs.append(p)
            p.stdin.write(json.dumps(cfg) + "\n")
            p.stdin.flush()
            if p.stdout.readline().strip() != "ready":
                raise RuntimeError("the load generator did not start")
            return p

        def phase(label: str, rate: float, connections: int, during: Callable[[], dict] | None = None,
                  timeout: float = 10.0) -> dict:
            cfg = {**gen, "rate": rate, "connections": connections, "seconds": args.seconds,
                   "max_seconds": args.seconds, "timeout": timeout}
            extra: dict = {}
            if during is not None:
                cfg["stop_file"] = str(tmp / f"stop-{uuid.uuid4().hex[:6]}")
                cfg["max_seconds"] = args.seconds + args.board_timeout
            cpu0, t0 = {k: _cpu_seconds(v) for k, v in roles.items()}, time.perf_counter()
            p = generator(cfg)
            try:
                if during is not None:
                    try:
                        extra = during()
                    finally:
                        Path(cfg["stop_file"]).touch()
                out = p.stdout.readline()
                p.wait(timeout=60)
            finally:
                procs.remove(p)
                if p.poll() is None:
                    os.killpg(p.pid, signal.SIGKILL)
            wall = time.perf_counter() - t0
            cpu = {k: round((_cpu_seconds(v) - cpu0[k]) / wall, 2) for k, v in roles.items()}
            res = {"phase": label, "rate": rate, "connections": connections, **json.loads(out), **extra,
                   "cpu_per_s": cpu}
            results["phases"].append(res)
            print(f"  {label}: {res['requests']} requests, p50 {_ms(res['p50_ms'])} p99 {_ms(res['p99_ms'])} ms, "
                  f"200s {res['ok']}, 503s {res['s503']}, errors {res['errors']} {res['error_kinds'] or ''}"
                  f" (generator lag max {res['max_send_lag_ms']} ms; CPU s/s: API {cpu['api']}, "
                  f"workers {cpu['workers']})", flush=True)
            return res

        def submit_all() -> dict:
            time.sleep(1.0)  # readers first
            barrier = threading.Barrier(SUBMITTERS)
            answers: list[tuple[int, float, int]] = []  # (status, when, attempts)
            refused: Counter[int] = Counter()

            def submit(i: int) -> None:
                h = {"Authorization": f"Bearer {tokens[teams[i]]}", "Idempotency-Key": f"deadline-{i}"}
                with httpx.Client(timeout=120) as own:
                    barrier.wait()
                    for attempt in range(1, 11):
                        r = own.post(f"{base}/api/collections/{cid}/runs", content=texts[i], headers=h)
                        if r.status_code != 503:
                            break
                        refused[503] += 1
                        time.sleep(float(r.headers.get("retry-after", 1)))
                    answers.append((r.status_code, time.perf_counter(), attempt))

            t_fire = time.perf_counter()
            with ThreadPoolExecutor(SUBMITTERS) as pool:
                list(pool.map(submit, range(PRELOADED, PRELOADED + SUBMITTERS)))
            codes = Counter(code for code, _, _ in answers)
            last = max((when for code, when, _ in answers if code == 201), default=time.perf_counter())
            full = _wait_board(board, adm, PRELOADED + SUBMITTERS, args.board_timeout, since=last)
            return {"submissions": dict(codes), "submission_503s": refused[503],
                    "submissions_answered_s": round(last - t_fire, 2), **full}

        def overload(n: int) -> dict:
            """``n`` closed-loop clients that ignore Retry-After, for --overload-seconds."""
            cfg = {"url": board, "tokens": readers, "clients": n, "seconds": args.overload_seconds, "timeout": 10.0}
            p = generator(cfg)  # ready: every connection is open
            try:
                cpu0, t0 = {k: _cpu_seconds(v) for k, v in roles.items()}, time.perf_counter()
                out = p.stdout.readline()
                wall = time.perf_counter() - t0
                p.wait(timeout=60)
            finally:
                procs.remove(p)
                if p.poll() is None:
                    os.killpg(p.pid, signal.SIGKILL)
            res = {**json.loads(out), "cpu_per_s": {k: round((_cpu_seconds(v) - cpu0[k]) / wall, 2)
                                                     for k, v in roles.items()}}
            # Served per CPU second of the API: what the figures mean when other work takes the cores.
            res["served_per_api_cpu_s"] = round(res["served_per_s"] / max(res["cpu_per_s"]["api"], 0.01))
            results["overload"].append(res)
            print(f"  {n} clients ignoring Retry-After: {res['served_per_s']:.0f} served/s, "
                  f"{res['s503_per_s']:.0f} 503s/s ({_pct(res['s503_share'])} of {res['answers']} answers), "
                  f"2xx p50 {_ms(res['p50_ms'])} p99 {_ms(res['p99_ms'])} ms, errors {res['errors']} "
                  f"{res['error_kinds'] or ''}(CPU s/s: API {res['cpu_per_s']['api']}, workers "
                  f"{res['cpu_per_s']['workers']}, generator {res['generator_cpu_per_s']})", flush=True)
            return res

        print(f"board of {PRELOADED} runs -> {PRELOADED + SUBMITTERS}; cranfield serve --processes "
              f"{args.api_processes}, 2 workers, beat; {args.connections} reader connections, open loop from a "
              f"second process; {os.cpu_count()} CPUs", flush=True)
        sub = None
        if args.only == "all":
            for rate in [float(r) for r in args.rates.split(",")]:
                phase(f"{rate:.0f} req/s", rate, args.connections)
            sub = phase(f"{args.submit_rate:.0f} req/s + {SUBMITTERS} submissions", args.submit_rate,
                        args.connections, during=submit_all)
            if args.burst:
                phase(f"burst of {args.burst}", 0, args.burst, timeout=30.0)
                t = time.perf_counter()
                try:
                    r = httpx.get(board, timeout=1.0)
                    after = {"status": r.status_code, "ms": round((time.perf_counter() - t) * 1000, 1)}
                except httpx.HTTPError as exc:
                    after = {"status": type(exc).__name__, "ms": None}
                results["after_burst"] = after
        if clients:
            print(f"overload: closed-loop clients that ignore Retry-After (the next request the moment an answer, "
                  f"a 503 included, arrives), {args.overload_seconds:g} s each, {args.rounds} round(s)", flush=True)
            for _ in range(args.rounds):
                for n in clients:
                    overload(n)

        if args.upload_mb > 0:  # last: a fresh process of its own, on this database, with the load over
            print(f"upload memory: a {args.upload_mb:g} MB run submitted through the API application", flush=True)
            results["upload_memory"] = _upload_memory(args.upload_mb, url)

        # Report.
        if results["phases"]:
            print()
            print("| phase | rate (req/s) | connections | requests | p50 ms | p99 ms | max ms | 200s | 503s | errors |")
            print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
            for r in results["phases"]:
                print(f"| {r['phase']} | {r['rate'] or 'at once'} | {r['connections']} | {r['requests']} | "
                      f"{_ms(r['p50_ms'])} | {_ms(r['p99_ms'])} | {_ms(r['max_ms'])} | {r['ok']} | {r['s503']} | "
                      f"{r['errors']} |")
            print()
            for r in results["phases"]:
                kinds = ", ".join(f"{k}: {v}" for k, v in r["error_kinds"].items())
                print(f"{r['phase']}: CPU s/s API {r['cpu_per_s']['api']}, workers {r['cpu_per_s']['workers']}; "
                      f"generator lag max {r['max_send_lag_ms']} ms" + (f"; errors: {kinds}" if kinds else ""))
        if results["overload"]:
            print()
            print("| clients ignoring Retry-After | served (2xx) /s | 503 /s | 503 share | 2xx p50 ms | 2xx p99 ms "
                  "| errors | CPU s/s API | served per API CPU s | CPU s/s generator |")
            print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
            for r in results["overload"]:
                print(f"| {r['clients']} | {r['served_per_s']:.0f} | {r['s503_per_s']:.0f} | {_pct(r['s503_share'])} | "
                      f"{_ms(r['p50_ms'])} | {_ms(r['p99_ms'])} | {r['errors']} | {r['cpu_per_s']['api']} | "
                      f"{r['served_per_api_cpu_s']} | {r['generator_cpu_per_s']} |")
        print()
        print(f"load average: {results['machine']['load_average']:.2f} at start, {os.getloadavg()[0]:.2f} now "
              f"({os.cpu_count()} CPUs; anything else running shares them)")
        goals: dict[str, bool] = {}
        if sub is not None:
            print(f"submissions: {sub['submissions']} ({sub['submission_503s']} answered 503 and retried), all "
                  f"answered {sub['submissions_answered_s']} s after they were sent")
            print(f"last submission's 201 -> board of {PRELOADED + SUBMITTERS} rows: {_s(sub['rows_after_s'])}; "
                  f"-> complete board (no re-evaluation in progress, the test covering every run): "
                  f"{_s(sub['complete_after_s'])}")
            if args.burst:
                b = results["phases"][-1]
                print(f"burst: all {args.burst} answered after {b['all_answered_s']} s; then one request: "
                      f"{results['after_burst']['status']} in {results['after_burst']['ms']} ms")
            quiet = next((r for r in results["phases"] if r["rate"] == 200 and "submissions" not in r), None)
            if quiet is not None:
                goals["p99 < 50 ms at 200 req/s, 100 connections"] = quiet["p99_ms"] < 50
            goals.update({
                "p99 < 50 ms at 200 req/s during the submissions (informative)": sub["p99_ms"] < 50,
                "0 errors other than 503s, every phase": all(r["errors"] == 0 for r in results["phases"])
                and all(code in (201,) for code in map(int, sub["submissions"])),
                "no hang (every request sent answered within 10 s, 30 s in the burst; then one within 1 s)":
                    not any(k in ("timeout, sent", "unanswered") or k.endswith("Timeout")
                            for r in results["phases"] for k in r["error_kinds"])
                    and (not args.burst or (results["after_burst"]["status"] == 200
                                            and results["after_burst"]["ms"] < 1000)),
                "the board complete after the submissions": sub["complete_after_s"] is not None,
            })
        if results["overload"]:
            goals.update(_overload_goals(results["overload"]))
        if "upload_memory" in results:
            mem = results["upload_memory"]
            if "multiple" in mem:
                print(f"upload memory: a {mem['file_bytes'] / 1e6:.0f} MB run answered {mem['status']} in "
                      f"{mem['seconds']:.1f} s; the API process's peak RSS grew {mem['multiple']:.2f}x the file, "
                      f"{mem['after_multiple']:.2f}x kept after it (benchmarks/upload_memory.py)")
                goals[f"upload memory multiple <= {mem.get('goal', 3):g}x ({mem['multiple']:.2f}x)"] = (
                    mem["multiple"] <= mem.get("goal", 3) and mem["status"] < 300)
            else:
                print(f"upload memory: not measured: {mem['missing']}")
        print()
        for goal, ok in goals.items():
            print(f"{'PASS' if ok else 'FAIL'}  {goal}")
        results["goals"] = goals
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
        print(f"\nlogs: {tmp}")
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not leave processes behind
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        for p in procs:  # a worker's children are in its group: make sure none is left
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        _drop_queue(queue)
        admin_engine.dispose()  # a fresh connection: PostgreSQL may have restarted meanwhile
        for attempt in range(5):
            try:
                with admin_engine.connect() as conn:
                    conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
                break
            except Exception as exc:  # noqa: BLE001
                if attempt == 4:
                    print(f"could not drop database {name}: {exc}", file=sys.stderr)
                time.sleep(2)
        admin_engine.dispose()


def _wait_board(board: str, headers: dict, n: int, timeout: float, since: float | None = None) -> dict:
    """Poll the board (a client of its own, every 0.1 s) until it has n rows, no re-evaluation
    in progress and a stored test covering every run; times are counted from ``since``."""
    import httpx

    since = time.perf_counter() if since is None else since
    rows_at = None
    with httpx.Client(timeout=10, headers=headers) as c:
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            try:
                r = c.get(board)
            except httpx.HTTPError:
                r = None
            if r is not None and r.status_code == 200:
                doc = r.json()
                rows = doc["rows"]
                if len(rows) >= n and rows_at is None:
                    rows_at = time.perf_counter()
                # a run the stored test covers has its group letters
                if (len(rows) >= n and not doc["reevaluation_in_progress"] and doc["significance"] is not None
                        and all(row.get("groups") for row in rows)):
                    now = time.perf_counter()
                    return {"rows": len(rows), "rows_after_s": round(rows_at - since, 2),
                            "complete_after_s": round(now - since, 2)}
            time.sleep(0.1)
    if rows_at is not None:
        return {"rows": n, "rows_after_s": round(rows_at - since, 2), "complete_after_s": None}
    raise TimeoutError(f"no complete board of {n} runs within {timeout:.0f} s")


def _cpu_seconds(procs: subprocess.Popen | list[subprocess.Popen]) -> float:
    """User + system CPU seconds of the live processes in the process groups of ``procs``
    (each started in a session of its own), from /proc."""
    groups = {p.pid for p in (procs if isinstance(procs, list) else [procs])}
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) in groups:  # pgrp
            total += sum(int(f) for f in fields[11:15])  # utime, stime and its reaped children's
    return total / os.sysconf("SC_CLK_TCK")


def _ok(r) -> dict:  # noqa: ANN001
    if r.status_code >= 300:
        raise RuntimeError(f"{r.request.method} {r.request.url.path}: {r.status_code} {r.text[:500]}")
    return r.json() if r.content else {}


def _live(base: str) -> bool:
    import httpx

    try:
        return httpx.get(f"{base}/health/live", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _wait(cond, timeout: float, what: str) -> None:  # noqa: ANN001
    deadline = time.time() + timeout
    while not cond():
        if time.time() > deadline:
            raise TimeoutError(f"waited {timeout:.0f} s for {what}")
        time.sleep(0.2)


def _drop_queue(queue: str) -> None:
    """Remove the benchmark's Redis queue and its bindings (leftover messages, if any)."""
    try:
        import redis

        r = redis.Redis.from_url(REDIS, socket_connect_timeout=3)
        for key in r.scan_iter(match=f"*{queue}*"):
            r.delete(key)
        for key in r.scan_iter(match="_kombu.binding.*"):
            for member in r.smembers(key):
                if queue.encode() in member:
                    r.srem(key, member)
    except Exception:  # noqa: BLE001
        pass


def _commit() -> str:
    try:
        return subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True).stdout.strip()
    except OSError:
        return "?"


def _upload_memory(size_mb: float, database_url: str) -> dict:
    """benchmarks/upload_memory.py's ``upload_memory_multiple`` (a fresh process submitting a
    generated run of ``size_mb`` MB through the API application, on ``database_url``), or
    ``{"missing": why}`` when that module or its function is not there or the measure fails."""
    import importlib.util

    path = Path(__file__).with_name("upload_memory.py")
    if not path.exists():
        return {"missing": "benchmarks/upload_memory.py is missing"}
    spec = importlib.util.spec_from_file_location("upload_memory", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
        measure = getattr(module, "upload_memory_multiple", None)
        if measure is None:
            return {"missing": "benchmarks/upload_memory.py has no upload_memory_multiple()"}
        return measure(size_mb, database_url=database_url)
    except Exception as exc:  # noqa: BLE001 (the other figures are still worth printing)
        return {"missing": f"benchmarks/upload_memory.py failed: {type(exc).__name__}: {str(exc)[-500:]}"}


def _overload_goals(runs: list[dict]) -> dict[str, bool]:
    """Issue 24, item 8: the served rate at each larger number of clients stays at 70% or more of
    the served rate at the smallest (each round against its own), and no answer is other than a
    2xx or a 503 with Retry-After, none hangs."""
    base = min(r["clients"] for r in runs)
    rounds: list[list[dict]] = []
    for r in runs:
        if r["clients"] == base or not rounds:
            rounds.append([])
        rounds[-1].append(r)
    goals = {}
    for n in sorted({r["clients"] for r in runs} - {base}):
        ratios = [next(r for r in rnd if r["clients"] == n)["served_per_s"] / rnd[0]["served_per_s"]
                  for rnd in rounds if rnd[0]["clients"] == base and rnd[0]["served_per_s"]
                  and any(r["clients"] == n for r in rnd)]
        shown = ", ".join(f"{x:.0%}" for x in ratios)
        goals[f"served rate at {n} clients >= 70% of the rate at {base} ({shown})"] = bool(ratios) and min(ratios) >= 0.7
    goals["overload: every answer a 2xx or a 503 with Retry-After, none unanswered"] = all(
        r["errors"] == 0 for r in runs)
    return goals


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.1%}"


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}"


def _s(v: float | None) -> str:
    return "not within the timeout" if v is None else f"{v:.1f} s"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    main()
