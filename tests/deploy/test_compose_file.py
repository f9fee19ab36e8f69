"""docker-compose.yml read as data (the slow test_compose.py runs it): what every process is given."""

from __future__ import annotations

from pathlib import Path

import yaml

from holistic.families.registry import installed
from holistic.settings import load_settings
from holistic.tenancy import retention

ROOT = Path(__file__).resolve().parents[2]
KEEPS_DATA = ("gateway", "janitor", "quality-exporter", "worker")  # what builds a RetentionStore


def test_every_process_that_stores_or_reads_data_sees_the_retention_file(monkeypatch):
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    mounted = []
    for name, service in services.items():
        if not service.get("command") or service["command"][0] not in KEEPS_DATA:
            continue
        path = Path(service["environment"]["HOLISTIC_RETENTION_FILE"])
        mounts = {dst: (ROOT / src, opts) for src, dst, *opts in (v.split(":") for v in service["volumes"])}
        source, opts = mounts[str(path.parent)]
        assert opts == ["ro"], name
        monkeypatch.setenv("HOLISTIC_RETENTION_FILE", str(source / path.name))
        assert retention.RetentionStore(load_settings()).tenants() == {}  # shipped empty: the global values
        mounted.append(name)
    assert {"gateway", "janitor", "quality-exporter"} | {f"worker-{f}" for f in installed()} <= set(mounted)


def test_every_holistic_service_names_every_installed_family():
    """The quality exporter once had its own list without retrieval and evaluations: no series for them."""
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    ours = {n: s for n, s in services.items() if s.get("image", "").startswith("${HOLISTIC_IMAGE")}
    named = {n: s["environment"].get("HOLISTIC_FAMILIES") for n, s in ours.items()}
    assert {"quality-exporter", "otlp-receiver", "dashboard"} <= set(named)
    for name, families in named.items():
        assert families is not None and set(families.split(",")) == set(installed()), name
