"""Issue 37, "data exact": every TSV and CSV that the API, the portal and the CLI write is data.
Each cell is read by its column: a boolean column holds ``true``/``false`` only (empty where a
value is not stated), never ``True``/``False``/``yes``/``no``; a numeric column holds numbers
(``float`` reads them; empty or NaN where missing), never ``< 0.001``, ``12%`` or ``1,234``; a
time column holds ISO 8601 (``datetime.fromisoformat``); anything else is words. And
``cranfield compare``'s TSV p is its JSON p, float for float.

The routes are not listed here but found: every API operation whose ``format`` parameter offers
csv or tsv (the OpenAPI schema) and every portal route ending ``.csv``/``.tsv``, so a new one is
read without a change here (and fewer than ``ROUTE_FLOOR`` fails: the enumeration itself broke).
The state is built once for the module, on SQLite: the world of conftest.py ("task": three
runs, two teams), with a baseline run, a second qrels version, a snapshot and a reproduction;
the same app is served on a port for ``cranfield remote``. The local commands read the sample
collection (samples/ntcir-like).
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from service.config import settings
from service.portal.forms import COOKIE, csrf_for
from tests.integration.conftest import REPO, Templates, _seed_world, _sqlite_backend, auth, run_inline
from tests.support.ports import free_port
from tests.support.sessions import open_portal_session

SQLITE_ONLY_BUT: set[str] = set()  # a question of formats: SQLite only

SAMPLE = REPO / "samples" / "ntcir-like"
RUNS = sorted(str(p) for p in (SAMPLE / "runs").glob("*.run"))
ROUTE_FLOOR = 12  # 6 API operations with format=csv, 7 portal .csv routes (2026-11): fewer means a lost route

# ------------------------------------------------------------------------------ the classifier
BOOLEAN_NAMES = {"baseline", "same_collection", "primary", "enrolled", "released", "official", "significant",
                 "undecided", "stale", "withheld", "leaderboard_released", "reevaluation_in_progress"}
BOOLEAN_PREFIXES = ("uses_", "has_", "is_")
BOOLEAN_LOOKING = {"true", "false", "True", "False", "yes", "no"}
# a number spoiled for a program: a bound instead of the value, a percent sign, thousands separators
SPOILED = re.compile(r"^\s*(?:[<>\u2264\u2265]=?\s*[-+]?\d|[-+]?\d[\d.]*\s*%$|[-+]?\d{1,3}(?:,\d{3})+(?:\.\d+)?$)")
PYTHON_WORDS = {"None", "True", "False", "null"}
# names and identifiers: words, whatever they look like (topic "0001", trec_eval's topic "all")
WORD_NAMES = {"topic", "run", "run_a", "run_b", "tag", "team", "docno", "name", "label", "metric", "measure", "set",
              "judgment_set", "groups", "verdict"}


def is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def is_boolean_name(name: str) -> bool:
    name = name.strip().lstrip("#").lower()
    return name in BOOLEAN_NAMES or name.startswith(BOOLEAN_PREFIXES)


def is_time_name(name: str) -> bool:
    name = name.strip().lstrip("#").lower()
    return name.endswith("_at") or "time" in name or "date" in name or name in ("opens", "closes", "frozen")


def problems(header: list[str], rows: list[list[str]], where: str) -> list[str]:
    """What is not data in a table: each cell read by its column's kind."""
    found: list[str] = []
    if not rows:
        return found
    for k, name in enumerate(header):
        values = [row[k] for row in rows if k < len(row)]
        stated = [v for v in values if v != ""]
        label = f"{where}: column {name!r}"
        for v in stated:
            if v in PYTHON_WORDS:
                found.append(f"{label}: {v!r} (a program's word, not data)")
            elif SPOILED.match(v):
                found.append(f"{label}: {v!r} (a number for people, not data)")
        if name.strip().lstrip("#").lower() in WORD_NAMES:
            continue
        if is_boolean_name(name) or (stated and set(stated) <= BOOLEAN_LOOKING):
            found += [f"{label}: {v!r} is not true/false" for v in sorted(set(values) - {"true", "false", ""})]
        elif is_time_name(name):
            for v in sorted(set(stated)):
                try:
                    datetime.fromisoformat(v)
                except ValueError:
                    found.append(f"{label}: {v!r} is not ISO 8601")
        elif stated and sum(map(is_number, stated)) * 2 >= len(stated):  # a numeric column
            found += [f"{label}: {v!r} is not a number" for v in sorted(set(stated)) if not is_number(v)]
    return found


