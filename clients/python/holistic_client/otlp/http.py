"""OTLP/HTTP: POST /v1/traces and /v1/logs, binary protobuf or JSON, gzip or not (SDKs default to 4318).

Answers as the OTLP specification asks: 200 with the Export response (partial_success for what was
skipped) in the request's encoding; 400 for a body that does not parse, 415 for another content type,
401/403 when the gateway refuses the token, 503 (retryable) while the gateway is unreachable; errors
carry a google.rpc.Status. OTLP JSON differs from protobuf's JSON mapping in one way that matters
here: trace and span ids are hex, not base64.
"""

from __future__ import annotations

import base64
import binascii
import json
import ssl
from typing import Any

import grpc
from aiohttp import web
from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message
from google.rpc import code_pb2, status_pb2
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2 as ls
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2 as ts

from holistic_client.otlp.intake import Failed, Intake
from holistic_client.otlp.settings import OtlpSettings

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
HEX_IDS = frozenset({"traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id"})
HTTP_STATUS = {grpc.StatusCode.UNAUTHENTICATED: 401, grpc.StatusCode.PERMISSION_DENIED: 403}


class BadRequest(ValueError):
    pass


def hex_ids_to_base64(node: Any) -> Any:
    """OTLP JSON's hex trace/span ids as protobuf JSON's base64, everywhere in a request."""
    if isinstance(node, dict):
        out = {}
        for key, v in node.items():
            if key in HEX_IDS and isinstance(v, str):
                try:
                    out[key] = base64.b64encode(bytes.fromhex(v)).decode()
                except ValueError:
                    raise BadRequest(f"{key}: {v!r} is not hex") from None
            else:
                out[key] = hex_ids_to_base64(v)
        return out
    if isinstance(node, list):
        return [hex_ids_to_base64(v) for v in node]
    return node


def parse(body: bytes, content_type: str, message: Message) -> None:
    try:
        if content_type == PROTOBUF:
            message.ParseFromString(body)
        else:
            json_format.ParseDict(hex_ids_to_base64(json.loads(body)), message, ignore_unknown_fields=True)
    except (DecodeError, json_format.ParseError, ValueError, binascii.Error) as exc:
        raise BadRequest(f"the body is not an OTLP {type(message).__name__} in {content_type}: {exc}") from exc


def reply(message: Message, content_type: str, status: int = 200) -> web.Response:
    if content_type == JSON:
        return web.Response(status=status, body=json_format.MessageToJson(message, indent=None), content_type=JSON)
    return web.Response(status=status, body=message.SerializeToString(), content_type=PROTOBUF)


class HttpReceiver:
    def __init__(self, intake: Intake, settings: OtlpSettings) -> None:
        self.intake = intake
        self.settings = settings
        self.runner: web.AppRunner | None = None

    def app(self) -> web.Application:
        app = web.Application(client_max_size=64 << 20)
        app.router.add_post("/v1/traces", self._traces)
        app.router.add_post("/v1/logs", self._logs)
        return app

    async def _traces(self, request: web.Request) -> web.Response:
        return await self._export(request, ts.ExportTraceServiceRequest())

    async def _logs(self, request: web.Request) -> web.Response:
        return await self._export(request, ls.ExportLogsServiceRequest())

    async def _export(self, request: web.Request, message: ts.ExportTraceServiceRequest | ls.ExportLogsServiceRequest
                      ) -> web.Response:  # fmt: skip
        content_type = request.content_type
        if content_type not in (PROTOBUF, JSON):
            status = status_pb2.Status(code=code_pb2.INVALID_ARGUMENT,
                                       message=f"Content-Type {content_type!r}: {PROTOBUF} or {JSON}")  # fmt: skip
            return reply(status, PROTOBUF, 415)
        try:
            parse(await request.read(), content_type, message)
        except BadRequest as exc:
            return reply(status_pb2.Status(code=code_pb2.INVALID_ARGUMENT, message=str(exc)), content_type, 400)
        try:
            metadata = self.intake.metadata(request.headers.get("Authorization"))
            if isinstance(message, ts.ExportTraceServiceRequest):
                return reply(await self.intake.traces(message, metadata), content_type)
            return reply(await self.intake.logs(message, metadata), content_type)
        except Failed as exc:
            status = status_pb2.Status(code=exc.code.value[0], message=str(exc))
            return reply(status, content_type, HTTP_STATUS.get(exc.code, 503))

    async def start(self, address: str) -> int:
        self.runner = web.AppRunner(self.app(), access_log=None)
        await self.runner.setup()
        s = self.settings
        context = None
        if s.tls_cert and s.tls_key:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(s.tls_cert, s.tls_key)
        host, _, port = address.rpartition(":")
        await web.TCPSite(self.runner, host or "0.0.0.0", int(port), ssl_context=context).start()
        return int(self.runner.addresses[0][1])

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()
