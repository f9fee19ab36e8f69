"""The private Redis of `holistic up` runs as production should (docs/production.md)."""

from __future__ import annotations

from pathlib import Path

import redis

from holistic.redis.embedded import HASH_MAX_LISTPACK_ENTRIES, RDB_COMPRESSION, EmbeddedRedis


def test_configured_as_production(tmp_path: Path) -> None:
    server = EmbeddedRedis(tmp_path / "data")
    url = server.start()
    try:
        r = redis.Redis.from_url(url, decode_responses=True)
        names = ("appendonly", "appendfsync", "maxmemory-policy", "hash-max-listpack-entries", "rdbcompression")
        config = {k: v for name in names for k, v in r.config_get(name).items()}
        assert config == {
            "appendonly": "yes",
            "appendfsync": "everysec",
            "maxmemory-policy": "noeviction",
            "hash-max-listpack-entries": str(HASH_MAX_LISTPACK_ENTRIES),
            "rdbcompression": RDB_COMPRESSION,
        }
        r.hset("small", mapping={f"f{i}": i for i in range(HASH_MAX_LISTPACK_ENTRIES)})
        r.hset("bucket", mapping={f"f{i}": i for i in range(HASH_MAX_LISTPACK_ENTRIES + 1)})
        assert (r.object("encoding", "small"), r.object("encoding", "bucket")) == ("listpack", "hashtable")
    finally:
        server.stop()
