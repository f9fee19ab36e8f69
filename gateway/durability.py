"""What "Redis holds the batch" means before the gateway answers.

everysec (default): the XADD returned, so the batch is in Redis's memory and written to the AOF file
before the reply leaves Redis; killing Redis loses nothing acknowledged, a host crash (power, kernel)
up to about 1-2 s of batches (the OS had not flushed them). strict: the batch is fsynced first, which
needs Redis with `appendonly yes` and `appendfsync always`; the gateway checks this at start and
refuses to run otherwise. (Redis >= 7.2 could offer strict on everysec with WAITAOF; the Redis here
is 7.0, so that path is not built.)
"""

from __future__ import annotations

import logging

import redis
import redis.asyncio as aioredis

from holistic.errors import ConfigError

log = logging.getLogger("holistic.gateway")


async def check_strict(r: aioredis.Redis) -> None:
    try:
        config = await r.config_get("append*")
    except redis.ResponseError as exc:  # CONFIG disabled, as on some managed Redis
        raise ConfigError(
            "HOLISTIC_DURABILITY=strict: cannot read Redis's appendfsync (CONFIG is disabled); "
            "make sure it is `always`, then use durability everysec"
        ) from exc
    appendonly, fsync = str(config.get("appendonly", "")), str(config.get("appendfsync", ""))
    if appendonly != "yes" or fsync != "always":
        raise ConfigError(
            "HOLISTIC_DURABILITY=strict needs Redis with appendonly yes and appendfsync always "
            f"(found appendonly={appendonly or '?'}, appendfsync={fsync or '?'})"
        )
    log.info("durability strict: Redis fsyncs every write before answering (appendfsync always)")
