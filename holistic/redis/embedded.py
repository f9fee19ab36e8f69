"""A private redis-server for `holistic up` when no REDIS_URL is given: unix socket, no TCP."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import redis

from holistic.errors import ConfigError

INSTALL_HINT = (
    "redis-server is not installed. On Debian/Ubuntu: sudo apt-get install -y redis-server; "
    "on macOS: brew install redis; or point REDIS_URL at a running Redis (>= 7.0)."
)


# Hashes of more fields than this are hash tables, not listpacks (Redis's default is 512). A statistics
# tier bucket holds hundreds of fields and every apply reads and writes most of them with HMGET/HSET:
# in a listpack each field is found by a linear scan, O(fields^2) an apply. At 128, Redis spent ~10 %
# less CPU on the vs_helm file (HMGET + HSET 8.4 -> 5.6 us a prediction) for ~2 % more memory there.
HASH_MAX_LISTPACK_ENTRIES = 128
# The AOF's rewrites (a fork writing the dataset as an RDB preamble) skip LZF: Redis shares the cores
# with the workers here, a rewrite comes each time the AOF doubles, so its compression costs about
# one dataset byte per byte written (~3-5 us of CPU a prediction on vs_helm, ~10 % of Redis's), for a
# base file ~3x smaller on the demo's repetitive text (docs/production.md).
RDB_COMPRESSION = "no"


class EmbeddedRedis:
    """redis-server with AOF everysec and noeviction in data_dir, as production should run it."""

    def __init__(self, data_dir: Path, *, persist: bool = True, fsync: str = "everysec") -> None:
        self.data_dir = data_dir.resolve()
        self.persist = persist
        self.fsync = fsync
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def socket(self) -> Path:
        return self.data_dir / "redis.sock"

    @property
    def url(self) -> str:
        return f"unix://{self.socket}"

    def start(self, timeout_s: float = 10.0) -> str:
        exe = shutil.which("redis-server")
        if exe is None:
            raise ConfigError(INSTALL_HINT)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if self.socket.exists():
            try:
                redis.Redis(unix_socket_path=str(self.socket)).ping()
                raise ConfigError(f"a Redis is already serving {self.socket}; stop it or use another data dir")
            except redis.ConnectionError:
                self.socket.unlink()
        args = [exe, "--port", "0", "--unixsocket", str(self.socket), "--unixsocketperm", "700",
                "--dir", str(self.data_dir), "--save", "", "--maxmemory-policy", "noeviction",
                "--hash-max-listpack-entries", str(HASH_MAX_LISTPACK_ENTRIES), "--rdbcompression", RDB_COMPRESSION,
                "--logfile", str(self.data_dir / "redis.log")]  # fmt: skip
        args += ["--appendonly", "yes", "--appendfsync", self.fsync] if self.persist else ["--appendonly", "no"]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = redis.Redis(unix_socket_path=str(self.socket))
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ConfigError(f"redis-server exited at start; see {self.data_dir / 'redis.log'}")
            try:
                client.ping()
                return self.url
            except (redis.ConnectionError, FileNotFoundError):
                time.sleep(0.05)
        raise ConfigError(f"redis-server did not answer within {timeout_s:g} s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.proc = None
