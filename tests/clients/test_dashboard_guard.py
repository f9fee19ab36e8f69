"""The dashboard answers only requests addressed to it (no DNS rebinding), and reaches a TLS or
mutual-TLS gateway with the clients' settings (issue 14, defects 5 and 9)."""

from __future__ import annotations

import http.client
import http.server
import json
import threading
from urllib.parse import urlsplit

import pytest

from holistic_client.client import tls_credentials
from tests.certs import make_pki
from tests.factories import prediction


def request(url: str, path: str, headers: dict[str, str]) -> tuple[int, dict]:
    """GET with exactly these headers (http.client sends our Host instead of its own)."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        conn.putrequest("GET", path, skip_host=True)
        for name, value in headers.items():
            conn.putheader(name, value)
        conn.endheaders()
        reply = conn.getresponse()
        body = reply.read()
        if not reply.getheader("Content-Type", "").startswith("application/json"):
            return reply.status, {}
        return reply.status, json.loads(body)
    finally:
        conn.close()


@pytest.fixture
def dashboard(make_gateway, make_dashboard):
    gw = make_gateway()
    with gw.client() as c:
        c.submit([prediction("a")], model="m1")
    return make_dashboard(gw.address)


def test_a_rebound_host_name_is_refused(dashboard):
    port = urlsplit(dashboard.url).port
    status, body = request(dashboard.url, "/api/models", {"Host": f"attacker.example:{port}"})
    assert status == 403 and body["error"]["code"] == "PERMISSION_DENIED"
    assert "attacker.example" in body["error"]["message"]
    status, _ = request(dashboard.url, "/", {"Host": f"attacker.example:{port}"})
    assert status == 403
    # the same name on another port, and no Host at all, are refused too
    assert request(dashboard.url, "/api/models", {"Host": f"attacker.example:{port + 1}"})[0] == 403
    assert request(dashboard.url, "/api/models", {"Host": "attacker.example"})[0] == 403
    assert request(dashboard.url, "/api/models", {})[0] in (400, 403)  # HTTP/1.1 without Host


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "[::1]"])
def test_its_own_addresses_are_served(dashboard, host):
    port = urlsplit(dashboard.url).port
    status, body = request(dashboard.url, "/api/models", {"Host": f"{host}:{port}"})
    assert status == 200 and [m["model"] for m in body["models"]] == ["m1"]


def test_the_event_stream_checks_origin(dashboard):
    port = urlsplit(dashboard.url).port
    host = {"Host": f"127.0.0.1:{port}"}
    status, body = request(dashboard.url, "/api/events", {**host, "Origin": "http://attacker.example"})
    assert status == 403 and "Origin" in body["error"]["message"]
    assert request(dashboard.url, "/api/events", {**host, "Origin": "null"})[0] == 403
    assert request(dashboard.url, "/api/events", {**host, "Origin": f"ftp://localhost:{port}"})[0] == 403
    assert request(dashboard.url, "/api/events", {**host, "Origin": f"https://attacker.example:{port}"})[0] == 403


def test_a_port_forward_to_another_local_port_is_served(dashboard):
    """`kubectl port-forward svc/dashboard 18080:8765` or a published compose port (58765) sends
    `Host: 127.0.0.1:18080`, a port the dashboard does not listen on (issue 33)."""
    port = urlsplit(dashboard.url).port
    for host in ("127.0.0.1:18080", "localhost:58765", "[::1]:18080"):
        status, body = request(dashboard.url, "/api/models", {"Host": host, "Origin": f"http://{host}"})
        assert status == 200 and [m["model"] for m in body["models"]] == ["m1"], host
    assert request(dashboard.url, "/api/models", {"Host": f"127.0.0.1:{port + 1}"})[0] == 200


def test_an_allowed_proxy_name_is_served(make_gateway, make_dashboard):
    gw = make_gateway()
    d = make_dashboard(gw.address, allowed_hosts=["dash.internal"])
    port = urlsplit(d.url).port
    assert request(d.url, "/api/models", {"Host": f"dash.internal:{port}"})[0] == 200
    assert request(d.url, "/api/models", {"Host": f"other.internal:{port}"})[0] == 403


class _Proxy(http.server.BaseHTTPRequestHandler):
    """A TLS-terminating reverse proxy's forwarding, minus the TLS: the public Host and X-Forwarded-*."""

    upstream = ""

    def do_GET(self) -> None:
        parts = urlsplit(self.upstream)
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
        conn.putrequest("GET", self.path, skip_host=True)
        headers = {"Host": "dash.example.com:443", "X-Forwarded-Proto": "https",
                   "X-Forwarded-Host": "dash.example.com", "X-Forwarded-For": self.client_address[0]}  # fmt: skip
        if self.headers.get("Origin"):
            headers["Origin"] = self.headers["Origin"]
        for name, value in headers.items():
            conn.putheader(name, value)
        conn.endheaders()
        reply = conn.getresponse()
        body = reply.read()
        conn.close()
        self.send_response(reply.status)
        self.send_header("Content-Type", reply.getheader("Content-Type", ""))
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.parametrize("allowed", [["dash.example.com"], []])
def test_a_reverse_proxy_on_443_is_served_when_its_name_is_allowed(make_gateway, make_dashboard, allowed):
    """nginx in front on https://dash.example.com forwards `Host: dash.example.com:443` (issue 33)."""
    gw = make_gateway()
    with gw.client() as c:
        c.submit([prediction("a")], model="m1")
    d = make_dashboard(gw.address, allowed_hosts=allowed)
    handler = type("P", (_Proxy,), {"upstream": d.url})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    proxy = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        status, body = request(proxy, "/api/models", {"Host": "x", "Origin": "https://dash.example.com"})
        if allowed:
            assert status == 200 and [m["model"] for m in body["models"]] == ["m1"]
            assert request(proxy, "/api/events", {"Host": "x", "Origin": "https://evil.example"})[0] == 403
        else:
            assert status == 403 and "dash.example.com:443" in body["error"]["message"]
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("mutual", [False, True])
def test_the_dashboard_reaches_a_tls_gateway(make_gateway, make_dashboard, tmp_path, mutual):
    pki = make_pki(tmp_path)
    extra = {"tls_client_ca": pki.ca} if mutual else {}
    gw = make_gateway(tls_cert=pki.server_cert, tls_key=pki.server_key, **extra)
    client_cert = {"tls_cert": pki.client_cert, "tls_key": pki.client_key} if mutual else {}
    with gw.client(tls_ca=pki.ca, **client_cert) as c:
        c.submit([prediction("a")], model="m1")
    creds = tls_credentials(pki.ca, pki.client_cert, pki.client_key) if mutual else tls_credentials(pki.ca)
    d = make_dashboard(gw.address, credentials=creds)
    port = urlsplit(d.url).port
    status, body = request(d.url, "/api/models", {"Host": f"127.0.0.1:{port}"})
    assert status == 200 and [m["model"] for m in body["models"]] == ["m1"]
