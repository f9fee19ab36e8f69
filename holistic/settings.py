"""The one settings object every process builds from its environment (HOLISTIC_*, REDIS_URL)."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AliasChoices, Field, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from holistic.errors import ConfigError
from holistic.families import registry
from holistic.process import otlp_export
from holistic.process.run_state import DATA_DIR

# what HOLISTIC_REDACT=on can replace (Presidio's pattern recognizers' entity names)
# a segment key: it becomes part of Redis key and statistics field names (holistic/stats/segments.py)
SEGMENT_KEY = re.compile(r"[A-Za-z0-9_.-]{1,64}")
REDACT_ENTITIES = ("EMAIL_ADDRESS", "PHONE_NUMBER", "CREDIT_CARD", "IBAN_CODE", "IP_ADDRESS")


def _split_csv(value: Any) -> Any:
    if isinstance(value, str):
        return [item.strip() for item in value.split(",") if item.strip()]
    return value


class Settings(BaseSettings):
    """Validated at start; a bad value stops the process with the variable named."""

    # An empty variable is an unset one (compose files pass `${VAR:-}` through as "").
    # hide_input_in_errors: a bad value's error never echoes the input (tokens, REDIS_URL, headers are secrets)
    model_config = SettingsConfigDict(
        env_prefix="HOLISTIC_", extra="ignore", frozen=True, env_ignore_empty=True, hide_input_in_errors=True
    )

    # --- Redis -----------------------------------------------------------------------------
    redis_url: str | None = Field(
        default=None,
        validation_alias=AliasChoices("REDIS_URL", "HOLISTIC_REDIS_URL"),
        description="redis://, rediss:// or unix:// URL (user:password@ for ACL). Unset: `holistic up` starts one.",
        repr=False,  # may hold a password: never in logs or reprs
    )
    redis_tls_ca: Path | None = Field(default=None, description="CA bundle that signed Redis's certificate.")
    redis_tls_cert: Path | None = Field(default=None, description="Client certificate, when Redis asks for one.")
    redis_tls_key: Path | None = Field(default=None, description="Key of the client certificate.")
    data_dir: Path = Field(
        default=DATA_DIR, description="Where `holistic up` keeps its Redis and its run-state file (run.json)."
    )
    durability: Literal["everysec", "strict"] = Field(
        default="everysec",
        description="strict: a batch is acknowledged only once on disk (appendfsync always, or WAITAOF >= 7.2).",
    )
    key_prefix: str = Field(default="hl", pattern=r"^[a-z][a-z0-9_]{0,15}$", description="Prefix of every Redis key.")
    redis_cluster: bool = Field(default=False, description="REDIS_URL names a node of a Redis Cluster.")
    queue_shards: int = Field(
        default=1, ge=1, le=1024, description="Work stream shards (a model's batches stay in one); fix at deploy."
    )

    # --- Gateway ---------------------------------------------------------------------------
    gateway_address: str = Field(default="127.0.0.1:50051", description="host:port the gateway listens on.")
    gateway_processes: int = Field(default=1, ge=1, le=64, description="Processes sharing the port.")
    tokens: str = Field(
        default="",
        description="Token entries, comma separated: <tenant>:sha256:<hex> (or a bare token: tenant default).",
        repr=False,
    )
    tokens_file: Path | None = Field(default=None, description="More entries, one per line; re-read on change.")
    admin_tokens: str = Field(
        default="",
        description="Admin token entries, as HOLISTIC_TOKENS's (<name>:sha256:<hex>, the name for the logs): only "
        "they may call the admin RPCs (DeleteModel, DeleteTenantData), and only those. Unset: no one may, unless "
        "the gateway is open (no tokens at all).",
        repr=False,
    )
    tls_cert: Path | None = Field(default=None, description="Gateway certificate chain (PEM): serve TLS.")
    tls_key: Path | None = Field(default=None, description="Gateway private key (PEM).")
    tls_client_ca: Path | None = Field(default=None, description="CA for client certificates: mutual TLS.")
    tenant_predictions_per_s: int = Field(default=0, ge=0, description="Per tenant; 0: unlimited.")
    tenant_backlog_share: float = Field(default=1.0, gt=0, le=1, description="Of the backlog cap, per tenant.")
    tenant_quotas: dict[str, dict[str, float]] = Field(
        default_factory=dict,
        description='Per tenant, JSON: {"team-a": {"predictions_per_s": 5000, "backlog_share": 0.5}}.',
    )
    gateway_wire_proof: bool = Field(
        default=True,
        description="Prove a batch valid from its bytes in C (gateway/_wireproof.c) before the Python checks; "
        "false: always the Python path (for comparison; the answers are the same).",
    )
    redact: Literal["off", "on"] = Field(
        default="off",
        description="on: the gateway replaces PII in every prediction's text before it is written to Redis "
        "(docs/privacy.md). Off by default: raw text is stored as sent.",
    )
    redact_entities: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: list(REDACT_ENTITIES),
        description="What HOLISTIC_REDACT=on replaces, comma separated: " + ", ".join(REDACT_ENTITIES) + ".",
    )
    redact_patterns: dict[str, str] = Field(
        default_factory=dict,
        description='Team patterns also replaced, JSON {"NAME": "regex"}, e.g. {"TICKET": "TCK-[0-9]{6}"}.',
    )
    redact_format: str = Field(
        default="<{entity}>", description="The replacement; {entity} is the entity's name (EMAIL_ADDRESS, ...)."
    )
    max_batch_predictions: int = Field(default=1000, ge=1, le=100_000, description="Predictions per SubmitPredictions.")
    max_text_bytes: int = Field(default=1 << 20, ge=1024, description="Per text field (input, output, ...).")
    max_references: int = Field(default=64, ge=1, description="References per prediction.")
    max_map_entries: int = Field(default=32, ge=1, description="groups and metadata entries.")
    max_ranking_documents: int = Field(default=1000, ge=1, description="Documents per ranking (TASK_RANKING).")
    max_message_bytes: int = Field(default=64 << 20, ge=1 << 20, description="gRPC message limit.")
    backlog_max_batches: int = Field(default=5000, ge=1, description="Per family group; over it: backpressure.")
    idempotency_ttl_s: int = Field(default=86_400, ge=60, description="How long a batch_id is remembered.")
    future_skew_s: float = Field(default=300.0, ge=0, description="produced_at may be this far ahead.")
    families: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Installed families to deploy, comma separated. `holistic up` starts one worker each (empty: "
        "every installed family); a gateway creates their consumer groups at start (empty: none, the workers do).",
    )
    # Reads and watches: bounded per request, per tenant and per gateway (gateway/read_limits.py).
    max_window_buckets: int = Field(default=512, ge=1, description="Buckets one profile read may fold, per family.")
    tenant_concurrent_reads: int = Field(default=4, ge=1, description="Profile reads in flight per tenant.")
    tenant_read_buckets_per_s: int = Field(
        default=2000, ge=0, description="Statistics buckets a tenant's reads may fold per second; 0: unlimited."
    )
    tenant_max_watches: int = Field(default=32, ge=1, description="Open WatchProfile streams per tenant.")
    max_watches: int = Field(default=1024, ge=1, description="Open WatchProfile streams per gateway process.")
    read_connections: int = Field(default=32, ge=2, description="Redis connections for reads (submits have theirs).")
    fold_threads: int = Field(default=2, ge=1, le=64, description="Threads that fold profiles off the event loop.")
    max_list_models: int = Field(
        default=10_000,
        ge=1,
        description="Models one ListModels page holds at most, and a page's size when the request names none.",
    )

    # --- Workers ---------------------------------------------------------------------------
    read_count: int = Field(default=32, ge=1, le=1000, description="Most entries one worker read claims.")
    read_ahead_ms: int = Field(
        default=200,
        ge=0,
        description="A read claims what the replica expects to finish in this long (from its recent CPU seconds per "
        "entry), 1 to HOLISTIC_READ_COUNT, so replicas share a backlog; 0: always HOLISTIC_READ_COUNT.",
    )
    apply_max_predictions: int = Field(
        default=4000,
        ge=1,
        description="The batches of one read that share a model are applied by one script, up to this many "
        "predictions (their time tiers written once); 1: one script per batch.",
    )
    read_linger_ms: int = Field(
        default=500,
        ge=0,
        le=10_000,
        description="A read that got fewer entries than it asked for waits this long and reads again, so batches "
        "that trickle in are applied together (see apply_max_predictions): one apply's tier writes cost the same "
        "for one batch or several; 0: process at once.",
    )
    block_ms: int = Field(default=1000, ge=1, description="How long a worker's read waits for new entries.")
    claim_idle_ms: int = Field(default=30_000, ge=10, description="Pending this long: a crashed consumer's.")
    max_deliveries: int = Field(default=6, ge=1, description="Deliveries before an entry is dead-lettered.")
    max_failures: int = Field(default=3, ge=1, description="Caught exceptions before dead-lettering.")
    recover_interval_s: float = Field(
        default=5.0, gt=0, description="How often a worker claims crashed consumers' work."
    )
    worker_shards: Annotated[list[int], NoDecode] = Field(
        default_factory=list, description="Queue shards this worker reads, comma separated; empty: all."
    )
    janitor_interval_s: float = Field(default=10.0, gt=0, description="How often the janitor trims the stream.")

    # --- Statistics and profiles -----------------------------------------------------------
    minute_retention_s: int = Field(default=3 * 86_400, ge=3600, description="How long minute buckets live.")
    hour_retention_s: int = Field(default=400 * 86_400, ge=86_400, description="How long hour buckets live.")
    retention_file: Path | None = Field(
        default=None,
        description="Per-tenant retention (TOML, re-read on change; tenancy/retention.py, docs/data-lifecycle.md): "
        "how long a tenant's raw text (stream entries, dead letters, per-instance state) and its minute, hour and "
        "day buckets stay, each at most the global value. Unset: every tenant keeps the global retention.",
    )
    main_metrics: dict[str, str] = Field(
        default_factory=dict, description='Per scenario main metric override, JSON: {"qa": "exact_match"}.'
    )
    references_win: bool = Field(
        default=False,
        description="A prediction with references and `correct`: score the main metric and the calibration "
        "label from the references (HELM) instead of the client's judgement.",
    )

    # --- Observability ---------------------------------------------------------------------
    metrics_address: str = Field(
        default="", description="host:port for Prometheus /metrics of this process; empty: none."
    )
    log_format: Literal["text", "json"] = Field(default="text", description="json: one JSON object per line.")
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(default="INFO", description="Log threshold.")
    otlp_eval_endpoint: str = Field(
        default="",
        description="OTLP logs collector that workers and the quality exporter send `gen_ai.evaluation.result` "
        "events to (docs/otlp.md): host:port, http:// or https:// for OTLP/gRPC; a URL with a path "
        "(http://host:4318/v1/logs) for OTLP/HTTP; empty: none are sent.",
    )
    otlp_eval_protocol: Literal["", "grpc", "http/protobuf"] = Field(
        default="",
        description="As OTEL_EXPORTER_OTLP_PROTOCOL: grpc or http/protobuf (POST <endpoint>, /v1/logs if it has no "
        "path); empty: from the endpoint (a path: http/protobuf, else grpc).",
    )
    otlp_eval_headers: str = Field(
        default="",
        description="As OTEL_EXPORTER_OTLP_HEADERS: key=value,key2=value2 (values URL-encoded), sent with every "
        "export as gRPC metadata or HTTP headers. Secret: never logged.",
        repr=False,
    )
    otlp_eval_sample_rate: float = Field(
        default=0.01,
        ge=0.0,
        le=1.0,
        description="Share of scored predictions a worker sends an event for (the same predictions on every "
        "replica and retry); profile cell changes are always sent.",
    )
    otlp_eval_queue: int = Field(
        default=10_000, ge=1, description="Events waiting to be sent at most; beyond it they are dropped, counted."
    )

    # --- Dashboard ---------------------------------------------------------------------------
    dashboard_address: str = Field(
        default="127.0.0.1:8765", description="Where `holistic dashboard` (and `holistic up`) serves the page."
    )

    # --- Per-instance state (families that join rows across batches) --------------------------
    instance_ttl_s: int = Field(
        default=2 * 86_400, ge=3600, description="Per-instance state (perturbation joins) lives TTL to TTL + 1 day."
    )
    instance_cap: int = Field(default=1_000_000, ge=1, description="Live instances per model and family.")
    compare_max_instances: int = Field(
        default=200_000,
        ge=0,
        description="Instances per model and family CompareProfiles reads to pair two models; more: no paired cells.",
    )
    deletion_tombstone_s: int = Field(
        default=7 * 86_400,
        ge=3600,
        description="How long a deleted model's tombstone lives (docs/data-lifecycle.md): no worker applies a batch "
        "of the model read before its deletion for this long; longer than any entry stays unacknowledged.",
    )
    tenant_max_models: int = Field(
        default=100_000, ge=1, description="Distinct models per tenant (ingest): each keeps its own statistics."
    )
    max_group_keys: int = Field(default=16, ge=1, description="Distinct `groups` keys per model (ingest).")
    max_group_values: int = Field(default=64, ge=1, description="Distinct values per `groups` key per model.")

    # --- Segments (docs/segments.md) ------------------------------------------------------------
    segment_keys: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="`metadata` keys, comma separated (e.g. region,app_version): each family's main metric is "
        "broken down by each key's values. At most HOLISTIC_SEGMENT_MAX_KEYS. Empty: no segments.",
    )
    segment_max_keys: int = Field(
        default=4, ge=1, le=16, description="The most HOLISTIC_SEGMENT_KEYS may name (each multiplies the statistics)."
    )
    segment_top_k: int = Field(
        default=10,
        ge=1,
        le=100,
        description="Values per segment key per model that get a cell of their own, first come first admitted; "
        "later values are counted in the key's `other` cell.",
    )
    segment_value_max_chars: int = Field(
        default=64, ge=1, le=256, description="A longer segment value is never admitted: it counts in `other`."
    )

    # --- Testing ---------------------------------------------------------------------------
    faults: str = Field(default="", description="Fault injection for crash tests; see metric_services/fault_plan.py.")

    @field_validator("families", "worker_shards", "redact_entities", "segment_keys", mode="before")
    @classmethod
    def _csv(cls, value: Any) -> Any:
        return _split_csv(value)

    @field_validator("families")
    @classmethod
    def _installed_families(cls, value: list[str]) -> list[str]:
        try:
            return registry.select(value) if value else []
        except registry.UnknownFamily as exc:
            raise ValueError(str(exc)) from None

    @field_validator("main_metrics", "tenant_quotas", "redact_patterns", mode="before")
    @classmethod
    def _json(cls, value: Any) -> Any:
        if isinstance(value, str):
            return json.loads(value) if value.strip() else {}
        return value

    @field_validator("redact_entities")
    @classmethod
    def _known_entities(cls, value: list[str]) -> list[str]:
        unknown = sorted(set(value) - set(REDACT_ENTITIES))
        if unknown:
            raise ValueError(f"unknown entities {unknown}; known: {', '.join(REDACT_ENTITIES)}")
        return value

    @field_validator("redact_patterns")
    @classmethod
    def _compiles(cls, value: dict[str, str]) -> dict[str, str]:
        for name, pattern in value.items():
            if not name.strip():
                raise ValueError("a pattern needs a name")
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"pattern {name!r} is not a valid regex: {exc}") from None
        return value

    @field_validator("redact_format")
    @classmethod
    def _formats(cls, value: str) -> str:
        try:
            value.format(entity="EMAIL_ADDRESS")
        except (KeyError, IndexError, ValueError) as exc:
            raise ValueError(f"{value!r} must name only {{entity}}: {exc}") from None
        return value

    @field_validator("segment_keys")
    @classmethod
    def _segment_names(cls, value: list[str]) -> list[str]:
        bad = [k for k in value if not SEGMENT_KEY.fullmatch(k)]
        if bad:
            raise ValueError(f"keys {bad} are not names of 1 to 64 letters, digits, '_', '-' or '.'")
        return list(dict.fromkeys(value))

    @model_validator(mode="after")
    def _pairs(self) -> Settings:
        if len(self.segment_keys) > self.segment_max_keys:
            raise ValueError(
                f"HOLISTIC_SEGMENT_KEYS names {len(self.segment_keys)} keys; at most {self.segment_max_keys} "
                "(HOLISTIC_SEGMENT_MAX_KEYS): each key multiplies every family's statistics"
            )
        bad = [n for n in self.worker_shards if not 0 <= n < self.queue_shards]
        if bad:
            raise ValueError(f"HOLISTIC_WORKER_SHARDS {bad}: shards are 0..{self.queue_shards - 1}")
        if (self.tls_cert is None) != (self.tls_key is None):
            raise ValueError("HOLISTIC_TLS_CERT and HOLISTIC_TLS_KEY go together")
        otlp_export.parse_headers(self.otlp_eval_headers)
        if self.otlp_eval_endpoint:
            otlp_export.resolve(self.otlp_eval_endpoint, self.otlp_eval_protocol)
        if self.tls_client_ca is not None and self.tls_cert is None:
            raise ValueError("HOLISTIC_TLS_CLIENT_CA (mutual TLS) needs HOLISTIC_TLS_CERT and HOLISTIC_TLS_KEY")
        for tenant, quota in self.tenant_quotas.items():
            unknown = set(quota) - {"predictions_per_s", "backlog_share"}
            if unknown:
                raise ValueError(f"HOLISTIC_TENANT_QUOTAS[{tenant!r}]: unknown keys {sorted(unknown)}")
        return self

    def deployed_families(self) -> list[str]:
        """The families `holistic up` runs: HOLISTIC_FAMILIES, else every installed one."""
        return self.families or registry.installed()

    def predictions_per_s_for(self, tenant: str) -> int:
        return int(self.tenant_quotas.get(tenant, {}).get("predictions_per_s", self.tenant_predictions_per_s))

    def backlog_share_for(self, tenant: str) -> float:
        return float(self.tenant_quotas.get(tenant, {}).get("backlog_share", self.tenant_backlog_share))


def load_settings(**overrides: Any) -> Settings:
    """Build settings from the environment; raise ConfigError naming each bad variable."""
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            if err["loc"]:
                name = "HOLISTIC_" + "_".join(str(p) for p in err["loc"]).upper()
                problems.append(f"{name}: {err['msg']}")
            else:
                problems.append(err["msg"].removeprefix("Value error, "))
        raise ConfigError("invalid settings:\n  " + "\n  ".join(problems)) from exc


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return load_settings()
