"""Shared test configuration.

../shared (beside the repository; or $CRANFIELD_SHARED) holds public conformance data.
Locally a missing folder skips those tests with the reason; under CI=true it is an error,
so a CI run can never pass without them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def shared_dir() -> Path:
    return Path(os.environ.get("CRANFIELD_SHARED", REPO.parent / "shared"))


def require_shared(sub: str) -> Path:
    """The shared sub-folder, or skip (locally) / fail (CI) when it is absent."""
    path = shared_dir() / sub
    if not path.is_dir():
        message = f"{path} not found (put ../shared beside the repository or set CRANFIELD_SHARED)"
        if os.environ.get("CI"):
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return path


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test marked ``exclusive`` stops or restarts a shared service (PostgreSQL, Redis), or
    needs the machine to itself (a burst of 150 clients against one server): with other tests
    running beside it (pytest-xdist) they, or it, would fail by chance, so it refuses to run
    there. The README's test command runs them in a second, serial pytest: -m exclusive."""
    if item.get_closest_marker("exclusive") and int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
        pytest.fail("an exclusive test runs alone: `pytest -m exclusive` without -n", pytrace=False)


#: The suite's longest modules, longest first (seconds of test time under `-n 3`, measured
#: 2026-11-28; the ranx modules as on a fresh venv, whose numba cache is cold). pytest-xdist
#: hands a module at a time to whichever worker is free, in collection order; started last,
#: a 100-second module would run alone while the other workers idle (issue 26: the suite in
#: under 15 minutes). The order changes when tests run, never what they check; a module not
#: listed keeps its place after these.
LONGEST_FIRST = (
    "integration/test_broker_outage.py",  # one 100 s test, mostly waiting out Redis outages
    "integration/test_pipeline.py",
    "integration/test_deadline.py",
    "integration/test_api_schema.py",
    "integration/test_api_server.py",
    "integration/test_judging.py",
    "browser/test_portal_in_chromium.py",
    "browser/test_layout_in_chromium.py",
    "integration/test_access_agreement.py",
    "integration/test_reproducibility.py",
    "integration/test_upload_memory.py",
    "peers/test_tool_differences.py",
    "peers/test_ranx_peer.py",
    "browser/test_walkthrough_in_chromium.py",
    "integration/test_judge_track.py",
    "browser/test_boards_in_chromium.py",
    "integration/test_portal.py",
    "browser/test_console_in_chromium.py",
    "integration/test_remote_client.py",
    "integration/test_stratified_pools.py",
)


#: What a module that holds an exclusive test says in its source (see pytest_ignore_collect).
EXCLUSIVE_MARK = "pytest.mark.exclusive"


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """The README's second pytest (``-m exclusive``) runs 8 tests of 3 modules: it imports only
    the test modules whose source names the mark, instead of importing and collecting all of
    them (about 10 s alone on the machine, a schema read and thousands of cases generated)
    only to deselect them. pytest_collection_modifyitems makes sure that no exclusive test
    lives in a module that does not name the mark (it would then never run)."""
    if config.getoption("markexpr", "") != "exclusive":
        return None
    if collection_path.suffix == ".py" and collection_path.name.startswith("test_"):
        return EXCLUSIVE_MARK not in collection_path.read_text(encoding="utf-8") or None
    return None


@pytest.hookimpl(tryfirst=True)  # (before -m deselects anything)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Refuse an exclusive test that the exclusive run would not import (pytest_ignore_collect),
    then run the longest modules first (LONGEST_FIRST): a stable sort keeps each module's own
    order and the order of every module not listed."""
    hidden = sorted({str(item.path) for item in items if item.get_closest_marker("exclusive")
                     and EXCLUSIVE_MARK not in item.path.read_text(encoding="utf-8")})
    if hidden:
        raise pytest.UsageError(f"an exclusive test in a module whose source does not say {EXCLUSIVE_MARK} "
                                f"(the exclusive run would not import it): {', '.join(hidden)}")
    gone = [name for name in LONGEST_FIRST if not (REPO / "tests" / name).is_file()]
    if gone:  # a renamed module would silently lose its place
        raise pytest.UsageError(f"tests/conftest.py LONGEST_FIRST names no module: {', '.join(gone)}")
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}

    def module_rank(item: pytest.Item) -> int:
        path = item.path.relative_to(REPO / "tests").as_posix() if item.path.is_relative_to(REPO / "tests") else ""
        return rank.get(path, len(rank))

    items.sort(key=module_rank)
