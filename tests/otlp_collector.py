"""In-test OTLP logs collectors: a real gRPC LogsService and a real OTLP/HTTP server (stdlib http.server) that
keep every record they are sent and the headers (metadata) each export came with."""

from __future__ import annotations

import threading
import time
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import grpc
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.logs.v1 import logs_pb2


def attribute(value: common_pb2.AnyValue) -> Any:
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind else None


class Collector(logs_service_pb2_grpc.LogsServiceServicer):
    def __init__(self, refuse: bool = False) -> None:
        self.refuse = refuse
        self.records: list[tuple[dict[str, Any], logs_pb2.LogRecord]] = []  # (resource attributes, record)
        self.headers: list[dict[str, str]] = []  # each export's metadata
        self.lock = threading.Lock()
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        logs_service_pb2_grpc.add_LogsServiceServicer_to_server(self, self.server)
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.endpoint = f"127.0.0.1:{self.port}"
        self.server.start()

    def Export(self, request: Any, context: grpc.ServicerContext) -> Any:
        if self.refuse:
            context.abort(grpc.StatusCode.UNAVAILABLE, "collector down")
        self.keep(request, dict(context.invocation_metadata()))
        return logs_service_pb2.ExportLogsServiceResponse()

    def keep(self, request: logs_service_pb2.ExportLogsServiceRequest, headers: dict[str, str]) -> None:
        with self.lock:
            self.headers.append(headers)
            for rl in request.resource_logs:
                resource = {kv.key: attribute(kv.value) for kv in rl.resource.attributes}
                for sl in rl.scope_logs:
                    self.records.extend((resource, rec) for rec in sl.log_records)

    def events(self, n: int, timeout_s: float = 10.0) -> list[dict[str, Any]]:
        """The attributes of the first n records, waiting for them."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with self.lock:
                if len(self.records) >= n:
                    return [{kv.key: attribute(kv.value) for kv in rec.attributes} for _, rec in self.records]
            time.sleep(0.02)
        raise AssertionError(f"collector got {len(self.records)} records, expected {n}")

    def stop(self) -> None:
        self.server.stop(0)


class HttpCollector(Collector):
    """OTLP/HTTP: POST /v1/logs with an ExportLogsServiceRequest in protobuf; headers kept lower-cased."""

    def __init__(self, refuse: bool = False) -> None:
        self.refuse = refuse
        self.records = []
        self.headers = []
        self.paths: list[str] = []
        self.lock = threading.Lock()
        collector = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                collector.paths.append(self.path)
                if collector.refuse or self.headers.get("Content-Type") != "application/x-protobuf":
                    self.send_response(503 if collector.refuse else 415)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                request = logs_service_pb2.ExportLogsServiceRequest.FromString(body)
                collector.keep(request, {k.lower(): v for k, v in self.headers.items()})
                reply = logs_service_pb2.ExportLogsServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: Any) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.http.server_address[1]
        self.endpoint = f"http://127.0.0.1:{self.port}/v1/logs"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.http.shutdown()
        self.http.server_close()
