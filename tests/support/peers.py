"""Peers for the tests that compare Cranfield with independent implementations.

A missing peer skips its tests locally, with the reason, and fails them under CI=true (as
``tests.conftest.require_shared`` does for ../shared), so CI can never pass without them.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
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


#: ranx's numba kernels are compiled on a process's first call for each argument type (a doc-id
#: array of another string length is another type) and cached on disk (``cache=True``). The
#: two modules that call ranx give their doc ids one length (ranx's test module: ID_LEN), and
#: each call holds this lock, so that whichever module comes second loads the first one's
#: kernels from the cache instead of compiling them again at the same time (about half a
#: minute of CPU each on a fresh environment, with the suite's other workers waiting for a core).
RANX_ID_LEN = 6


@contextmanager
def compiling_alone(peer: str) -> Iterator[None]:
    """Hold the suite-wide lock of ``peer``'s just-in-time compilation (a lock file in the
    temporary folder, shared by every pytest-xdist worker)."""
    import fcntl

    with open(Path(tempfile.gettempdir()) / f"cranfield-tests-{peer}-compiles.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
