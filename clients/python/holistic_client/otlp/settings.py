"""HOLISTIC_OTLP_*: the receiver's one settings object, from the environment."""

from __future__ import annotations

from pathlib import Path

from pydantic import AliasChoices, Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from holistic_client.otlp.mapping import TASKS, Defaults


class OtlpSettings(BaseSettings):
    """Where to listen (gRPC and HTTP), which gateway to submit to, and the defaults for spans."""

    model_config = SettingsConfigDict(env_prefix="HOLISTIC_OTLP_", extra="ignore", frozen=True)

    address: str = Field(default="127.0.0.1:4317", description="host:port of the OTLP/gRPC receiver.")
    http_address: str = Field(default="127.0.0.1:4318", description="host:port of OTLP/HTTP; empty: none.")
    target: str = Field(default="127.0.0.1:50051", description="The gateway.")
    token: str | None = Field(default=None, repr=False, description="For exporters that send no authorization.")
    gateway_tls_ca: Path | None = Field(default=None, description="CA of the gateway's certificate: TLS to it.")
    tls_cert: Path | None = Field(default=None, description="Serve OTLP over TLS with this certificate chain.")
    tls_key: Path | None = Field(default=None, description="Key of the receiver's certificate (PEM).")
    default_scenario: str = Field(default="production", description="For spans without holistic.scenario.")
    default_task: str = Field(default="free_generation", description="For spans without holistic.task.")
    operations: str = Field(
        default="chat,text_completion,generate_content",
        description="gen_ai.operation.name values that are predictions (comma-separated); others are skipped.",
    )
    event_wait_s: float = Field(
        default=2.0, ge=0, le=30, description="How long a span without its answer waits for its log records."
    )
    max_batch: int = Field(default=1000, ge=1, le=100_000, description="Predictions per SubmitPredictions.")
    submit_timeout_s: float = Field(default=8.0, gt=0, description="Per submit; retried within it.")
    metrics_address: str = Field(
        default="",
        validation_alias=AliasChoices("HOLISTIC_OTLP_METRICS_ADDRESS", "HOLISTIC_METRICS_ADDRESS"),
        description="host:port of the receiver's Prometheus /metrics; unset: none.",
    )

    def defaults(self) -> Defaults:
        task = self.default_task.lower().removeprefix("task_")
        if task not in TASKS:
            raise ValueError(f"HOLISTIC_OTLP_DEFAULT_TASK {self.default_task!r}: one of {sorted(TASKS)}")
        operations = frozenset(op.strip() for op in self.operations.split(",") if op.strip())
        if not operations:
            raise ValueError("HOLISTIC_OTLP_OPERATIONS: at least one gen_ai.operation.name, e.g. chat")
        return Defaults(self.default_scenario, TASKS[task], operations)


def load_otlp_settings(**overrides: object) -> OtlpSettings:
    from holistic.errors import ConfigError

    try:
        settings = OtlpSettings(**overrides)  # type: ignore[arg-type]
        settings.defaults()
        return settings
    except (ValidationError, ValueError) as exc:
        raise ConfigError(f"invalid settings: {exc}") from exc
