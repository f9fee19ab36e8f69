"""Writes deploy/kubernetes/base/workers/: per metric family a Deployment, a PodDisruptionBudget and a
KEDA ScaledObject on the family's consumer-group lag. Run after adding a family or changing a size;
tests/deploy/test_kubernetes.py fails when the committed files differ from what this writes.

Sizes come from benchmarks/family_cost.py (CPU-seconds per 1,000 predictions and peak memory, one
process per family; docs/kubernetes.md has the figures): a replica is one Python process, so it
uses at most about one core; requests are what it needs at a steady share of that core, limits
leave room above the measured peak. lagCount is the batches waiting per replica that KEDA aims at,
a few seconds of one replica's work at batches of ~500 predictions.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "deploy" / "kubernetes" / "base" / "workers"
sys.path.insert(0, str(ROOT))

from holistic.families.registry import installed  # noqa: E402
from holistic.redis.keys import Keys  # noqa: E402


@dataclass(frozen=True)
class Size:
    cpu: str
    memory: str
    memory_limit: str
    lag_per_replica: int
    max_replicas: int


# Measured: compute 0.004-0.017 CPU-s per 1,000 predictions, ~210 MiB peak; summarization 0.34 per
# 1,000 summaries lexical, ~87 with semantic similarity (which the image includes), 1.2 GiB peak.
LIGHT = Size(cpu="250m", memory="256Mi", memory_limit="512Mi", lag_per_replica=100, max_replicas=10)
SIZES: dict[str, Size] = {
    "accuracy": LIGHT,
    "efficiency": LIGHT,
    "calibration": LIGHT,
    "robustness": LIGHT,
    "fairness": LIGHT,
    "toxicity": Size(cpu="500m", memory="320Mi", memory_limit="768Mi", lag_per_replica=50, max_replicas=10),
    "bias": Size(cpu="500m", memory="320Mi", memory_limit="768Mi", lag_per_replica=50, max_replicas=10),
    "summarization": Size(cpu="1", memory="1536Mi", memory_limit="2560Mi", lag_per_replica=5, max_replicas=20),
    "retrieval": LIGHT,
    "evaluations": LIGHT,  # a mean per evaluation: lighter than accuracy
}  # an installed family not listed (a plugin) gets LIGHT

HEADER = "# Written by tools/gen_kubernetes_workers.py: edit the tool, not this file.\n"


def labels(family: str) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": f"holistic-worker-{family}",
        "app.kubernetes.io/component": "worker",
        "app.kubernetes.io/part-of": "holistic",
        "holistic.dev/family": family,
    }


def redis_env() -> list[dict[str, Any]]:
    """REDIS_URL composed from the holistic-redis Secret's keys (dependent variables, defined first)."""
    parts = [("REDIS_SCHEME", "scheme"), ("REDIS_ADDRESS", "address"), ("REDIS_USERNAME", "username"),
             ("REDIS_PASSWORD", "password")]  # fmt: skip
    env: list[dict[str, Any]] = [
        {"name": name, "valueFrom": {"secretKeyRef": {"name": "holistic-redis", "key": key}}} for name, key in parts
    ]
    env.append(
        {"name": "REDIS_URL", "value": "$(REDIS_SCHEME)://$(REDIS_USERNAME):$(REDIS_PASSWORD)@$(REDIS_ADDRESS)/0"}
    )
    return env


