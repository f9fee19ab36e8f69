"""`holistic otlp-receiver`: OTLP/gRPC (TraceService, LogsService) and OTLP/HTTP (/v1/traces, /v1/logs)
in front of one Intake, which turns GenAI spans and their log records into predictions (intake.py).

Serving teams point their OpenTelemetry exporters at it (or add it to a collector's pipeline); the
exporter's `authorization` is passed to the gateway, so tenants are the gateway's.
"""

from __future__ import annotations

import asyncio
import logging

import grpc
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2 as ls
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2_grpc as ls_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2 as ts
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc as ts_grpc

from holistic_client.otlp.http import HttpReceiver
from holistic_client.otlp.intake import Failed, Intake
from holistic_client.otlp.settings import OtlpSettings, load_otlp_settings

__all__ = ["Receiver", "load_otlp_settings", "serve"]
log = logging.getLogger("holistic.otlp")


def _authorization(context: grpc.aio.ServicerContext) -> str | None:
    for key, val in context.invocation_metadata() or ():
        if key == "authorization":
            return val if isinstance(val, str) else val.decode()
    return None


class TraceReceiver(ts_grpc.TraceServiceServicer):
    def __init__(self, intake: Intake) -> None:
        self.intake = intake

    async def Export(
        self, request: ts.ExportTraceServiceRequest, context: grpc.aio.ServicerContext
    ) -> ts.ExportTraceServiceResponse:
        try:
            return await self.intake.traces(request, self.intake.metadata(_authorization(context)))
        except Failed as exc:
            await context.abort(exc.code, str(exc))
            raise  # abort raises; for the type checker


class LogsReceiver(ls_grpc.LogsServiceServicer):
    def __init__(self, intake: Intake) -> None:
        self.intake = intake

    async def Export(
        self, request: ls.ExportLogsServiceRequest, context: grpc.aio.ServicerContext
    ) -> ls.ExportLogsServiceResponse:
        return await self.intake.logs(request, self.intake.metadata(_authorization(context)))


class Receiver:
    """Both servers around one Intake: start() binds (port 0 for any), stop() drains. Made on its loop."""

    def __init__(self, settings: OtlpSettings) -> None:
        self.settings = settings
        self.intake = Intake(settings)
        self.server = grpc.aio.server(options=[("grpc.max_receive_message_length", 64 << 20)])
        ts_grpc.add_TraceServiceServicer_to_server(TraceReceiver(self.intake), self.server)
        ls_grpc.add_LogsServiceServicer_to_server(LogsReceiver(self.intake), self.server)
        self.http = HttpReceiver(self.intake, settings)
        self.port = 0
        self.http_port = 0

    async def start(self, address: str | None = None, http_address: str | None = None) -> int:
        """The gRPC port; OTLP/HTTP too unless its address is empty (self.http_port)."""
        where = address or self.settings.address
        s = self.settings
        http_where = s.http_address if http_address is None else http_address
        if http_where:  # first: once gRPC answers, both do
            self.http_port = await self.http.start(http_where)
        if s.tls_cert and s.tls_key:
            creds = grpc.ssl_server_credentials([(s.tls_key.read_bytes(), s.tls_cert.read_bytes())])
            self.port = self.server.add_secure_port(where, creds)
        else:
            self.port = self.server.add_insecure_port(where)
        await self.server.start()
        log.info("OTLP receiver on gRPC port %d, HTTP port %s, submitting to %s", self.port, self.http_port, s.target)
        return self.port

    async def stop(self, grace_s: float = 5.0) -> None:
        await self.http.stop()
        await self.server.stop(grace_s)
        await self.intake.close()


async def serve(settings: OtlpSettings) -> None:
    import signal

    from holistic.process.observability import serve_metrics

    serve_metrics(settings.metrics_address)
    receiver = Receiver(settings)
    await receiver.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await receiver.stop()
