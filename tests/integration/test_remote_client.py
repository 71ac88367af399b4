"""`cranfield remote` against a running `cranfield serve`: the client speaks only the HTTP API.

The service runs on the embedded default (SQLite, filesystem broker, its own worker), as the
README's first command starts it. Every `cranfield remote` command runs as a subprocess with
its own config folder (XDG_CONFIG_HOME) and, where a test says so, CRANFIELD_URL and
CRANFIELD_TOKEN. Two collections: `task` takes the submissions of these tests; `board` is
filled once by the fixture and then only read, so board and scores compare with a fixed API.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import socket
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Self

import httpx
import pytest

from service.sample import CollectionSpec, generate
from tests.integration.conftest import REPO, wait_for
from tests.integration.test_api_server import stop
from tests.support.ports import free_port

IR_METADATA = """\
tag: alpha-manual
platform:
  hardware:
    cpu:
      model: a test machine
implementation:
  source:
    repository: https://example.org/alpha
method:
  automatic: false
  retrieval:
    - name: bm25
actor:
  team: alpha
"""


@dataclass
class Service:
    base: str
    tmp: Path
    task: int  # the collection the tests submit to
    board: int  # the collection filled once, then read
    tokens: dict[str, str]  # organiser, alpha, beta
    runs: dict[str, str]  # generated runs not yet submitted: tag -> text
    board_runs: dict[str, int]  # the board collection's runs: tag -> id
    beta_run: int  # a run of team beta on the board collection (unreleased)

    def api(self, token: str) -> httpx.Client:
        return httpx.Client(base_url=self.base, timeout=30, headers={"Authorization": f"Bearer {token}"})

    def run_count(self, cid: int) -> int:
        with self.api(self.tokens["organiser"]) as c:
            return int(c.get(f"/api/collections/{cid}/runs").json()["total"])


def _server_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRANFIELD_") and k != "XDG_CONFIG_HOME"}
    env["PYTHONPATH"] = str(REPO)
    return env


@pytest.fixture(scope="module")
def svc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    tmp = tmp_path_factory.mktemp("remote")
    env = {**_server_env(), "CRANFIELD_TESTS_DEBOUNCE": "0",
           "CRANFIELD_EVAL_MAX_LINES": "1000"}  # a run of more lines fails its evaluation (test_wait_*)
    cli = [sys.executable, "-m", "service.cli"]
    admin = subprocess.run([*cli, "token", "create", "--role", "admin"], env=env, cwd=tmp, check=True,
                           capture_output=True, text=True).stdout.strip()
    port = free_port()
    server = subprocess.Popen([*cli, "serve", "--port", str(port)], cwd=tmp, env=env, start_new_session=True,
                              stdout=open(tmp / "serve.log", "w"), stderr=subprocess.STDOUT)  # noqa: SIM115
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _up(server, tmp, base), 60, "the service")
        with httpx.Client(base_url=base, timeout=30, headers={"Authorization": f"Bearer {admin}"}) as c:
            ids = {}
            for name in ("task", "board"):
                r = c.post("/api/collections", json={"name": name, "official_metric": "nDCG@10",
                                                     "metrics": ["nDCG@10", "AP", "P@10"]})
                assert r.status_code == 201, r.text
                ids[name] = r.json()["id"]
            for team in ("alpha", "beta"):
                assert c.post("/api/teams", json={"name": team}).status_code == 201
                for cid in ids.values():
                    assert c.post(f"/api/collections/{cid}/teams", json={"team": team}).status_code == 201
            org = c.post("/api/tokens", json={"role": "organiser", "collections": list(ids.values())}).json()["token"]
            tokens = {"organiser": org, "admin": admin}
            for team in ("alpha", "beta"):
                tokens[team] = c.post("/api/tokens", json={"role": "participant", "team": team}).json()["token"]
        qrels, runs = generate(CollectionSpec(topics=6, runs=10, depth=20, docs_per_topic=50, judged_per_topic=25,
                                              seed=5))
        svc = Service(base, tmp, ids["task"], ids["board"], tokens, dict(runs), {}, 0)
        with svc.api(org) as c:
            for cid in ids.values():
                assert c.post(f"/api/collections/{cid}/qrels", content=qrels).status_code == 201
        for team in ("alpha", "alpha", "beta"):
            tag, text = svc.runs.popitem()
            with svc.api(tokens[team]) as c:
                r = c.post(f"/api/collections/{svc.board}/runs", content=text)
                assert r.status_code == 201, r.text
                svc.board_runs[tag] = r.json()["id"]
                if team == "beta":
                    svc.beta_run = r.json()["id"]
        with svc.api(org) as c:
            wait_for(lambda: _tested(c, svc.board, 3), 90, "the board collection's evaluation")
        yield svc
    finally:
        stop(server)


def _up(server: subprocess.Popen, tmp: Path, base: str) -> bool:
    if server.poll() is not None:  # it will not come up: say why at once
        raise AssertionError("cranfield serve exited:\n" + (tmp / "serve.log").read_text()[-3000:])
    return _ok(f"{base}/health/ready")


def _ok(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _tested(c: httpx.Client, cid: int, n: int) -> bool:
    board = c.get(f"/api/collections/{cid}/leaderboard").json()
    return len(board["rows"]) == n and board["significance"] is not None and not board["reevaluation_in_progress"]


def remote(svc: Service, *args: str, token: str | None = None, config: Path | None = None, url: str | None = "",
           stdin: str | None = None, tz: str | None = None) -> subprocess.CompletedProcess[str]:
    """`cranfield remote ARGS`; ``url`` "" is the service's (CRANFIELD_URL), None leaves it unset;
    ``tz`` the user's time zone (TZ)."""
    env = _server_env()
    if tz is not None:
        env["TZ"] = tz
    env["XDG_CONFIG_HOME"] = str(config or svc.tmp / "no-config")
    if url is not None:
        env["CRANFIELD_URL"] = url or svc.base
    if token is not None:
        env["CRANFIELD_TOKEN"] = token
    return subprocess.run([sys.executable, "-m", "service.cli", "remote", *args], env=env, cwd=svc.tmp,
                          input=stdin or "", capture_output=True, text=True, timeout=180, check=False)


