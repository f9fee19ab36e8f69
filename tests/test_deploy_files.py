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
