"""holistic.v1.EvaluationService: thin RPC handlers over ingest, profile reads, watches and deletions."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncIterator, Callable

import grpc
import redis

from gateway import perturb, status, wire
from gateway.auth import bearer_token
from gateway.compare import Comparer
from gateway.deletion import Deleter
from gateway.family_catalogue import FamilyCatalogue
from gateway.ingest import Ingestor
from gateway.profiles import ProfileReader, WindowSpec
from gateway.validation import NAME_RE
from gateway.watch import WatchHub
from holistic.errors import FieldViolation, HolisticError, InvalidArgument
from holistic.process.observability import BATCHES, PREDICTIONS, new_traceparent, valid_traceparent
from holistic.redis.keys import Keys
from holistic.tenancy import audit
from holistic.tenancy.tenants import DEFAULT_TENANT, TENANT_RE, TokenStore
from holistic.v1 import evaluation_service_pb2 as es

log = logging.getLogger("holistic.gateway")

SERVICE = "holistic.v1.EvaluationService"
MIN_DEADLINE_S = 0.05
DEFAULT_AUDIT_PAGE, MAX_AUDIT_PAGE = 100, 1000
AUDIT_ID = re.compile(r"\d{1,20}-\d{1,20}")  # a stream entry id, as ReadAudit's page tokens are


def _check_model(model: str) -> None:
    if not model:
        raise InvalidArgument([FieldViolation("model", "is required")])
    if not NAME_RE.fullmatch(model):
        raise InvalidArgument([FieldViolation("model", "is not a valid model name")])


def _check_tenant(tenant: str, field: str = "tenant") -> None:
    if not tenant:
        raise InvalidArgument([FieldViolation(field, 'is required ("default" for the default tenant)')])
    if not TENANT_RE.fullmatch(tenant):
        raise InvalidArgument([FieldViolation(field, f"is not a tenant name ({TENANT_RE.pattern})")])


def _traceparent(context: grpc.aio.ServicerContext) -> str:
    """The client's W3C trace context, or a new one: every batch can be followed through the queue."""
    for key, value in context.invocation_metadata() or ():
        if key == "traceparent":
            text = value if isinstance(value, str) else value.decode()
            if valid_traceparent(text):
                return text
    return new_traceparent()


