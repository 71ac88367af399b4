"""How much memory an upload takes: the peak RSS growth of a fresh process per byte of the file.

    python benchmarks/upload_memory.py [--size-mb 150] [--mode api|parse|preview] [--database-url URL]
                                       [--allocator serve|default] [--path RUN] [--json PATH]
                                       [--headroom X] [--ballast Y]

A run of ``--size-mb`` megabytes (TREC format, ~40 bytes a line, depth 1000, one tag) is
generated in a temporary folder (deterministic from ``--seed``), then a fresh Python process
(a subprocess, so that nothing earlier is in its heap):

* ``api`` (default): builds the API application (``service.api.app.create_app``) on a database
  (a new SQLite file unless ``--database-url``), creates an organiser's collection with the
  run's topics, then submits the run as one HTTP request through Litestar's TestClient
  (``POST /api/collections/{id}/runs?team=...``): the body read, the idempotency digest,
  the parse, the run checks, the compressed copy and the database write, as the API process
  of ``cranfield serve`` does them;
* ``parse``: only ``service.formats.readers.parse_run`` of the bytes, as a submission parses
  them (``keep_ranks=True``);
* ``preview``: a qrels of ``--size-mb`` and a slightly different version of it are generated
  (:func:`write_qrels_pair`); the first is stored as the current version (an API upload,
  before the baseline), the second sent to ``POST .../qrels/preview`` (the first 1000 changes
  listed, every one counted). With ``--path``, that file is previewed against ``PATH.base``.
  Measured: a 75 MB qrels 26.7x before the comparison was made in arrays, 2.88x after.

The child sends a one-line run first (the first request's one-time costs: threads, caches),
reads the file into memory (the client's copy, in ``api`` mode, or the request body, in
``parse`` mode), collects garbage, resets the kernel's peak-RSS mark (``/proc/self/clear_refs``)
and notes its RSS; then it uploads. Reported: ``multiple`` = (peak RSS - RSS before) / file
size, and ``after_multiple`` = (RSS once the upload has returned - RSS before) / file size,
what the process keeps. In ``api`` mode the server's copy of the body is part of the growth;
in ``parse`` mode the body is already in the RSS before, so ``multiple`` there is the reader's
own growth (add 1 for the body), and nothing gives memory back (the service does, not the
reader). ``allocator`` ``serve`` sets glibc up as ``cranfield serve`` does
(``service.runtime.tune_allocator()``, which every ``cranfield`` command applies, and
``one_heap()``, which ``service.asgi`` applies); ``default`` leaves glibc's defaults.
``--path`` uploads an existing run file instead (its topics are registered first).

Under memory pressure (``tests/integration/test_upload_memory.py``): ``--headroom X`` caps the
child's address space at what it uses once set up plus X times the file, ``--ballast Y`` holds
Y times the file during the upload and then sends the file again; the answers' status, message
and ``Retry-After`` are reported.

The goal (issue 24) is a multiple of at most 3 in ``api`` mode at 150 MB (measured 2.35, and
0.31 kept; 11.1 and 5.8 before).

``--served multiples,bombs,blank`` (issue 34) measures a real ``cranfield serve --no-worker``
process instead (a new SQLite database in a temporary folder; :class:`Served`), its RSS, peak
(``VmHWM``, reset through ``/proc/PID/clear_refs``) and CPU read from ``/proc/PID`` as an
attacker sees them: ``multiples``, runs of ``--served-sizes`` MB sent plain and gzipped and a
qrels preview of ``--qrels-mb`` MB plain and gzipped, a fresh server each, the peak growth over
the idle server per byte of the uncompressed file and the peak RSS itself per byte;
``bombs``, four senders of a 1 MB gzip of 1 GiB of newlines for 15 s, the RSS before, at the
peak and 60 s after; ``blank``, the server CPU of a 260 KB gzip of 255 MiB of blank lines and
another team's 0.2 MB run answered while two of those are in flight. :func:`upload_memory_multiple` is the importable entry point
(``benchmarks/bench_deadline.py`` reports it).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

GOAL = 3.0  # issue 24: peak RSS growth of an upload at most 3x the file
DEPTH = 1000
TAG = b"RUN-MEM"
TEAM = "memory"


# ============================================================================ the file
def write_run(path: str | os.PathLike[str], size_mb: float, seed: int = 20261127, depth: int = DEPTH) -> int:
    """Write a TREC run of about ``size_mb`` MB (10^6 bytes): topics ``00001``.., ``depth``
    documents each (``DOC-`` and 8 digits, from 10^7), ranks 1..depth, scores with four
    decimals in descending order, tag ``RUN-MEM``. Returns the number of lines. The same
    arguments give the same bytes."""
    import numpy as np

    rng = np.random.default_rng(seed)
    line_bytes = 40  # "00001 Q0 DOC-01234567 123 12.3456 RUN-MEM\n" is 38-42 bytes
    topics = max(1, round(size_mb * 1e6 / line_bytes / depth))
    ranks = np.arange(1, depth + 1).astype("S")
    written = 0
    with open(path, "wb") as out:
        for t in range(topics):
            docs = rng.choice(10_000_000, size=depth, replace=False)
            docnos = np.strings.add(b"DOC-", np.strings.zfill(docs.astype("S"), 8))
            units = np.sort(rng.integers(1, 1_000_000, size=depth))[::-1]
            scores = np.strings.add(np.strings.add((units // 10_000).astype("S"), b"."),
                                    np.strings.zfill((units % 10_000).astype("S"), 4))
            lines = np.strings.add(f"{t + 1:05d} Q0 ".encode(), docnos)
            for part in (b" ", ranks, b" ", scores, b" " + TAG + b"\n"):
                lines = np.strings.add(lines, part)
            out.write(b"".join(lines.tolist()))
            written += depth
    return written


def write_qrels_pair(base: str | os.PathLike[str], changed: str | os.PathLike[str], size_mb: float,
                     seed: int = 20261127, per_topic: int = 1500) -> tuple[int, int]:
    """Write a TREC qrels of about ``size_mb`` MB to ``base`` (topics ``00001``.., ``per_topic``
    documents each, ``DOC-`` and 8 digits in order, levels 0-3; ~23 bytes a line) and a
    slightly different version of it to ``changed``: about 2% of the judgments removed, 2%
    with another level, 2% added, the last topic left out and one new topic. Returns the
    lines of each. The same arguments give the same bytes."""
    import numpy as np

    rng = np.random.default_rng(seed)
    topics = max(2, round(size_mb * 1e6 / 23 / per_topic))
    lines = [0, 0]
    with open(base, "wb") as a, open(changed, "wb") as b:
        for t in range(topics + 1):
            docs = np.sort(rng.choice(10_000_000, size=per_topic, replace=False))
            levels = rng.integers(0, 4, size=per_topic)
            head = f"{t + 1:05d} 0 ".encode()
            if t < topics:
                a.write(b"".join(_qrels_lines(head, docs, levels)))
                lines[0] += per_topic
            if t == topics - 1:  # left out of the changed version
                continue
            if t < topics:
                keep = rng.random(per_topic) >= 0.02
                levels = np.where(rng.random(per_topic) < 0.02, (levels + 1) % 4, levels)
                extra = rng.choice(10_000_000, size=per_topic // 50, replace=False)
                docs, levels = np.concatenate([docs[keep], extra]), np.concatenate(
                    [levels[keep], rng.integers(0, 4, size=extra.shape[0])])
                docs, first = np.unique(docs, return_index=True)
                levels = levels[first]
            b.write(b"".join(_qrels_lines(head, docs, levels)))
            lines[1] += docs.shape[0]
    return lines[0], lines[1]


def _qrels_lines(head: bytes, docs: Any, levels: Any) -> list[bytes]:
    import numpy as np

    docnos = np.strings.add(b"DOC-", np.strings.zfill(docs.astype("S"), 8))
    out = np.strings.add(np.strings.add(np.strings.add(head, docnos), b" "), levels.astype("S"))
    return np.strings.add(out, b"\n").tolist()


# ============================================================================ the child
def _status() -> dict[str, int]:
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0]) * 1024
    return out


def _reset_peak() -> bool:
    """Reset the kernel's peak-RSS mark (VmHWM) to the current RSS (Linux 4.0+)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _child(mode: str, path: str, database_url: str | None, allocator: str, headroom: float | None = None,
           ballast: float = 0.0) -> dict[str, Any]:
    if allocator == "serve":  # as `cranfield serve` sets it up (service/cli/__init__.py, service/asgi.py)
        from service.runtime import one_heap, tune_allocator

        tune_allocator()
        one_heap()
    import ctypes

    upload, warm_up = (_api_upload(path, database_url) if mode == "api" else _parse_upload(path) if mode == "parse"
                       else _preview_upload(path, database_url))
    data = Path(path).read_bytes()
    size = len(data)
    warm_up()  # the first request's one-time costs (threads, their arenas, caches) before the baseline
    gc.collect()
    try:  # start from a heap without free pages of the set-up (the service's state stays)
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass
    capped = None
    if headroom is not None:  # an address-space limit: what the process uses now, and headroom x the file
        import resource

        with open("/proc/self/statm") as f:
            in_use = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        capped = in_use + int(headroom * size)
        resource.setrlimit(resource.RLIMIT_AS, (capped, resource.RLIM_INFINITY))
    held = bytearray(int(ballast * size)) if ballast else None  # memory other uploads would be using
    exact = _reset_peak()
    before = _status()["VmRSS"]
    started = time.perf_counter()
    outcome = upload(data)
    seconds = time.perf_counter() - started
    peak = _status()["VmHWM"]
    if not exact:  # no way to reset the mark: the process's peak so far (an over-estimate)
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    gc.collect()
    after = _status()["VmRSS"]
    result = {"mode": mode, "allocator": allocator, "file_bytes": size, "seconds": round(seconds, 3),
              "rss_before": before, "peak_growth": peak - before, "after_growth": after - before,
              "multiple": round((peak - before) / size, 3), "after_multiple": round((after - before) / size, 3),
              "peak_exact": exact, "address_space_limit": capped, **outcome}
    if held is not None:  # the other uploads are done: the same file again
        del held
        result["retry"] = upload(data)
    return result


