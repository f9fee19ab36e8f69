"""deploy/kubernetes's hardening: the policy (tests/deploy/policy.py) holds for every overlay and catches each
deliberately broken manifest, the NetworkPolicies allow exactly the intended paths, and the Redis password
and TLS setup works for real: a redis-server started with the StatefulSet's arguments and a client given
the REDIS_URL the kubelet would compose from the Secret."""

from __future__ import annotations

import secrets
import shutil
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redis

from holistic.redis.connection import sync_client
from holistic.settings import load_settings
from tests.certs import make_pki
from tests.deploy.k8s_env import container_args, container_env, expand
from tests.deploy.policy import egress_allows, ingress_allows, matches, violations
from tests.deploy.test_kubernetes import OVERLAYS, by_kind, rendered

Docs = list[dict[str, Any]]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_overlay_passes_the_policy(overlay):
    assert violations(rendered(overlay)) == []


def pod(docs: Docs, name: str) -> dict[str, Any]:
    return next(d for d in docs if d["kind"] in ("Deployment", "StatefulSet") and d["metadata"]["name"] == name)[
        "spec"
    ]["template"]


def container(docs: Docs, name: str) -> dict[str, Any]:
    return pod(docs, name)["spec"]["containers"][0]


def netpol(docs: Docs, name: str) -> dict[str, Any]:
    return by_kind(docs, "NetworkPolicy")[name]["spec"]


def _drop_default_deny(docs: Docs) -> None:
    docs.remove(next(d for d in docs if d["metadata"]["name"] == "holistic-default-deny"))


def _open_redis(docs: Docs) -> None:
    netpol(docs, "holistic-redis-ingress")["ingress"][0]["from"].append({"podSelector": {}})
    netpol(docs, "holistic-redis-clients-egress")["podSelector"] = {}


def spec(docs: Docs, name: str) -> dict[str, Any]:
    return pod(docs, name)["spec"]


def env_var(docs: Docs, name: str, var: str) -> dict[str, Any]:
    return next(e for e in container(docs, name)["env"] if e["name"] == var)


def _url_first(docs: Docs) -> None:
    env = container(docs, "holistic-gateway")["env"]
    env.insert(0, env.pop(next(i for i, e in enumerate(env) if e["name"] == "REDIS_URL")))


def _no_requirepass(docs: Docs) -> None:
    args = container(docs, "holistic-redis")["args"]
    del args[args.index("--requirepass") : args.index("--requirepass") + 2]


GW, REDIS, CLIENT = "holistic-gateway", "holistic-redis", "holistic.dev/redis-client"
BREAKS: dict[str, tuple[str, Callable[[Docs], Any]]] = {
    "root": ("non-root: holistic-janitor",
             lambda d: spec(d, "holistic-janitor")["securityContext"].pop("runAsNonRoot")),
    "writable root": ("read-only-root: holistic-gateway/gateway",
                      lambda d: container(d, GW)["securityContext"].pop("readOnlyRootFilesystem")),
    "escalation": ("no-escalation: holistic-redis/redis",
                   lambda d: container(d, REDIS)["securityContext"].update(allowPrivilegeEscalation=True)),
    "no limit": ("resources: holistic-worker-bias/worker",
                 lambda d: container(d, "holistic-worker-bias")["resources"].pop("limits")),
    "token": ("service-account: holistic-dashboard",
              lambda d: spec(d, "holistic-dashboard").update(automountServiceAccountToken=True)),
    "default account": ("service-account: holistic-worker-accuracy",
                        lambda d: spec(d, "holistic-worker-accuracy").pop("serviceAccountName")),
    "no default deny": ("network-policy: holistic-gateway: no default-deny Ingress", _drop_default_deny),
    "dashboard open": ("exposure: holistic-dashboard: holistic-dashboard-ingress opens port 8765 to all",
                       lambda d: netpol(d, "holistic-dashboard-ingress")["ingress"][0].pop("from")),
    "scrape any port": ("exposure: holistic-redis: holistic-metrics-scrape opens port *",
                        lambda d: netpol(d, "holistic-metrics-scrape")["ingress"][0].pop("ports")),
    "redis for all": ("redis-access: holistic-dashboard: reaches Redis: True, should: False", _open_redis),
    "redis client cut off": ("redis-access: holistic-janitor: reaches Redis: False, should: True",
                             lambda d: pod(d, "holistic-janitor")["metadata"]["labels"].pop(CLIENT)),
    "password in manifest": ("redis-secret: holistic-quality-exporter: REDIS_URL is not",
                             lambda d: env_var(d, "holistic-quality-exporter", "REDIS_URL").update(value="redis://:pw@r/0")),
    "url before its parts": ("redis-secret: holistic-gateway: REDIS_URL must come after", _url_first),
    "no requirepass": ("redis-secret: holistic-redis: the server must requirepass", _no_requirepass),
    "tls without ca": ("redis-secret: holistic-gateway: rediss without HOLISTIC_REDIS_TLS_CA",
                       lambda d: by_kind(d, "Secret")[REDIS]["stringData"].update(scheme="rediss", tls="enable")),
    "dashboard egress anywhere": ("redis-access: holistic-dashboard: holistic-gateway-clients-egress lets it leave",
                                  lambda d: netpol(d, "holistic-gateway-clients-egress")["egress"][0].pop("to")),
    "gateway on one node": ("spread: holistic-gateway: up to 10 pods",
                            lambda d: spec(d, GW).pop("topologySpreadConstraints")),
}  # fmt: skip


