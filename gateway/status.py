"""The one boundary where typed errors become gRPC statuses with google.rpc rich details."""

from __future__ import annotations

import functools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import grpc
import redis
from google.protobuf import any_pb2, duration_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from holistic.errors import (
    AlreadyExists,
    Backpressure,
    HolisticError,
    InvalidArgument,
    NotFound,
    Unauthenticated,
    Unavailable,
)
from holistic.process.observability import RPC_SECONDS

log = logging.getLogger("holistic.gateway")

T = TypeVar("T")


def _pack(message: Any) -> any_pb2.Any:
    out = any_pb2.Any()
    out.Pack(message)
    return out


def to_status(exc: BaseException) -> status_pb2.Status:
    if isinstance(exc, InvalidArgument):
        bad = error_details_pb2.BadRequest(
            field_violations=[
                error_details_pb2.BadRequest.FieldViolation(field=fv.field, description=fv.description)
                for fv in exc.violations
            ]
        )
        return status_pb2.Status(code=code_pb2.INVALID_ARGUMENT, message=str(exc), details=[_pack(bad)])
    if isinstance(exc, Backpressure):
        delay = duration_pb2.Duration()
        delay.FromMilliseconds(int(exc.retry_after_s * 1000))
        quota = error_details_pb2.QuotaFailure(
            violations=[error_details_pb2.QuotaFailure.Violation(subject=exc.subject, description=exc.description)]
        )
        return status_pb2.Status(
            code=code_pb2.RESOURCE_EXHAUSTED,
            message=str(exc),
            details=[_pack(error_details_pb2.RetryInfo(retry_delay=delay)), _pack(quota)],
        )
    if isinstance(exc, AlreadyExists):
        return status_pb2.Status(code=code_pb2.ALREADY_EXISTS, message=str(exc))
    if isinstance(exc, NotFound):
        return status_pb2.Status(code=code_pb2.NOT_FOUND, message=str(exc))
    if isinstance(exc, Unauthenticated):
        return status_pb2.Status(code=code_pb2.UNAUTHENTICATED, message=str(exc))
    if isinstance(exc, Unavailable):
        return status_pb2.Status(code=code_pb2.UNAVAILABLE, message=str(exc))
    if isinstance(exc, redis.ConnectionError | redis.TimeoutError | ConnectionError):
        return status_pb2.Status(code=code_pb2.UNAVAILABLE, message=f"storage unavailable: {exc}")
    if isinstance(exc, HolisticError):
        return status_pb2.Status(code=code_pb2.FAILED_PRECONDITION, message=str(exc))
    log.exception("internal error", exc_info=exc)
    return status_pb2.Status(code=code_pb2.INTERNAL, message=f"internal error: {type(exc).__name__}")


async def abort(context: grpc.aio.ServicerContext, exc: BaseException) -> None:
    await context.abort_with_status(rpc_status.to_status(to_status(exc)))


def reason(exc: BaseException) -> str:
    """A short, low-cardinality label for metrics: why a call was refused."""
    if isinstance(exc, Backpressure):
        return exc.subject.rsplit(":", 1)[-1] if exc.subject.startswith("tenant:") else "backlog"
    return code_pb2.Code.Name(to_status(exc).code).lower() if isinstance(exc, HolisticError) else "unavailable"


def unary(fn: Callable[..., Awaitable[T]]) -> Callable[..., Awaitable[T]]:
    timer = RPC_SECONDS.labels(fn.__name__)

    @functools.wraps(fn)
    async def wrapper(self: Any, request: Any, context: grpc.aio.ServicerContext) -> T:
        with timer.time():
            try:
                return await fn(self, request, context)
            except (HolisticError, redis.RedisError, ConnectionError) as exc:
                await abort(context, exc)
                raise AssertionError("unreachable") from exc

    return wrapper


def streaming(fn: Callable[..., AsyncIterator[T]]) -> Callable[..., AsyncIterator[T]]:
    @functools.wraps(fn)
    async def wrapper(self: Any, request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[T]:
        try:
            async for item in fn(self, request, context):
                yield item
        except (HolisticError, redis.RedisError, ConnectionError) as exc:
            await abort(context, exc)

    return wrapper