def _parse_upload(path: str):  # type: ignore[no-untyped-def]
    from service.formats.readers import parse_run

    def upload(data: bytes) -> dict[str, Any]:
        try:
            run = parse_run(data, Path(path).name, "score", keep_ranks=True)
        except MemoryError:
            return {"status": 503, "lines": None, "detail": "MemoryError"}
        lines = int(run.docnos.shape[0])
        del run
        return {"status": 200, "lines": lines}

    def warm_up() -> None:
        with open(path, "rb") as f:
            parse_run(f.readline(), "warm-up")

    return upload, warm_up


def _api_client(path: str, database_url: str | None):  # type: ignore[no-untyped-def]
    """The API application on a migrated database (a new SQLite file beside ``path`` unless
    ``database_url``) in a started TestClient, and an admin's headers."""
    from litestar.testing import TestClient

    from service.api.app import create_app
    from service.evaluation.permissions.access import create_token
    from service.store.db import session_factory, transaction
    from service.store.migrate import upgrade

    if database_url is None:
        database_url = f"sqlite:///{Path(path).parent / 'upload-memory.sqlite'}"
    upgrade(database_url)
    with transaction(session_factory(database_url)) as s:
        admin, _ = create_token(s, "admin", name="upload-memory")
    headers = {"Authorization": f"Bearer {admin}"}
    client = TestClient(app=create_app(database_url, lambda followups: None))
    client.__enter__()
    return client, headers


