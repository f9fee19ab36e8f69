"""deploy/kubernetes, checked offline: rendered like `kustomize build`, every object valid against the
Kubernetes schemas (kubernetes-validate, strict) or KEDA's CRD schema (vendored), and every reference
between objects, command line, setting and Redis key name in step with the code."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml
from click.testing import CliRunner

from gateway.server import LIVENESS
from gateway.servicer import SERVICE
from holistic.families.registry import installed
from holistic.redis.embedded import HASH_MAX_LISTPACK_ENTRIES
from holistic.redis.keys import Keys
from holistic.settings import load_settings
from holistic.tenancy import retention
from holistic_app.cli import main
from tests.deploy.kustomize import KustomizeError, build

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "kubernetes"
OVERLAYS = ("in-cluster-redis", "managed-redis", "in-cluster-redis-tls")
K8S_VERSIONS = ("1.29.0", "1.37.0")  # gRPC probes are GA from 1.27


def rendered(overlay: str) -> list[dict[str, Any]]:
    return build(K8S / "overlays" / overlay)


def by_kind(docs: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == kind}


def keda_schemas() -> dict[str, dict[str, Any]]:
    out = {}
    for path in (K8S / "schemas" / "keda").glob("*.yaml"):
        crd = next(d for d in yaml.safe_load_all(path.read_text()) if d)
        version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1alpha1")
        out[crd["spec"]["names"]["kind"]] = version["schema"]["openAPIV3Schema"]
    return out


def pod_specs(docs: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    return [(d["metadata"]["name"], d["spec"]["template"]["spec"]) for d in docs
            if d["kind"] in ("Deployment", "StatefulSet")]  # fmt: skip


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_object_is_valid_for_kubernetes_or_keda(overlay):
    docs = rendered(overlay)
    schemas = keda_schemas()
    assert set(schemas) == {"ScaledObject", "TriggerAuthentication"}
    for doc in docs:
        if doc["apiVersion"].startswith("keda.sh/"):
            jsonschema.validate(doc, schemas[doc["kind"]])
            continue
        for version in K8S_VERSIONS:
            kubernetes_validate.validate(doc, version, strict=True)
        if doc["kind"] != "Namespace":
            assert doc["metadata"]["namespace"] == "holistic", doc["metadata"]


def test_the_schemas_catch_a_bad_object():
    """The validators are not vacuous: a misspelt field and a bad KEDA trigger are rejected."""
    gateway = by_kind(rendered("in-cluster-redis"), "Deployment")["holistic-gateway"]
    gateway["spec"]["template"]["spec"]["containers"][0]["readinesProbe"] = {}
    with pytest.raises(kubernetes_validate.ValidationError, match="readinesProbe"):
        kubernetes_validate.validate(gateway, K8S_VERSIONS[-1], strict=True)
    scaled = by_kind(rendered("in-cluster-redis"), "ScaledObject")["holistic-worker-accuracy"]
    del scaled["spec"]["triggers"][0]["type"]
    with pytest.raises(jsonschema.ValidationError, match="'type' is a required property"):
        jsonschema.validate(scaled, keda_schemas()["ScaledObject"])


def test_the_overlays_render_the_expected_objects():
    full = {(d["kind"], d["metadata"]["name"]) for d in rendered("in-cluster-redis")}
    workers = {f"holistic-worker-{f}" for f in installed()}
    expected = (
        {("Namespace", "holistic"), ("ConfigMap", "holistic-config"), ("ConfigMap", "holistic-retention"),
         ("TriggerAuthentication", "holistic-redis")}
        | {("Secret", s) for s in ("holistic-tokens", "holistic-admin-tokens", "holistic-client-token",
                                  "holistic-redis", "holistic-gateway-tls", "holistic-redis-ca")}
        | {("ServiceAccount", "holistic")}
        | {("NetworkPolicy", f"holistic-{n}") for n in ("default-deny", "dns", "gateway-ingress",
           "otlp-receiver-ingress", "dashboard-ingress", "gateway-clients-egress", "metrics-scrape",
           "redis-ingress", "redis-clients-egress")}
        | {("Deployment", n) for n in ("holistic-gateway", "holistic-janitor", "holistic-dashboard",
                                        "holistic-quality-exporter", "holistic-otlp-receiver", *workers)}
        | {("Service", n) for n in ("holistic-gateway", "holistic-dashboard", "holistic-redis",
                                     "holistic-otlp-receiver")}
        | {("PodDisruptionBudget", n) for n in ("holistic-gateway", "holistic-redis", *workers)}
        | {("ScaledObject", n) for n in workers}
        | {("HorizontalPodAutoscaler", "holistic-gateway"), ("StatefulSet", "holistic-redis")}
    )  # fmt: skip
    assert full == expected
    managed = rendered("managed-redis")
    assert {(d["kind"], d["metadata"]["name"]) for d in managed} == expected - {
        ("StatefulSet", "holistic-redis"), ("Service", "holistic-redis"), ("PodDisruptionBudget", "holistic-redis"),
        ("NetworkPolicy", "holistic-redis-ingress")
    }  # fmt: skip
    secret = by_kind(managed, "Secret")["holistic-redis"]["stringData"]
    assert secret["scheme"] == "rediss" and secret["tls"] == "enable" and secret["username"] == "holistic"
    tls = rendered("in-cluster-redis-tls")
    assert {(d["kind"], d["metadata"]["name"]) for d in tls} == expected | {("Secret", "holistic-redis-server-tls")}
    secret = by_kind(tls, "Secret")["holistic-redis"]["stringData"]
    assert (secret["scheme"], secret["address"], secret["tls"]) == ("rediss", "holistic-redis:6379", "enable")


def test_each_family_scales_on_its_own_consumer_group_lag():
    docs = rendered("in-cluster-redis")
    deployments, scaled = by_kind(docs, "Deployment"), by_kind(docs, "ScaledObject")
    auth = by_kind(docs, "TriggerAuthentication")
    secrets = by_kind(docs, "Secret")
    for family in installed():
        name = f"holistic-worker-{family}"
        container = deployments[name]["spec"]["template"]["spec"]["containers"][0]
        assert container["args"] == ["worker", family]
        so = scaled[name]["spec"]
        assert so["scaleTargetRef"]["name"] == name and so["minReplicaCount"] >= 1
        (trigger,) = so["triggers"]
        assert trigger["type"] == "redis-streams"
        # the stream the gateway writes and the group the family's workers read (holistic/redis/keys.py, workqueue)
        assert trigger["metadata"]["stream"] == Keys(load_settings().key_prefix).stream == "hl:{q0}:preds"
        assert trigger["metadata"]["consumerGroup"] == family
        assert int(trigger["metadata"]["lagCount"]) > 0
        refs = auth[trigger["authenticationRef"]["name"]]["spec"]["secretTargetRef"]
        assert {r["parameter"] for r in refs} == {"address", "username", "password", "tls"}
        for r in refs:
            assert r["key"] in secrets[r["name"]]["stringData"]


def test_references_probes_and_resources():
    docs = rendered("in-cluster-redis")
    secrets, configs = by_kind(docs, "Secret"), by_kind(docs, "ConfigMap")
    workloads = [d for d in docs if d["kind"] in ("Deployment", "StatefulSet")]
    for name, spec in pod_specs(docs):
        for c in spec["containers"]:
            assert "cpu" in c["resources"]["requests"] and "memory" in c["resources"]["limits"], name
            for src in c.get("envFrom", []):
                assert src["configMapRef"]["name"] in configs
            for env in c.get("env", []):
                ref = env.get("valueFrom", {}).get("secretKeyRef")
                if ref:
                    assert ref["key"] in secrets[ref["name"]]["stringData"], (name, ref)
            if c["image"].startswith("holistic-eval"):
                result = CliRunner().invoke(main, [*c["args"], "--help"])
                assert result.exit_code == 0, (name, result.output)
        for vol in spec.get("volumes", []):
            if "secret" in vol:
                assert vol["secret"]["secretName"] in secrets
    for d in docs:  # every selector selects a workload's pods
        if d["kind"] in ("Service", "PodDisruptionBudget"):
            selector = d["spec"]["selector"]
            labels = selector if d["kind"] == "Service" else selector["matchLabels"]
            assert any(labels.items() <= w["spec"]["template"]["metadata"]["labels"].items() for w in workloads), d
    gateway = by_kind(docs, "Deployment")["holistic-gateway"]["spec"]["template"]["spec"]["containers"][0]
    assert gateway["readinessProbe"]["grpc"]["service"] == SERVICE
    assert gateway["livenessProbe"]["grpc"]["service"] == LIVENESS
    redis_args = by_kind(docs, "StatefulSet")["holistic-redis"]["spec"]["template"]["spec"]["containers"][0]["args"]
    flags = dict(zip(redis_args[1::2], redis_args[2::2], strict=True))
    assert flags["--appendonly"] == "yes" and flags["--appendfsync"] == "everysec"
    assert flags["--maxmemory-policy"] == "noeviction"
    assert flags["--hash-max-listpack-entries"] == str(HASH_MAX_LISTPACK_ENTRIES)
    assert flags["--requirepass"] == "$(REDIS_PASSWORD)"


def test_the_config_map_is_valid_settings(monkeypatch):
    data = by_kind(rendered("in-cluster-redis"), "ConfigMap")["holistic-config"]["data"]
    for key, value in data.items():
        monkeypatch.setenv(key, value)
    settings = load_settings()
    assert set(settings.families) == set(installed())
    assert settings.metrics_address == "0.0.0.0:9100" and settings.log_format == "json"


KEEPS_DATA = ("gateway", "janitor", "quality-exporter", "worker")  # what builds a RetentionStore


def test_every_process_that_stores_or_reads_data_mounts_the_retention_file(monkeypatch):
    """HOLISTIC_RETENTION_FILE is in the shared ConfigMap: a process that reads it without the file mounted
    would refuse to start, and one that never saw it would keep a tenant's data past its retention."""
    docs = rendered("in-cluster-redis")
    configs = by_kind(docs, "ConfigMap")
    path = Path(configs["holistic-config"]["data"]["HOLISTIC_RETENTION_FILE"])
    mounted = []
    for name, spec in pod_specs(docs):
        container = spec["containers"][0]
        if container.get("args", [""])[0] not in KEEPS_DATA:
            continue
        volumes = {v["name"]: v for v in spec["volumes"]}
        mount = next(m for m in container["volumeMounts"] if m["mountPath"] == str(path.parent))
        assert mount["readOnly"], name
        assert volumes[mount["name"]]["configMap"]["name"] == "holistic-retention", name
        mounted.append(name)
    assert {"holistic-gateway", "holistic-janitor", "holistic-quality-exporter"} <= set(mounted)
    assert {f"holistic-worker-{f}" for f in installed()} <= set(mounted)
    text = configs["holistic-retention"]["data"][path.name]
    for key, value in configs["holistic-config"]["data"].items():
        monkeypatch.setenv(key, value)
    settings = load_settings()
    assert retention.parse(text, path.name, settings) == {}  # shipped empty: every tenant keeps the global values
    example = "\n".join(line.strip().removeprefix("# ") for line in text.splitlines())  # the commented example
    assert retention.parse(example, path.name, settings) == {
        "acme": retention.Retention(7 * 86400, 86400, 30 * 86400, 365 * 86400)
    }


