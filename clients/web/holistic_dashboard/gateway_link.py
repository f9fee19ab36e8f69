"""The dashboard's gRPC link to the gateway: profiles, watches, comparisons and the model list, with the bearer
token."""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
from google.protobuf import json_format, message

from holistic.v1 import evaluation_service_pb2 as es
from holistic.v1 import evaluation_service_pb2_grpc as es_grpc
from holistic.v1 import profile_pb2 as pp
from holistic_client.client import WINDOWS

__all__ = ["WINDOWS", "GatewayError", "GatewayLink", "to_json"]


class GatewayError(Exception):
    """A status from the gateway, kept as (code name, message) for the page to show."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message


def to_json(msg: message.Message) -> dict[str, object]:
    """Canonical protobuf JSON (camelCase, 64-bit integers as strings), as every language reads it."""
    return json_format.MessageToDict(msg)


def _set_window(request: es.GetProfileRequest | es.WatchProfileRequest, window: str | tuple[float, float]) -> None:
    if isinstance(window, tuple):
        request.range.start_time.FromNanoseconds(int(window[0] * 1e9))
        request.range.end_time.FromNanoseconds(int(window[1] * 1e9))
    else:
        request.preset = WINDOWS[window]


class GatewayLink:
    def __init__(
        self,
        target: str,
        token: str | None = None,
        timeout_s: float = 15.0,
        credentials: grpc.ChannelCredentials | None = None,
    ) -> None:
        """credentials: TLS (or mutual TLS) to the gateway, as the clients' tls_credentials builds them."""
        self.target = target
        if credentials is None:
            self.channel = grpc.aio.insecure_channel(target)
        else:
            self.channel = grpc.aio.secure_channel(target, credentials)
        self.stub = es_grpc.EvaluationServiceStub(self.channel)
        self.metadata = (("authorization", f"Bearer {token}"),) if token else ()
        self.timeout_s = timeout_s

    async def close(self) -> None:
        await self.channel.close()

    async def list_models(self) -> list[pp.ModelSummary]:
        """Every model of the token's tenant: ListModels's pages, one after another."""
        models: list[pp.ModelSummary] = []
        token = ""
        while True:
            request = es.ListModelsRequest(page_token=token)
            try:
                reply = await self.stub.ListModels(request, timeout=self.timeout_s, metadata=self.metadata)
            except grpc.aio.AioRpcError as err:
                raise GatewayError(err.code(), err.details() or "") from None
            models += reply.models
            token = reply.next_page_token
            if not token:
                return models

    async def profile(self, model: str, window: str | tuple[float, float]) -> pp.Profile:
        request = es.GetProfileRequest(model=model)
        _set_window(request, window)
        try:
            reply = await self.stub.GetProfile(request, timeout=self.timeout_s, metadata=self.metadata)
        except grpc.aio.AioRpcError as err:
            raise GatewayError(err.code(), err.details() or "") from None
        return reply.profile

    async def compare(self, model: str, window: str) -> es.CompareProfilesResponse:
        """CompareProfiles: the model's window against the one of equal length just before it (every radar
        axis judged, Holm, level 0.05, margin 0)."""
        request = es.CompareProfilesRequest(model=model, preset=WINDOWS[window])
        try:
            return await self.stub.CompareProfiles(request, timeout=self.timeout_s, metadata=self.metadata)
        except grpc.aio.AioRpcError as err:
            raise GatewayError(err.code(), err.details() or "") from None

    async def watch(self, model: str, window: str) -> AsyncIterator[pp.Profile]:
        request = es.WatchProfileRequest(model=model)
        _set_window(request, window)
        call = self.stub.WatchProfile(request, metadata=self.metadata)
        try:
            async for reply in call:
                yield reply.profile
        except grpc.aio.AioRpcError as err:
            raise GatewayError(err.code(), err.details() or "") from None
        finally:
            call.cancel()