def _api_upload(path: str, database_url: str | None):  # type: ignore[no-untyped-def]
    client, headers = _api_client(path, database_url)
    assert client.post("/api/teams", json={"name": TEAM}, headers=headers).status_code == 201
    r = client.post("/api/collections", json={"name": f"memory-{os.getpid()}"}, headers=headers)
    assert r.status_code == 201, r.text
    cid = r.json()["id"]
    topics: set[str] = set()
    lines = 0
    with open(path, "rb") as f:
        for line in f:
            lines += 1
            topics.add(line.split(maxsplit=1)[0].decode())
    r = client.post(f"/api/collections/{cid}/topics", json={"topics": sorted(topics)}, headers=headers)
    assert r.status_code in (200, 201), r.text
    first_topic = min(topics)
    del topics

    def post(data: bytes) -> Any:
        return client.post(f"/api/collections/{cid}/runs?team={TEAM}", content=data,
                           headers={**headers, "Content-Type": "text/plain"})

    def upload(data: bytes) -> dict[str, Any]:
        r = post(data)
        body = r.json()
        return {"status": r.status_code, "lines": body.get("n_lines", lines),
                "detail": None if r.status_code < 300 else body.get("detail"),
                "retry_after": r.headers.get("retry-after")}

    def warm_up() -> None:
        r = post(f"{first_topic} Q0 warm-up 1 1 WARM-UP\n".encode())
        assert r.status_code == 201, r.text

    return upload, warm_up


