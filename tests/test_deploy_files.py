"""docker-compose.yml and the Dockerfile stay in step with the code (no Docker engine runs here)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from click.testing import CliRunner

from holistic.families.registry import installed
from holistic_app.cli import main

ROOT = Path(__file__).resolve().parent.parent


def test_compose_runs_every_family_on_a_durable_redis():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    redis_cmd = services["redis"]["command"]
    assert "--appendonly yes" in redis_cmd and "--appendfsync everysec" in redis_cmd
    assert "--maxmemory-policy noeviction" in redis_cmd
    for family in installed():
        assert services[f"worker-{family}"]["command"] == ["worker", family]
    assert set(services["gateway"]["environment"]["HOLISTIC_FAMILIES"].split(",")) == set(installed())
    for name, service in services.items():
        if name == "redis":
            continue
        assert service["environment"]["REDIS_URL"] == "redis://redis:6379/0"
        result = CliRunner().invoke(main, [*service["command"], "--help"])
        assert result.exit_code == 0, (name, result.output)


def test_dockerfile_installs_every_package_dir():
    text = (ROOT / "Dockerfile").read_text()
    for part in ("holistic", "gateway", "metric_services", "clients/python", "protos", "tools", "hatch_build.py"):
        assert part in text


def test_an_empty_variable_is_unset(monkeypatch):
    """Compose passes `${HOLISTIC_TOXICITY_MODEL:-}` through as ""; that must mean the bundled model, not "."."""
    from holistic.families.registry import load_family
    from holistic.settings import load_settings

    monkeypatch.setenv("HOLISTIC_TOXICITY_MODEL", "")
    monkeypatch.setenv("HOLISTIC_FAMILIES", "")
    settings = load_settings()
    assert settings.families == [] and settings.deployed_families() == installed()
    assert load_family("toxicity").configured().config.model is None  # the family's own settings too
    assert load_family("bias").configured().config.model is None


def _defaults(value: str) -> str:
    """A compose value with every `${VAR:-default}` replaced by its default (nothing set in the environment)."""
    return re.sub(r"\$\{[A-Z0-9_]+:-([^}]*)\}", r"\1", value)


def test_compose_restarts_every_long_running_service():
    """A Redis crash must not leave the stack down until someone acts (issue 33)."""
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    for name, service in services.items():
        assert service.get("restart") in ("unless-stopped", "always"), name


def test_compose_builds_the_image_once():
    """One service builds; the others run its image (not 15 parallel builds of the same thing)."""
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    builders = [name for name, service in services.items() if "build" in service]
    assert builders == ["gateway"]
    image = services["gateway"]["image"]
    assert _defaults(image) == "holistic-eval:latest"
    holistic = [name for name in services if name != "redis"]
    assert len(holistic) == 15 and all(services[name]["image"] == image for name in holistic)


def test_compose_serves_metrics_from_every_process_that_has_them():
    """The shipped alerts read the gateway's and the workers' own /metrics (HOLISTIC_METRICS_ADDRESS)."""
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    serving = ["gateway", *(f"worker-{family}" for family in installed())]
    for name in serving:
        assert services[name]["environment"].get("HOLISTIC_METRICS_ADDRESS") == "0.0.0.0:9464", name


def test_compose_publishes_ports_on_the_loopback_by_default():
    """No tokens are set by default: nothing is reachable from other machines unless asked for."""
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    published = {name: [_defaults(p) for p in s.get("ports", [])] for name, s in services.items() if s.get("ports")}
    assert published == {
        "gateway": ["127.0.0.1:50051:50051"],
        "dashboard": ["127.0.0.1:8765:8765"],
        "quality-exporter": ["127.0.0.1:9465:9465"],
        "otlp-receiver": ["127.0.0.1:4317:4317", "127.0.0.1:4318:4318"],
    }
    assert services["gateway"]["ports"] == [
        "${HOLISTIC_PUBLISH_ADDRESS:-127.0.0.1}:${HOLISTIC_GATEWAY_PORT:-50051}:50051"
    ]


def test_the_wheelhouse_has_what_the_images_python_needs():
    """The image's Python (Debian's 3.11.2) needs redis-py's dependencies for 3.11.2, which a newer host's
    `pip wheel` leaves out: deploy/wheels/requirements.txt, in the documented command, adds them."""
    from importlib.metadata import requires

    from packaging.requirements import Requirement

    image_python = {"python_full_version": "3.11.2", "python_version": "3.11"}
    needed = {
        req.name
        for req in map(Requirement, requires("redis") or [])
        if req.marker is not None and "extra" not in str(req.marker) and req.marker.evaluate(image_python)
    }
    assert "async-timeout" in needed
    lines = (ROOT / "deploy/wheels/requirements.txt").read_text().splitlines()
    listed = {Requirement(ln).name for ln in lines if ln.strip() and not ln.startswith("#")}
    assert needed <= listed
    assert (
        'pip wheel -w deploy/wheels ".[semantic]" -r deploy/wheels/requirements.txt'
        in (ROOT / "deploy/wheels/README.md").read_text()
    )
