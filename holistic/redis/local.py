"""Which Redis a command-line tool talks to: REDIS_URL, else the private one of `holistic up` here."""

from __future__ import annotations

from holistic.errors import ConfigError
from holistic.process import run_state
from holistic.redis.embedded import EmbeddedRedis
from holistic.settings import Settings


def with_local_redis(settings: Settings) -> Settings:
    """The settings, pointed at the running `holistic up`'s Redis when REDIS_URL is unset.

    `holistic up` writes the Redis it uses into its run-state file (holistic/process/run_state.py) in the data
    dir (HOLISTIC_DATA_DIR, default `.holistic` in the working directory), so every command run in the
    same directory finds it; without REDIS_URL it serves Redis only on `<data dir>/redis.sock`.
    """
    if settings.redis_url:
        return settings
    state, why = run_state.read(settings.data_dir)
    if state is not None:
        return settings.model_copy(update={"redis_url": state.redis_url})
    sock = EmbeddedRedis(settings.data_dir).socket
    if sock.exists() and "stale" not in why:  # a stack from before the run-state file
        return settings.model_copy(update={"redis_url": f"unix://{sock}"})
    raise ConfigError(
        f"no Redis: REDIS_URL is not set and {why}. Run this in the directory where `holistic up` runs, set "
        "HOLISTIC_DATA_DIR to its --data-dir, or set REDIS_URL to the Redis the service uses"
    )