def _write(svc: Service, name: str, text: str) -> Path:
    path = svc.tmp / name
    path.write_text(text)
    return path


def test_the_client_calls_the_served_schemas_operations(svc: Service) -> None:
    from service.client.api import OPERATIONS

    schema = httpx.get(f"{svc.base}/schema/openapi.json", timeout=30).json()
    served = {op["operationId"]: (method.upper(), path) for path, item in schema["paths"].items()
              for method, op in item.items() if isinstance(op, dict) and "operationId" in op}
    assert {name: served.get(name) for name in OPERATIONS} == OPERATIONS


# ------------------------------------------------------------------------------ login
def test_login_keeps_the_token_readable_by_its_owner_only(svc: Service, tmp_path: Path) -> None:
    config = tmp_path / "config"
    done = remote(svc, "login", svc.base, config=config, url=None, stdin=svc.tokens["alpha"] + "\n")
    assert done.returncode == 0, done.stderr
    saved = config / "cranfield" / "remote.json"
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    assert stat.S_IMODE(saved.parent.stat().st_mode) == 0o700
    assert json.loads(saved.read_text()) == {"url": svc.base, "token": svc.tokens["alpha"]}
    # the saved login serves the next commands, without any variable
    listed = remote(svc, "collections", config=config, url=None)
    assert listed.returncode == 0 and {"task", "board"} <= {ln.split("\t")[1] for ln in listed.stdout.splitlines()}
    # CRANFIELD_TOKEN overrides the saved token
    refused = remote(svc, "collections", config=config, url=None, token="cfd_not-a-token")
    assert refused.returncode == 1 and "CRANFIELD_TOKEN" in refused.stderr and "401" in refused.stderr
    # the saved token never goes to another server than the saved one
    elsewhere = svc.base.replace("127.0.0.1", "localhost")
    anonymous = remote(svc, "runs", str(svc.task), config=config, url=elsewhere)
    assert anonymous.returncode == 1 and "this needs a token" in anonymous.stderr
    unnamed = remote(svc, "runs", "task", config=config, url=elsewhere)  # private collections are not listed
    assert unnamed.returncode == 1 and "no token was sent" in unnamed.stderr

    assert remote(svc, "logout", config=config, url=None).returncode == 0
    assert not saved.exists()
    gone = remote(svc, "collections", config=config, url=None)
    assert gone.returncode == 2 and "cranfield remote login URL" in gone.stderr