def _preview_upload(path: str, database_url: str | None):  # type: ignore[no-untyped-def]
    """``preview`` mode: ``path`` is the changed qrels, ``path`` + ``.base`` the current version,
    stored first (an API upload, before the baseline); a second collection with a one-line
    version takes the warm-up preview."""
    client, headers = _api_client(path, database_url)
    cids = []
    for name, body in ((f"memory-{os.getpid()}", Path(path + ".base").read_bytes()),
                       (f"memory-warm-up-{os.getpid()}", b"00001 0 DOC-00000001 1\n")):
        r = client.post("/api/collections", json={"name": name}, headers=headers)
        assert r.status_code == 201, r.text
        cids.append(r.json()["id"])
        r = client.post(f"/api/collections/{cids[-1]}/qrels", content=body,
                        headers={**headers, "Content-Type": "text/plain"})
        assert r.status_code == 201, r.text
        del body

    def post(cid: int, data: bytes) -> Any:
        return client.post(f"/api/collections/{cid}/qrels/preview", content=data,
                           headers={**headers, "Content-Type": "text/plain"})

    def upload(data: bytes) -> dict[str, Any]:
        r = post(cids[0], data)
        body = r.json()
        return {"status": r.status_code, "lines": body.get("judgments"), "totals": body.get("totals"),
                "listed": body.get("listed"),
                "detail": None if r.status_code < 300 else body.get("detail"),
                "retry_after": r.headers.get("retry-after")}

    def warm_up() -> None:
        r = post(cids[1], b"00001 0 DOC-00000001 2\n00001 0 DOC-00000002 1\n")
        assert r.status_code == 200, r.text

    return upload, warm_up


