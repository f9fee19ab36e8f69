"""Readable errors from gRPC statuses, with google.rpc details decoded."""

from __future__ import annotations

import re

import grpc
from google.rpc import error_details_pb2
from grpc_status import rpc_status


class ClientError(Exception):
    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message


class Unreachable(ClientError):
    """The gateway could not be reached at all (refused, unknown host, no route, TLS handshake)."""

    def __init__(self, target: str, cause: str) -> None:
        super().__init__(
            grpc.StatusCode.UNAVAILABLE,
            f"cannot reach the gateway at {target}: {cause} (is it running? --wait-for-ready waits for it)",
        )
        self.target = target
        self.cause = cause


# How gRPC core words a connection that was never made (refused, no route, unknown host, a TLS
# handshake): the gateway was not reached, as opposed to a gateway that answered UNAVAILABLE.
_CONNECT_FAILURE = re.compile(
    r"failed to connect|connection refused|dns resolution failed|name resolution|errors resolving|no route to host|"
    r"network is unreachable|handshake failed|connection reset|timed out",
    re.IGNORECASE,
)


def connect_failure(exc: BaseException) -> str | None:
    """The cause ("Connection refused", the last and most specific part of gRPC's message) when `exc` says
    the connection was never made; None for anything else, a gateway's own UNAVAILABLE included."""
    if not isinstance(exc, grpc.RpcError) or exc.code() != grpc.StatusCode.UNAVAILABLE:  # type: ignore[attr-defined]
        return None
    details = exc.details() or ""  # type: ignore[attr-defined]
    if not _CONNECT_FAILURE.search(details):
        return None
    return details.rsplit(": ", 1)[-1].strip().rstrip("]") or details


class InvalidPredictions(ClientError):
    """INVALID_ARGUMENT with its field violations, e.g. ("predictions[3].confidence", "must be ...")."""

    def __init__(self, code: grpc.StatusCode, message: str, violations: list[tuple[str, str]]) -> None:
        super().__init__(code, message)
        self.violations = violations


def details(err: grpc.RpcError) -> list[object]:
    status = rpc_status.from_call(err)  # type: ignore[arg-type]
    if status is None:
        return []
    out: list[object] = []
    for any_msg in status.details:
        for cls in (error_details_pb2.BadRequest, error_details_pb2.RetryInfo, error_details_pb2.QuotaFailure):
            if any_msg.Is(cls.DESCRIPTOR):
                msg = cls()
                any_msg.Unpack(msg)
                out.append(msg)
    return out


def retry_delay_s(err: grpc.RpcError) -> float | None:
    """The server's RetryInfo delay, or None when the status carries none."""
    for d in details(err):
        if isinstance(d, error_details_pb2.RetryInfo):
            return d.retry_delay.seconds + d.retry_delay.nanos * 1e-9
    return None


def from_rpc_error(err: grpc.RpcError) -> ClientError:
    code = err.code()  # type: ignore[attr-defined]
    message = err.details() or ""  # type: ignore[attr-defined]
    if code == grpc.StatusCode.INVALID_ARGUMENT:
        violations = [
            (v.field, v.description)
            for d in details(err)
            if isinstance(d, error_details_pb2.BadRequest)
            for v in d.field_violations
        ]
        return InvalidPredictions(code, message, violations)
    return ClientError(code, message)