def test_login_refuses_a_bad_token_and_saves_nothing(svc: Service, tmp_path: Path) -> None:
    done = remote(svc, "login", svc.base, "--token", "cfd_bogus", config=tmp_path, url=None)
    assert done.returncode == 1
    assert "401" in done.stderr and "nothing was saved" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "cranfield" / "remote.json").exists()


def test_a_bad_token_gets_a_clear_401_message(svc: Service) -> None:
    done = remote(svc, "runs", "task", token="cfd_bogus")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("cranfield: error: the server refused the token from CRANFIELD_TOKEN")
    assert "401" in done.stderr and "unknown or revoked token" in done.stderr and "Traceback" not in done.stderr


# ------------------------------------------------------------------------------ submit, runs, wait
def test_submit_prints_run_job_and_lists_the_run(svc: Service) -> None:
    tag, text = svc.runs.popitem()
    path = _write(svc, "alpha-1.run", text)
    done = remote(svc, "submit", "task", str(path), "--description", "BM25 with RM3", token=svc.tokens["alpha"])
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    assert first.startswith("run ") and f"tag {tag}, team alpha, collection task" in first
    rid = int(first.split()[1])
    job = int(done.stdout.splitlines()[1].split()[1])
    size = path.stat().st_size  # the file's own size, not the request's (issue 37, item 5)
    assert done.stderr.startswith(f"uploaded alpha-1.run ({size / 1000:.1f} kB) in "), done.stderr
    listed = remote(svc, "runs", "task", token=svc.tokens["alpha"])
    assert listed.returncode == 0
    rows = [ln.split("\t") for ln in listed.stdout.splitlines()]
    assert rows[0][:5] == ["id", "collection", "tag", "team", "status"]
    assert [str(rid), "task", tag, "alpha"] == next(r for r in rows if r[0] == str(rid))[:4]
    assert {r[6] for r in rows[1:]} <= {"yes", "no"}  # primary: for people, not Python's True
    assert all(r[3] == "alpha" for r in rows[1:])  # a participant lists its own team's runs

    # the team waits for the job of its submission, as does an organiser; another team may not read it
    waited = remote(svc, "wait", str(job), "--timeout", "90", "--interval", "0.3", token=svc.tokens["alpha"])
    assert waited.returncode == 0, waited.stderr
    assert waited.stdout.startswith(f"job {job} (submission): done")
    assert remote(svc, "wait", str(job), token=svc.tokens["organiser"]).returncode == 0
    refused = remote(svc, "wait", str(job), token=svc.tokens["beta"])
    assert refused.returncode == 1 and "403" in refused.stderr and "--run" in refused.stderr
    own = remote(svc, "wait", "--run", str(rid), "--timeout", "60", token=svc.tokens["alpha"])
    assert own.returncode == 0 and own.stdout == f"run {rid} ({tag}): evaluated\n"


