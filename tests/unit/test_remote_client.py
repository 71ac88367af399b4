"""The remote client's parts that need no server: the config file, which token goes where,
problem documents as domain errors, the trec layout. tests/integration/test_remote_client.py
drives `cranfield remote` against a running server."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import httpx
import pytest

from service.cli.remote import _merged_trec, _named, _remote, trec_layout
from service.client import credentials
from service.client.api import RemoteError, RunMetadata, error_for, problem_of, status_of
from service.errors import Forbidden, InvalidInput, InvalidMeasure, Unauthenticated, Unavailable


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("CRANFIELD_URL", raising=False)
    monkeypatch.delenv("CRANFIELD_TOKEN", raising=False)
    return tmp_path / "cranfield" / "remote.json"


def test_the_config_file_is_its_owners_only(home: Path) -> None:
    home.parent.mkdir(mode=0o755)  # an older, open folder is closed
    credentials.save(home, credentials.Credentials("https://c.example.org", "cfd_secret"))
    assert stat.S_IMODE(home.stat().st_mode) == 0o600 and stat.S_IMODE(home.parent.stat().st_mode) == 0o700
    assert json.loads(home.read_text()) == {"url": "https://c.example.org", "token": "cfd_secret"}
    assert not credentials.readable_by_others(home)
    assert [p.name for p in home.parent.iterdir()] == ["remote.json"]  # no temporary file left
    home.chmod(0o644)
    assert credentials.readable_by_others(home)
    assert credentials.remove(home) and not credentials.remove(home)
    home.write_text("{not json")
    with pytest.raises(InvalidInput, match="not JSON"):
        credentials.load(home)


def test_the_environment_overrides_the_file_and_the_token_stays_with_its_server(
        home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(InvalidMeasure, match="cranfield remote login URL"):
        _remote()
    credentials.save(home, credentials.Credentials("https://c.example.org", "cfd_saved"))
    assert (_remote().url, _remote().token, _remote().origin) == ("https://c.example.org", "cfd_saved", str(home))
    monkeypatch.setenv("CRANFIELD_URL", "https://c.example.org/")  # the same server
    assert _remote().token == "cfd_saved"
    monkeypatch.setenv("CRANFIELD_URL", "https://other.example.org")  # another: the saved token is not sent
    assert (_remote().url, _remote().token) == ("https://other.example.org", None)
    monkeypatch.setenv("CRANFIELD_TOKEN", "cfd_env")
    assert (_remote().token, _remote().origin) == ("cfd_env", "CRANFIELD_TOKEN")
    monkeypatch.setenv("CRANFIELD_URL", "ftp://x")
    with pytest.raises(InvalidMeasure, match="not a server's URL"):
        _remote()


def _answer(status: int, doc: object = None, text: str = "", **headers: str) -> httpx.Response:
    request = httpx.Request("GET", "http://c.example.org/api/x")
    if doc is not None:
        return httpx.Response(status, json=doc, headers=headers, request=request)
    return httpx.Response(status, text=text, headers=headers, request=request)


def test_problem_documents_become_the_domain_errors() -> None:
    problem = {"type": "urn:cranfield:error:invalid_input", "status": 422, "detail": "the score is not a number",
               "code": "invalid_input", "source": "run upload", "line": 3}
    exc = error_for(_answer(422, problem))
    assert isinstance(exc, InvalidInput) and (exc.source, exc.line, exc.reason) == ("run upload", 3,
                                                                                    "the score is not a number")
    assert status_of(exc) == 422 and problem_of(exc)["code"] == "invalid_input"
    exc = error_for(_answer(401, {"detail": "unknown or revoked token", "status": 401}))
    assert isinstance(exc, Unauthenticated) and str(exc) == "HTTP 401 Unauthorized: unknown or revoked token"
    assert isinstance(error_for(_answer(403, {"detail": "run 3 is not allowed"})), Forbidden)
    exc = error_for(_answer(503, {"detail": "busy"}, **{"Retry-After": "7"}))
    assert isinstance(exc, Unavailable) and exc.retry_after == 7
    exc = error_for(_answer(502, text="<html>\nBad gateway</html>"))  # a proxy's page, not a problem
    assert isinstance(exc, RemoteError) and str(exc) == "HTTP 502 Bad Gateway: <html>"


def test_metadata_form_fields() -> None:
    assert RunMetadata().form() == {}
    assert RunMetadata(description="d", run_type="manual", uses_training_data=False, priority=2, primary=True
                       ).form() == {"description": "d", "run_type": "manual", "uses_training_data": "false",
                                    "priority": "2", "primary": "true"}


def test_trec_layout_of_the_scores_documents() -> None:
    """As the server writes format=trec: topic by topic, then the means; no line for a topic
    without a score."""
    docs = [{"metric": "AP", "qrels_version": 1, "runs": {"r1": {"mean": 0.25, "per_topic": {"1": 0.5, "2": None,
                                                                                           "3": 0.0}}}},
            {"metric": "P@10", "qrels_version": 1, "runs": {"r1": {"mean": 0.1, "per_topic": {"1": 0.1}}}}]
    layout = "AP\t1\t0.5000\nP@10\t1\t0.1000\nAP\t3\t0.0000\nAP\tall\t0.2500\nP@10\tall\t0.1000\n"
    assert trec_layout(docs) == layout
    # the server's answers for one metric each, merged into that order
    assert _merged_trec(["AP\t1\t0.5000\nAP\t3\t0.0000\nAP\tall\t0.2500\n",
                         "P@10\t1\t0.1000\nP@10\tall\t0.1000\n"]) == layout
    # the run named first, as `cranfield eval --format trec` names it (once, even if the server did)
    assert _named("r1", layout) == "runid\tall\tr1\n" + layout
    assert _named("r1", _named("r1", layout)) == _named("r1", layout)
    assert _merged_trec([_named("r1", "AP\t1\t0.5000\nAP\t3\t0.0000\nAP\tall\t0.2500\n"),
                         _named("r1", "P@10\t1\t0.1000\nP@10\tall\t0.1000\n")]) == layout


def test_text_views_print_the_users_local_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """issue 37: a time the API gives in ISO 8601 is shown to a person in the local zone (TZ), to
    the minute; `cranfield judges board` says when its board was computed so."""
    import io
    import os
    import time
    from contextlib import nullcontext

    from service.cli import judges
    from service.cli.output import local_time

    before = os.environ.get("TZ")
    os.environ["TZ"] = "Europe/Paris"
    time.tzset()
    try:
        assert local_time("2026-11-28T22:31:51.595008+00:00") == "2026-11-28 23:31"
        assert local_time("2026-07-01T22:31:51+00:00") == "2026-07-02 00:31"  # summer time
        assert local_time("2026-11-28T22:31:51") == "2026-11-28 23:31"  # no offset: UTC, as the API's
        assert (local_time("2026-11-20"), local_time(None), local_time("soon")) == ("2026-11-20", "", "soon")

        board = {"measure": "tau_ap", "metric": "AP", "official_set": "official", "level": 0.95, "resamples": 1000,
                 "stale": False, "computed_at": "2026-11-28T22:31:51.595008+00:00", "rows": []}
        from service.evaluation.judging import judge_track
        from service.evaluation.organising import setup

        monkeypatch.setattr(judges, "sessions", lambda url: lambda: nullcontext(None))
        monkeypatch.setattr(judges, "database_url", lambda: "sqlite://")
        monkeypatch.setattr(setup, "get_collection", lambda s, name: None)
        monkeypatch.setattr(judge_track, "board", lambda s, coll, me: board)
        out = io.StringIO()
        args = type("Args", (), {"collection": "c", "judges_command": "board", "format": "text"})()
        assert judges._stored_listing(args, out) == 0
        assert "computed 2026-11-28 23:31, current" in out.getvalue() and "+00:00" not in out.getvalue()
    finally:
        if before is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = before
        time.tzset()


def test_wait_gives_up_after_its_timeout() -> None:
    from service.cli.remote import TimedOut, _poll

    polls: list[int] = []

    def read() -> dict[str, str]:
        polls.append(1)
        return {"status": "running"}

    with pytest.raises(TimedOut, match=r"gave up after 0.2 s: still running"):
        _poll(read, lambda d: d["status"] == "done", lambda d: f"still {d['status']}", 0.2, 0.05)
    assert 2 <= len(polls) <= 6
    assert _poll(lambda: {"status": "done"}, lambda d: d["status"] == "done", str, 0.2, 0.05) == {"status": "done"}
