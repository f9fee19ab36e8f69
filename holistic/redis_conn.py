"""Redis clients built from settings, sync (workers, CLI) and asyncio (gateway)."""

from __future__ import annotations

import redis
import redis.asyncio as aioredis
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

from holistic.errors import ConfigError
from holistic.settings import Settings

RETRYABLE = (redis.ConnectionError, redis.TimeoutError, ConnectionError, OSError)


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


def sync_client(settings: Settings, **kwargs: object) -> redis.Redis:
    return redis.Redis.from_url(
        _url(settings),
        **_tls(settings),  # type: ignore[arg-type]
        socket_timeout=kwargs.pop("socket_timeout", 30.0),  # type: ignore[arg-type]
        socket_connect_timeout=5.0,
        health_check_interval=30,
        retry=Retry(ExponentialBackoff(cap=2.0, base=0.05), retries=3),
        **kwargs,  # type: ignore[arg-type]
    )


def async_client(settings: Settings, **kwargs: object) -> aioredis.Redis:
    return aioredis.Redis.from_url(
        _url(settings),
        **_tls(settings),  # type: ignore[arg-type]
        socket_connect_timeout=5.0,
        health_check_interval=30,
        max_connections=kwargs.pop("max_connections", 256),  # type: ignore[arg-type]
        **kwargs,  # type: ignore[arg-type]
    )
