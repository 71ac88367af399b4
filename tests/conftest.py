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