def tables(text: str, delimiter: str, header: list[str] | None = None) -> list[tuple[list[str], list[list[str]]]]:
    """The tables of a TSV or CSV text: blocks parted by blank lines; in each, the last ``#`` line
    holding the delimiter before the data is its header (``#measure<TAB>metric...``), other
    ``#`` lines are notes; without one the first line is the header (or ``header``, for a text
    that has none)."""
    out = []
    for block in re.split(r"\n\s*\n", text.replace("\r\n", "\n").strip("\n")):
        head: list[str] | None = None
        data: list[str] = []
        for line in block.splitlines():
            if line.startswith("#"):
                if not data and delimiter in line:
                    head = next(csv.reader([line[1:]], delimiter=delimiter))
                continue
            data.append(line)
        rows = list(csv.reader(data, delimiter=delimiter))
        if head is None:
            if header is not None:
                head = header
            elif rows:
                head, rows = rows[0], rows[1:]
            else:
                continue
        out.append((head, rows))
    return out


def check(text: str, delimiter: str, where: str, header: list[str] | None = None) -> int:
    """Fail on whatever in ``text`` is not data; the number of data rows read."""
    read = tables(text, delimiter, header)
    assert read, f"{where}: no table in {text[:300]!r}"
    found = [p for head, rows in read for p in problems(head, rows, where)]
    assert not found, "\n".join(found)
    return sum(len(rows) for _, rows in read)


def test_the_classifier_finds_what_is_not_data() -> None:
    """The check itself: each kind of cell a writer for people would put in a data file is found."""
    bad = {"baseline": "yes", "primary": "True", "official": "no", "flag": "False",
           "p": "< 0.001", "share": "12%", "lines": "1,234", "mean": "0.2x",
           "submitted_at": "2026-11-28 23:31 CET", "team": "None"}
    header = list(bad)
    rows = [list(bad.values()), ["true", "false", "true", "True", "0.5", "0.1", "3", "0.1", "2026-11-28T22:31:00+00:00",
                                 "alpha"]]
    found = "\n".join(problems(header, rows, "t"))
    for name in header:
        assert f"column {name!r}" in found, (name, found)
    good = [["true", "", "false", "nan", "1e-05", "2026-11-28T22:31:51.595008+00:00", "RUN-01", "0001"],
            ["false", "true", "", "", "0.25", "", "a team", "0002"]]
    assert problems(["baseline", "uses_training_data", "official", "p", "mean", "submitted_at", "run", "topic"],
                    good, "t") == []
    assert tables("#a\tb\n1\t2\n# note\n\nc\n3\n", "\t") == [(["a", "b"], [["1", "2"]]), (["c"], [["3"]])]


