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
