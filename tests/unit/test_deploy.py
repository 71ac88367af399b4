"""The deployment files parse and name every service and process the docs mention."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]


def test_compose_file_parses_and_matches_the_operations_docs() -> None:
    compose = yaml.safe_load((REPO / "deploy" / "compose.yaml").read_text())
    services = set(compose["services"])
    assert services == {"postgres", "redis", "migrate", "api", "worker", "beat"}
    docs = (REPO / "docs" / "operations.md").read_text()
    mentioned = set(re.findall(r"`(postgres|redis|migrate|api|worker|beat)`", docs))
    assert mentioned == services
    for name in ("migrate", "api", "worker", "beat"):
        command = compose["services"][name]["command"]
        assert command[0] == "cranfield" and compose["services"][name]["env_file"] == "cranfield.env"
    assert compose["services"]["api"]["depends_on"]["migrate"]["condition"] == "service_completed_successfully"


def test_procfile_and_example_environment() -> None:
    procs = dict(line.split(": ", 1) for line in (REPO / "deploy" / "Procfile").read_text().splitlines() if line)
    assert set(procs) == {"release", "web", "worker", "beat"}
    assert all(cmd.startswith("cranfield ") for cmd in procs.values())
    env = (REPO / "deploy" / "cranfield.env.example").read_text()
    from service.config import __doc__ as config_doc

    for key in re.findall(r"^([A-Z_]+)=", env, flags=re.M):
        assert key in config_doc, key  # every example variable is a documented setting


def test_every_api_route_is_documented(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """docs/api.md names every /api path the application serves (placeholders aside)."""
    import re
    from pathlib import Path

    from service.api.app import create_app

    app = create_app(f"sqlite:///{tmp_path / 'x.sqlite'}", lambda followups: None)
    docs = Path(__file__).resolve().parents[2].joinpath("docs", "api.md").read_text()
    documented = re.sub(r"\{[^}]*\}", "{}", docs)
    paths = {re.sub(r"\{[^}]*\}", "{}", route.path) for route in app.routes if route.path.startswith("/api")}
    missing = sorted(p for p in paths if not re.search(re.escape(p) + r"(?![\w/{])", documented))
    assert paths and not missing, missing