# ------------------------------------------------------------------------------ the state
@dataclass
class Site:
    client: Any  # litestar.testing.TestClient
    base: str  # the same app, served on a port (for `cranfield remote`)
    database_url: str
    tokens: dict[str, str]
    cookie: str  # the organiser's portal session
    cid: int
    sid: int  # a snapshot of "task"
    env: dict[str, str]  # the variables of the site: its database, its URL, a config folder


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory, templates: Templates) -> Iterator[Site]:
    import uvicorn
    from litestar.testing import TestClient

    from service.api.app import create_app
    from service.store.db import engine_for
    from service.store.migrate import upgrade

    saved = dict(os.environ)
    tmp = Path(tmp_path_factory.mktemp("data-formats"))
    be = _sqlite_backend(tmp)
    server = None
    thread = None
    try:
        if templates.has("sqlite", "world"):  # the session's world, if a test built it already
            templates.restore(be, "world")
            seed = templates.seeds["sqlite"]
        else:
            upgrade(be.database_url)
            be.activate()
            seed = _seed_world(be)
        be.activate()
        factory = be.factory()
        app = create_app(be.database_url, lambda followups: run_inline(factory, followups))
        served = create_app(be.database_url, lambda followups: run_inline(factory, followups))
        port = free_port()
        server = uvicorn.Server(uvicorn.Config(served, host="127.0.0.1", port=port, log_level="warning"))
        thread = threading.Thread(target=server.run, name="data-formats-server", daemon=True)
        thread.start()
        deadline = time.monotonic() + 30
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "the served app did not start"
            time.sleep(0.05)
        env = {k: v for k, v in os.environ.items() if k != "XDG_CONFIG_HOME"}
        env.update({**be.env, "PYTHONPATH": str(REPO), "XDG_CONFIG_HOME": str(tmp / "config"),
                    "CRANFIELD_URL": f"http://127.0.0.1:{port}"})
        with TestClient(app=app) as client:
            yield _build(client, f"http://127.0.0.1:{port}", be.database_url, factory, seed, env)
    finally:
        if server is not None and thread is not None:
            server.should_exit = True
            thread.join(timeout=30)
        engine_for(be.database_url).dispose()
        os.environ.clear()
        os.environ.update(saved)
        settings.cache_clear()


def _build(c: Any, base: str, url: str, factory: Any, seed: Any, env: dict[str, str]) -> Site:
    tokens, cid = dict(seed.tokens), seed.cid
    org = auth(tokens["organiser"])
    r = c.patch(f"/api/collections/{cid}", json={"daily_run_quota": None}, headers=org)
    assert r.status_code == 200, r.text
    # a baseline on the board, and a run whose stated fields are true, false and not stated
    run_ids = dict(seed.run_ids)
    r = c.patch(f"/api/runs/{run_ids['RUN-03']}/settings", json={"baseline": True}, headers=org)
    assert r.status_code == 200, r.text
    # a reproduction of RUN-01 (same collection), measured
    r = c.post(f"/api/collections/{cid}/reproduction-originals", json={"run": run_ids["RUN-01"], "label": "paper"},
               headers=org)
    assert r.status_code == 201, r.text
    r = c.post(f"/api/collections/{cid}/runs", content=seed.runs["RUN-02"].replace("RUN-02", "repro-1"),
               headers=auth(tokens["beta"]))
    assert r.status_code == 201, r.text
    r = c.post(f"/api/runs/{r.json()['id']}/reproduction", json={"original_run": run_ids["RUN-01"]},
               headers=auth(tokens["beta"]))
    assert r.status_code in (200, 201), r.text
    # a second qrels version (the portal compares the two), then a snapshot of the board
    r = c.post(f"/api/collections/{cid}/qrels", content=seed.qrels.replace(" L0\n", " L2\n", 6), headers=org)
    assert r.status_code == 201, r.text
    cookie = open_portal_session(factory, tokens["organiser"])
    r = c.post(f"/c/{cid}/snapshots", data={"csrf": csrf_for(cookie), "label": "official", "metric": "AP"},
               headers={"Cookie": f"{COOKIE}={cookie}"}, follow_redirects=False)
    assert r.status_code == 303, r.text[:500]
    sid = int(re.search(r"/snapshots/(\d+)", r.headers["location"]).group(1))
    return Site(c, base, url, tokens, cookie, cid, sid, env)


# ------------------------------------------------------------------------------ the API and the portal
def _format_routes(site: Site) -> list[tuple[str, str, dict[str, str]]]:
    """(path, format, query) of every GET that answers CSV or TSV: the OpenAPI operations with a
    ``format`` parameter offering csv or tsv, and the portal's .csv/.tsv routes."""
    schema = site.client.get("/schema/openapi.json").json()

    def enum(node: Any) -> list[Any]:
        if not isinstance(node, dict):
            return []
        if "$ref" in node:
            node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
        found = list(node.get("enum") or []) + ([node["const"]] if "const" in node else [])
        for key in ("oneOf", "anyOf", "allOf"):
            for sub in node.get(key, []):
                found += enum(sub)
        return found

    routes = []
    for path, item in schema["paths"].items():
        op = item.get("get")
        for param in (op or {}).get("parameters", []):
            if param["name"] == "format" and param["in"] == "query":
                routes += [(path, fmt, {"format": fmt}) for fmt in ("csv", "tsv") if fmt in enum(param.get("schema"))]
    for route in site.client.app.routes:
        if route.path.endswith((".csv", ".tsv")) and "GET" in getattr(route, "methods", ()):
            routes.append((route.path, route.path.rsplit(".", 1)[1], {}))
    return routes


