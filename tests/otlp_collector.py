"""An in-test OTLP logs collector: a real gRPC LogsService that keeps every record it is sent."""

from __future__ import annotations

import threading
import time
from concurrent import futures
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
        self.lock = threading.Lock()
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        logs_service_pb2_grpc.add_LogsServiceServicer_to_server(self, self.server)
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.endpoint = f"127.0.0.1:{self.port}"
        self.server.start()

    def Export(self, request: Any, context: grpc.ServicerContext) -> Any:
        if self.refuse:
            context.abort(grpc.StatusCode.UNAVAILABLE, "collector down")
        with self.lock:
            for rl in request.resource_logs:
                resource = {kv.key: attribute(kv.value) for kv in rl.resource.attributes}
                for sl in rl.scope_logs:
                    self.records.extend((resource, rec) for rec in sl.log_records)
        return logs_service_pb2.ExportLogsServiceResponse()

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
