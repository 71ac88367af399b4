"""Settings: every knob read in service/config.py, bad values named, and the composition root
(service.asgi) handing them to the application."""

from __future__ import annotations

import ast
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from service.cli import main
from service.config import SettingsError, load_settings, settings

REPO = Path(__file__).resolve().parents[2]
WEB_VARIABLES = ("CRANFIELD_MAX_UPLOAD", "CRANFIELD_BOARD_CACHE_SECONDS", "CRANFIELD_SESSION_LIFETIME")


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """monkeypatch, with the process's cached settings dropped before and after the test."""
    for name in WEB_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    settings.cache_clear()
    yield monkeypatch
    settings.cache_clear()  # monkeypatch restores the environment after this; the next read sees it


def test_web_defaults(env: pytest.MonkeyPatch) -> None:
    web = load_settings().web
    assert web.max_upload == 256 * 1024 * 1024
    assert web.board_cache_seconds == 1.0
    assert web.session_cookie_lifetime == 14 * 24 * 3600  # the portal's sign-in cookie until now


def test_web_settings_from_the_environment(env: pytest.MonkeyPatch) -> None:
    env.setenv("CRANFIELD_MAX_UPLOAD", "1000")
    env.setenv("CRANFIELD_BOARD_CACHE_SECONDS", "0")
    env.setenv("CRANFIELD_SESSION_LIFETIME", "3600")
    web = load_settings().web
    assert (web.max_upload, web.board_cache_seconds, web.session_cookie_lifetime) == (1000, 0.0, 3600)


WORKER_VARIABLES = ("CRANFIELD_LEASE", "CRANFIELD_SWEEP_INTERVAL", "CRANFIELD_LOST_AFTER", "CRANFIELD_STUCK_TIMEOUT",
                    "CRANFIELD_EVAL_TIME_BUDGET", "CRANFIELD_EVAL_MAX_LINES", "CRANFIELD_TESTS_DEBOUNCE")


def test_worker_recovery_defaults_and_the_documented_table(env: pytest.MonkeyPatch) -> None:
    """Leases, sweeps and budgets: defaults that recover within a minute (docs/operations.md)."""
    import service.config

    for name in WORKER_VARIABLES:
        env.delenv(name, raising=False)
    worker = load_settings().worker
    assert (worker.lease, worker.sweep_interval, worker.lost_after, worker.stuck_timeout) == (30, 5, 15, 600)
    assert (worker.eval_time_budget, worker.eval_max_lines, worker.tests_debounce) == (900, 20_000_000, 5)
    for name in WORKER_VARIABLES:  # each one in the docstring's table
        assert f"| {name} |" in (service.config.__doc__ or "")
    env.setenv("CRANFIELD_LEASE", "12.5")
    env.setenv("CRANFIELD_EVAL_MAX_LINES", "1000")
    env.setenv("CRANFIELD_TESTS_DEBOUNCE", "0")
    worker = load_settings().worker
    assert (worker.lease, worker.eval_max_lines, worker.tests_debounce) == (12.5, 1000, 0)


PRUNE_VARIABLES = ("CRANFIELD_PRUNE_INTERVAL", "CRANFIELD_IDEMPOTENCY_RETENTION", "CRANFIELD_SESSION_GRACE")


def test_pruning_defaults_and_the_documented_tables(env: pytest.MonkeyPatch) -> None:
    """Idempotency keys outlive any client's retries (a week); ended sign-ins go a day after."""
    import service.config

    for name in PRUNE_VARIABLES:
        env.delenv(name, raising=False)
    worker = load_settings().worker
    assert (worker.prune_interval, worker.idempotency_retention, worker.session_grace) == (3600, 7 * 86400, 86400)
    operations = (REPO / "docs" / "operations.md").read_text(encoding="utf-8")
    for name in PRUNE_VARIABLES:
        assert f"| {name} |" in (service.config.__doc__ or "") and f"| {name} |" in operations
    env.setenv("CRANFIELD_IDEMPOTENCY_RETENTION", "172800")
    env.setenv("CRANFIELD_SESSION_GRACE", "0")
    env.setenv("CRANFIELD_PRUNE_INTERVAL", "60")
    worker = load_settings().worker
    assert (worker.prune_interval, worker.idempotency_retention, worker.session_grace) == (60, 172800, 0)


FILE_VARIABLES = ("CRANFIELD_MAX_TOPICS", "CRANFIELD_MAX_INTENTS_PER_TOPIC", "CRANFIELD_MAX_INTENT_CELLS",
                  "CRANFIELD_MAX_STRATA_PER_TOPIC", "CRANFIELD_MAX_ASSESSORS", "CRANFIELD_MAX_LABELS_PER_DOCUMENT")


