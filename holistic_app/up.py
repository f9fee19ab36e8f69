"""`holistic up`: the whole service from one command, for a laptop, a demo or CI.

A private redis-server (AOF everysec, noeviction, unix socket) unless REDIS_URL is set, then one
gateway, one worker per deployed family and a janitor, each its own process exactly as in a real
deployment. A child that dies is restarted; Ctrl-C stops them all, Redis last.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from holistic.errors import ConfigError
from holistic.process import run_state
from holistic.process.run_state import RunState
from holistic.process.supervisor import Child, Supervisor
from holistic.redis.embedded import EmbeddedRedis
from holistic.settings import Settings
from holistic.tenancy.tenants import first_bare_token

log = logging.getLogger("holistic.up")


def free_address(host: str = "127.0.0.1") -> str:
    with socket.socket() as s:
        s.bind((host, 0))
        return f"{host}:{s.getsockname()[1]}"


def wait_serving(address: str, timeout_s: float = 30.0, credentials: grpc.ChannelCredentials | None = None) -> None:
    deadline = time.monotonic() + timeout_s
    channel_ = grpc.secure_channel(address, credentials) if credentials else grpc.insecure_channel(address)
    with channel_ as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while time.monotonic() < deadline:
            try:
                reply = stub.Check(health_pb2.HealthCheckRequest(service="holistic.v1.EvaluationService"), timeout=1)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.RpcError:
                pass
            time.sleep(0.1)
    raise ConfigError(f"the gateway did not become healthy on {address} within {timeout_s:g} s")


def wait_port(address: str, timeout_s: float = 30.0) -> None:
    host, _, port = address.rpartition(":")
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            socket.create_connection((host, int(port)), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise ConfigError(f"nothing listens on {address} after {timeout_s:g} s")


@dataclass
class Stack:
    settings: Settings
    address: str
    data_dir: Path
    log_dir: Path | None = None  # None: children log to this terminal
    dashboard_address: str | None = None  # None: no dashboard
    supervisor: Supervisor = field(default_factory=lambda: Supervisor([]))
    redis: EmbeddedRedis | None = None
    redis_url: str = ""

    def start(self) -> None:
        if self.settings.redis_url:
            self.redis_url = self.settings.redis_url
        else:
            fsync = "always" if self.settings.durability == "strict" else "everysec"
            self.redis = EmbeddedRedis(self.data_dir, fsync=fsync)
            self.redis_url = self.redis.start()
            log.info("private redis-server at %s (AOF %s, noeviction)", self.redis_url, fsync)
        py = [sys.executable, "-m", "holistic_app"]
        commands = [("gateway", [*py, "gateway"])]
        commands += [(f"worker-{f}", [*py, "worker", f]) for f in self.settings.deployed_families()]
        commands.append(("janitor", [*py, "janitor"]))
        if self.dashboard_address:
            commands.append(
                ("dashboard", [*py, "dashboard", "--address", self.dashboard_address, "--target", self.address])
            )
        env = self._env()
        self.supervisor = Supervisor([
            Child(name, args, {**env, **self._metrics_env(i)},
                  self.log_dir / f"{name}.log" if self.log_dir is not None else None)
            for i, (name, args) in enumerate(commands)
        ])  # fmt: skip
        self.supervisor.start()
        try:
            if self.settings.tls_client_ca is not None:
                wait_port(self.address)
            else:
                wait_serving(self.address, credentials=self._health_credentials())
        except ConfigError:
            self.stop()
            raise
        # what every other command run here reads to find this stack (holistic/process/run_state.py)
        state = RunState(os.getpid(), time.time(), self.redis_url, self.address, self.dashboard_url)
        run_state.write(self.data_dir, state)

    def _health_credentials(self) -> grpc.ChannelCredentials | None:
        """Over TLS, trust the gateway's own certificate; with mutual TLS, `up` has no client certificate,
        so it waits for the port instead (wait_port)."""
        s = self.settings
        if s.tls_cert is None:
            return None
        return grpc.ssl_channel_credentials(root_certificates=s.tls_cert.read_bytes())

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["REDIS_URL"] = self.redis_url
        env["HOLISTIC_GATEWAY_ADDRESS"] = self.address
        # the gateway creates every started family's consumer group before it accepts a batch
        env["HOLISTIC_FAMILIES"] = ",".join(self.settings.deployed_families())
        if not env.get("HOLISTIC_DASHBOARD_TOKEN") and not env.get("HOLISTIC_TOKEN"):
            bare = first_bare_token(self.settings.tokens)
            if bare:  # a development token given in clear: the dashboard reads the gateway with it
                env["HOLISTIC_DASHBOARD_TOKEN"] = bare
        return env

    @property
    def dashboard_url(self) -> str | None:
        return f"http://{self.dashboard_address}/" if self.dashboard_address else None

    def _metrics_env(self, index: int) -> dict[str, str]:
        """With HOLISTIC_METRICS_ADDRESS host:port, child i serves /metrics on port + i."""
        if not self.settings.metrics_address:
            return {}
        host, _, port = self.settings.metrics_address.rpartition(":")
        return {"HOLISTIC_METRICS_ADDRESS": f"{host}:{int(port) + index}"}

    @property
    def children(self) -> list[Child]:
        return self.supervisor.children

    def run_forever(self) -> None:
        """Restart any child that dies until SIGTERM or SIGINT (holistic/process/supervisor.py)."""
        self.supervisor.run()

    def stop(self) -> None:
        run_state.remove(self.data_dir, os.getpid())
        self.supervisor.stop()
        if self.redis is not None:
            self.redis.stop()