class EvaluationService:
    def __init__(
        self,
        ingestor: Ingestor,
        reader: ProfileReader,
        hub: WatchHub,
        tokens: TokenStore,
        deleter: Deleter,
        admins: TokenStore | None = None,
        catalogue: FamilyCatalogue | None = None,
        audit_trail: audit.Audit | None = None,
    ) -> None:
        self.ingestor = ingestor
        self.reader = reader
        self.hub = hub
        self.tokens = tokens
        self.catalogue = catalogue
        self.audit = (
            audit_trail if audit_trail is not None else audit.Audit(ingestor.r, Keys(ingestor.settings.key_prefix))
        )
        self.deleter = deleter
        self.admins = admins if admins is not None else TokenStore()
        self.comparer = Comparer(reader)

    def _tenant(self, context: grpc.aio.ServicerContext) -> str:
        """The caller's tenant (the interceptor already refused unknown tokens)."""
        if self.tokens.open:
            return DEFAULT_TENANT
        return self.tokens.tenant_of(bearer_token(context.invocation_metadata())) or DEFAULT_TENANT

    @status.unary
    async def SubmitPredictions(self, raw: bytes, context: grpc.aio.ServicerContext) -> es.SubmitPredictionsResponse:
        remaining = context.time_remaining()
        if remaining is not None and remaining < MIN_DEADLINE_S:
            await context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, "too little time left to enqueue the batch")
        n = 0
        tenant = ""
        traceparent = _traceparent(context)
        try:
            self.ingestor.backlog.check()  # refuse before parsing: overload must not spend CPU on it
            incoming = self.ingestor.receive(raw)
            n = incoming.count
            tenant = self._tenant(context)
            response = await self.ingestor.submit(incoming, tenant=tenant, traceparent=traceparent)
        except (HolisticError, redis.RedisError, ConnectionError) as exc:
            why = status.reason(exc)
            PREDICTIONS.labels("rejected", why).inc(n)
            BATCHES.labels("rejected", why).inc()
            raise
        outcome = "duplicate" if response.duplicate else "accepted"
        PREDICTIONS.labels(outcome, "").inc(n)
        BATCHES.labels(outcome, "").inc()
        context.set_trailing_metadata((("traceparent", traceparent),))
        log.info(
            "%s batch_id=%s model=%s tenant=%s seq=%d n=%d traceparent=%s",
            outcome, response.batch_id, response.model, tenant, response.sequence, n, traceparent,
            extra={"batch_id": response.batch_id, "model": response.model, "tenant": tenant,
                   "seq": response.sequence, "predictions": n, "traceparent": traceparent},
        )  # fmt: skip
        return response

    @status.unary
    async def GetProfile(self, raw: bytes, context: grpc.aio.ServicerContext) -> es.GetProfileResponse:
        request = wire.parse(es.GetProfileRequest, raw)
        _check_model(request.model)
        profile = await self.reader.profile(request.model, WindowSpec.from_request(request), self._tenant(context))
        return es.GetProfileResponse(profile=profile)

    @status.unary
    async def CompareProfiles(self, raw: bytes, context: grpc.aio.ServicerContext) -> es.CompareProfilesResponse:
        return await self.comparer.compare(wire.parse(es.CompareProfilesRequest, raw), self._tenant(context))

    @status.streaming
    async def WatchProfile(
        self, raw: bytes, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[es.WatchProfileResponse]:
        request = wire.parse(es.WatchProfileRequest, raw)
        _check_model(request.model)
        spec = WindowSpec.from_request(request)
        tenant = self._tenant(context)
        if not await self.reader.exists(request.model, tenant):
            await self.reader.profile(request.model, spec, tenant)  # raises NotFound with the message
        async for profile in self.hub.watch(request.model, spec, tenant, self._still_allowed(context, tenant)):
            yield es.WatchProfileResponse(profile=profile)

    def _still_allowed(self, context: grpc.aio.ServicerContext, tenant: str) -> Callable[[], bool]:
        """For a stream: whether its token still names the tenant (not revoked, not expired)."""
        if self.tokens.open:
            return lambda: True
        token = bearer_token(context.invocation_metadata())
        return lambda: self.tokens.tenant_of(token) == tenant

    @status.unary
    async def Perturb(self, raw: bytes, context: grpc.aio.ServicerContext) -> es.PerturbResponse:
        return await perturb.perturb(wire.parse(es.PerturbRequest, raw), self.ingestor.settings)

    @status.unary
    async def ListModels(self, raw: bytes, context: grpc.aio.ServicerContext) -> es.ListModelsResponse:
        request = wire.parse(es.ListModelsRequest, raw)
        return await self.reader.list_models(self._tenant(context), request.page_size, request.page_token)

    @status.unary
    async def ListFamilies(self, raw: bytes, context: grpc.aio.ServicerContext) -> es.ListFamiliesResponse:
        wire.parse(es.ListFamiliesRequest, raw)
        if self.catalogue is None:
            await context.abort(grpc.StatusCode.UNIMPLEMENTED, "this gateway keeps no family catalogue")
        return await self.catalogue.list()  # type: ignore[union-attr]

    def _admin(self, context: grpc.aio.ServicerContext) -> str:
        """The admin's name, for the logs (the interceptor already refused anyone else)."""
        return self.admins.tenant_of(bearer_token(context.invocation_metadata())) or "(open gateway)"

    @status.unary
    async def DeleteModel(self, raw: bytes, context: grpc.aio.ServicerContext) -> es.DeleteModelResponse:
        request = wire.parse(es.DeleteModelRequest, raw)
        tenant = request.tenant or DEFAULT_TENANT
        _check_model(request.model)
        _check_tenant(tenant)
        removed = await self.deleter.model(tenant, request.model)
        log.info(
            "deleted model=%s tenant=%s by admin=%s: %s", request.model, tenant, self._admin(context),
            ", ".join(f"{r.key_family} {r.count}" for r in removed) or "nothing left to remove",
            extra={"model": request.model, "tenant": tenant},
        )  # fmt: skip
        counts = {r.key_family: r.count for r in removed}
        await self.audit.record(tenant, audit.DELETE_MODEL, self._admin(context), model=request.model, removed=counts)
        return es.DeleteModelResponse(removed=removed)

    @status.unary
    async def DeleteTenantData(self, raw: bytes, context: grpc.aio.ServicerContext) -> es.DeleteTenantDataResponse:
        request = wire.parse(es.DeleteTenantDataRequest, raw)
        _check_tenant(request.tenant)
        models, removed = await self.deleter.tenant(request.tenant)
        log.info(
            "deleted tenant=%s by admin=%s: %d models; %s", request.tenant, self._admin(context), len(models),
            ", ".join(f"{r.key_family} {r.count}" for r in removed) or "nothing left to remove",
            extra={"tenant": request.tenant},
        )  # fmt: skip
        counts = {r.key_family: r.count for r in removed}
        await self.audit.record(
            request.tenant, audit.DELETE_TENANT_DATA, self._admin(context), models=list(models), removed=counts
        )
        return es.DeleteTenantDataResponse(models=models, removed=removed)

    @status.unary
    async def ReadAudit(self, raw: bytes, context: grpc.aio.ServicerContext) -> es.ReadAuditResponse:
        request = wire.parse(es.ReadAuditRequest, raw)
        _check_tenant(request.tenant)
        if not 0 <= request.page_size <= MAX_AUDIT_PAGE:
            raise InvalidArgument(
                [FieldViolation("page_size", f"must be 0 to {MAX_AUDIT_PAGE}, got {request.page_size}")]
            )
        if request.page_token and not AUDIT_ID.fullmatch(request.page_token):
            raise InvalidArgument([FieldViolation("page_token", "is not a token this RPC returned")])
        size = request.page_size or DEFAULT_AUDIT_PAGE
        entries = await self.audit.read(request.tenant, request.page_token, size + 1)
        reply = es.ReadAuditResponse()
        for e in entries[:size]:
            out = reply.entries.add(id=e.id, action=e.action, actor=e.actor, details_json=json.dumps(e.details))
            out.time.FromMilliseconds(e.time_ms)
        if len(entries) > size:
            reply.next_page_token = entries[size - 1].id
        return reply


def handlers(service: EvaluationService) -> grpc.GenericRpcHandler:
    """Like the generated add_*_to_server, except that requests arrive as bytes: gateway/wire.py parses them
    so that a malformed one is INVALID_ARGUMENT naming its field. One handler per RPC of the service's
    descriptor, so a new RPC needs only its method here (a missing one fails at start)."""
    table: dict[str, grpc.RpcMethodHandler] = {}
    for method in es.DESCRIPTOR.services_by_name[SERVICE.rsplit(".", 1)[-1]].methods:
        make = grpc.unary_stream_rpc_method_handler if method.server_streaming else grpc.unary_unary_rpc_method_handler
        reply = getattr(es, method.output_type.name)
        table[method.name] = make(
            getattr(service, method.name), request_deserializer=None, response_serializer=reply.SerializeToString
        )
    return grpc.method_handlers_generic_handler(SERVICE, table)
