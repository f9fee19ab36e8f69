"""Which Redis a command-line tool talks to: REDIS_URL, else the private one of `holistic up` here."""

from __future__ import annotations

from holistic.embedded_redis import EmbeddedRedis
from holistic.errors import ConfigError
from holistic.settings import Settings


def with_local_redis(settings: Settings) -> Settings:
    """The settings, pointed at `holistic up`'s unix socket in the data dir when REDIS_URL is unset.

    `holistic up` without REDIS_URL serves Redis only on `<data dir>/redis.sock` (HOLISTIC_DATA_DIR,
    default `.holistic` in the working directory), so a tool run in the same directory finds it there.
    """
    if settings.redis_url:
        return settings
    sock = EmbeddedRedis(settings.data_dir).socket
    if not sock.exists():
        raise ConfigError(
            f"no Redis: REDIS_URL is not set and no `holistic up` is serving {sock} "
            "(run this where `holistic up` runs, set HOLISTIC_DATA_DIR to its --data-dir, or set REDIS_URL)"
        )
    return settings.model_copy(update={"redis_url": f"unix://{sock}"})