def test_runs_and_collections_are_text_for_people_and_tsv_json_for_programs(svc: Service) -> None:
    """issue 37, item 5: the text view (the default) says yes/no and the user's local time
    (TZ), to the minute; the TSV and the JSON keep the API's values: true/false, ISO 8601."""
    from datetime import datetime
    from zoneinfo import ZoneInfo

    token = svc.tokens["organiser"]
    opens = "2026-01-15T07:05:09.123456+00:00"  # the board collection's window opened long ago
    with svc.api(token) as c:
        r = c.patch(f"/api/collections/{svc.board}", json={"submission_opens_at": opens, "daily_run_quota": 50})
        assert r.status_code == 200, r.text
        api_runs = {r["id"]: r for r in c.get(f"/api/collections/{svc.board}/runs").json()["items"]}
        api_coll = c.get(f"/api/collections/{svc.board}").json()
    try:
        assert api_runs and all(r["submitted_at"] for r in api_runs.values())

        def paris(iso: str) -> str:
            return datetime.fromisoformat(iso).astimezone(ZoneInfo("Europe/Paris")).strftime("%Y-%m-%d %H:%M")

        text = remote(svc, "runs", "board", token=token, tz="Europe/Paris")
        assert text.returncode == 0, text.stderr
        header, *lines = [ln.split("\t") for ln in text.stdout.splitlines()]
        at, primary = header.index("submitted_at"), header.index("primary")
        assert len(lines) == len(api_runs)
        for cells in lines:
            run = api_runs[int(cells[0])]
            assert cells[at] == paris(run["submitted_at"]), cells  # 2026-11-28 23:31, not ...T22:31:51.595008+00:00
            assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d", cells[at])
            assert cells[primary] == ("yes" if run["primary"] else "no")
        assert "True" not in text.stdout and "False" not in text.stdout and "+00:00" not in text.stdout
        # a team's quota line on stderr is for people too
        own = remote(svc, "runs", "board", token=svc.tokens["alpha"], tz="Europe/Paris")
        quota = re.search(r"runs today \(resets at (.+)\)$", own.stderr.strip())
        assert quota and re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d", quota.group(1)), own.stderr
        utc = remote(svc, "runs", "board", token=token, tz="UTC")  # another zone, another reading
        first = api_runs[int(utc.stdout.splitlines()[1].split("\t")[0])]
        assert utc.stdout.splitlines()[1].split("\t")[at] == datetime.fromisoformat(
            first["submitted_at"]).astimezone(ZoneInfo("UTC")).strftime("%Y-%m-%d %H:%M")

        tsv = remote(svc, "runs", "board", "--format", "tsv", token=token, tz="Europe/Paris")
        rows = list(csv.DictReader(io.StringIO(tsv.stdout), delimiter="\t"))
        assert {int(r["id"]): r["submitted_at"] for r in rows} == {i: r["submitted_at"] for i, r in api_runs.items()}
        assert {r["primary"] for r in rows} <= {"true", "false"}
        as_json = json.loads(remote(svc, "runs", "board", "--format", "json", token=token, tz="Europe/Paris").stdout)
        assert {r["id"]: r["submitted_at"] for r in as_json} == {i: r["submitted_at"] for i, r in api_runs.items()}

        listed = remote(svc, "collections", token=token, tz="Europe/Paris")
        header, *lines = [ln.split("\t") for ln in listed.stdout.splitlines()]
        board = dict(zip(header, next(cells for cells in lines if cells[1] == "board")))
        assert board["opens_at"] == "2026-01-15 08:05"  # Paris is UTC+1 in January
        assert board["released"] == ("yes" if api_coll["leaderboard_released"] else "no")
        assert {cells[header.index("released")] for cells in lines} <= {"yes", "no"}
        assert {cells[header.index("enrolled")] for cells in lines} <= {"yes", "no", ""}
        data = {r["name"]: r for r in csv.DictReader(io.StringIO(remote(
            svc, "collections", "--format", "tsv", token=token, tz="Europe/Paris").stdout), delimiter="\t")}
        assert data["board"]["opens_at"] == api_coll["submission_opens_at"]
        assert datetime.fromisoformat(data["board"]["opens_at"]) == datetime.fromisoformat(opens)
        assert data["board"]["released"] in ("true", "false")
        as_json = json.loads(remote(svc, "collections", "--format", "json", token=token).stdout)
        assert next(c for c in as_json if c["name"] == "board")["submission_opens_at"] == api_coll[
            "submission_opens_at"]
    finally:
        with svc.api(token) as c:
            r = c.patch(f"/api/collections/{svc.board}", json={"submission_opens_at": None, "daily_run_quota": None})
            assert r.status_code == 200, r.text


def test_a_gzipped_run_is_submitted_as_the_api_takes_it(svc: Service) -> None:
    """issue 37, item 4: ``remote submit RUN.gz`` crashed on the inflated file (a bytearray)."""
    import gzip

    tag, text = svc.runs.popitem()
    path = svc.tmp / "alpha-gz.run.gz"
    path.write_bytes(gzip.compress(text.encode()))
    done = remote(svc, "submit", "task", str(path), "--format", "json", token=svc.tokens["alpha"])
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["tag"] == tag, done.stdout


