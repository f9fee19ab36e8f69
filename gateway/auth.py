"""Bearer-token authentication for every RPC but health checks and reflection."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import grpc

from holistic.tenants import TokenStore

log = logging.getLogger("holistic.gateway")

PUBLIC_PREFIXES = ("/grpc.health.v1.Health/", "/grpc.reflection.")


def bearer_token(metadata: tuple[tuple[str, str | bytes], ...] | None) -> str:
    for key, value in metadata or ():
        if key == "authorization":
            text = value.decode() if isinstance(value, bytes) else value
            scheme, _, token = text.partition(" ")
            return token.strip() if scheme.lower() == "bearer" else ""
    return ""


def _deny(kind: grpc.RpcMethodHandler | None) -> grpc.RpcMethodHandler:
    async def abort(request: object, context: grpc.aio.ServicerContext) -> None:
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or invalid bearer token")

    async def abort_stream(request: object, context: grpc.aio.ServicerContext):  # type: ignore[no-untyped-def]  # noqa: ANN202
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or invalid bearer token")
        yield  # pragma: no cover - makes this an async generator

    if kind is not None and kind.response_streaming:
        return grpc.unary_stream_rpc_method_handler(abort_stream)
    return grpc.unary_unary_rpc_method_handler(abort)


class BearerAuth(grpc.aio.ServerInterceptor):
    """Refuses calls without a known token; which tenant a token belongs to is the servicer's business."""

    def __init__(self, tokens: TokenStore) -> None:
        self.tokens = tokens

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        if self.tokens.open or details.method.startswith(PUBLIC_PREFIXES):
            return await continuation(details)
        if self.tokens.tenant_of(bearer_token(details.invocation_metadata)) is not None:  # type: ignore[arg-type]
            return await continuation(details)
        return _deny(await continuation(details))
