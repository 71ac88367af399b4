"""Peers for the tests that compare Cranfield with independent implementations.

A missing peer skips its tests locally, with the reason, and fails them under CI=true (as
``tests.conftest.require_shared`` does for ../shared), so CI can never pass without them.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
from types import ModuleType

import pytest


def _missing(message: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(message, pytrace=False)
    pytest.skip(message, allow_module_level=True)


def require_peer(module: str, package: str | None = None) -> ModuleType:
    """Import ``module`` of the peer ``package`` (a test dependency in pyproject.toml)."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        _missing(f"the peer {package or module} is not installed (pip install -e '.[test]'): {exc}")
        raise  # unreachable: _missing skips or fails


def load_peer_file(distribution: str, path: str, name: str) -> ModuleType:
    """One source file of an installed distribution, loaded as a module of its own without
    importing its package (whose ``__init__`` may import what the file itself does not need)."""
    try:
        location = importlib.metadata.distribution(distribution).locate_file(path)
    except importlib.metadata.PackageNotFoundError as exc:
        _missing(f"the peer {distribution} is not installed (pip install -e '.[test]'): {exc}")
        raise
    if not os.path.isfile(str(location)):
        _missing(f"the peer {distribution} has no file {path}")
    spec = importlib.util.spec_from_file_location(name, str(location))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
