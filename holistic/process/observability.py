"""Prometheus metrics of every process, structured logs, and W3C trace context.

Each process serves its own /metrics (HOLISTIC_METRICS_ADDRESS); the metric names below are the
whole catalogue, so dashboards and alerts have one place to look. Logs are text or JSON lines
(HOLISTIC_LOG_FORMAT=json) and carry batch_id, model, family and traceparent where they apply, so a
batch can be followed from the gateway through the queue to every family that applied it.
"""

from __future__ import annotations

import logging
import re
import secrets
import sys

from prometheus_client import Counter, Gauge, Histogram, start_http_server
from pythonjsonlogger.json import JsonFormatter

from holistic.errors import ConfigError

# --- gateway ---------------------------------------------------------------------------------
PREDICTIONS = Counter(
    "holistic_gateway_predictions",
    "Predictions in SubmitPredictions calls, by outcome (accepted, duplicate, rejected) and reason; a batch "
    "refused for the backlog is refused before it is parsed, so only holistic_gateway_batches counts it.",
    ["outcome", "reason"],
)
BATCHES = Counter("holistic_gateway_batches", "SubmitPredictions calls, by outcome and reason.", ["outcome", "reason"])
RPC_SECONDS = Histogram("holistic_gateway_rpc_seconds", "Time to answer an RPC.", ["method"])
READS_REFUSED = Counter(
    "holistic_gateway_reads_refused", "Profile reads and watches refused over a limit, by limit.", ["limit"]
)
WATCHES_OPEN = Gauge("holistic_gateway_watches_open", "Open WatchProfile streams in this process.")
REDIS_UP = Gauge("holistic_redis_up", "1 while the last Redis check of this process succeeded.")
BACKLOG = Gauge("holistic_family_backlog_batches", "Undelivered plus unacknowledged batches per family.", ["family"])
BACKLOG_CAP = Gauge(
    "holistic_family_backlog_cap_batches",
    "HOLISTIC_BACKLOG_MAX_BATCHES: at this backlog the gateway answers RESOURCE_EXHAUSTED.",
)
LAG = Gauge("holistic_family_lag_batches", "Batches not yet delivered to the family's group.", ["family"])
PENDING = Gauge("holistic_family_pending_batches", "Batches delivered but not yet acknowledged.", ["family"])
DEAD_LETTERS = Gauge("holistic_dead_letters", "Entries in the dead-letter stream.")
AOF_WAIT_SECONDS = Histogram(
    "holistic_gateway_aof_wait_seconds",
    "Time an answer waited for Redis to write its batch to the AOF file (durability everysec).",
    buckets=(0.0002, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)
AOF_ENABLED = Gauge("holistic_redis_aof_enabled", "1 when Redis runs with the AOF (appendonly yes).")
AOF_DELAYED_FSYNC = Gauge(
    "holistic_redis_aof_delayed_fsync",
    "Redis's count of AOF fsyncs that stalled 2 s or more since it started (INFO persistence); a rise means "
    "the disk is not keeping up and everysec can lose acknowledged batches on a Redis kill.",
)

# --- workers ---------------------------------------------------------------------------------
APPLIED = Counter("holistic_worker_batches_applied", "Batches applied by this worker.", ["family"])
APPLIED_PREDICTIONS = Counter("holistic_worker_predictions_applied", "Predictions applied.", ["family"])
SKIPPED = Counter(
    "holistic_worker_batches_skipped", "Batches skipped (applied before, or not for the family).", ["family"]
)
CLAIMED = Counter("holistic_worker_batches_claimed", "Entries claimed from crashed consumers.", ["family"])
DEAD_LETTERED = Counter("holistic_worker_dead_lettered", "Entries this worker moved to the dead letters.", ["family"])
COMPUTE_SECONDS = Histogram(
    "holistic_worker_compute_seconds",
    "Time to compute one batch's partial statistics (model inference included).",
    ["family"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
APPLY_SECONDS = Histogram(
    "holistic_worker_apply_seconds",
    "Time of one read's apply round trip to Redis (the Lua merge of its batches).",
    ["family"],
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1),
)

TRACEPARENT = re.compile(r"00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})")


def serve_metrics(address: str) -> None:
    """Start /metrics on host:port in a background thread (no-op for an empty address)."""
    if not address:
        return
    host, _, port = address.rpartition(":")
    try:
        start_http_server(int(port), addr=host or "0.0.0.0")
    except (OSError, ValueError) as exc:
        raise ConfigError(f"HOLISTIC_METRICS_ADDRESS {address!r}: {exc}") from exc
    logging.getLogger("holistic").info("Prometheus metrics on http://%s/metrics", address)


def setup_logging(fmt: str = "text", level: str = "INFO") -> None:
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(
            JsonFormatter(
                "%(asctime)s %(levelname)s %(name)s %(process)d %(message)s",
                rename_fields={"asctime": "time", "levelname": "level", "name": "logger", "process": "pid"},
            )
        )
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s pid=%(process)d %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)


def new_traceparent() -> str:
    """A fresh W3C trace context for a batch whose client sent none."""
    return f"00-{secrets.token_hex(16)}-{secrets.token_hex(8)}-01"


def valid_traceparent(value: str) -> bool:
    m = TRACEPARENT.fullmatch(value)
    return bool(m) and m[1] != "0" * 32 and m[2] != "0" * 16  # type: ignore[index]