def test_the_counts_an_upload_may_hold_defaults_documented_and_from_the_environment(env: pytest.MonkeyPatch) -> None:
    """Issue 24: the counts a file can inflate beyond its size are settings, in both tables."""
    import service.config

    for name in FILE_VARIABLES:
        env.delenv(name, raising=False)
    files = load_settings().files
    assert (files.max_topics, files.max_intents_per_topic, files.max_intent_cells, files.max_strata_per_topic,
            files.max_assessors, files.max_labels_per_document) == (100_000, 100, 10_000_000, 100, 1000, 100)
    operations = (REPO / "docs" / "operations.md").read_text(encoding="utf-8")
    for name in FILE_VARIABLES:
        assert f"| {name} |" in (service.config.__doc__ or "") and f"| {name} |" in operations
    env.setenv("CRANFIELD_MAX_INTENTS_PER_TOPIC", "12")
    env.setenv("CRANFIELD_MAX_TOPICS", "50")
    files = load_settings().files
    assert (files.max_intents_per_topic, files.max_topics) == (12, 50)
    env.setenv("CRANFIELD_MAX_STRATA_PER_TOPIC", "0")
    with pytest.raises(SettingsError, match="CRANFIELD_MAX_STRATA_PER_TOPIC='0': must be at least 1"):
        load_settings()


@pytest.mark.parametrize(("name", "value", "says"), [
    ("CRANFIELD_IDEMPOTENCY_RETENTION", "3600", "at least 86400"),  # shorter than a client may retry
    ("CRANFIELD_IDEMPOTENCY_RETENTION", "a week", "is not a number"),
    ("CRANFIELD_SESSION_GRACE", "-1", "at least 0"),
    ("CRANFIELD_PRUNE_INTERVAL", "0", "finite number greater than 0"),
    ("CRANFIELD_LEASE", "0", "finite number greater than 0"),
    ("CRANFIELD_LOST_AFTER", "soon", "is not a number"),
    ("CRANFIELD_EVAL_TIME_BUDGET", "-5", "finite number greater than 0"),
    ("CRANFIELD_EVAL_MAX_LINES", "1e6", "is not an integer"),
    ("CRANFIELD_TESTS_DEBOUNCE", "-1", "at least 0"),
    ("CRANFIELD_MAX_UPLOAD", "abc", "is not an integer"),
    ("CRANFIELD_MAX_UPLOAD", "0", "at least 1"),
    ("CRANFIELD_BOARD_CACHE_SECONDS", "soon", "is not a number"),
    ("CRANFIELD_BOARD_CACHE_SECONDS", "-1", "at least 0"),
    ("CRANFIELD_SESSION_LIFETIME", "1.5", "is not an integer"),
    ("CRANFIELD_WORKER_CONCURRENCY", "two", "is not an integer"),
    ("CRANFIELD_STUCK_TIMEOUT", "nan", "finite number greater than 0"),
])
def test_a_bad_value_names_the_variable(env: pytest.MonkeyPatch, name: str, value: str, says: str) -> None:
    env.setenv(name, value)
    with pytest.raises(SettingsError) as err:
        load_settings()
    assert name in str(err.value) and repr(value) in str(err.value) and says in str(err.value)


def test_the_cli_reports_a_bad_setting_without_a_traceback(env: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    env.setenv("CRANFIELD_MAX_UPLOAD", "abc")
    assert main(["jobs"]) == 1
    assert capsys.readouterr().err == ("cranfield: error: CRANFIELD_MAX_UPLOAD='abc' is not an integer "
                                       "(default 268435456)\n")


def test_the_composition_root_passes_the_settings_and_the_workers(env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from litestar import Litestar

    import service.api.app

    env.setenv("CRANFIELD_DATABASE_URL", f"sqlite:///{tmp_path / 'x.sqlite'}")
    env.setenv("CRANFIELD_BROKER_URL", "filesystem://")
    env.setenv("CRANFIELD_BROKER_FOLDER", str(tmp_path / "broker"))
    env.setenv("CRANFIELD_MAX_UPLOAD", "1000")
    env.setenv("CRANFIELD_BOARD_CACHE_SECONDS", "2.5")
    sent: list[object] = []
    fake_tasks = types.ModuleType("workers.tasks")
    fake_tasks.send = sent.extend  # type: ignore[attr-defined]
    env.setitem(sys.modules, "workers.tasks", fake_tasks)  # the real one would start a Celery app
    calls: list[tuple[tuple[object, ...], dict[str, object]]] = []
    real = service.api.app.create_app

    def spy(*args: object, **kwargs: object) -> Litestar:
        calls.append((args, kwargs))
        return real(*args, **kwargs)  # type: ignore[arg-type]

    env.setattr(service.api.app, "create_app", spy)
    from service.asgi import create_service_app

    app = create_service_app()
    assert isinstance(app, Litestar)
    (args, kwargs), = calls
    assert args == (f"sqlite:///{tmp_path / 'x.sqlite'}", fake_tasks.send)
    assert kwargs["max_body"] == 1000 and kwargs["board_ttl"] == 2.5
    readiness = kwargs["readiness"]
    assert readiness() == {"broker": False}  # type: ignore[operator]
    (tmp_path / "broker").mkdir()
    assert readiness() == {"broker": True}  # type: ignore[operator]


def _environment_reads(path: Path) -> list[int]:
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv", "environb", "getenvb"):
            lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module == "os" and any(
                a.name in ("environ", "getenv", "environb", "getenvb") for a in node.names):
            lines.append(node.lineno)
    return lines


def test_only_the_settings_module_reads_the_environment() -> None:
    found = [f"{path.relative_to(REPO)}:{line}"
             for root in ("service", "workers") for path in sorted((REPO / root).rglob("*.py"))
             if path != REPO / "service" / "config.py" for line in _environment_reads(path)]
    assert not found, f"read the environment in service/config.py only: {found}"
    assert _environment_reads(REPO / "service" / "config.py")  # the check sees such reads
