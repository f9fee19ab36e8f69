"""Shared fixtures: a real redis-server per session (unix socket, no TCP), gateways in threads."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import redis

from gateway.server import Gateway
from holistic.families import Family
from holistic.families.registry import installed, load_family
from holistic.redis.connection import PACKER
from holistic.settings import Settings, load_settings
from holistic_client import Client
from metric_services.runner import Worker


def start_redis(directory: Path, *extra: str, wrapper: Sequence[str] = ()) -> tuple[subprocess.Popen[bytes], str]:
    """A redis-server on a unix socket in `directory`; `wrapper` runs it under another command (strace)."""
    exe = shutil.which("redis-server")
    if exe is None:
        if os.environ.get("CI"):
            pytest.fail("redis-server is not installed (apt-get install -y redis-server)")
        pytest.skip("redis-server is not installed")
    sock = str(directory / "redis.sock")
    proc = subprocess.Popen(
        [*wrapper, exe, "--port", "0", "--unixsocket", sock, "--unixsocketperm", "700", "--save", "",
         "--appendonly", "no", "--dir", str(directory), *extra],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    client = redis.Redis(unix_socket_path=sock)
    for _ in range(200):
        try:
            client.ping()
            break
        except (redis.ConnectionError, FileNotFoundError):
            time.sleep(0.05)
    else:
        proc.kill()
        pytest.fail("redis-server did not start")
    client.close()
    return proc, sock


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    proc, sock = start_redis(tmp_path_factory.mktemp("redis"))
    yield sock
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture
def redis_url(redis_server: str) -> str:
    return f"unix://{redis_server}"


@pytest.fixture
def r(redis_server: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(f"unix://{redis_server}", command_packer=PACKER)  # as sync_client packs
    client.flushall()
    yield client
    client.close()


@pytest.fixture
def make_settings(redis_url: str, r: redis.Redis) -> Callable[..., Settings]:
    def make(**overrides: Any) -> Settings:
        # every installed family deployed, as `holistic up` does: their groups exist before the first batch
        values: dict[str, Any] = {
            "redis_url": redis_url,
            "claim_idle_ms": 200,
            "recover_interval_s": 0.1,
            "read_linger_ms": 0,  # in-process workers drain at once (test_coalesce tests the linger)
            "families": installed(),
        }
        values.update(overrides)
        return load_settings(**values)

    return make


@pytest.fixture
def settings(make_settings: Callable[..., Settings]) -> Settings:
    return make_settings()


class GatewayThread:
    """A real grpc.aio gateway on 127.0.0.1:<free port>, in its own thread and event loop."""

    def __init__(
        self, settings: Settings, families: dict[str, Family] | None = None, bind: str = "127.0.0.1:0"
    ) -> None:
        """`families`: configured families the gateway folds with instead of the installed ones."""
        self.settings = settings
        chosen = families or {}
        self.gateway = Gateway(settings, lambda name: chosen.get(name) or load_family(name))
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.port = self._run(self.gateway.start(bind))
        self.address = f"127.0.0.1:{self.port}"

    def _run(self, coro: Any, timeout: float = 30) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def call(self, fn: Callable[[], Any]) -> Any:
        """Run a coroutine function on the gateway's loop (for poking its internals)."""

        async def wrapper() -> Any:
            return await fn()

        return self._run(wrapper())

    def client(self, token: str | None = None, **kwargs: Any) -> Client:
        return Client(self.address, token, **kwargs)

    def stop(self) -> None:
        self._run(self.gateway.stop(0.5))
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


@pytest.fixture
def make_gateway(make_settings: Callable[..., Settings]) -> Iterator[Callable[..., GatewayThread]]:
    started: list[GatewayThread] = []

    def make(
        fold_families: dict[str, Family] | None = None, bind: str = "127.0.0.1:0", **overrides: Any
    ) -> GatewayThread:
        gw = GatewayThread(make_settings(**overrides), fold_families, bind)
        started.append(gw)
        return gw

    yield make
    for gw in started:
        gw.stop()


@pytest.fixture
def gateway(make_gateway: Callable[..., GatewayThread]) -> GatewayThread:
    return make_gateway()


@pytest.fixture
def client(gateway: GatewayThread) -> Iterator[Client]:
    c = gateway.client()
    yield c
    c.close()


def drain(*workers: Worker, rounds: int = 1000) -> int:
    """Step the workers until none of them reads anything new; returns entries handled."""
    handled = 0
    for _ in range(rounds):
        n = sum(w.step(block_ms=1) for w in workers)
        handled += n
        if n == 0:
            return handled
    raise AssertionError("workers did not drain")


@pytest.fixture
def make_worker(settings: Settings, redis_server: str) -> Iterator[Callable[..., Worker]]:
    clients: list[redis.Redis] = []

    def make(family: str | Family, worker_settings: Settings | None = None, **kwargs: Any) -> Worker:
        c = redis.Redis(unix_socket_path=redis_server)
        clients.append(c)
        return Worker(family, worker_settings or settings, c, **kwargs)

    yield make
    for c in clients:
        c.close()