def test_worker_manifests_are_what_the_generator_writes():
    spec = importlib.util.spec_from_file_location("gen_workers", ROOT / "tools" / "gen_kubernetes_workers.py")
    gen = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules["gen_workers"] = gen  # dataclasses look their module up
    spec.loader.exec_module(gen)  # type: ignore[union-attr]
    files = gen.render()
    assert set(files) == {f"{f}.yaml" for f in installed()} | {"kustomization.yaml"}
    for name, text in files.items():
        assert (K8S / "base" / "workers" / name).read_text() == text, f"run tools/gen_kubernetes_workers.py ({name})"


def test_the_renderer_refuses_what_it_does_not_implement(tmp_path):
    (tmp_path / "a.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    (tmp_path / "kustomization.yaml").write_text("resources: [a.yaml]\ncommonLabels: {a: b}\n")
    with pytest.raises(KustomizeError, match="unsupported fields"):
        build(tmp_path)
    (tmp_path / "kustomization.yaml").write_text("resources: [a.yaml, a.yaml]\n")
    with pytest.raises(KustomizeError, match="defined twice"):
        build(tmp_path)
    (tmp_path / "k").mkdir()
    (tmp_path / "k" / "kustomization.yaml").write_text(
        "resources: [../a.yaml]\npatches:\n- {path: ../p.yaml, target: {kind: ConfigMap, name: x}}\n"
    )
    (tmp_path / "p.yaml").write_text("[{op: add, path: /data, value: {k: v}}]\n")
    with pytest.raises(KustomizeError, match="outside the kustomization's directory"):
        build(tmp_path / "k")
    (tmp_path / "kustomization.yaml").write_text(
        "namespace: n\nresources: [a.yaml]\npatches:\n- target: {kind: ConfigMap, name: x}\n"
        "  patch: '[{op: add, path: /data, value: {k: v}}]'\n"
    )
    assert build(tmp_path) == [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "n"}, "data": {"k": "v"}}
    ]
