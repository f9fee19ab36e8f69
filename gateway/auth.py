"""Bearer-token authentication for every RPC but health checks and reflection.

Tenant tokens (HOLISTIC_TOKENS, HOLISTIC_TOKENS_FILE) call the tenant RPCs; admin tokens
(HOLISTIC_ADMIN_TOKENS) call the admin RPCs, which act on any tenant's data, and nothing else. A gateway
with no token of either kind is open: every caller may call everything.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import grpc

from holistic.tenancy.audit import Audit
from holistic.tenancy.tenants import TokenStore

log = logging.getLogger("holistic.gateway")

PUBLIC_PREFIXES = ("/grpc.health.v1.Health/", "/grpc.reflection.")
ADMIN_METHODS = frozenset(
    f"/holistic.v1.EvaluationService/{name}" for name in ("DeleteModel", "DeleteTenantData", "ReadAudit")
)


def bearer_token(metadata: tuple[tuple[str, str | bytes], ...] | None) -> str:
    for key, value in metadata or ():
        if key == "authorization":
            text = value.decode() if isinstance(value, bytes) else value
            scheme, _, token = text.partition(" ")
            return token.strip() if scheme.lower() == "bearer" else ""
    return ""


Refusal = tuple[grpc.StatusCode, str]
UNKNOWN_TOKEN: Refusal = (grpc.StatusCode.UNAUTHENTICATED, "missing or invalid bearer token")


def admin_refusal(tokens: TokenStore, admins: TokenStore, token: str, method: str) -> Refusal | None:
    """Why `token` may not call the admin RPC `method` (None: it may)."""
    name = method.rsplit("/", 1)[-1]
    if admins.open:
        if tokens.open:
            return None
        return grpc.StatusCode.PERMISSION_DENIED, f"{name} needs an admin token; none is set (HOLISTIC_ADMIN_TOKENS)"
    if admins.tenant_of(token) is not None:
        return None
    if tokens.tenant_of(token) is not None:
        return grpc.StatusCode.PERMISSION_DENIED, f"{name} needs an admin token (HOLISTIC_ADMIN_TOKENS)"
    return UNKNOWN_TOKEN


def _deny(kind: grpc.RpcMethodHandler | None, code: grpc.StatusCode, message: str) -> grpc.RpcMethodHandler:
    async def abort(request: object, context: grpc.aio.ServicerContext) -> None:
        await context.abort(code, message)

    async def abort_stream(request: object, context: grpc.aio.ServicerContext):  # type: ignore[no-untyped-def]  # noqa: ANN202
        await context.abort(code, message)
        yield  # pragma: no cover - makes this an async generator

    if kind is not None and kind.response_streaming:
        return grpc.unary_stream_rpc_method_handler(abort_stream)
    return grpc.unary_unary_rpc_method_handler(abort)


class BearerAuth(grpc.aio.ServerInterceptor):
    """Refuses calls without a known token of their kind; which tenant a token belongs to is the servicer's
    business."""

    def __init__(self, tokens: TokenStore, admins: TokenStore | None = None, trail: Audit | None = None) -> None:
        """`trail`: where a tenant token's use is recorded (once an hour per token, holistic/tenancy/audit.py)."""
        self.tokens = tokens
        self.admins = admins if admins is not None else TokenStore()
        self.trail = trail

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        if details.method.startswith(PUBLIC_PREFIXES):
            return await continuation(details)
        token = bearer_token(details.invocation_metadata)  # type: ignore[arg-type]
        if details.method in ADMIN_METHODS:
            refusal = admin_refusal(self.tokens, self.admins, token, details.method)
            if refusal is None:
                return await continuation(details)
            return _deny(await continuation(details), *refusal)
        if self.tokens.open:
            return await continuation(details)
        tenant = self.tokens.tenant_of(token)
        if tenant is not None:
            if self.trail is not None:
                await self.trail.token_used(tenant, token)
            return await continuation(details)
        return _deny(await continuation(details), *UNKNOWN_TOKEN)
