"""A client generated from the served OpenAPI document works: openapi-python-client builds it
from `/schema/openapi.json` of a real `cranfield serve` process without a single warning (every
error response is the problem document the server sends, every upload has a body the generator
takes), and its calls, uploads and errors included, pass against that server.

One server (SQLite, its embedded worker) and one generation for the whole module.
"""

from __future__ import annotations

import importlib
import io
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest

from service.sample import CollectionSpec, generate
from tests.integration.conftest import REPO, wait_for
from tests.integration.test_api_server import _ready, stop
from tests.support.ports import free_port

PACKAGE = "cranfield_generated_client"
# Operations whose bodies the generator could not take when they were text/plain only.
FORMERLY_MISSING = ("judging/upload_judgments.py", "judgment_sets/upload_labels.py",
                    "judges_track/submit_judgments.py")


@dataclass
class Server:
    base: str
    admin: str
    document: dict[str, Any]
    generator_output: str
    generator_status: int
    package_dir: Path





@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("generated-client")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRANFIELD_")}
    env.update({"PYTHONPATH": str(REPO), "CRANFIELD_DATABASE_URL": f"sqlite:///{tmp / 'cranfield.sqlite'}",
                "CRANFIELD_BROKER_URL": "filesystem://", "CRANFIELD_BROKER_FOLDER": str(tmp / "broker"),
                "CRANFIELD_QUEUE": f"q-{os.getpid()}-{time.monotonic_ns()}"})
    cli = [sys.executable, "-m", "service.cli"]
    admin = subprocess.run([*cli, "token", "create", "--role", "admin"], env=env, cwd=tmp, check=True,
                           capture_output=True, text=True).stdout.strip()
    port = free_port()
    proc = subprocess.Popen([*cli, "serve", "--port", str(port)], env=env, cwd=tmp, start_new_session=True,
                            stdout=open(tmp / "serve.log", "w"), stderr=subprocess.STDOUT)  # noqa: SIM115
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _ready(base), 60, "the API to be ready")
        document = httpx.get(f"{base}/schema/openapi.json", timeout=30).json()
        (tmp / "openapi.json").write_text(json.dumps(document))
        # No post hooks: they would run ruff over the generated code, which this test does not need.
        (tmp / "generator.json").write_text(json.dumps({"package_name_override": PACKAGE, "post_hooks": []}))
        package_dir = tmp / "client" / PACKAGE
        generated = subprocess.run(
            [sys.executable, "-m", "openapi_python_client", "generate", "--path", str(tmp / "openapi.json"),
             "--config", str(tmp / "generator.json"), "--meta", "none", "--output-path", str(package_dir)],
            check=False, cwd=tmp, capture_output=True, text=True, timeout=600)
        sys.path.insert(0, str(package_dir.parent))
        try:
            yield Server(base, admin, document, generated.stdout + generated.stderr, generated.returncode,
                         package_dir)
        finally:
            sys.path.remove(str(package_dir.parent))
            for name in [m for m in sys.modules if m == PACKAGE or m.startswith(f"{PACKAGE}.")]:
                del sys.modules[name]
    finally:
        stop(proc)


def _module(name: str) -> ModuleType:
    return importlib.import_module(f"{PACKAGE}.{name}")


def test_the_served_document_generates_a_client_without_a_warning(server: Server) -> None:
    assert server.generator_status == 0, server.generator_output
    assert "warning" not in server.generator_output.lower(), server.generator_output
    assert "error" not in server.generator_output.lower(), server.generator_output
    operations = [op for item in server.document["paths"].values() for op in item.values()
                  if isinstance(op, dict) and "operationId" in op]
    modules = list((server.package_dir / "api").glob("*/*.py"))
    assert len([m for m in modules if m.name != "__init__.py"]) == len(operations)
    for path in FORMERLY_MISSING:
        assert (server.package_dir / "api" / path).is_file(), path