def _concrete(path: str, site: Site) -> str:
    values = {"cid": site.cid, "sid": site.sid}

    def value(match: re.Match[str]) -> str:
        name = match.group(1).split(":")[0]
        assert name in values, f"{path}: no value for the path parameter {name!r} (add one to _concrete)"
        return str(values[name])

    return re.sub(r"\{([^}]+)\}", value, path)


def test_every_csv_and_tsv_the_api_and_portal_write_is_data(site: Site) -> None:
    routes = _format_routes(site)
    assert len(routes) >= ROUTE_FLOOR, f"only {len(routes)} CSV/TSV routes found: {routes}"
    headers = {"Authorization": f"Bearer {site.tokens['organiser']}", "Cookie": f"{COOKIE}={site.cookie}"}
    read = {}
    for path, fmt, query in routes:
        url = _concrete(path, site)
        r = site.client.get(url, params=query, headers=headers)
        assert r.status_code == 200, (url, query, r.status_code, r.text[:500])
        read[f"{url} {fmt}"] = check(r.text, "," if fmt == "csv" else "\t", f"GET {url}?{query}")
    empty = [name for name, n in read.items() if n == 0]
    assert not empty, f"answered no rows (nothing was checked): {empty}"


def test_a_csvs_figures_are_the_jsons_floats(site: Site) -> None:
    """Full precision: the qrels comparison's CSV (it rounded to 6 decimals) reads back as the
    very floats of its JSON, as the boards' CSVs do."""
    headers = {"Authorization": f"Bearer {site.tokens['organiser']}", "Cookie": f"{COOKIE}={site.cookie}"}
    doc = site.client.get(f"/api/collections/{site.cid}/qrels/compare", params={"a": "1", "b": "2"},
                          headers=headers).json()
    rows = list(csv.DictReader(io.StringIO(site.client.get(f"/c/{site.cid}/qrels/compare.csv",
                                                           params={"a": "1", "b": "2"}, headers=headers).text)))
    want = doc["topics"]["disagreeing"]
    assert [r["topic"] for r in rows] == [t["topic"] for t in want] and want
    for row, topic in zip(rows, want):
        for key in ("tau", "disagreement", "mean_a", "mean_b", "mean_difference"):
            assert (row[key] == "" and topic[key] is None) or float(row[key]) == topic[key], (key, row, topic)
    board = site.client.get(f"/api/collections/{site.cid}/leaderboard", headers=headers).json()
    means = {r["run"]: float(r["mean"]) for r in csv.DictReader(io.StringIO(site.client.get(
        f"/api/collections/{site.cid}/leaderboard", params={"format": "csv"}, headers=headers).text))}
    assert means == {r["run"]: r["mean"] for r in board["rows"]}


