"""Uploads in bounded memory (issue 24, item 5).

Each test runs a fresh process through ``benchmarks/upload_memory.py``: the API application on
the test's database, a generated run of about 30 MB submitted over HTTP (Litestar's TestClient),
its RSS measured around the upload. Before issue 24 a run took about 11 times its size at the
peak (16 times in the report) and the process kept 6 times its size afterwards; under a memory
cap the parse failed with numpy's ``_ArrayMemoryError`` as a 500.
"""

from __future__ import annotations

import pytest

from benchmarks.upload_memory import upload_memory_multiple
from service.config import settings
from tests.integration.conftest import Backend, World, auth

SQLITE_ONLY_BUT = {"test_memory_other_uploads_hold_is_a_503_and_the_run_is_stored_once_it_is_free"}

SIZE_MB = 30


def test_a_30_mb_run_takes_a_small_multiple_of_its_size_and_gives_it_back(backend: Backend) -> None:
    result = upload_memory_multiple(SIZE_MB, database_url=backend.database_url)
    assert result["status"] == 201, result
    assert result["lines"] > 700_000
    assert result["multiple"] < 5, result  # measured 2.5 (the goal, benchmarked at 150 MB, is 3)
    assert result["after_multiple"] < 1, result  # measured 0.4


def test_a_run_too_large_for_the_memory_cap_is_a_413_naming_the_upload(backend: Backend) -> None:
    """The process may grow by 1.2 times the file: the file alone needs more (a 413, not a 500)."""
    result = upload_memory_multiple(SIZE_MB, database_url=backend.database_url, headroom=1.2)
    assert result["status"] == 413, result
    assert result["detail"].startswith("run upload: validating a file of 31.3 MB takes about 94.0 MB of memory, "
                                       "more than this server can give one upload"), result


def test_memory_other_uploads_hold_is_a_503_and_the_run_is_stored_once_it_is_free(backend: Backend) -> None:
    """Room for the file, but three times its size held by others: a 503 with Retry-After; once
    they are done the same file is stored."""
    result = upload_memory_multiple(SIZE_MB, database_url=backend.database_url, headroom=5, ballast=3)
    assert result["status"] == 503, result
    assert result["retry_after"] == "30"
    assert result["detail"] == ("run upload: the server ran short of memory for this 31.3 MB file (other requests "
                                "may hold it); send it again in a minute"), result
    assert result["retry"]["status"] == 201, result


# ------------------------------------------------------------------ counts a file can inflate
def test_counts_past_the_limits_are_refused_at_their_line_and_the_limits_are_settings(
        world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """10**6 intents in one topic were accepted (1.44 GB in the API, then 34.8 s and 1.75 GB in a
    worker for one depth-20 run): now 101 intents, or 101 strata, of one topic are refused
    (the default limits, 100 each) before anything is stored, and an operator can raise them."""
    org = auth(world.tokens["organiser"])

    def preview(fmt: str, text: str) -> object:
        return world.client.post(f"/api/collections/{world.cid}/qrels/preview?format={fmt}", content=text,
                                 headers=org)

    intents = "".join(f"0001 {i} d{i % 5} 1\n" for i in range(101))
    r = preview("diversity-trec", intents)
    assert r.status_code == 422, r.text
    assert (r.json()["line"], r.json()["detail"]) == (
        101, "intent '100' is one more than the 100 intents a topic may have (topic '0001')")
    strata = "".join(f"0001 0 d{i} {i + 1} {i % 2}\n" for i in range(101))
    r = preview("sampled", strata)
    assert r.status_code == 422, r.text
    assert r.json()["detail"] == "topic '0001' has 101 strata: a topic may have at most 100"
    try:
        monkeypatch.setenv("CRANFIELD_MAX_INTENTS_PER_TOPIC", "101")
        monkeypatch.setenv("CRANFIELD_MAX_STRATA_PER_TOPIC", "101")
        settings.cache_clear()
        assert preview("diversity-trec", intents).status_code == 200
        assert preview("sampled", strata).status_code == 200
    finally:
        monkeypatch.delenv("CRANFIELD_MAX_INTENTS_PER_TOPIC")
        monkeypatch.delenv("CRANFIELD_MAX_STRATA_PER_TOPIC")
        settings.cache_clear()