def test_submit_sends_the_runs_metadata(svc: Service) -> None:
    """The metadata fields of the submission form (the server stores and answers them)."""
    tag, text = svc.runs.popitem()
    path, meta = _write(svc, "alpha-2.run", text), _write(svc, "alpha-2.yaml", IR_METADATA)
    done = remote(svc, "submit", "task", str(path), "--description", "manual reformulations", "--type", "manual",
                  "--primary", "--priority", "2", "--training-data", "no", "--external-resources", "yes",
                  "--ir-metadata", str(meta), "--format", "json", token=svc.tokens["alpha"])
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert (doc["tag"], doc["team"], doc["description"]) == (tag, "alpha", "manual reformulations")
    assert isinstance(doc["job"], int) and isinstance(doc["warnings"], list)
    assert (doc["run_type"], doc["primary"], doc["priority"]) == ("manual", True, 2)
    assert (doc["uses_training_data"], doc["uses_external_resources"], doc["has_ir_metadata"]) == (False, True, True)
    with svc.api(svc.tokens["alpha"]) as c:
        stored = c.get(f"/api/runs/{doc['id']}").json()
    assert {k: stored[k] for k in ("run_type", "uses_training_data", "uses_external_resources", "has_ir_metadata")} \
        == {"run_type": "manual", "uses_training_data": False, "uses_external_resources": True,
            "has_ir_metadata": True}


def test_a_bad_run_file_gives_its_line_and_stores_nothing(svc: Service) -> None:
    tag, text = svc.runs.popitem()
    lines = text.splitlines()
    lines[2] = lines[2].rsplit(" ", 2)[0] + " not-a-score " + tag
    path = _write(svc, "broken.run", "\n".join(lines) + "\n")
    before = svc.run_count(svc.task)
    done = remote(svc, "submit", "task", str(path), token=svc.tokens["alpha"])
    assert done.returncode == 1 and done.stdout == ""
    assert f"cranfield: error: {path}:3: " in done.stderr and "Traceback" not in done.stderr
    assert svc.run_count(svc.task) == before


def test_a_submission_sent_twice_with_one_key_is_stored_once(svc: Service) -> None:
    _, text = svc.runs.popitem()
    path = _write(svc, "keyed.run", text)
    before = svc.run_count(svc.task)
    answers = [remote(svc, "submit", "task", str(path), "--idempotency-key", "retry-me-1", "--format", "json",
                      token=svc.tokens["beta"]) for _ in range(2)]
    assert [a.returncode for a in answers] == [0, 0], answers[1].stderr
    assert json.loads(answers[0].stdout)["id"] == json.loads(answers[1].stdout)["id"]
    assert svc.run_count(svc.task) == before + 1


def test_an_upload_whose_answer_is_lost_is_retried_and_stored_once(svc: Service) -> None:
    """The connection drops after the server stored the run: the client sends it again with the
    same Idempotency-Key and gets the first answer (one run stored)."""
    tag, text = svc.runs.popitem()
    path = _write(svc, "dropped.run", text)
    before = svc.run_count(svc.task)
    with DroppingProxy(int(svc.base.rsplit(":", 1)[1])) as proxy:
        done = remote(svc, "submit", "task", str(path), token=svc.tokens["beta"], url=proxy.url)
    assert done.returncode == 0, done.stderr
    assert (proxy.posts, proxy.dropped) == (2, 1)  # the first answer was lost, the retry answered
    assert svc.run_count(svc.task) == before + 1
    with svc.api(svc.tokens["organiser"]) as c:
        tags = [r["tag"] for r in c.get(f"/api/collections/{svc.task}/runs").json()["items"]]
    assert tags.count(tag) == 1


def test_wait_fails_when_the_evaluation_fails(svc: Service) -> None:
    """A run longer than the server's CRANFIELD_EVAL_MAX_LINES fails its evaluation."""
    topics = sorted({ln.split()[0] for ln in next(iter(svc.runs.values())).splitlines()})
    big = "".join(f"{t} Q0 d{i} {i + 1} {1000 - i} huge\n" for t in topics for i in range(200))
    path = _write(svc, "huge.run", big)
    done = remote(svc, "submit", "task", str(path), "--wait", "--timeout", "90", token=svc.tokens["beta"])
    assert done.returncode == 1
    assert "): failed\n" in done.stdout and "cranfield: error: run " in done.stderr and "failed" in done.stderr
    job = int(done.stdout.splitlines()[1].split()[1])
    waited = remote(svc, "wait", str(job), "--timeout", "60", token=svc.tokens["organiser"])
    assert waited.returncode == 1 and f"job {job}" in waited.stderr and "failed" in waited.stderr


