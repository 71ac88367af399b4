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


def test_every_long_running_process_is_supervised() -> None:
    """Compose restarts every long-running service; the systemd units restart every process;
    both start the same commands as the Procfile (issue 24: a worker that exits for any reason
    comes back)."""
    import configparser

    compose = yaml.safe_load((REPO / "deploy" / "compose.yaml").read_text())["services"]
    for name in ("postgres", "redis", "api", "worker", "beat"):
        assert compose[name].get("restart") in ("always", "unless-stopped"), name
    assert "restart" not in compose["migrate"]  # a one-shot job: it must end
    procs = dict(line.split(": ", 1) for line in (REPO / "deploy" / "Procfile").read_text().splitlines() if line)
    units = {}
    for path in sorted((REPO / "deploy" / "systemd").glob("*.service")):
        unit = configparser.ConfigParser(strict=False, interpolation=None)
        unit.optionxform = str  # systemd keys are case-sensitive
        unit.read_string(path.read_text())
        service = unit["Service"]
        assert service["Restart"] == "always", path.name
        assert service["EnvironmentFile"] == "/etc/cranfield/cranfield.env", path.name
        units[path.name] = service["ExecStart"].split("/bin/", 1)[1]
    assert units["cranfield-api.service"].startswith("cranfield serve ") and "--no-worker" in units["cranfield-api.service"]
    assert units["cranfield-worker@.service"].startswith("cranfield worker")
    assert units["cranfield-beat.service"] == procs["beat"] == "cranfield beat"
