"""`holistic quality-exporter`: profile quality on a Prometheus /metrics endpoint.

It folds profiles with the gateway's own ProfileReader (same Redis, same settings, so the numbers
are the ones GetProfile returns), for the models and windows a team picks, every
HOLISTIC_QUALITY_REFRESH_S, off the scrape path: a scrape returns the last snapshot. Each window
also gets the window of equal length just before it (period="previous"), which is what the
"significantly worse than the previous window" alert compares against. The series are bounded by
the settings: models (≤ HOLISTIC_QUALITY_MAX_MODELS) × windows × 2 periods × (axes × 4 +
the picked metrics × 4 + segment cells × 4 + 1), segment cells at most families × HOLISTIC_SEGMENT_MAX_KEYS ×
(HOLISTIC_SEGMENT_TOP_K + 1), plus the evidence series: axes per model with floors, axes per pinned pair of
HOLISTIC_QUALITY_BASELINES; per model, its scenarios × HOLISTIC_QUALITY_METRIC_FLOORS' metrics, and per pinned
pair, the scenarios whose main metric both models have (gateway/metric_evidence.py); per model, its floored
segment cells, and per pinned pair, the named cells both have (at most the segment cells above,
gateway/segment_evidence.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import time
from collections.abc import Iterator
from typing import Annotated, Any

from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest
from prometheus_client.core import Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from pydantic import Field, ValidationError, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from gateway.evaluation_cells import CellKey, cell_record, changed, profile_cells
from gateway.profiles import ProfileReader, WindowSpec
from gateway.quality import QualitySeries, floor_family
from holistic.errors import ConfigError, NotFound
from holistic.process import evaluation_events
from holistic.redis.connection import RETRYABLE, async_client
from holistic.settings import SEGMENT_KEY, Settings
from holistic.tenancy.tenants import DEFAULT_TENANT, SEPARATOR
from holistic.v1 import profile_pb2 as pp

log = logging.getLogger("holistic.quality")

WINDOW_PRESETS = {
    "15m": pp.WINDOW_PRESET_LAST_15_MINUTES,
    "1h": pp.WINDOW_PRESET_LAST_HOUR,
    "24h": pp.WINDOW_PRESET_LAST_DAY,
    "7d": pp.WINDOW_PRESET_LAST_WEEK,
    "all": pp.WINDOW_PRESET_ALL_TIME,
}
DEFAULT_FLOORS = {
    "accuracy": 0.5, "calibration": 0.8, "robustness": 0.5, "fairness": 0.5,
    "bias": 0.5, "toxicity": 0.95, "efficiency": 0.9,
}  # fmt: skip
# a segment cell's floor: `family/metric[key=value]`, the key a HOLISTIC_SEGMENT_KEYS name, the value any
_CELL = re.compile(rf"[^/\[\]\s]+/[^/\[\]\s]+\[{SEGMENT_KEY.pattern}=.+\]")


def _csv(value: Any) -> Any:
    return [v.strip() for v in value.split(",") if v.strip()] if isinstance(value, str) else value


class QualitySettings(BaseSettings):
    """The exporter's own settings (HOLISTIC_QUALITY_*); Redis and the fold use the main Settings."""

    model_config = SettingsConfigDict(env_prefix="HOLISTIC_QUALITY_", extra="ignore", frozen=True)

    models: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: ["*"],
        description="Models, comma separated: `model` (default tenant), `tenant|model`, `*` or `tenant|*`.",
    )
    max_models: int = Field(default=20, ge=1, le=1000, description="Models exported at most (sorted; rest counted).")
    windows: Annotated[list[str], NoDecode] = Field(default_factory=lambda: ["1h", "24h"])
    previous: bool = Field(default=True, description="Also export the window just before each (period=previous).")
    metrics: dict[str, list[str]] | None = Field(
        default=None, description="Per family, the metrics to export; unset: each family's exported_metrics."
    )
    axis_floors: dict[str, float] = Field(default_factory=lambda: dict(DEFAULT_FLOORS))
    metric_floors: Annotated[dict[str, float], NoDecode] = Field(
        default_factory=dict,
        description='Floors of scenario metrics, JSON: `{"exact_match": 0.7}` (in every scenario and segment '
        'cell) or `{"qa/exact_match": 0.7}` (one scenario; it wins) or `{"toxicity/toxic_frac[region=eu]": 0.1}` '
        "(one segment cell, `[region=(other)]` the other; it wins); a lower-is-better metric's is its ceiling "
        '(`{"toxic_frac": 0.1}`). Per floored metric and scenario or segment cell, the evidence that its all-time '
        "value is worse; shares and declared main metrics only (docs/prometheus.md).",
    )
    baselines: Annotated[list[tuple[str, str, str]], NoDecode] = Field(
        default_factory=list,
        description="Pinned baselines, comma separated: `model=baseline` or `tenant|model=baseline` (the baseline in "
        "the model's tenant). Per pair and axis, per scenario main metric both have and per segment value both "
        "have a cell for, the evidence that the model's all-time value is below the baseline's.",
    )
    refresh_s: float = Field(default=15.0, gt=0, description="Seconds between two snapshots.")
    address: str = Field(default="127.0.0.1:9465", description="host:port of /metrics.")

    @field_validator("models", "windows", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        return _csv(value)

    @field_validator("baselines", mode="before")
    @classmethod
    def _pairs(cls, value: Any) -> Any:
        """`[tenant|]model=baseline` entries into (tenant, model, baseline)."""
        if not isinstance(value, str):
            return value
        pairs = []
        for entry in _csv(value):
            model, eq, baseline = (part.strip() for part in entry.partition("="))
            tenant, sep, model = model.rpartition(SEPARATOR)
            if not eq or not model or not baseline or "=" in baseline or SEPARATOR in baseline:
                raise ValueError(f"{entry!r} is not `model=baseline` or `tenant|model=baseline`")
            if model == baseline:
                raise ValueError(f"{entry!r}: a model is its own baseline")
            pairs.append((tenant if sep else DEFAULT_TENANT, model, baseline))
        if len(set(pairs)) != len(pairs) or len({p[:2] for p in pairs}) != len(pairs):
            raise ValueError("a model has one baseline")
        return pairs

    @field_validator("metrics", "axis_floors", mode="before")
    @classmethod
    def _json(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, str) and not value.strip():
            return None if info.field_name == "metrics" else {}
        return json.loads(value) if isinstance(value, str) else value

    @field_validator("windows")
    @classmethod
    def _known_windows(cls, value: list[str]) -> list[str]:
        unknown = [w for w in value if w not in WINDOW_PRESETS]
        if unknown or not value:
            raise ValueError(f"unknown windows {unknown}; use some of {list(WINDOW_PRESETS)}")
        return list(dict.fromkeys(value))

    @field_validator("axis_floors")
    @classmethod
    def _named_axes(cls, value: dict[str, float]) -> dict[str, float]:
        """Any axis a profile can carry, a plugin family's included: the name is the series' axis label."""
        if any(not axis.strip() for axis in value):
            raise ValueError("an axis floor needs an axis name")
        if any(not 0 <= f <= 1 for f in value.values()):
            raise ValueError("axis floors are scores in [0, 1]")
        return value

    @field_validator("metric_floors", mode="before")
    @classmethod
    def _named_metrics(cls, value: Any) -> Any:
        """A JSON object of `metric`, `scenario/metric` (any name a profile's scenario carries, a plugin
        family's included) or `family/metric[key=value]` (a segment cell) to a number in [0, 1]; each bad
        entry named."""
        if isinstance(value, str):
            try:
                value = json.loads(value) if value.strip() else {}
            except json.JSONDecodeError as exc:
                raise ValueError(f"not a JSON object ({exc})") from None
        if not isinstance(value, dict):
            raise ValueError('a JSON object, e.g. {"exact_match": 0.7, "qa/f1_score": 0.5}')
        for name, floor in value.items():
            scenario, slash, metric = str(name).rpartition("/")
            parts = [scenario, metric] if slash else [metric]
            if str(name).endswith("]"):  # a segment cell's
                malformed = not _CELL.fullmatch(str(name))
            else:
                malformed = any(not p or p != p.strip() for p in parts)
            if malformed:
                raise ValueError(f"{name!r} is not `metric`, `scenario/metric` or `family/metric[key=value]`")
            if isinstance(floor, bool) or not isinstance(floor, int | float) or not 0 <= floor <= 1:
                raise ValueError(f"{name!r}: {floor!r} is not a number in [0, 1] (metric floors are scores)")
        return value


def load_quality_settings(**overrides: Any) -> QualitySettings:
    try:
        return QualitySettings(**overrides)
    except ValidationError as exc:
        problems = [f"HOLISTIC_QUALITY_{'_'.join(map(str, e['loc'])).upper()}: {e['msg']}" for e in exc.errors()]
        raise ConfigError("invalid settings:\n  " + "\n  ".join(problems)) from exc


class QualityExporter:
    """Refreshes a snapshot of quality series; serves it with its own health series on /metrics."""

    def __init__(self, settings: Settings, quality: QualitySettings) -> None:
        self.settings = settings
        self.quality = quality
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self)  # type: ignore[arg-type]
        self.refreshed = Gauge(
            "holistic_quality_refresh_timestamp_seconds", "When the last snapshot finished.", registry=self.registry
        )
        self.refresh_seconds = Gauge(
            "holistic_quality_refresh_seconds", "How long the last snapshot took.", registry=self.registry
        )
        self.errors = Counter(
            "holistic_quality_refresh_errors", "Snapshots that failed (Redis unreachable).", registry=self.registry
        )
        self.left_out = Gauge(
            "holistic_quality_models_left_out",
            "Models matched by HOLISTIC_QUALITY_MODELS beyond HOLISTIC_QUALITY_MAX_MODELS.",
            registry=self.registry,
        )
        self.snapshot: list[Metric] = []
        # gen_ai.evaluation.result per changed cell (gateway/evaluation_cells.py), when HOLISTIC_OTLP_EVAL_ENDPOINT
        self.evaluations = evaluation_events.sender(settings, "holistic-quality-exporter")
        self.cells: dict[CellKey, Any] = {}
        self.port = 0
        self._stopping = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._runner: web.AppRunner | None = None

    def collect(self) -> Iterator[Metric]:
        """prometheus_client's collector protocol: the last snapshot, then the floors."""
        yield from self.snapshot
        yield floor_family(self.quality.axis_floors)

    async def models(self) -> list[tuple[str, str]]:
        """(tenant, model) pairs picked by HOLISTIC_QUALITY_MODELS, sorted, capped. A tenant's "*" reads only
        the first `cap` names of its model index (no more can be among the first `cap` pairs) and counts
        the rest as left out; it covers that tenant's named entries."""
        entries = [entry.rpartition(SEPARATOR) for entry in self.quality.models]
        pairs = {(tenant if sep else DEFAULT_TENANT, model) for tenant, sep, model in entries}
        everything = {tenant for tenant, model in pairs if model == "*"}
        picked = {(t, m) for t, m in pairs if t not in everything}
        cap, beyond = self.quality.max_models, 0
        for tenant in sorted(everything):
            names, total = await self.reader.first_models(tenant, cap)
            picked.update((tenant, name) for name in names)
            beyond += total - len(names)
        ordered = sorted(picked)
        self.left_out.set(max(len(ordered) - cap, 0) + beyond)
        return ordered[:cap]

    async def refresh(self) -> None:
        started = time.monotonic()
        series = QualitySeries()
        cells: dict[CellKey, Any] = {}
        try:
            for tenant, model in await self.models():
                for window in self.quality.windows:
                    await self._add_model(series, tenant, model, window, cells)
                if self.quality.axis_floors or self.quality.metric_floors:
                    await self._add_evidence(series, tenant, model)
            for tenant, model, baseline in self.quality.baselines:
                await self._add_baseline_evidence(series, tenant, model, baseline)
        except RETRYABLE:
            self.errors.inc()
            raise
        self.snapshot = series.families()
        if self.evaluations is not None:
            for key in changed(self.cells, cells):
                self.evaluations.offer(cell_record(key, cells[key], self.quality.axis_floors))
        self.cells = cells
        self.refresh_seconds.set(time.monotonic() - started)
        self.refreshed.set(time.time())

    async def _add_model(
        self, series: QualitySeries, tenant: str, model: str, window: str, cells: dict[CellKey, Any]
    ) -> None:
        try:
            current = await self.reader.profile(model, WindowSpec(WINDOW_PRESETS[window]), tenant)
        except NotFound:
            return  # picked by name but never sent: nothing to say yet
        series.add_profile(current, tenant, window, "current", self.quality.metrics)
        cells.update(profile_cells(current, tenant, window, self.quality.metrics))
        span = _previous_span(current.window)
        if self.quality.previous and span is not None:
            before = await self.reader.profile(model, WindowSpec(pp.WINDOW_PRESET_UNSPECIFIED, *span), tenant)
            series.add_profile(before, tenant, window, "previous", self.quality.metrics)

    async def _add_evidence(self, series: QualitySeries, tenant: str, model: str) -> None:
        """The sequential evidence reads the all-time profile: anytime-valid only over the whole stream."""
        try:
            everything = await self.reader.profile(model, WindowSpec(WINDOW_PRESETS["all"]), tenant)
        except NotFound:
            return
        series.add_evidence(everything, tenant, self.quality.axis_floors)
        series.add_metric_evidence(everything, tenant, self.quality.metric_floors)
        series.add_segment_evidence(everything, tenant, self.quality.metric_floors)

    async def _add_baseline_evidence(self, series: QualitySeries, tenant: str, model: str, baseline: str) -> None:
        """Both all-time profiles: the model's, and its pinned baseline's (frozen or still serving)."""
        try:
            current = await self.reader.profile(model, WindowSpec(WINDOW_PRESETS["all"]), tenant)
            pinned = await self.reader.profile(baseline, WindowSpec(WINDOW_PRESETS["all"]), tenant)
        except NotFound:
            return  # one of the two has sent nothing yet: nothing to compare
        series.add_baseline_evidence(current, pinned, tenant)
        series.add_metric_baseline_evidence(current, pinned, tenant)
        series.add_segment_baseline_evidence(current, pinned, tenant)

    async def _refresh_forever(self) -> None:
        """Refresh every refresh_s until stopped; stopping waits for a refresh in flight, never cancels it
        (redis-py may swallow a cancellation and leave the loop asleep)."""
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), self.quality.refresh_s)
                return
            try:
                await self.refresh()
            except RETRYABLE as exc:
                log.warning("quality snapshot failed: redis unreachable (%s)", exc)
            except Exception:
                log.exception("quality snapshot failed")

    async def _metrics(self, request: web.Request) -> web.Response:
        return web.Response(body=generate_latest(self.registry), headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def start(self, address: str | None = None) -> int:
        self.r = async_client(self.settings)
        self.reader = ProfileReader(self.r, self.settings)
        with contextlib.suppress(*RETRYABLE):
            await self.refresh()  # a first snapshot before the first scrape, when Redis is there
        self._task = asyncio.create_task(self._refresh_forever(), name="quality-exporter")
        app = web.Application()
        app.router.add_get("/metrics", self._metrics)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        host, _, port = (address or self.quality.address).rpartition(":")
        site = web.TCPSite(self._runner, host or "0.0.0.0", int(port))
        await site.start()
        self.port = int(self._runner.addresses[0][1])
        log.info("quality series on http://%s:%d/metrics", host or "0.0.0.0", self.port)
        return self.port

    async def stop(self) -> None:
        self._stopping.set()
        if self._task is not None:
            await self._task
        if self._runner is not None:
            await self._runner.cleanup()
        if self.evaluations is not None:
            await asyncio.to_thread(self.evaluations.close)
        await self.r.aclose()


def _previous_span(window: pp.Window) -> tuple[float, float] | None:
    """The resolved window's range shifted back by its own length; None for all time."""
    if not window.HasField("range"):
        return None
    start, end = window.range.start_time.seconds, window.range.end_time.seconds
    return (float(start - (end - start)), float(start))


async def serve(settings: Settings, quality: QualitySettings, address: str | None = None) -> None:
    import signal

    exporter = QualityExporter(settings, quality)
    await exporter.start(address)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await exporter.stop()