# ------------------------------------------------------------------------------ the CLI
def cli(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """``cranfield ARGS`` in this process (a subprocess would spend a second importing)."""
    from service.cli import main

    capsys.readouterr()
    code = main(list(args))
    out, err = capsys.readouterr()
    assert code == 0, (args, err[-2000:])
    return out


def test_the_remote_commands_tsv_and_csv_are_data(site: Site, capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("CRANFIELD_URL", "CRANFIELD_TOKEN", "XDG_CONFIG_HOME"):
        monkeypatch.setenv(name, site.env[name] if name != "CRANFIELD_TOKEN" else site.tokens["organiser"])
    commands = [("runs", "task", "--format", "tsv"), ("collections", "--format", "tsv"),
                ("board", "task", "--format", "tsv"), ("board", "task", "--format", "csv"),
                ("board", "task", "--metric", "AP", "--format", "tsv"),
                ("repro-board", "task", "--format", "tsv"), ("repro-board", "task", "--format", "csv")]
    for args in commands:
        out = cli(capsys, "remote", *args)
        assert check(out, "," if "csv" in args else "\t", f"cranfield remote {' '.join(args)}") > 0, (args, out)
    # the board's baseline column (issue 37: it said yes or nothing)
    board = cli(capsys, "remote", "board", "task")
    baselines = {row["run"]: row["baseline"] for row in csv.DictReader(io.StringIO(board), delimiter="\t")}
    assert baselines == {"RUN-01": "false", "RUN-02": "false", "RUN-03": "true", "repro-1": "false"}, baselines


def test_the_database_commands_tsv_is_data(site: Site, capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRANFIELD_DATABASE_URL", site.database_url)
    settings.cache_clear()
    for args in (("leaderboard", "--collection", "task"), ("leaderboard", "--collection", "task", "-m", "AP"),
                 ("jobs", "--collection", "task")):
        assert check(cli(capsys, *args), "\t", f"cranfield {' '.join(args)}") > 0, args


LOCAL = [
    ("eval", "--qrels", str(SAMPLE / "qrels.ntcir"), *RUNS[:3], "-m", "AP", "-m", "nDCG@10"),
    ("eval", "--qrels", str(SAMPLE / "qrels.ntcir"), *RUNS[:3], "-m", "AP", "--per-topic"),
    ("eval", "--qrels", str(SAMPLE / "qrels.ntcir"), *RUNS[:3], "-m", "AP", "--format", "matrix"),
    ("compare", "--qrels", str(SAMPLE / "qrels.ntcir"), *RUNS[:4], "-m", "AP", "--test", "t", "--correction", "holm"),
    ("compare", "--qrels", str(SAMPLE / "qrels.ntcir"), *RUNS[:4], "-m", "AP", "--test", "bootstrap", "--B", "200"),
    ("metaeval", "--qrels", str(SAMPLE / "qrels.ntcir"), *RUNS[:4], "-m", "AP", "-m", "nDCG@10", "--B", "100"),
    ("repro", "--qrels", str(SAMPLE / "qrels.ntcir"), "--orig", *RUNS[:2], "--rep", *RUNS[2:4], "--resamples", "100"),
    ("topicsize", "--qrels", str(SAMPLE / "qrels.ntcir"), *RUNS[:3], "-m", "AP"),
]
HEADERLESS = {"eval": ["run", "topic", "metric", "value"]}  # trec_eval's lines: no header of their own


@pytest.mark.parametrize("args", LOCAL, ids=lambda a: " ".join(x for x in a[:1] + a[-4:] if not x.startswith("/")))
def test_the_local_commands_tsv_is_data(args: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    out = cli(capsys, *args)
    header = None if "matrix" in args else HEADERLESS.get(args[0])
    assert check(out, "\t", f"cranfield {' '.join(args)}", header) > 0


def test_compares_tsv_p_is_its_json_p(capsys: pytest.CaptureFixture[str]) -> None:
    common = ("compare", "--qrels", str(SAMPLE / "qrels.ntcir"), *RUNS[:5], "-m", "AP", "-m", "nDCG@10",
              "--test", "t", "--correction", "bh")
    doc = json.loads(cli(capsys, *common, "--format", "json"))
    (head, rows), = [t for t in tables(cli(capsys, *common), "\t") if "p" in t[0]]
    want = {(m, p["run_a"], p["run_b"]): p for m, body in doc["metrics"].items() for p in body["pairs"]}
    assert len(rows) == len(want) == 2 * 10
    for row in rows:
        cell = dict(zip(head, row))
        pair = want[(cell["metric"], cell["run_a"], cell["run_b"])]
        for key in ("p", "p_adjusted"):
            assert float(cell[key]) == pair[key] or (math.isnan(float(cell[key])) and pair[key] is None), (key, cell)
