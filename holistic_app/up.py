"""`holistic up`: the whole service from one command, for a laptop, a demo or CI.

A private redis-server (AOF everysec, noeviction, unix socket) unless REDIS_URL is set, then one
gateway, one worker per deployed family and a janitor, each its own process exactly as in a real
deployment. A child that dies is restarted; Ctrl-C stops them all, Redis last.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from holistic import run_state
from holistic.embedded_redis import EmbeddedRedis
from holistic.errors import ConfigError
from holistic.run_state import RunState
from holistic.settings import Settings
from holistic.tenants import first_bare_token

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
class Child:
    name: str
    args: list[str]
    proc: subprocess.Popen[bytes] | None = None
    log_file: IO[bytes] | None = None
    restarts: int = 0


@dataclass
class Stack:
    settings: Settings
    address: str
    data_dir: Path
    log_dir: Path | None = None  # None: children log to this terminal
    dashboard_address: str | None = None  # None: no dashboard
    children: list[Child] = field(default_factory=list)
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
        self.children = [Child("gateway", [*py, "gateway"])]
        self.children += [Child(f"worker-{f}", [*py, "worker", f]) for f in self.settings.deployed_families()]
        self.children.append(Child("janitor", [*py, "janitor"]))
        if self.dashboard_address:
            self.children.append(
                Child("dashboard", [*py, "dashboard", "--address", self.dashboard_address, "--target", self.address])
            )
        for child in self.children:
            self._spawn(child)
        try:
            if self.settings.tls_client_ca is not None:
                wait_port(self.address)
            else:
                wait_serving(self.address, credentials=self._health_credentials())
        except ConfigError:
            self.stop()
            raise
        # what every other command run here reads to find this stack (holistic/run_state.py)
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

    def _metrics_env(self, child: Child) -> dict[str, str]:
        """With HOLISTIC_METRICS_ADDRESS host:port, child i serves /metrics on port + i."""
        if not self.settings.metrics_address:
            return {}
        host, _, port = self.settings.metrics_address.rpartition(":")
        return {"HOLISTIC_METRICS_ADDRESS": f"{host}:{int(port) + self.children.index(child)}"}

    def _spawn(self, child: Child) -> None:
        out: IO[bytes] | None = None
        if self.log_dir is not None:
            self.log_dir.mkdir(parents=True, exist_ok=True)
            out = child.log_file = open(self.log_dir / f"{child.name}.log", "ab")  # noqa: SIM115
        child.proc = subprocess.Popen(
            child.args, env={**self._env(), **self._metrics_env(child)}, stdout=out, stderr=out
        )

    def supervise_once(self) -> None:
        """Restart any child that died; the work it held is reclaimed by its group's replicas."""
        for child in self.children:
            if child.proc is not None and child.proc.poll() is not None:
                child.restarts += 1
                log.warning("%s exited with %s; restarting (#%d)", child.name, child.proc.returncode, child.restarts)
                self._spawn(child)

    def run_forever(self) -> None:
        stop = False

        def on_signal(signum: int, frame: object) -> None:
            nonlocal stop
            stop = True

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        while not stop:
            self.supervise_once()
            time.sleep(0.5)

    def stop(self) -> None:
        run_state.remove(self.data_dir, os.getpid())
        for child in self.children:
            if child.proc is not None and child.proc.poll() is None:
                child.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 15
        for child in self.children:
            if child.proc is None:
                continue
            try:
                child.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.proc.kill()
                child.proc.wait()
            if child.log_file is not None:
                child.log_file.close()
        if self.redis is not None:
            self.redis.stop()