# ============================================================================ the parent
def upload_memory_multiple(size_mb: float = 150, *, mode: str = "api", database_url: str | None = None,
                           allocator: str = "serve", seed: int = 20261127, timeout: float = 900,
                           path: str | os.PathLike[str] | None = None, headroom: float | None = None,
                           ballast: float = 0.0) -> dict[str, Any]:
    """Peak RSS growth of a fresh process uploading a generated run of ``size_mb`` MB, per
    byte of the file (``multiple``), and what it keeps once the upload has returned
    (``after_multiple``); see the module. ``mode``: ``api`` (an HTTP submission through the
    API application) or ``parse`` (the reader alone). ``path``: an existing run file to upload
    instead of a generated one. Returns a dict with ``multiple``, ``after_multiple``,
    ``goal`` (3.0), ``ok`` (multiple <= goal), ``status`` (the HTTP answer's), ``detail`` (its
    message when refused), ``retry_after``, ``file_bytes``, ``lines``, ``seconds``,
    ``peak_growth`` and ``after_growth`` (bytes).

    Under memory pressure (the capped-memory tests): ``headroom`` caps the process's address
    space (RLIMIT_AS) at what it uses once set up plus ``headroom`` times the file; ``ballast``
    holds that many times the file in memory during the upload (other uploads' share), then
    lets it go and sends the file again (its answer under ``retry``)."""
    if mode not in ("api", "parse", "preview"):
        raise ValueError(f"mode is 'api', 'parse' or 'preview', not {mode!r}")
    if allocator not in ("serve", "default"):
        raise ValueError(f"allocator is 'serve' or 'default', not {allocator!r}")
    with tempfile.TemporaryDirectory(prefix="cranfield-upload-memory-") as tmp:
        if path is None and mode == "preview":
            path = Path(tmp) / "qrels.txt"
            write_qrels_pair(f"{path}.base", path, size_mb, seed)
        elif path is None:
            path = Path(tmp) / "run.txt"
            write_run(path, size_mb, seed)
        else:  # the database beside the file would be written in the caller's folder
            database_url = database_url or f"sqlite:///{Path(tmp) / 'upload-memory.sqlite'}"
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        proc = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--child", "--mode", mode, "--path", str(path),
             "--allocator", allocator, *(["--database-url", database_url] if database_url else []),
             *(["--headroom", str(headroom)] if headroom is not None else []), "--ballast", str(ballast)],
            check=False, capture_output=True, text=True, timeout=timeout, env=env, cwd=tmp)
        if proc.returncode != 0:
            raise RuntimeError(f"the measuring process failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
        result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    result.update(size_mb=size_mb, goal=GOAL, ok=result["multiple"] <= GOAL and result["status"] < 300)
    return result


# ============================================================================ a real server
# `--served` (issue 34, items 2, 3, 5): the figures measured as an attacker would, on a real
# `cranfield serve --no-worker` process (a new SQLite database in a temporary folder), its RSS and
# CPU read from /proc/PID: the peak upload multiple of runs plain and gzipped and of the qrels
# preview, the RSS that four senders of a gzip bomb for 15 s leave behind, the server CPU a
# blank-line gzip costs, and another team's small run answered while two of those are in flight.
BOMB_BYTES = 1 << 30  # a gzip bomb: 1 GiB of newlines (about 1 MB gzipped)
BLANK_BYTES = 255 << 20  # a blank-line gzip: 255 MiB of newlines (about 260 KB gzipped)


def gzip_of_newlines(size: int, zlib_stream: bool = False) -> bytes:
    """``size`` newlines, gzipped (level 9; ``zlib_stream``: as ``zlib.compress``), made a piece at a time."""
    import zlib

    z = zlib.compressobj(9, zlib.DEFLATED, 15 if zlib_stream else 31)
    piece = b"\n" * (1 << 24)
    out = [z.compress(piece) for _ in range(size // len(piece))]
    out += [z.compress(b"\n" * (size % len(piece))), z.flush()]
    return b"".join(out)


class Served:
    """`cranfield serve --no-worker` on a new SQLite database in ``folder``: an admin token, a
    collection with teams, and the server process's RSS, peak and CPU from /proc."""

    def __init__(self, folder: str | os.PathLike[str], **env: str) -> None:
        import socket

        import httpx

        self.folder = Path(folder)
        self.env = {**os.environ, "PYTHONPATH": str(REPO), "CRANFIELD_BROKER_URL": "filesystem://",
                    "CRANFIELD_BROKER_FOLDER": str(self.folder / "broker"),
                    "CRANFIELD_DATABASE_URL": f"sqlite:///{self.folder / 'served.sqlite'}", **env}
        cli = [sys.executable, "-m", "service.cli"]
        self.admin = subprocess.run([*cli, "token", "create", "--role", "admin"], env=self.env, cwd=self.folder,
                                    check=True, capture_output=True, text=True).stdout.strip()
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.log = open(self.folder / "serve.log", "w")  # noqa: SIM115
        self.proc = subprocess.Popen([*cli, "serve", "--no-worker", "--port", str(port)], env=self.env,
                                     cwd=self.folder, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        self.base = f"http://127.0.0.1:{port}"
        self.pid = self.proc.pid
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{self.base}/health/live", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the server did not start:\n{(self.folder / 'serve.log').read_text()[-3000:]}")
            time.sleep(0.2)

    def client(self, token: str | None = None, timeout: float = 600) -> Any:
        import httpx

        return httpx.Client(base_url=self.base, timeout=timeout,
                            headers={"Authorization": f"Bearer {token or self.admin}"})

    def collection(self, teams: list[str], topics: list[str]) -> tuple[int, dict[str, str]]:
        """A collection with ``topics`` registered and ``teams`` enrolled, each with a participant token."""
        with self.client() as c:
            r = c.post("/api/collections", json={"name": f"served-{len(teams)}-{time.monotonic_ns()}"})
            assert r.status_code == 201, r.text
            cid = r.json()["id"]
            if topics:
                r = c.post(f"/api/collections/{cid}/topics", json={"topics": topics})
                assert r.status_code in (200, 201), r.text
            tokens = {}
            for team in teams:
                c.post("/api/teams", json={"name": team})
                assert c.post(f"/api/collections/{cid}/teams", json={"team": team}).status_code == 201
                r = c.post("/api/tokens", json={"role": "participant", "team": team, "name": team})
                assert r.status_code == 201, r.text
                tokens[team] = r.json()["token"]
        return cid, tokens

    def status(self) -> dict[str, int]:
        out = {}
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key in ("VmRSS", "VmHWM"):
                    out[key] = int(value.split()[0]) * 1024
        return out

    def reset_peak(self) -> None:
        with open(f"/proc/{self.pid}/clear_refs", "w") as f:
            f.write("5")

    def cpu_seconds(self) -> float:
        """User + system CPU seconds of the server process (all its threads)."""
        with open(f"/proc/{self.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def settle(self, seconds: float = 1.0) -> int:
        """The RSS once it has stopped falling (at most ``seconds`` apart), after a garbage collection."""
        time.sleep(seconds)
        return self.status()["VmRSS"]

    def stop(self) -> None:
        import signal

        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.pid, signal.SIGKILL)
            self.proc.wait()
        self.log.close()


def _peak_upload(srv: Served, path: str, data: bytes, headers: dict[str, str] | None = None) -> dict[str, Any]:
    """POST ``data`` to ``path`` once (after a one-line warm-up by the caller): the server's
    peak RSS growth over its RSS before."""
    with srv.client() as c:
        before = srv.settle()
        srv.reset_peak()
        started = time.perf_counter()
        r = c.post(path, content=data, headers={"Content-Type": "text/plain", **(headers or {})})
        seconds = time.perf_counter() - started
        peak = srv.status()["VmHWM"]
        after = srv.settle(2.0)
    return {"status": r.status_code, "detail": r.json().get("detail") if r.status_code >= 300 else None,
            "seconds": round(seconds, 2), "rss_before": before, "peak": peak, "peak_growth": peak - before,
            "kept": after - before}


def served_upload_multiples(sizes_mb: list[float], qrels_mb: float, seed: int = 20261127) -> list[dict[str, Any]]:
    """Peak RSS growth of a real server per byte of the (uncompressed) file: a run of each size
    in ``sizes_mb`` sent plain and gzipped, and a qrels preview of ``qrels_mb`` plain and gzipped.
    A fresh server per file, so that each starts from the same heap."""
    import gzip

    results = []
    with tempfile.TemporaryDirectory(prefix="cranfield-served-") as tmp:
        cases: list[tuple[str, float]] = [(kind, mb) for mb in sizes_mb for kind in ("run", "run.gz")]
        cases += [("preview", qrels_mb), ("preview.gz", qrels_mb)]
        for kind, mb in cases:
            folder = Path(tmp) / f"{kind}-{mb:g}"
            folder.mkdir()
            if kind.startswith("run"):
                write_run(folder / "file.txt", mb, seed)
            else:
                write_qrels_pair(folder / "base.txt", folder / "file.txt", mb, seed)
            data = (folder / "file.txt").read_bytes()
            size = len(data)
            srv = Served(folder)
            try:
                if kind.startswith("run"):
                    topics = sorted({line.split(maxsplit=1)[0].decode() for line in data.splitlines()[::DEPTH]})
                    cid, _ = srv.collection([TEAM], topics)
                    path = f"/api/collections/{cid}/runs?team={TEAM}"
                    warm = f"{topics[0]} Q0 warm-up 1 1 WARM-UP\n".encode()
                else:
                    cid, _ = srv.collection([], [])
                    with srv.client() as c:
                        r = c.post(f"/api/collections/{cid}/qrels", content=(folder / "base.txt").read_bytes())
                        assert r.status_code == 201, r.text
                    path = f"/api/collections/{cid}/qrels/preview"
                    warm = b"00001 0 DOC-00000001 2\n"
                with srv.client() as c:
                    assert c.post(path, content=warm).status_code < 300
                body = gzip.compress(data, compresslevel=6, mtime=0) if kind.endswith(".gz") else data
                del data
                out = _peak_upload(srv, path, body)
            finally:
                srv.stop()
            out.update(kind=kind, file_bytes=size, sent_bytes=len(body), multiple=round(out["peak_growth"] / size, 2),
                       absolute_multiple=round(out["peak"] / size, 2))
            results.append(out)
            print(json.dumps(out), file=sys.stderr, flush=True)  # (a long series: each figure as it comes)
            del body
    return results


def served_bombs(senders: int = 4, seconds: float = 15, wait_after: float = 60) -> dict[str, Any]:
    """``senders`` clients sending a gzip of :data:`BOMB_BYTES` newlines as a run, one after
    another each, for ``seconds``: the answers, and the server's RSS before, at its peak and
    ``wait_after`` seconds after the last answer."""
    import threading
    from collections import Counter

    bomb = gzip_of_newlines(BOMB_BYTES)
    with tempfile.TemporaryDirectory(prefix="cranfield-bombs-") as tmp:
        srv = Served(tmp)
        try:
            cid, _ = srv.collection([TEAM], ["00001"])
            path = f"/api/collections/{cid}/runs?team={TEAM}"
            with srv.client() as c:
                assert c.post(path, content=b"00001 Q0 warm-up 1 1 WARM-UP\n").status_code == 201
            before = srv.settle(2.0)
            srv.reset_peak()
            answers: Counter[int] = Counter()
            stop_at = time.monotonic() + seconds

            def send() -> None:
                with srv.client() as c:
                    while time.monotonic() < stop_at:
                        answers[c.post(path, content=bomb).status_code] += 1

            threads = [threading.Thread(target=send) for _ in range(senders)]
            cpu = srv.cpu_seconds()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            cpu = srv.cpu_seconds() - cpu
            peak = srv.status()["VmHWM"]
            time.sleep(wait_after)
            after = srv.status()["VmRSS"]
        finally:
            srv.stop()
    return {"senders": senders, "seconds": seconds, "bomb_bytes": len(bomb), "answers": dict(answers),
            "rss_before": before, "rss_peak": peak, "rss_after": after, "after_delta": after - before,
            "cpu_seconds": round(cpu, 1), "wait_after": wait_after}


def served_blank_lines(in_flight: int = 2) -> dict[str, Any]:
    """The server CPU a gzip of :data:`BLANK_BYTES` newlines costs (sent alone, as a run), and
    another team's small run (0.2 MB) answered while ``in_flight`` of them are being sent by
    one team, again and again: its answer and time."""
    import threading

    blank = gzip_of_newlines(BLANK_BYTES)
    with tempfile.TemporaryDirectory(prefix="cranfield-blank-") as tmp:
        srv = Served(tmp)
        try:
            write_run(Path(tmp) / "small.txt", 0.2, depth=100)
            small = (Path(tmp) / "small.txt").read_bytes()
            topics = sorted({line.split(maxsplit=1)[0].decode() for line in small.splitlines()})
            cid, tokens = srv.collection(["flooder", "other"], topics)
            path = f"/api/collections/{cid}/runs"
            with srv.client(tokens["flooder"]) as c:
                cpu = srv.cpu_seconds()
                started = time.perf_counter()
                r = c.post(path, content=blank)
                alone = {"status": r.status_code, "detail": r.json().get("detail"),
                         "seconds": round(time.perf_counter() - started, 2),
                         "cpu_seconds": round(srv.cpu_seconds() - cpu, 2)}
            with srv.client(tokens["other"]) as c:
                started = time.perf_counter()
                quiet = c.post(path, content=small).status_code, round(time.perf_counter() - started, 2)
            busy = threading.Event()
            done = threading.Event()

            def flood() -> None:
                with srv.client(tokens["flooder"]) as c:
                    while not done.is_set():
                        busy.set()
                        c.post(path, content=blank)

            threads = [threading.Thread(target=flood) for _ in range(in_flight)]
            for t in threads:
                t.start()
            busy.wait()
            time.sleep(5.0)  # the floods are being read (decompressed, parsed)
            with srv.client(tokens["other"]) as c:
                started = time.perf_counter()
                r = c.post(path, content=small.replace(b"RUN-MEM", b"RUN-TWO"))
                meanwhile = r.status_code, round(time.perf_counter() - started, 2)
            done.set()
            for t in threads:
                t.join()
        finally:
            srv.stop()
    return {"blank_gzip_bytes": len(blank), "alone": alone, "small_quiet": quiet, "small_meanwhile": meanwhile,
            "in_flight": in_flight}


def served_main(parts: list[str], sizes_mb: list[float], qrels_mb: float, json_path: str | None) -> int:
    """Print the figures of issue 34's Done-when for ``parts`` (multiples, bombs, blank); 0 when
    every goal is met: peak growth at most GOAL x the file, the bombs' RSS back within 100 MB
    60 s later, the blank-line gzip refused in seconds and the other team's run within 2 s."""
    report: dict[str, Any] = {}
    ok = True
    if "multiples" in parts:
        report["multiples"] = served_upload_multiples(sizes_mb, qrels_mb)
        for r in report["multiples"]:
            good = r["multiple"] <= GOAL and r["status"] < 300
            ok &= good
            print(f"{r['kind']:>10} {r['file_bytes'] / 1e6:6.1f} MB (sent {r['sent_bytes'] / 1e6:.1f} MB): HTTP "
                  f"{r['status']} in {r['seconds']:.1f} s; peak growth {r['peak_growth'] / 1e6:,.0f} MB = "
                  f"{r['multiple']:.2f}x the file (goal <= {GOAL:g}x: {'PASS' if good else 'FAIL'}); peak RSS "
                  f"{r['peak'] / 1e6:,.0f} MB = {r['absolute_multiple']:.2f}x the file (idle "
                  f"{r['rss_before'] / 1e6:,.0f} MB); kept {r['kept'] / 1e6:,.0f} MB")
    if "bombs" in parts:
        b = report["bombs"] = served_bombs()
        # 413 once inflated past the limit; 503 for an upload beyond the team's waiting share
        good = b["after_delta"] < 100e6 and set(b["answers"]) <= {413, 503} and 413 in b["answers"]
        ok &= good
        print(f"bombs: {b['senders']} senders x {b['seconds']:g} s of a {b['bomb_bytes'] / 1e6:.1f} MB gzip of "
              f"1 GiB: answers {b['answers']}; RSS {b['rss_before'] / 1e6:,.0f} MB before, peak "
              f"{b['rss_peak'] / 1e6:,.0f} MB, {b['rss_after'] / 1e6:,.0f} MB {b['wait_after']:g} s after "
              f"(+{b['after_delta'] / 1e6:,.0f} MB; goal < 100 MB: {'PASS' if good else 'FAIL'}); server CPU "
              f"{b['cpu_seconds']} s")
    if "blank" in parts:
        b = report["blank"] = served_blank_lines()
        good = b["alone"]["seconds"] < 10 and b["small_meanwhile"][0] == 201 and b["small_meanwhile"][1] < 2
        ok &= good
        print(f"blank lines: a {b['blank_gzip_bytes'] / 1e3:.0f} KB gzip of 255 MiB: HTTP {b['alone']['status']} "
              f"({b['alone']['detail']}) in {b['alone']['seconds']} s, {b['alone']['cpu_seconds']} s of server CPU; "
              f"another team's 0.2 MB run: {b['small_quiet'][1]} s quiet, {b['small_meanwhile'][1]} s (HTTP "
              f"{b['small_meanwhile'][0]}) with {b['in_flight']} in flight (goal < 2 s: {'PASS' if good else 'FAIL'})")
    if json_path:
        Path(json_path).write_text(json.dumps(report, indent=2) + "\n")
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-mb", type=float, default=150)
    ap.add_argument("--mode", choices=("api", "parse", "preview"), default="api")
    ap.add_argument("--database-url", default=None, help="default: a new SQLite file in a temporary folder")
    ap.add_argument("--allocator", choices=("serve", "default"), default="serve")
    ap.add_argument("--seed", type=int, default=20261127)
    ap.add_argument("--path", default=None, help="upload this run file instead of a generated one")
    ap.add_argument("--json", default=None, help="also write the result to this file")
    ap.add_argument("--headroom", type=float, default=None,
                    help="cap the address space at what the set-up process uses plus this many times the file")
    ap.add_argument("--ballast", type=float, default=0.0,
                    help="hold this many times the file in memory during the upload, then send the file again")
    ap.add_argument("--served", default=None, metavar="PARTS",
                    help="measure a real `cranfield serve` instead (issue 34): a comma-separated choice of "
                         "multiples, bombs, blank (the figures of its Done-when)")
    ap.add_argument("--served-sizes", default="100,200", help="--served multiples: run sizes in MB")
    ap.add_argument("--qrels-mb", type=float, default=89, help="--served multiples: the qrels preview's size in MB")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(_child(args.mode, args.path, args.database_url, args.allocator, args.headroom,
                                args.ballast)))
        return 0
    if args.served:
        return served_main(args.served.split(","), [float(x) for x in args.served_sizes.split(",")], args.qrels_mb,
                           args.json)
    result = upload_memory_multiple(args.size_mb, mode=args.mode, database_url=args.database_url,
                                    allocator=args.allocator, seed=args.seed, path=args.path,
                                    headroom=args.headroom, ballast=args.ballast)
    mb = result["file_bytes"] / 1e6
    what = "qrels preview" if args.mode == "preview" else f"{args.mode} upload"
    print(f"{what} of a {mb:.1f} MB {'qrels' if args.mode == 'preview' else 'run'} ({result['lines'] or 0:,} lines), "
          f"allocator {args.allocator}: HTTP {result['status']} in {result['seconds']:.2f} s")
    if result.get("totals"):
        print(f"  changes {result['totals']}, listed {result.get('listed')}")
    print(f"  peak RSS growth {result['peak_growth'] / 1e6:,.0f} MB = {result['multiple']:.2f}x the file "
          f"(goal <= {GOAL:g}x): {'PASS' if result['ok'] else 'FAIL'}")
    print(f"  RSS kept after the upload {result['after_growth'] / 1e6:,.0f} MB = {result['after_multiple']:.2f}x")
    if result.get("detail"):
        print(f"  refused: {result['detail']} (Retry-After: {result.get('retry_after')})")
    if "retry" in result:
        print(f"  sent again without the ballast: HTTP {result['retry']['status']}")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
