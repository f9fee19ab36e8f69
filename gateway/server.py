"""Builds and runs the grpc.aio gateway: auth, health, reflection, limits, graceful shutdown."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import grpc
import redis
import redis.asyncio as aioredis
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from gateway import wire_proof
from gateway.auth import BearerAuth
from gateway.backlog import BacklogMonitor
from gateway.deletion import Deleter
from gateway.deployment import Deployment
from gateway.durability import AofBarrier, AofWatch, check_strict
from gateway.family_catalogue import FamilyCatalogue
from gateway.ingest import Ingestor
from gateway.profiles import ProfileReader
from gateway.quota import Quotas
from gateway.servicer import SERVICE, EvaluationService, handlers
from gateway.watch import WatchHub
from holistic.errors import ConfigError
from holistic.families import Family
from holistic.families.registry import load_family
from holistic.process.observability import serve_metrics
from holistic.process.supervisor import Child, Supervisor
from holistic.queue.work import WorkQueue
from holistic.redis.connection import async_client, sync_client
from holistic.redis.keys import Keys
from holistic.settings import Settings
from holistic.tenancy.audit import Audit
from holistic.tenancy.tenants import TokenStore

log = logging.getLogger("holistic.gateway")
LIVENESS = "liveness"

GIL_SWITCH_S = 0.001


class Gateway:
    """One gateway process: start() binds and serves, stop() drains in-flight calls."""

    def __init__(self, settings: Settings, families: Callable[[str], Family] | None = None) -> None:
        """`families` finds a family's declaration and fold by name (default: the installed entry points)."""
        self.settings = settings
        self.families = families
        self.port = 0
        self.server: grpc.aio.Server | None = None
        self.aof: AofWatch | None = None
        self.barrier: AofBarrier | None = None
        self.pinned: aioredis.Redis | None = None

    def _ensure_groups(self) -> None:
        """The groups of HOLISTIC_FAMILIES exist before the first batch, so batches accepted before their
        workers start are kept for them (other families' groups are made by their workers)."""
        client = sync_client(self.settings)
        try:
            for shard in range(self.settings.queue_shards):
                queue = WorkQueue(client, Keys(self.settings.key_prefix), shard=shard)
                for family in self.settings.families:
                    queue.ensure_group(family)
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            log.error("redis unreachable at start (%s); groups will be created by the workers", exc)
        finally:
            client.close()

    async def start(self, address: str | None = None) -> int:
        s = self.settings
        self._ensure_groups()
        self.tokens = TokenStore(s.tokens, s.tokens_file)
        self.admins = TokenStore(s.admin_tokens)
        if self.tokens.open:
            log.warning("=" * 72)
            log.warning(
                "no HOLISTIC_TOKENS / HOLISTIC_TOKENS_FILE: the gateway is OPEN, any caller may submit and read%s",
                "" if not self.admins.open else ", and delete",
            )
            log.warning("=" * 72)
        else:
            log.info("%d tenants: %s", len(self.tokens.tenants()), ", ".join(sorted(self.tokens.tenants())))
        self.r = async_client(s)
        self.health = health.aio.HealthServicer()
        # Liveness (Kubernetes' livenessProbe): the process serves, whatever Redis does; readiness is SERVICE.
        await self.health.set(LIVENESS, health_pb2.HealthCheckResponse.SERVING)

        async def on_health(ok: bool) -> None:
            state = health_pb2.HealthCheckResponse.SERVING if ok else health_pb2.HealthCheckResponse.NOT_SERVING
            await self.health.set(SERVICE, state)
            await self.health.set("", state)

        self.deployment = Deployment(self.r, Keys(s.key_prefix), s.queue_shards, tuple(s.families))
        self.backlog = BacklogMonitor(
            self.r, Keys(s.key_prefix), self.deployment, s.backlog_max_batches, s.queue_shards, on_health=on_health
        )
        # Reads and watches have connections of their own: a flood of them waits there, and never takes
        # the connections that submits, the backlog monitor and health need.
        self.reads_r = async_client(s, wait_s=10.0, max_connections=s.read_connections)
        self.feed_r = async_client(s, max_connections=4)
        self.folds = ThreadPoolExecutor(s.fold_threads, thread_name_prefix="fold")
        reader = ProfileReader(self.reads_r, s, self.folds, deployment=self.deployment, families=self.families)
        self.hub = WatchHub(self.feed_r, reader, reader.limits)
        self.quotas = Quotas(self.r, s, self.tokens, self.deployment)
        if s.durability == "strict":
            await check_strict(self.r)
        # everysec on one Redis: answers wait until the batch is in the AOF file, and the writes of one
        # submit go over one connection that never retries, so they cannot straddle two Redis processes.
        # A cluster answers INFO per node; there each node's own everysec behaviour applies.
        if s.durability == "everysec" and not s.redis_cluster:
            self.aof = AofWatch(self.r)
            self.barrier = AofBarrier(self.r)
            self.pinned = async_client(s, retry=Retry(NoBackoff(), 0), max_connections=256)
        if s.gateway_wire_proof:
            wire_proof.warn_if_missing()
        ingestor = Ingestor(self.r, s, self.backlog, self.quotas, self.deployment, self.barrier, self.pinned)
        catalogue = FamilyCatalogue(self.deployment, lambda: self.backlog.per_family, self.families or load_family)
        trail = Audit(self.r, Keys(s.key_prefix))
        service = EvaluationService(
            ingestor, reader, self.hub, self.tokens, Deleter(self.r, s), self.admins, catalogue=catalogue,
            audit_trail=trail,
        )  # fmt: skip
        self.server = grpc.aio.server(
            interceptors=[BearerAuth(self.tokens, self.admins, trail)],
            options=[
                ("grpc.max_receive_message_length", s.max_message_bytes),
                ("grpc.max_send_message_length", s.max_message_bytes),
                ("grpc.keepalive_time_ms", 30_000),
                ("grpc.keepalive_timeout_ms", 10_000),
                ("grpc.keepalive_permit_without_calls", 1),
                ("grpc.http2.max_pings_without_data", 0),
                ("grpc.http2.min_ping_interval_without_data_ms", 10_000),
            ],
        )
        self.server.add_generic_rpc_handlers((handlers(service),))
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.server)
        reflection.enable_server_reflection(
            (SERVICE, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name, reflection.SERVICE_NAME),
            self.server,
        )
        where = address or s.gateway_address
        credentials = server_credentials(s)
        if credentials is None:
            self.port = self.server.add_insecure_port(where)
        else:
            self.port = self.server.add_secure_port(where, credentials)
        if self.port == 0:
            raise OSError(f"cannot listen on {where}")
        await self.backlog.start()
        await self.quotas.start()
        if self.aof is not None:
            await self.aof.start()
        if self.barrier is not None:
            await self.barrier.start()
        await self.server.start()
        tls = "mutual TLS" if s.tls_client_ca else "TLS" if s.tls_cert else "plaintext"
        deployed = await self.deployment.families()
        log.info("gateway listening on port %d, %s (deployed families: %s)", self.port, tls, ", ".join(deployed))
        return self.port

    async def stop(self, grace_s: float = 5.0) -> None:
        if self.server is None:
            return
        await self.health.enter_graceful_shutdown()
        await self.hub.close()
        await self.server.stop(grace_s)
        await self.backlog.stop()
        await self.quotas.stop()
        if self.aof is not None:
            await self.aof.stop()
        if self.barrier is not None:
            await self.barrier.stop()
        if self.pinned is not None:
            await self.pinned.aclose()
        await self.r.aclose()
        await self.reads_r.aclose()
        await self.feed_r.aclose()
        self.folds.shutdown(wait=False, cancel_futures=True)
        self.server = None


