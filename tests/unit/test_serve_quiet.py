"""`cranfield serve`'s embedded worker (issue 37, item 7): Celery's "No hostname was supplied"
warning and its SecurityWarning about running as root are silenced there, and only there; any
other warning still shows."""

from __future__ import annotations

import logging
import warnings

import pytest

from service.cli import processes


@pytest.fixture
def quieted():  # type: ignore[no-untyped-def]
    """quiet_embedded_worker() applied over "always show every warning", undone afterwards (the
    warnings filters and the logger's filters)."""
    logger = logging.getLogger("kombu.connection")
    before = list(logger.filters)
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        processes.quiet_embedded_worker()
        yield logger
    logger.filters[:] = before


def test_the_two_warnings_are_silenced_and_nothing_else(quieted, caplog) -> None:  # type: ignore[no-untyped-def]
    from celery.exceptions import SecurityWarning
    from celery.platforms import ROOT_DISCOURAGED

    with warnings.catch_warnings(record=True) as seen:  # (keeps the filters in place, records what shows)
        warnings.warn(SecurityWarning(ROOT_DISCOURAGED.format(uid=0, euid=0, gid=0, egid=0)), stacklevel=1)
        warnings.warn(SecurityWarning("some other security problem"), stacklevel=1)
    assert [str(w.message) for w in seen] == ["some other security problem"]
    with caplog.at_level(logging.WARNING, logger="kombu.connection"):
        quieted.warning("No hostname was supplied. Reverting to default 'localhost'")
        quieted.warning("Cannot connect to redis://localhost:6379//: Error 111 connecting.")
        quieted.error("a real error")
    said = [r.getMessage() for r in caplog.records if r.name == "kombu.connection"]
    assert said == ["Cannot connect to redis://localhost:6379//: Error 111 connecting.", "a real error"]


def test_serve_starts_its_worker_embedded_and_a_standalone_worker_is_not() -> None:
    """serve's worker command line carries --embedded (hidden from --help); `cranfield worker` has it off."""
    import inspect

    from service.cli import build_parser

    assert '"--embedded"' in inspect.getsource(processes.cmd_serve)
    parser = build_parser()
    assert parser.parse_args(["worker", "--embedded"]).embedded is True
    assert parser.parse_args(["worker"]).embedded is False
