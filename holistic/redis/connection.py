"""Redis clients built from settings, sync (workers, CLI) and asyncio (gateway)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import hiredis
import redis
import redis.asyncio as aioredis
import redis.asyncio.cluster as aiocluster
import redis.cluster
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

from holistic.errors import ConfigError
from holistic.settings import Settings

try:
    from holistic.redis._resp import pack as _resp_pack
except ImportError:  # not built (no C compiler): hiredis packs every command
    _resp_pack = None

RETRYABLE = (redis.ConnectionError, redis.TimeoutError, ConnectionError, OSError)


class HiredisPacker:
    """Commands packed in one C call. redis-py's own hiredis packer first encodes every argument with
    a Python call (~0.4 µs each), and an apply script carries thousands of them. holistic/redis/_resp.c
    packs exact str (UTF-8), bytes, int and float (repr) without a bytes object per argument (a
    worker's arguments, scattered in memory, cost hiredis ~0.3-0.5 µs each there); what it does not
    pack (an int past 64 bits, a subclass) hiredis packs, to the same bytes (tests/holistic/
    test_redis_conn.py). Anything else (a command name with a space in it, bytearray, memoryview, a
    bool or None that redis-py refuses) takes redis-py's own packer, with its errors."""

    def __init__(self) -> None:
        encoder = redis.connection.Encoder("utf-8", "strict", False)
        self._fallback = redis.connection.HiredisRespSerializer(
            redis.connection.PythonRespSerializer(6000, encoder.encode).pack, encoder.encode
        )

    def pack(self, *args: Any) -> list[bytes]:
        name = args[0]
        if (b" " if isinstance(name, bytes) else " ") in name:
            return self._fallback.pack(*args)
        try:
            if _resp_pack is not None:
                packed = _resp_pack(args)
                if packed is not None:
                    return [packed]
            return [hiredis.pack_command(args)]
        except (TypeError, UnicodeError):
            return self._fallback.pack(*args)


PACKER = HiredisPacker()


def _url(settings: Settings) -> str:
    if not settings.redis_url:
        raise ConfigError("REDIS_URL is not set (only `holistic up` starts a private Redis)")
    return settings.redis_url


def _tls(settings: Settings) -> dict[str, object]:
    """Certificate options for rediss:// URLs (the URL itself carries an ACL user and password)."""
    out: dict[str, object] = {}
    if settings.redis_tls_ca:
        out["ssl_ca_certs"] = str(settings.redis_tls_ca)
    if settings.redis_tls_cert:
        out["ssl_certfile"] = str(settings.redis_tls_cert)
    if settings.redis_tls_key:
        out["ssl_keyfile"] = str(settings.redis_tls_key)
    if out and not _url(settings).startswith("rediss://"):
        raise ConfigError("HOLISTIC_REDIS_TLS_* need a rediss:// REDIS_URL")
    return out


def sync_client(settings: Settings, **kwargs: Any) -> redis.Redis:
    """A client for one Redis, or for a Redis Cluster (HOLISTIC_REDIS_CLUSTER) from any node's URL."""
    common: dict[str, Any] = {
        **_tls(settings),
        "socket_timeout": kwargs.pop("socket_timeout", 30.0),
        "socket_connect_timeout": 5.0,
        "retry": Retry(ExponentialBackoff(cap=2.0, base=0.05), retries=3),
        **kwargs,
    }
    if settings.redis_cluster:
        return redis.cluster.RedisCluster.from_url(_url(settings), **common)  # type: ignore[return-value]
    return redis.Redis.from_url(_url(settings), health_check_interval=30, command_packer=PACKER, **common)


def async_client(settings: Settings, wait_s: float | None = None, **kwargs: Any) -> aioredis.Redis:
    """wait_s: when every pooled connection is busy, wait this long for one (not fail at once)."""
    common: dict[str, Any] = {**_tls(settings), "socket_connect_timeout": 5.0, **kwargs}
    if settings.redis_cluster:
        return aiocluster.RedisCluster.from_url(_url(settings), **common)  # type: ignore[return-value]
    max_connections = common.pop("max_connections", 256)
    if wait_s is not None:
        pool = aioredis.BlockingConnectionPool.from_url(
            _url(settings), max_connections=max_connections, timeout=wait_s, health_check_interval=30, **common
        )
        return aioredis.Redis(connection_pool=pool)
    return aioredis.Redis.from_url(_url(settings), health_check_interval=30, max_connections=max_connections, **common)


async def pipelined(c: aioredis.Redis, *commands: tuple[Any, ...]) -> list[Any]:
    """Send commands together on a single-connection client's own connection and read every reply
    (an error reply is returned, not raised, so no reply is left unread). redis-py's pipeline would
    take another connection from the pool, maybe to another Redis process: a pinned submit's writes
    and the AOF state that covers them must travel on one."""
    conn = c.connection
    if conn is None:
        raise TypeError("pipelined() needs a single-connection client (Redis.client())")
    await conn.send_packed_command(conn.pack_commands(commands))
    replies: list[Any] = []
    for _ in commands:
        try:
            replies.append(await conn.read_response())
        except redis.exceptions.ResponseError as exc:
            replies.append(exc)
    return replies


async def set_chunks(r: aioredis.Redis, key: str, count: int) -> AsyncIterator[list[bytes]]:
    """A set's members about `count` a round trip (SSCAN), each once: a large set is never read or
    answered whole, so Redis and the caller both take short turns. SSCAN may return a member twice
    (the set rehashed meanwhile); those are dropped here."""
    seen: set[bytes] = set()
    cursor = None
    while cursor != 0:
        cursor, found = await r.sscan(key, cursor or 0, count=count)  # type: ignore[misc]
        chunk = [m for m in found if m not in seen]
        seen.update(chunk)
        if chunk:
            yield chunk
