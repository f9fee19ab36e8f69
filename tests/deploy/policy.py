"""Policy as code for deploy/kubernetes: the rules kube-linter or conftest would enforce, in Python, applied to
the rendered output of every overlay (kube-linter and conftest are Go binaries, on none of the registries
this project installs from). `violations(docs)` lists every broken rule as `rule: object: why`; empty is a pass.

Rules (docs/kubernetes.md, "Policy checks"):
  non-root          every pod runs as non-root (runAsNonRoot)
  read-only-root    every container's root filesystem is read-only
  no-escalation     no container may escalate privileges, and each drops ALL capabilities
  resources         every container requests cpu and memory and limits memory
  service-account   every pod names a ServiceAccount that exists, and neither mounts a token
  network-policy    a default deny of ingress and egress selects every pod
  exposure          only the gateway is open to all; other traffic from outside the namespace is the
                    labelled namespaces of EXTERNAL (monitoring, OTLP senders, the dashboard's proxy, KEDA)
  redis-access      exactly the processes with a REDIS_URL (REDIS_CLIENTS) reach Redis, both ways: Redis's
                    ingress and their egress; nothing leaves the cluster but the clients of an external
                    Redis, for its address's port only
  redis-secret      REDIS_URL is composed from the holistic-redis Secret (no password in a manifest), the
                    in-cluster Redis requires that password, rediss has a CA that every client mounts
  spread            a workload that runs more than one pod spreads them over nodes
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import Any

Doc = dict[str, Any]

# The processes that talk to Redis (app.kubernetes.io/name; workers by component).
REDIS_CLIENTS = {"holistic-gateway", "holistic-janitor", "holistic-quality-exporter", "worker"}
REDIS_URL = "$(REDIS_SCHEME)://$(REDIS_USERNAME):$(REDIS_PASSWORD)@$(REDIS_ADDRESS)/0"
REDIS_PARTS = {"REDIS_SCHEME": "scheme", "REDIS_ADDRESS": "address", "REDIS_USERNAME": "username",
               "REDIS_PASSWORD": "password"}  # fmt: skip
# Traffic from outside the namespace that may reach a pod: (target or "*", namespace labels, port).
EXTERNAL = {
    ("*", (("holistic.dev/monitoring", "true"),), 9100),
    ("*", (("holistic.dev/monitoring", "true"),), 9465),
    ("holistic-otlp-receiver", (("holistic.dev/otlp-sender", "true"),), 4317),
    ("holistic-otlp-receiver", (("holistic.dev/otlp-sender", "true"),), 4318),
    ("holistic-dashboard", (("holistic.dev/dashboard-proxy", "true"),), 8765),
    ("holistic-redis", (("kubernetes.io/metadata.name", "keda"),), 6379),
}
OPEN_TO_ALL = {("holistic-gateway", 50051)}


def matches(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """A Kubernetes label selector (matchLabels, matchExpressions); {} selects everything."""
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], expr.get("values", [])
        ok = {"In": labels.get(key) in values, "NotIn": labels.get(key) not in values,
              "Exists": key in labels, "DoesNotExist": key not in labels}[op]  # fmt: skip
        if not ok:
            return False
    return True


def pods(docs: list[Doc]) -> Iterator[tuple[str, Doc, dict[str, Any]]]:
    """(workload name, workload, pod template) of every Deployment and StatefulSet."""
    for d in docs:
        if d["kind"] in ("Deployment", "StatefulSet"):
            yield d["metadata"]["name"], d, d["spec"]["template"]


def role(template: dict[str, Any]) -> str:
    labels = template["metadata"]["labels"]
    return "worker" if labels.get("app.kubernetes.io/component") == "worker" else labels["app.kubernetes.io/name"]


def _policies(docs: list[Doc], labels: dict[str, str], kind: str) -> list[Doc]:
    return [d for d in docs if d["kind"] == "NetworkPolicy" and kind in d["spec"].get("policyTypes", ["Ingress"])
            and matches(d["spec"]["podSelector"], labels)]  # fmt: skip


def _port_numbers(rule: dict[str, Any], template: dict[str, Any] | None) -> set[int | str]:
    """The ports a rule opens ("*" for all), named ports resolved against the target pod."""
    if not rule.get("ports"):
        return {"*"}
    named = {p["name"]: p["containerPort"] for c in (template or {}).get("spec", {}).get("containers", [])
             for p in c.get("ports", []) if "name" in p}  # fmt: skip
    return {named.get(p["port"], p["port"]) if "port" in p else "*" for p in rule["ports"]}


def ingress_allows(docs: list[Doc], target: dict[str, Any], source: dict[str, str], port: int) -> bool:
    """Whether a pod of this namespace with labels `source` may open `port` on the `target` pod."""
    for pol in _policies(docs, target["metadata"]["labels"], "Ingress"):
        for rule in pol["spec"].get("ingress", []):
            ports = _port_numbers(rule, target)
            peers = rule.get("from")
            if (port in ports or "*" in ports) and (
                not peers or any(set(p) == {"podSelector"} and matches(p["podSelector"], source) for p in peers)
            ):
                return True
    return False


def egress_allows(docs: list[Doc], source: dict[str, str], target: dict[str, str], port: int) -> bool:
    for pol in _policies(docs, source, "Egress"):
        for rule in pol["spec"].get("egress", []):
            ports = _port_numbers(rule, None)
            peers = rule.get("to")
            if (port in ports or "*" in ports) and (
                not peers or any(set(p) == {"podSelector"} and matches(p["podSelector"], target) for p in peers)
            ):
                return True
    return False


def _env(container: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["name"]: e for e in container.get("env", [])}


def violations(docs: list[Doc]) -> list[str]:
    out: list[str] = []
    accounts = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ServiceAccount"}
    secrets = {d["metadata"]["name"]: d.get("stringData", {}) for d in docs if d["kind"] == "Secret"}
    config = next((d["data"] for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "holistic-config"),
                  {})  # fmt: skip
    scaled = {d["spec"]["scaleTargetRef"]["name"]: d["spec"].get("maxReplicas", d["spec"].get("maxReplicaCount", 1))
              for d in docs if d["kind"] in ("HorizontalPodAutoscaler", "ScaledObject")}  # fmt: skip
    redis_pods = [t for _, d, t in pods(docs) if role(t) == "holistic-redis"]
    for name, workload, template in pods(docs):
        spec, labels = template["spec"], template["metadata"]["labels"]
        if not spec.get("securityContext", {}).get("runAsNonRoot"):
            out.append(f"non-root: {name}: the pod's securityContext lacks runAsNonRoot: true")
        for c in spec["containers"]:
            sc = c.get("securityContext", {})
            if not sc.get("readOnlyRootFilesystem"):
                out.append(f"read-only-root: {name}/{c['name']}: readOnlyRootFilesystem is not true")
            if sc.get("allowPrivilegeEscalation") is not False or "ALL" not in sc.get("capabilities", {}).get(
                "drop", []
            ):
                out.append(f"no-escalation: {name}/{c['name']}: allowPrivilegeEscalation false and drop ALL needed")
            res = c.get("resources", {})
            if not {"cpu", "memory"} <= set(res.get("requests", {})) or "memory" not in res.get("limits", {}):
                out.append(f"resources: {name}/{c['name']}: needs cpu and memory requests and a memory limit")
        account = accounts.get(spec.get("serviceAccountName", "default"))
        if account is None or account.get("automountServiceAccountToken") is not False:
            out.append(f"service-account: {name}: its ServiceAccount is missing or mounts a token")
        if spec.get("automountServiceAccountToken") is not False:
            out.append(f"service-account: {name}: automountServiceAccountToken is not false")
        for kind in ("Ingress", "Egress"):
            if not any(not p["spec"].get(kind.lower()) for p in _policies(docs, labels, kind)):
                out.append(f"network-policy: {name}: no default-deny {kind} NetworkPolicy selects it")
        out += _exposure(docs, name, template)
        is_client = role(template) in REDIS_CLIENTS
        has_url = any("REDIS_URL" in _env(c) for c in spec["containers"])
        if has_url != is_client:
            out.append(f"redis-access: {name}: has a REDIS_URL: {has_url}, is a Redis client: {is_client}")
        for target in redis_pods:
            reach = ingress_allows(docs, target, labels, 6379) and egress_allows(
                docs, labels, target["metadata"]["labels"], 6379
            )
            if reach != is_client and target is not template:
                out.append(f"redis-access: {name}: reaches Redis: {reach}, should: {is_client}")
        if is_client:
            out += _redis_client(name, spec, secrets, config)
        replicas = max(workload["spec"].get("replicas", 1), scaled.get(name, 1))
        spread = [t for t in spec.get("topologySpreadConstraints", []) if t["topologyKey"] == "kubernetes.io/hostname"
                  and matches(t["labelSelector"], labels)]  # fmt: skip
        if replicas > 1 and not spread:
            out.append(f"spread: {name}: up to {replicas} pods and no spread over kubernetes.io/hostname")
    out += _redis_server(docs, redis_pods, secrets)
    return out


def _exposure(docs: list[Doc], name: str, template: dict[str, Any]) -> list[str]:
    out = []
    target = role(template)
    for pol in _policies(docs, template["metadata"]["labels"], "Ingress"):
        for rule in pol["spec"].get("ingress", []):
            for port in _port_numbers(rule, template):
                peers = rule.get("from") or [None]
                for peer in peers:
                    if peer is None or "ipBlock" in peer:
                        if (target, port) not in OPEN_TO_ALL:
                            out.append(f"exposure: {name}: {pol['metadata']['name']} opens port {port} to all")
                    elif "namespaceSelector" in peer:
                        ns = tuple(sorted((peer["namespaceSelector"].get("matchLabels") or {}).items()))
                        if peer["namespaceSelector"].get("matchExpressions") or not (
                            (target, ns, port) in EXTERNAL or ("*", ns, port) in EXTERNAL
                        ):
                            out.append(f"exposure: {name}: {pol['metadata']['name']} opens port {port} to {ns}")
    return out


def _redis_client(
    name: str, spec: dict[str, Any], secrets: dict[str, dict[str, str]], config: dict[str, str]
) -> list[str]:
    out = []
    for c in spec["containers"]:
        env = _env(c)
        if env.get("REDIS_URL", {}).get("value") != REDIS_URL:
            out.append(f"redis-secret: {name}: REDIS_URL is not {REDIS_URL}")
        for var, key in REDIS_PARTS.items():
            ref = env.get(var, {}).get("valueFrom", {}).get("secretKeyRef", {})
            if (ref.get("name"), ref.get("key")) != ("holistic-redis", key) or key not in secrets.get(
                "holistic-redis", {}
            ):
                out.append(f"redis-secret: {name}: {var} is not the holistic-redis Secret's {key}")
        names = list(env)
        if "REDIS_URL" in env and any(v in env and names.index(v) > names.index("REDIS_URL") for v in REDIS_PARTS):
            out.append(f"redis-secret: {name}: REDIS_URL must come after the variables it uses")
        ca = config.get("HOLISTIC_REDIS_TLS_CA")
        if secrets.get("holistic-redis", {}).get("scheme") == "rediss":
            mounts = {m["name"]: m["mountPath"] for m in c.get("volumeMounts", [])}
            vols = {v["name"]: v.get("secret", {}).get("secretName") for v in spec.get("volumes", [])}
            mounted = {mounts[n] for n in mounts if vols.get(n) == "holistic-redis-ca"}
            if not ca or str(PurePosixPath(ca).parent) not in mounted:
                out.append(f"redis-secret: {name}: rediss without HOLISTIC_REDIS_TLS_CA in a mounted holistic-redis-ca")
    return out


def _redis_server(docs: list[Doc], redis_pods: list[dict[str, Any]], secrets: dict[str, dict[str, str]]) -> list[str]:
    out = []
    redis = secrets.get("holistic-redis", {})
    if redis.get("scheme") not in ("redis", "rediss") or (redis.get("scheme") == "rediss") != (
        redis.get("tls") == "enable"
    ):
        out.append("redis-secret: holistic-redis: scheme must be redis or rediss, and tls enable exactly for rediss")
    for t in redis_pods:
        (c,) = t["spec"]["containers"]
        ref = _env(c).get("REDIS_PASSWORD", {}).get("valueFrom", {}).get("secretKeyRef", {})
        args = c["args"]
        if (
            "--requirepass" not in args
            or args[args.index("--requirepass") + 1] != "$(REDIS_PASSWORD)"
            or ((ref.get("name"), ref.get("key")) != ("holistic-redis", "password"))
        ):
            out.append("redis-secret: holistic-redis: the server must requirepass the holistic-redis Secret's password")
    # Leaving the cluster (an ipBlock, or no destination): only the clients of an external Redis, only for its port.
    port = None if redis_pods else int(redis.get("address", ":0").rsplit(":", 1)[1])
    for name, _, template in pods(docs):
        for pol in _policies(docs, template["metadata"]["labels"], "Egress"):
            for rule in pol["spec"].get("egress", []):
                leaves = any("ipBlock" in p for p in rule.get("to", [])) or not rule.get("to")
                if leaves and (role(template) not in REDIS_CLIENTS or _port_numbers(rule, None) != {port}):
                    out.append(f"redis-access: {name}: {pol['metadata']['name']} lets it leave the cluster")
    return out