def server_credentials(s: Settings) -> grpc.ServerCredentials | None:
    """TLS when a certificate is configured; mutual TLS when a client CA is too."""
    if s.tls_cert is None or s.tls_key is None:
        return None
    try:
        chain, key = s.tls_cert.read_bytes(), s.tls_key.read_bytes()
        client_ca = s.tls_client_ca.read_bytes() if s.tls_client_ca else None
    except OSError as exc:
        raise ConfigError(f"cannot read a TLS file: {exc}") from exc
    return grpc.ssl_server_credentials([(key, chain)], root_certificates=client_ca, require_client_auth=bool(client_ca))


async def serve(settings: Settings, address: str | None = None) -> None:
    # Folds run on threads; the event loop answering every caller gets the GIL back within 1 ms of
    # asking (Python's default hands it over every 5 ms), so a heavy fold barely delays others.
    sys.setswitchinterval(GIL_SWITCH_S)
    serve_metrics(settings.metrics_address)
    gateway = Gateway(settings)
    await gateway.start(address)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log.info("gateway shutting down")
    await gateway.stop()


def serve_processes(settings: Settings, address: str | None, n: int) -> int:
    """N gateway processes on one port (gRPC sets SO_REUSEPORT): the kernel spreads connections.

    Python serves one core per process; this is how one host's gateway uses more of them. A
    process that dies is restarted; SIGTERM stops them all (holistic/process/supervisor.py).
    """
    args = [sys.executable, "-m", "gateway"] + ([address] if address else [])

    def env(i: int) -> dict[str, str]:
        """Each process serves its own /metrics: the configured port + i."""
        out = dict(os.environ)
        if settings.metrics_address:
            host, _, port = settings.metrics_address.rpartition(":")
            out["HOLISTIC_METRICS_ADDRESS"] = f"{host}:{int(port) + i}"
        return out

    supervisor = Supervisor([Child(f"gateway-{i}", args, env(i)) for i in range(n)], grace_s=30.0)
    supervisor.start()
    supervisor.run()
    return 0
