"""Typed errors raised inside; gateway/status.py maps them to gRPC codes at one boundary."""

from __future__ import annotations

from dataclasses import dataclass, field


class HolisticError(Exception):
    """Base of every error this service raises on purpose."""


class ConfigError(HolisticError):
    """Settings that cannot work; the process stops with this message."""


@dataclass
class FieldViolation:
    field: str
    description: str


@dataclass
class InvalidArgument(HolisticError):
    violations: list[FieldViolation] = field(default_factory=list)

    def __str__(self) -> str:
        shown = "; ".join(f"{v.field}: {v.description}" for v in self.violations[:5])
        more = f" (+{len(self.violations) - 5} more)" if len(self.violations) > 5 else ""
        return f"{len(self.violations)} invalid field(s): {shown}{more}"


class AlreadyExists(HolisticError):
    """A batch_id was reused with other content."""


class NotFound(HolisticError):
    """No such model."""


@dataclass
class Backpressure(HolisticError):
    """A limit is reached (the backlog cap, a tenant's quota); retry after retry_after_s."""

    retry_after_s: float
    subject: str  # google.rpc.QuotaFailure subject, e.g. "work-stream-backlog" or "tenant:team-a:rate"
    description: str
    message: str

    def __str__(self) -> str:
        return self.message

    @classmethod
    def backlog(cls, retry_after_s: float, backlog: int, cap: int) -> Backpressure:
        return cls(
            retry_after_s,
            "work-stream-backlog",
            f"{backlog} batches queued; cap {cap}",
            f"backlog of {backlog} batches is over its cap of {cap}; retry later",
        )


class Unavailable(HolisticError):
    """Nothing can take the call now (no family deployed, the model being deleted); a retry may succeed."""


class Unauthenticated(HolisticError):
    """The caller's token was revoked or expired while its call was open."""
