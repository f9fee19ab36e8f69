"""docker-compose.yml and the Dockerfile stay in step with the code (no Docker engine runs here)."""

from __future__ import annotations

from pathlib import Path

import yaml
from click.testing import CliRunner

from holistic.registry import installed
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
    from holistic.registry import load_family
    from holistic.settings import load_settings

    monkeypatch.setenv("HOLISTIC_TOXICITY_MODEL", "")
    monkeypatch.setenv("HOLISTIC_FAMILIES", "")
    settings = load_settings()
    assert settings.families == [] and settings.deployed_families() == installed()
    assert load_family("toxicity").configured().config.model is None  # the family's own settings too
    assert load_family("bias").configured().config.model is None
