"""Redis over TLS and with an ACL user and password; no secret in a log line or a settings repr."""

from __future__ import annotations

import logging
import shutil
import socket
import subprocess
import time

import pytest
import redis

from holistic.redis.connection import sync_client
from holistic.tenancy.tenants import hash_token
from metric_services.runner import Worker
from tests.certs import make_pki
from tests.conftest import drain
from tests.factories import batch

PASSWORD = "s3cret-Pa55word"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(args: list[str], ping) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([shutil.which("redis-server") or "redis-server", *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    for _ in range(200):
        try:
            ping()
            return proc
        except (redis.ConnectionError, OSError):
            time.sleep(0.05)
    proc.kill()
    raise AssertionError("redis-server did not start")


@pytest.fixture
def acl_redis(tmp_path):
    """A Redis whose default user is off; the service logs in as `holistic` with a password."""
    sock = tmp_path / "acl.sock"
    acl = tmp_path / "users.acl"
    acl.write_text(f"user default off\nuser holistic on >{PASSWORD} ~hl:* &* +@all -@dangerous +info\n")
    args = ["--port", "0", "--unixsocket", str(sock), "--save", "", "--appendonly", "no",
            "--dir", str(tmp_path), "--aclfile", str(acl)]  # fmt: skip
    proc = start(args, lambda: redis.Redis(unix_socket_path=str(sock), username="holistic", password=PASSWORD).ping())
    yield f"unix://holistic:{PASSWORD}@{sock}"
    proc.kill()
    proc.wait()


def test_acl_user_with_password(make_gateway, make_settings, acl_redis, caplog):
    caplog.set_level(logging.DEBUG)
    token = "tenant-token-never-logged"
    gw = make_gateway(redis_url=acl_redis, tokens=f"team-a:sha256:{hash_token(token)}")
    s = make_settings(redis_url=acl_redis)
    with gw.client(token) as c:
        c.submit(batch(3), batch_id="b1", model="m")
        drain(Worker("accuracy", s, sync_client(s)))
        assert c.get_profile("m").counts.window_predictions == 3
    with pytest.raises(redis.AuthenticationError):
        redis.Redis.from_url(acl_redis.replace(PASSWORD, "wrong")).ping()
    assert PASSWORD not in repr(s) and PASSWORD not in str(s)
    assert token not in caplog.text and hash_token(token) not in caplog.text and PASSWORD not in caplog.text


def test_redis_over_tls(make_gateway, make_settings, tmp_path):
    pki = make_pki(tmp_path)
    port = free_port()
    args = ["--port", "0", "--tls-port", str(port), "--tls-cert-file", str(pki.server_cert),
            "--tls-key-file", str(pki.server_key), "--tls-ca-cert-file", str(pki.ca),
            "--tls-auth-clients", "yes", "--save", "", "--appendonly", "no", "--dir", str(tmp_path)]  # fmt: skip
    url = f"rediss://localhost:{port}/0"
    tls = {"redis_tls_ca": pki.ca, "redis_tls_cert": pki.client_cert, "redis_tls_key": pki.client_key}
    client = redis.Redis.from_url(
        url, ssl_ca_certs=str(pki.ca), ssl_certfile=str(pki.client_cert), ssl_keyfile=str(pki.client_key)
    )
    proc = start(args, client.ping)
    try:
        gw = make_gateway(redis_url=url, **tls)
        with gw.client() as c:
            c.submit(batch(2), batch_id="b1", model="m")
            from holistic.redis.connection import sync_client
            from metric_services.runner import Worker

            drain(
                Worker(
                    "efficiency", make_settings(redis_url=url, **tls), sync_client(make_settings(redis_url=url, **tls))
                )
            )
            assert c.get_profile("m").counts.window_predictions == 2
        with pytest.raises(redis.ConnectionError):  # no client certificate: refused
            redis.Redis.from_url(url, ssl_ca_certs=str(pki.ca)).ping()
    finally:
        proc.kill()
        proc.wait()
