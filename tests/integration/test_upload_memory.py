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
from service.evaluation.publishing.reading import judgment_changes
from service.formats.readers import parse_qrels
from tests.integration.conftest import Backend, World, auth
from tests.integration.test_console import _form_values, post
from tests.integration.test_portal import as_role, csrf_of

SQLITE_ONLY_BUT = {"test_memory_other_uploads_hold_is_a_503_and_the_run_is_stored_once_it_is_free",
                   # the judgment rows as another database reads them (the listing is in byte order)
                   "test_the_preview_and_the_diff_count_every_change_and_list_them_a_page_at_a_time"}

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


# ------------------------------------------------------------------ the qrels preview and diff
def test_a_qrels_preview_takes_a_small_multiple_of_its_size(backend: Backend) -> None:
    """A 16 MB qrels previewed against a version of it (2% removed, changed and added, a topic
    gone, one new): every change counted, 1000 listed. The changes as a dict of every judgment
    and their JSON took 23-27 times the file; the comparison is now in arrays."""
    result = upload_memory_multiple(16, mode="preview", database_url=backend.database_url)
    assert result["status"] == 200, result
    assert result["lines"] > 650_000 and result["listed"] == 1000
    assert min(result["totals"].values()) > 10_000, result
    assert result["multiple"] < 5, result  # measured 3.1 (26.7 at 75 MB before; 2.88 now)


def _judged(text: str) -> dict[tuple[str, str], int]:
    qrels = parse_qrels(text.encode("utf-8"), "q")
    return {(t, d.decode("utf-8")): int(lv) for i, t in enumerate(qrels.topics)
            for d, lv in zip(qrels.docnos[i].tolist(), qrels.levels[i].tolist())}


def test_the_preview_and_the_diff_count_every_change_and_list_them_a_page_at_a_time(world: World) -> None:
    c, cid, org = world.client, world.cid, auth(world.tokens["organiser"])
    lines = world.qrels.splitlines()
    kept = [line.rsplit(" ", 1)[0] + " L3" if i % 5 == 0 else line for i, line in enumerate(lines) if i % 7]
    added = [f"0001 é-{i:04d} L1" for i in range(1100)] + ["0099 Z-1 L2", "0001 Ω L0"]
    corrected = "\n".join(kept + added) + "\n"
    reference = judgment_changes(_judged(world.qrels), _judged(corrected))
    listing = [(t, ch) for t, e in reference["topics"].items() for ch in e["changes"]]
    counts = {t: {k: e[k] for k in ("added", "removed", "changed")} for t, e in reference["topics"].items()}
    assert len(listing) > 1100

    def pages(fetch, limit: int) -> list[tuple[str, dict]]:  # type: ignore[no-untyped-def, type-arg]
        got, offset = [], 0
        while offset is not None:
            doc = fetch(f"offset={offset}&limit={limit}")
            assert doc["totals"] == reference["totals"] and doc["listed"] <= limit
            assert {t: {k: e[k] for k in ("added", "removed", "changed")} for t, e in doc["topics"].items()} == counts
            got += [(t, ch) for t, e in doc["topics"].items() for ch in e["changes"]]
            offset = doc["next_offset"]
        return got

    def preview(query: str) -> dict:  # type: ignore[type-arg]
        r = c.post(f"/api/collections/{cid}/qrels/preview?{query}", content=corrected, headers=org)
        assert r.status_code == 200, r.text
        return r.json()

    assert pages(preview, 500) == listing
    first = preview("")
    assert (first["offset"], first["limit"], first["listed"], first["next_offset"]) == (0, 1000, 1000, 1000)
    assert c.post(f"/api/collections/{cid}/qrels", content=corrected, headers=org).status_code == 201

    def diff(query: str) -> dict:  # type: ignore[type-arg]
        r = c.get(f"/api/collections/{cid}/qrels/diff?old=1&new=2&{query}", headers=org)
        assert r.status_code == 200, r.text
        return r.json()

    assert pages(diff, 700) == listing
    assert diff("limit=10000")["topics"] == reference["topics"]
    for query in ("limit=10001", "offset=-1", "limit=-1"):
        assert c.get(f"/api/collections/{cid}/qrels/diff?old=1&new=2&{query}", headers=org).status_code == 422
    # the portal: the counts and the first 1000 changes, a link to the next ones
    page = c.get(f"/c/{cid}/qrels", headers=as_role(world, "organiser")).text
    total = sum(reference["totals"].values())
    assert f"Changes 1–1000 of {total}" in page and "old=1&amp;new=2&amp;offset=1000" in page
    page = c.get(f"/c/{cid}/qrels?old=1&new=2&offset=1000", headers=as_role(world, "organiser")).text
    assert f"Changes 1001–{total} of {total}" in page and 'id="diff-next"' not in page and 'id="diff-first"' in page
    # a preview's next page posts the previewed file back
    r = c.post(f"/c/{cid}/qrels", files={"file": ("v1.qrels", world.qrels)},
               data={"csrf": csrf_of(world, "organiser"), "action": "preview"}, headers=as_role(world, "organiser"))
    assert r.status_code == 200 and f"Changes 1–1000 of {total}" in r.text
    following = _form_values(r.text, "preview-next")
    assert following["offset"] == "1000" and following["action"] == "preview" and following["staged"]
    r = post(world, "organiser", f"/c/{cid}/qrels", following)
    assert r.status_code == 200 and f"Changes 1001–{total} of {total}" in r.text and 'id="preview-next"' not in r.text
    assert c.get(f"/api/collections/{cid}/qrels", headers=org).json()["current"] == 2  # nothing stored


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