def deployment(family: str, size: Size) -> dict[str, Any]:
    name = f"holistic-worker-{family}"
    container = {
        "name": "worker",
        "image": "holistic-eval:0.1.0",
        "args": ["worker", family],
        "envFrom": [{"configMapRef": {"name": "holistic-config"}}],
        "env": redis_env(),
        "ports": [{"name": "metrics", "containerPort": 9100}],
        # A worker has no gRPC server; its /metrics thread answering says the process is alive.
        "livenessProbe": {
            "httpGet": {"path": "/metrics", "port": "metrics"},
            "initialDelaySeconds": 20,
            "periodSeconds": 20,
            "failureThreshold": 3,
        },
        "resources": {
            "requests": {"cpu": size.cpu, "memory": size.memory},
            "limits": {"memory": size.memory_limit},
        },
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
        "volumeMounts": [
            {"name": "tmp", "mountPath": "/tmp"},
            {"name": "redis-ca", "mountPath": "/etc/holistic/redis-ca", "readOnly": True},
            {"name": "retention", "mountPath": "/etc/holistic/retention", "readOnly": True},
        ],
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": labels(family)},
        "spec": {
            # KEDA owns the replica count (its ScaledObject below); 1 until it takes over.
            "replicas": 1,
            "selector": {"matchLabels": {"app.kubernetes.io/name": name}},
            "template": {
                "metadata": {
                    # holistic.dev/redis-client: the NetworkPolicies let the pod reach Redis
                    "labels": {**labels(family), "holistic.dev/redis-client": "true"},
                    "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": "9100"},
                },
                "spec": {
                    # A stopped worker's unacknowledged entries are claimed by another after
                    # HOLISTIC_CLAIM_IDLE_MS; applying is idempotent, so nothing is lost or counted twice.
                    "terminationGracePeriodSeconds": 30,
                    "serviceAccountName": "holistic",
                    "automountServiceAccountToken": False,
                    # Replicas on different nodes where the scheduler can (soft: never blocks a scale-up).
                    "topologySpreadConstraints": [
                        {
                            "maxSkew": 1,
                            "topologyKey": "kubernetes.io/hostname",
                            "whenUnsatisfiable": "ScheduleAnyway",
                            "labelSelector": {"matchLabels": {"app.kubernetes.io/name": name}},
                        }
                    ],
                    "securityContext": {
                        "runAsNonRoot": True,
                        "runAsUser": 10001,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "containers": [container],
                    "volumes": [
                        {"name": "tmp", "emptyDir": {}},
                        {"name": "redis-ca", "secret": {"secretName": "holistic-redis-ca", "optional": True}},
                        {"name": "retention", "configMap": {"name": "holistic-retention"}},
                    ],
                },
            },
        },
    }


def disruption_budget(family: str) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": f"holistic-worker-{family}", "labels": labels(family)},
        "spec": {
            "maxUnavailable": 1,
            "selector": {"matchLabels": {"app.kubernetes.io/name": f"holistic-worker-{family}"}},
        },
    }


def scaled_object(family: str, size: Size, keys: Keys) -> dict[str, Any]:
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {"name": f"holistic-worker-{family}", "labels": labels(family)},
        "spec": {
            "scaleTargetRef": {"name": f"holistic-worker-{family}"},
            "minReplicaCount": 1,
            "maxReplicaCount": size.max_replicas,
            "pollingInterval": 15,
            "cooldownPeriod": 300,
            "triggers": [
                {
                    "type": "redis-streams",
                    "metadata": {
                        "stream": keys.stream,
                        "consumerGroup": family,
                        "lagCount": str(size.lag_per_replica),
                        "activationLagCount": "1",
                        "databaseIndex": "0",
                    },
                    "authenticationRef": {"name": "holistic-redis"},
                }
            ],
        },
    }


def render() -> dict[str, str]:
    """File name -> text, for every family and the directory's kustomization."""
    keys = Keys()
    files: dict[str, str] = {}
    for family in installed():
        size = SIZES.get(family, LIGHT)
        docs = [deployment(family, size), disruption_budget(family), scaled_object(family, size, keys)]
        body = "---\n".join(yaml.safe_dump(d, sort_keys=False) for d in docs)
        files[f"{family}.yaml"] = HEADER + body
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [f"{family}.yaml" for family in installed()],
    }
    files["kustomization.yaml"] = HEADER + yaml.safe_dump(kustomization, sort_keys=False)
    return files


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, text in render().items():
        (OUT / name).write_text(text)
        print(OUT / name)


if __name__ == "__main__":
    main()
