"""A real `cranfield serve` process with a real worker: the submission flow over HTTP."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import httpx

from service.sample import CollectionSpec, generate
from tests.integration.conftest import REPO, Backend, sqlite_jobs, wait_for
from tests.support.ports import free_port


def stop(server: subprocess.Popen) -> None:
    """SIGTERM (a graceful uvicorn shutdown), then SIGKILL to the whole group if it lingers."""
    os.kill(server.pid, signal.SIGTERM)
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)


def test_full_flow_against_a_running_server(backend: Backend) -> None:
    env = {**os.environ, **backend.env, "PYTHONPATH": str(REPO)}
    cli = [sys.executable, "-m", "service.cli"]
    admin = subprocess.run([*cli, "token", "create", "--role", "admin"], env=env, cwd=backend.tmp, check=True,
                           capture_output=True, text=True).stdout.strip()
    if backend.name == "postgres":
        backend.start_worker()  # production shape: workers apart from the API
    port = free_port()
    server = subprocess.Popen([*cli, "serve", "--port", str(port), *(["--no-worker"] if backend.name == "postgres" else [])],
                              env=env, cwd=backend.tmp, start_new_session=True,
                              stdout=open(backend.tmp / "serve.log", "w"), stderr=subprocess.STDOUT)  # noqa: SIM115
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _ready(base), 60, "the API to be ready", backend)
        h = {"Authorization": f"Bearer {admin}"}
        with httpx.Client(base_url=base, timeout=30) as c:
            cid = c.post("/api/collections", json={"name": "task", "official_metric": "AP"}, headers=h).json()["id"]
            for team in ("alpha", "beta"):
                assert c.post("/api/teams", json={"name": team}, headers=h).status_code == 201
                assert c.post(f"/api/collections/{cid}/teams", json={"team": team}, headers=h).status_code == 201
            org = c.post("/api/tokens", json={"role": "organiser", "collections": [cid]}, headers=h).json()["token"]
            tokens = {t: c.post("/api/tokens", json={"role": "participant", "team": t},
                                headers={"Authorization": f"Bearer {org}"}).json()["token"] for t in ("alpha", "beta")}
            qrels, runs = generate(CollectionSpec(topics=5, runs=2, depth=20, docs_per_topic=50, judged_per_topic=25))
            r = c.post(f"/api/collections/{cid}/qrels", content=qrels, headers={"Authorization": f"Bearer {org}"})
            assert r.status_code == 201, r.text
            for (tag, text), team in zip(runs.items(), ("alpha", "beta")):
                r = c.post(f"/api/collections/{cid}/runs", content=text,
                           headers={"Authorization": f"Bearer {tokens[team]}"})
                assert r.status_code == 201, r.text
            board = wait_for(lambda: _board(c, cid, org, 2), 120, "the leaderboard", backend)
            assert board["qrels_version"] == 1 and [row["rank"] for row in board["rows"]] == [1, 2]
            tested = wait_for(lambda: (lambda d: d if d["significance"] else None)(
                c.get(f"/api/collections/{cid}/leaderboard", headers={"Authorization": f"Bearer {org}"}).json()),
                60, "the significance test", backend)
            assert tested["significance"]["test"] == "bootstrap" and "groups" in tested["rows"][0]
            # the organiser corrects the qrels: the board moves to version 2 once re-evaluated
            r = c.post(f"/api/collections/{cid}/qrels", content=qrels.replace(" L0\n", " L2\n", 10),
                       headers={"Authorization": f"Bearer {org}"})
            assert r.status_code == 201 and r.json()["version"] == 2
            wait_for(lambda: c.get(f"/api/collections/{cid}/leaderboard", headers={"Authorization": f"Bearer {org}"}
                                   ).json()["qrels_version"] == 2, 120, "the board on qrels version 2", backend)
            bad = c.post(f"/api/collections/{cid}/runs", content="0001 Q0 a 1 x bad\n",
                         headers={"Authorization": f"Bearer {tokens['alpha']}"})
            assert bad.status_code == 422 and bad.json()["error"]["line"] == 1
            assert c.get(f"/api/collections/{cid}/qrels", headers={"Authorization": f"Bearer {tokens['beta']}"}
                         ).status_code == 403
            assert c.get("/health/ready").json()["checks"] == {"database": True, "broker": True}
    finally:
        stop(server)


def _ready(base: str) -> bool:
    try:
        return httpx.get(f"{base}/health/ready", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _board(c: httpx.Client, cid: int, token: str, n: int):  # type: ignore[no-untyped-def]
    board = c.get(f"/api/collections/{cid}/leaderboard", headers={"Authorization": f"Bearer {token}"}).json()
    return board if len(board.get("rows", [])) == n else None


def test_readme_main_command_serves_the_sample(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """`cranfield serve --sample samples/ntcir-like` on the embedded default, as the README says."""
    import shutil

    shutil.copytree(REPO / "samples", tmp_path / "samples")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRANFIELD_")}
    env["PYTHONPATH"] = str(REPO)
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "service.cli", "serve", "--port", str(port), "--sample",
                               "samples/ntcir-like"], cwd=tmp_path, env=env, start_new_session=True,
                              stdout=open(tmp_path / "serve.log", "w"), stderr=subprocess.STDOUT)  # noqa: SIM115
    try:
        url = f"http://127.0.0.1:{port}/api/collections/1/leaderboard"

        def board():  # type: ignore[no-untyped-def]
            try:
                doc = httpx.get(url, timeout=2).json()
            except (httpx.HTTPError, ValueError):
                return None
            return doc if len(doc.get("rows", [])) == 8 else None

        doc = wait_for(board, 120, "the sample leaderboard")
        assert doc["rows"][0]["run"] == "RUN-01" and doc["qrels_version"] == 1
        assert {r["team"] for r in doc["rows"]} == {"alpha", "beta", "gamma", "baselines"}  # the sample's teams
        # The worker next to the API is supervised: killed, it is started again, and works.
        first = wait_for(lambda: _embedded_workers(server.pid), 30, "the embedded worker")
        assert len(first) == 1
        os.killpg(first[0], signal.SIGKILL)
        again = wait_for(lambda: [p for p in _embedded_workers(server.pid) if p not in first], 60,
                         "the embedded worker to be started again")
        assert len(again) == 1 and server.poll() is None
        cli = [sys.executable, "-m", "service.cli"]
        # (the job may be the load's own, if its tests round was in flight in the killed worker)
        said = subprocess.run([*cli, "reevaluate", "--collection", "sample"], cwd=tmp_path, env=env, check=True,
                              capture_output=True, text=True).stdout
        job = int(said.split()[1].rstrip(":"))

        def jobs_done() -> bool:  # (the command is asked once, below)
            statuses = {i: status for i, status, _, _ in sqlite_jobs(tmp_path / "cranfield.sqlite")}
            return job in statuses and set(statuses.values()) == {"done"}

        wait_for(jobs_done, 120, "the re-evaluation by the restarted worker")
        listing = subprocess.run([*cli, "jobs", "--collection", "sample", "--format", "json"], cwd=tmp_path,
                                 env=env, check=True, capture_output=True, text=True).stdout
        statuses = {j["id"]: j["status"] for j in json.loads(listing)}
        assert job in statuses and set(statuses.values()) == {"done"}, statuses
        log = (tmp_path / "serve.log").read_text()
        assert "starting it again" in log
        # What serve says first: where to open it, the sample's page and when its board fills;
        # the embedded worker starts without Celery's banner.
        assert f"Cranfield: open http://127.0.0.1:{port}/ (the portal)" in log
        assert f"the sample collection was loaded now: open http://127.0.0.1:{port}/c/1 (the worker evaluates" in log
        assert "celery@" not in log and "[config]" not in log
        # nor Celery's warnings about the filesystem broker's host or a worker run as root (issue 37, item 7)
        assert "No hostname was supplied" not in log and "superuser privileges" not in log
    finally:
        stop(server)
    # Served again on the same database: the sample is reused, and serve says so.
    again_port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "service.cli", "serve", "--port", str(again_port), "--sample",
                               "samples/ntcir-like", "--no-worker"], cwd=tmp_path, env=env, start_new_session=True,
                              stdout=open(tmp_path / "serve-again.log", "w"), stderr=subprocess.STDOUT)  # noqa: SIM115
    try:
        wait_for(lambda: _ready(f"http://127.0.0.1:{again_port}"), 60, "the second server")
        assert (f"the sample collection is already in this database and is served as it is: open "
                f"http://127.0.0.1:{again_port}/c/1") in (tmp_path / "serve-again.log").read_text()
    finally:
        stop(server)


def _embedded_workers(parent: int) -> list[int]:
    """The pids of `cranfield worker` processes whose parent is ``parent`` (Linux /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = open(f"/proc/{entry}/stat").read()  # noqa: SIM115
            cmdline = open(f"/proc/{entry}/cmdline", "rb").read().split(b"\0")  # noqa: SIM115
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == parent and b"worker" in cmdline and b"service.cli" in cmdline:
            found.append(int(entry))
    return found