def test_calls_through_the_generated_client(server: Server) -> None:
    client_module, models, types = _module("client"), _module("models"), _module("types")
    api = {name: _module(f"api.{name}") for name in (
        "collections.create_collection", "collections.list_collections", "collections.get_collection",
        "teams_and_tokens.create_team", "teams_and_tokens.enrol_team", "qrels.upload_qrels", "runs.submit_run",
        "boards.get_leaderboard", "judgment_sets.create_judgment_set", "judgment_sets.upload_labels")}

    def call(name: str, *args: Any, **kwargs: Any) -> Any:
        return api[name].sync(*args, client=client, **kwargs)

    def file(text: str, name: str = "upload.txt") -> Any:
        return types.File(payload=io.BytesIO(text.encode()), file_name=name, mime_type="text/plain")

    # an undeclared status raises: every answer below is one the document declares
    client = client_module.AuthenticatedClient(base_url=server.base, token=server.admin, timeout=httpx.Timeout(60),
                                               raise_on_unexpected_status=True)
    with client:
        coll = call("collections.create_collection",
                    body=models.CollectionCreate(name="generated", official_metric="AP"))
        assert isinstance(coll, models.CollectionOut) and coll.name == "generated"
        page = call("collections.list_collections")
        assert isinstance(page, models.CollectionPage) and "generated" in [c.name for c in page.items]

        missing = call("collections.get_collection", 999_999)
        assert isinstance(missing, models.ProblemDocument), missing
        assert missing.status == 404 and missing.code == "not_found" and missing.error.code == "not_found"

        for team in ("alpha", "beta"):
            assert isinstance(call("teams_and_tokens.create_team", body=models.TeamCreate(name=team)),
                              models.TeamOut)
            assert isinstance(call("teams_and_tokens.enrol_team", coll.id, body=models.EnrolmentIn(team=team)),
                              models.EnrolmentOut)

        qrels, runs = generate(CollectionSpec(topics=4, runs=2, depth=10, docs_per_topic=30, judged_per_topic=15))
        uploaded = call("qrels.upload_qrels", coll.id, body=file(qrels, "qrels.ntcir"))  # the raw body
        assert isinstance(uploaded, models.QrelsUploaded) and uploaded.version == 1, uploaded
        (tag_a, run_a), (tag_b, run_b) = runs.items()
        raw = call("runs.submit_run", coll.id, body=file(run_a), team="alpha")
        assert isinstance(raw, models.Submitted) and raw.tag == tag_a, raw
        form = call("runs.submit_run", coll.id, team="beta", body=models.SubmitRunFilesBody(
            file=file(run_b, "run.txt"), description="sent as a multipart form"))
        assert isinstance(form, models.Submitted) and form.tag == tag_b, form

        bad = call("runs.submit_run", coll.id, body=file("0001 Q0 a 1 x bad\n"), team="alpha")
        assert isinstance(bad, models.ProblemDocument) and bad.status == 422 and bad.line == 1, bad

        def board() -> Any:
            doc = call("boards.get_leaderboard", coll.id)
            return doc if isinstance(doc, models.Leaderboard) and len(doc.rows) == 2 else None

        board_doc = wait_for(board, 120, "the leaderboard of the generated client's runs")
        assert board_doc.metric == "AP" and sorted(row.run for row in board_doc.rows) == sorted(runs)
        assert [row.rank for row in board_doc.rows] == [1, 2]

        # an upload that was text/plain only: assessors' labels, raw and as a form
        made = call("judgment_sets.create_judgment_set", coll.id, body=models.JudgmentSetCreate(name="panel"))
        assert isinstance(made, models.JudgmentSetOut), made
        judged = [line.split() for line in qrels.splitlines()[:6]]
        labels = "".join(f"{topic} {docno} anna {level}\n" for topic, docno, level in judged)
        first = call("judgment_sets.upload_labels", coll.id, "panel", body=file(labels))
        assert isinstance(first, models.LabelsUploaded), first
        assert first.labels == 6 and first.assessors == ["anna"] and first.judgment_set == "panel"
        again = "".join(f"{topic} {docno} ben {level}\n" for topic, docno, level in judged)
        second = call("judgment_sets.upload_labels", coll.id, "panel",
                      body=models.UploadLabelsFilesBody(file=file(again, "ben.txt")))
        assert isinstance(second, models.LabelsUploaded), second
        assert second.version == first.version + 1 and second.assessors == ["ben"]