@pytest.mark.parametrize("case", BREAKS)
def test_a_broken_manifest_violates_the_policy(case):
    expected, breaks = BREAKS[case]
    docs = rendered("in-cluster-redis")
    breaks(docs)
    found = violations(docs)
    assert any(v.startswith(expected) for v in found), found


def test_managed_redis_egress_only_for_the_clients_and_its_port():
    docs = rendered("managed-redis")
    netpol(docs, "holistic-redis-clients-egress")["egress"][0]["ports"][0]["port"] = 443
    assert "redis-access: holistic-gateway: holistic-redis-clients-egress lets it leave the cluster" in violations(docs)
    docs = rendered("managed-redis")
    netpol(docs, "holistic-redis-clients-egress")["podSelector"] = {}
    assert "redis-access: holistic-dashboard: holistic-redis-clients-egress lets it leave the cluster" in violations(
        docs
    )


def test_network_paths_hand_worked():
    """Who reaches whom in the in-cluster overlay, worked out by hand from the manifests."""
    docs = rendered("in-cluster-redis")
    labels = {n: pod(docs, n)["metadata"]["labels"] for n in ("holistic-gateway", "holistic-dashboard",
              "holistic-otlp-receiver", "holistic-janitor", "holistic-worker-toxicity", "holistic-redis")}  # fmt: skip
    redis_pod, gateway_pod = pod(docs, "holistic-redis"), pod(docs, "holistic-gateway")
    redis_labels = redis_pod["metadata"]["labels"]
    reach_redis = {
        n
        for n, lab in labels.items()
        if ingress_allows(docs, redis_pod, lab, 6379) and egress_allows(docs, lab, redis_labels, 6379)
    }
    assert reach_redis == {"holistic-gateway", "holistic-janitor", "holistic-worker-toxicity"}
    reach_gateway = {n for n, lab in labels.items()
                     if egress_allows(docs, lab, gateway_pod["metadata"]["labels"], 50051)}  # fmt: skip
    assert reach_gateway == {"holistic-dashboard", "holistic-otlp-receiver"}
    assert ingress_allows(docs, gateway_pod, {"any": "pod"}, 50051)
    assert not ingress_allows(docs, gateway_pod, {"any": "pod"}, 9100)  # metrics: the monitoring namespace only
    assert not ingress_allows(docs, pod(docs, "holistic-dashboard"), labels["holistic-gateway"], 8765)
    assert matches({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["x"]}]}, {"a": "y"})
    assert not matches({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {"b": "y"})


def test_kubelet_style_expansion():
    env = {"A": "x", "B": "$(A)"}
    assert expand("$(A)-$(B)-$(C)-$$(A)", env) == "x-$(A)-$(C)-$(A)"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(docs: Docs, tmp_path: Path, password: str) -> tuple[subprocess.Popen[bytes], dict[str, str], dict[str, str]]:
    """Start redis-server as the StatefulSet does (its data and TLS paths moved under tmp_path) and
    return it with the Secret's values the clients get (the operator's password, localhost for the
    Service name) and the ConfigMap's."""
    port = free_port()
    secret_values = dict(by_kind(docs, "Secret")["holistic-redis"]["stringData"], password=password,
                         address=f"localhost:{port}")  # fmt: skip
    config = dict(by_kind(docs, "ConfigMap")["holistic-config"]["data"])
    pki = make_pki(tmp_path)
    tls_dir, ca_dir = tmp_path / "redis-tls", tmp_path / "redis-ca"
    tls_dir.mkdir(), ca_dir.mkdir()
    for src, dst in ((pki.server_cert, tls_dir / "tls.crt"), (pki.server_key, tls_dir / "tls.key"),
                     (pki.ca, tls_dir / "ca.crt"), (pki.ca, ca_dir / "ca.crt")):  # fmt: skip
        shutil.copy(src, dst)
    if "HOLISTIC_REDIS_TLS_CA" in config:
        config["HOLISTIC_REDIS_TLS_CA"] = config["HOLISTIC_REDIS_TLS_CA"].replace("/etc/holistic/redis-ca", str(ca_dir))
    server = container(docs, "holistic-redis")
    env = container_env(server, {"holistic-redis": secret_values}, {})
    args = [a.replace("/etc/redis-tls", str(tls_dir)).replace("/data", str(tmp_path))
            for a in container_args(server, env)]  # fmt: skip
    args += ["--tls-port", str(port)] if "--tls-port" in args else ["--port", str(port)]
    proc = subprocess.Popen([shutil.which(args[0]) or args[0], *args[1:]],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    probe = [a.replace("/etc/redis-tls", str(tls_dir)) for a in server["readinessProbe"]["exec"]["command"]]
    probe = [shutil.which(probe[0]) or probe[0], *probe[1:-1], "-p", str(port), probe[-1]]  # the port before PING
    for _ in range(200):
        ready = subprocess.run(probe, env=env, capture_output=True, text=True)
        if ready.stdout.strip() == "PONG":
            break
        time.sleep(0.05)
    else:
        proc.kill()
        raise AssertionError(f"the readiness probe never saw PONG: {ready.stdout} {ready.stderr}")
    return proc, secret_values, config


@pytest.mark.parametrize(("overlay", "scheme"), [("in-cluster-redis", "redis"), ("in-cluster-redis-tls", "rediss")])
def test_clients_reach_the_in_cluster_redis_with_the_secret_password(overlay, scheme, tmp_path, monkeypatch):
    docs = rendered(overlay)
    password = secrets.token_hex(32)
    proc, secret_values, config = _serve(docs, tmp_path, password)
    try:
        assert password.encode() not in Path(f"/proc/{proc.pid}/cmdline").read_bytes()  # Redis rewrote its title
        urls = set()
        for name in ("holistic-gateway", "holistic-janitor", "holistic-quality-exporter", "holistic-worker-bias"):
            env = container_env(container(docs, name), {"holistic-redis": secret_values}, {"holistic-config": config})
            urls.add(env["REDIS_URL"])
            for key, value in env.items():
                monkeypatch.setenv(key, value)
            client = sync_client(load_settings())
            client.set(f"hl:k8s:{name}", name)
            assert client.get(f"hl:k8s:{name}") == name.encode()
        assert urls == {f"{scheme}://:{password}@localhost:{secret_values['address'].rsplit(':')[1]}/0"}
        (url,) = urls
        with pytest.raises(redis.AuthenticationError):
            sync_client(load_settings(redis_url=url.replace(password, "wrong"))).ping()
        if scheme == "rediss":  # TLS only: plaintext is refused
            with pytest.raises(redis.ConnectionError):
                redis.Redis.from_url(url.replace("rediss://", "redis://"), socket_timeout=2).ping()
    finally:
        proc.kill()
        proc.wait()


def test_a_wrong_ca_is_refused(tmp_path, monkeypatch):
    docs = rendered("in-cluster-redis-tls")
    proc, secret_values, config = _serve(docs, tmp_path, "a" * 64)
    try:
        (tmp_path / "other").mkdir()
        config = dict(config, HOLISTIC_REDIS_TLS_CA=str(make_pki(tmp_path / "other").ca))  # another CA
        env = container_env(
            container(docs, "holistic-gateway"), {"holistic-redis": secret_values}, {"holistic-config": config}
        )
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        with pytest.raises(redis.ConnectionError, match="certificate verify failed"):
            sync_client(load_settings()).ping()
    finally:
        proc.kill()
        proc.wait()


def test_managed_redis_verifies_its_certificate_with_the_ca():
    docs = rendered("managed-redis")
    assert (
        by_kind(docs, "ConfigMap")["holistic-config"]["data"]["HOLISTIC_REDIS_TLS_CA"]
        == "/etc/holistic/redis-ca/ca.crt"
    )
    refs = by_kind(docs, "TriggerAuthentication")["holistic-redis"]["spec"]["secretTargetRef"]
    assert {"parameter": "ca", "name": "holistic-redis-ca", "key": "ca.crt"} in refs
