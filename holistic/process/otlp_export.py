"""How an ExportLogsServiceRequest reaches a collector: OTLP/gRPC or OTLP/HTTP (protobuf), with headers.

Which one follows OpenTelemetry's exporter conventions: HOLISTIC_OTLP_EVAL_PROTOCOL (`grpc` or
`http/protobuf`, as OTEL_EXPORTER_OTLP_PROTOCOL) when set; else an endpoint with a path (the
signal's URL, `http://host:4318/v1/logs`) is OTLP/HTTP and one without (`host:4317`) OTLP/gRPC, as
before. OTLP/HTTP with an endpoint without a path posts to `/v1/logs` (as OTEL_EXPORTER_OTLP_ENDPOINT).
HOLISTIC_OTLP_EVAL_HEADERS is OTEL_EXPORTER_OTLP_HEADERS's format, `key=value,key2=value2` with
URL-encoded values: gRPC metadata or HTTP headers on every export. Their values are secrets (an API
key): never logged, and a malformed entry is named by its position only.
"""

from __future__ import annotations

import http.client
import ssl
import urllib.parse
from typing import Literal, Protocol

import grpc
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc

Wire = Literal["grpc", "http/protobuf"]
LOGS_PATH = "/v1/logs"


class ExportFailed(Exception):
    """The collector refused the request or could not be reached; the message says how, never a header."""


class Transport(Protocol):
    def export(
        self, request: logs_service_pb2.ExportLogsServiceRequest
    ) -> logs_service_pb2.ExportLogsServiceResponse: ...

    def close(self) -> None: ...


def parse_headers(raw: str) -> tuple[tuple[str, str], ...]:
    """`key=value,key2=value2` (values URL-decoded, keys lower-cased as gRPC metadata needs); ValueError
    naming the entry's position, never its value."""
    out: list[tuple[str, str]] = []
    for i, entry in enumerate(raw.split(","), start=1):
        if not entry.strip():
            continue
        key, sep, value = entry.partition("=")
        key = key.strip().lower()
        if not sep or not key or not all(c.isalnum() or c in "-_." for c in key):
            raise ValueError(f"HOLISTIC_OTLP_EVAL_HEADERS entry {i}: key=value, a key of letters, digits, - _ .")
        out.append((key, urllib.parse.unquote(value.strip())))
    return tuple(out)


def resolve(endpoint: str, protocol: str = "") -> tuple[Wire, str]:
    """The protocol and where it goes: a URL for OTLP/HTTP (path /v1/logs unless one is given), host:port and a
    scheme-implied TLS choice for gRPC (the endpoint as given)."""
    scheme, _, rest = endpoint.partition("://") if "://" in endpoint else ("", "", endpoint)
    host, slash, path = rest.partition("/")
    has_path = bool(slash and path.strip("/"))
    chosen: Wire = protocol or ("http/protobuf" if has_path else "grpc")  # type: ignore[assignment]
    if chosen == "grpc":
        if has_path:
            raise ValueError("HOLISTIC_OTLP_EVAL_ENDPOINT: OTLP/gRPC takes host:port, without a path")
        return chosen, endpoint
    if scheme not in ("", "http", "https"):
        raise ValueError(f"HOLISTIC_OTLP_EVAL_ENDPOINT: OTLP/HTTP needs http:// or https://, not {scheme}://")
    return chosen, f"{scheme or 'http'}://{host}{'/' + path if has_path else LOGS_PATH}"


class GrpcTransport:
    def __init__(self, endpoint: str, headers: tuple[tuple[str, str], ...], timeout_s: float) -> None:
        target, tls = endpoint, False
        for scheme, secure in (("https://", True), ("http://", False)):
            if endpoint.startswith(scheme):
                target, tls = endpoint.removeprefix(scheme).rstrip("/"), secure
        self.channel = (
            grpc.secure_channel(target, grpc.ssl_channel_credentials()) if tls else grpc.insecure_channel(target)
        )
        self.stub = logs_service_pb2_grpc.LogsServiceStub(self.channel)
        self.headers, self.timeout_s = headers, timeout_s

    def export(self, request: logs_service_pb2.ExportLogsServiceRequest) -> logs_service_pb2.ExportLogsServiceResponse:
        try:
            return self.stub.Export(request, timeout=self.timeout_s, metadata=self.headers or None)
        except grpc.RpcError as exc:
            raise ExportFailed(f"the collector answered {exc.code()}") from None  # type: ignore[attr-defined]

    def close(self) -> None:
        self.channel.close()


class HttpTransport:
    """POST <url> with Content-Type application/x-protobuf; one connection, reopened after a failure."""

    def __init__(self, url: str, headers: tuple[tuple[str, str], ...], timeout_s: float) -> None:
        parts = urllib.parse.urlsplit(url)
        self.tls, self.netloc, self.path = parts.scheme == "https", parts.netloc, parts.path or LOGS_PATH
        self.headers = {"Content-Type": "application/x-protobuf", **dict(headers)}
        self.timeout_s = timeout_s
        self.conn: http.client.HTTPConnection | None = None

    def _connection(self) -> http.client.HTTPConnection:
        if self.conn is None:
            if self.tls:
                ctx = ssl.create_default_context()
                self.conn = http.client.HTTPSConnection(self.netloc, timeout=self.timeout_s, context=ctx)
            else:
                self.conn = http.client.HTTPConnection(self.netloc, timeout=self.timeout_s)
        return self.conn

    def export(self, request: logs_service_pb2.ExportLogsServiceRequest) -> logs_service_pb2.ExportLogsServiceResponse:
        try:
            conn = self._connection()
            conn.request("POST", self.path, body=request.SerializeToString(), headers=self.headers)
            reply = conn.getresponse()
            body = reply.read()
        except (OSError, http.client.HTTPException) as exc:
            self.close()
            raise ExportFailed(f"the collector could not be reached ({type(exc).__name__})") from None
        if reply.status != 200:
            raise ExportFailed(f"the collector answered HTTP {reply.status}")
        response = logs_service_pb2.ExportLogsServiceResponse()
        if reply.getheader("Content-Type", "").startswith("application/x-protobuf"):
            response.ParseFromString(body)
        return response

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def transport(endpoint: str, protocol: str = "", headers: str = "", timeout_s: float = 5.0) -> Transport:
    chosen, where = resolve(endpoint, protocol)
    parsed = parse_headers(headers)
    if chosen == "grpc":
        return GrpcTransport(where, parsed, timeout_s)
    return HttpTransport(where, parsed, timeout_s)