# ------------------------------------------------------------------------------ board, scores
def test_board_in_three_formats_agrees_with_the_api(svc: Service) -> None:
    with svc.api(svc.tokens["organiser"]) as c:
        api = c.get(f"/api/collections/{svc.board}/leaderboard").json()
        api_ap = c.get(f"/api/collections/{svc.board}/leaderboard", params={"metric": "AP"}).json()
    assert len(api["rows"]) == 3
    expected = [(r["rank"], r["run"], r["team"], r["mean"]) for r in api["rows"]]

    as_json = remote(svc, "board", "board", "--format", "json", token=svc.tokens["organiser"])
    assert as_json.returncode == 0, as_json.stderr
    doc = json.loads(as_json.stdout)
    assert doc["metric"] == "nDCG@10" and doc["rows"] == api["rows"]

    for fmt, delimiter, precision in (("csv", ",", 1e-9), ("tsv", "\t", 5e-5)):  # tsv: 4 decimals, for people
        done = remote(svc, "board", str(svc.board), "--format", fmt, token=svc.tokens["organiser"])
        assert done.returncode == 0, done.stderr
        assert "\\x0d" not in done.stdout and "\r" not in done.stdout, fmt  # lines end LF, no escaped CR
        rows = list(csv.DictReader(io.StringIO(done.stdout), delimiter=delimiter))
        got = [(int(r["rank"]), r["run"], r["team"], float(r["mean"])) for r in rows]
        assert [g[:3] for g in got] == [e[:3] for e in expected], fmt
        assert all(g[3] == pytest.approx(e[3], abs=precision) for g, e in zip(got, expected)), fmt
    # the tsv is for people: a few columns named in words, 4 decimals, the interval as [low, high],
    # what the board is (metric, qrels version, interval, test) said on stderr
    tsv = remote(svc, "board", str(svc.board), token=svc.tokens["organiser"])
    header, *lines = tsv.stdout.splitlines()
    assert header.split("\t") == ["rank", "run", "team", "mean", "interval", "topics", "baseline", "groups"]
    for line, row in zip(lines, api["rows"]):
        cells = line.split("\t")
        assert cells[3] == f"{row['mean']:.4f}" and re.fullmatch(r"\[\d\.\d{4}\u2020?, \d\.\d{4}\u2020?\]", cells[4])
    assert "ci_low" not in tsv.stdout and "boot_" not in tsv.stdout and "t_truncated" not in tsv.stdout
    assert f"cranfield: nDCG@10 on qrels version {api['qrels_version']}; interval: {api['interval']}" in tsv.stderr
    assert "not released" not in tsv.stderr  # the organisers' board ranks every run

    by_ap = remote(svc, "board", "board", "--metric", "AP", token=svc.tokens["organiser"])
    means = {r["run"]: float(r["mean"]) for r in csv.DictReader(io.StringIO(by_ap.stdout), delimiter="\t")}
    assert means == pytest.approx({r["run"]: r["mean"] for r in api_ap["rows"]}, abs=5e-5)  # 4 decimals


def test_scores_in_trec_layout_agree_with_the_api(svc: Service) -> None:
    tag, rid = next((t, i) for t, i in svc.board_runs.items() if i != svc.beta_run)
    done = remote(svc, "scores", str(rid), "--format", "trec", token=svc.tokens["alpha"])
    assert done.returncode == 0, done.stderr
    # the run is named as `cranfield eval --format trec` names it: trec_eval's runid line first
    assert done.stdout.splitlines()[0] == f"runid\tall\t{tag}", done.stdout
    got: dict[tuple[str, str], str] = {}
    for line in done.stdout.splitlines()[1:]:
        measure, topic, value = line.split("\t")
        got[(measure.strip(), topic)] = value
    with svc.api(svc.tokens["alpha"]) as c:
        for metric in ("nDCG@10", "AP", "P@10"):
            doc = c.get(f"/api/runs/{rid}/scores", params={"metric": metric}).json()
            scores = doc["runs"][tag]
            assert float(got.pop((metric, "all"))) == pytest.approx(scores["mean"], abs=1e-4)
            for topic, value in scores["per_topic"].items():
                assert float(got.pop((metric, topic))) == pytest.approx(value, abs=1e-4), (metric, topic)
    assert not got  # nothing else

    by_tag = remote(svc, "scores", tag, "--format", "trec", token=svc.tokens["alpha"])  # the tag a team knows
    assert by_tag.returncode == 0 and by_tag.stdout == done.stdout, by_tag.stderr
    in_coll = remote(svc, "scores", tag, "--collection", "board", token=svc.tokens["alpha"])
    assert in_coll.returncode == 0 and in_coll.stdout == done.stdout, in_coll.stderr
    two = remote(svc, "scores", tag, "-m", "AP", "-m", "P@10", token=svc.tokens["alpha"])  # merged: named once
    assert two.returncode == 0 and two.stdout.splitlines()[0] == f"runid\tall\t{tag}", two.stderr
    assert two.stdout.count("runid") == 1 and {ln.split("\t")[0] for ln in two.stdout.splitlines()[1:]} == {
        "AP", "P@10"}
    as_json = remote(svc, "scores", str(rid), "--format", "json", "-m", "AP", token=svc.tokens["alpha"])
    doc = json.loads(as_json.stdout)
    assert doc["run"] == tag and list(doc["metrics"]) == ["AP"]
    with svc.api(svc.tokens["alpha"]) as c:
        assert doc["metrics"]["AP"] == c.get(f"/api/runs/{rid}/scores", params={"metric": "AP"}).json()["runs"][tag]


def test_a_participant_cannot_read_another_teams_unreleased_run(svc: Service) -> None:
    for args in (("scores", str(svc.beta_run)), ("wait", "--run", str(svc.beta_run))):
        done = remote(svc, *args, token=svc.tokens["alpha"])
        assert done.returncode == 1 and done.stdout == ""
        assert "403" in done.stderr and "not allowed" in done.stderr and "Traceback" not in done.stderr
    # before release, a participant's board holds its own team's runs only, and the client says so
    own = remote(svc, "board", "board", "--format", "json", token=svc.tokens["alpha"])
    assert {r["team"] for r in json.loads(own.stdout)["rows"]} == {"alpha"}
    own_tsv = remote(svc, "board", "board", token=svc.tokens["alpha"])
    assert "cranfield: the board is not released: it ranks your team's runs only" in own_tsv.stderr
    beta_tag = next(t for t, i in svc.board_runs.items() if i == svc.beta_run)
    by_tag = remote(svc, "scores", beta_tag, token=svc.tokens["alpha"])  # a tag alpha may not list: unknown
    assert by_tag.returncode == 1 and f"no run tagged {beta_tag!r}" in by_tag.stderr
    missing = remote(svc, "board", "no-such-collection", token=svc.tokens["alpha"])
    assert missing.returncode == 1 and "no collection named 'no-such-collection'" in missing.stderr


# ------------------------------------------------------------------------------ a proxy that loses an answer
class DroppingProxy:
    """A TCP proxy to 127.0.0.1:``port`` that closes the connection instead of passing on the
    answer to the first POST it forwards: the server has stored the upload, the client saw
    the connection drop without an answer."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.posts = 0
        self.dropped = 0
        self.lock = threading.Lock()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.threads: list[threading.Thread] = []

    def __enter__(self) -> Self:
        self._start(self._accept)
        return self

    def __exit__(self, *exc: object) -> None:
        self.listener.close()

    def _start(self, target, *args) -> None:  # type: ignore[no-untyped-def]
        thread = threading.Thread(target=target, args=args, daemon=True)
        thread.start()
        self.threads.append(thread)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            self._start(self._connection, client)

    def _connection(self, client: socket.socket) -> None:
        upstream = socket.create_connection(("127.0.0.1", self.port))
        drop = threading.Event()

        def forward() -> None:  # client -> server; a request's first bytes start a recv here
            try:
                while data := client.recv(65536):
                    if data.startswith(b"POST "):
                        with self.lock:
                            self.posts += 1
                            if self.posts == 1:
                                drop.set()
                    upstream.sendall(data)
            except OSError:
                pass

        self._start(forward)
        try:
            while data := upstream.recv(65536):
                if drop.is_set():  # the server answered the first POST: lose the answer
                    with self.lock:
                        self.dropped += 1
                    break
                client.sendall(data)
        except OSError:
            pass
        finally:
            for s in (client, upstream):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()
