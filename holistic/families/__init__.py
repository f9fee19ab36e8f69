"""What a metric family is: a declaration, a pure `batch -> partial stats` and a pure `stats -> metrics` fold.

A family declares itself in one place (its class): name, version, its metrics' metadata, the radar
axis it provides, the main metrics it can provide for a scenario's accuracy, and its own settings
under its own environment prefix. The core never names a family: it finds them through the
`holistic.families` entry points (holistic/families/registry.py) and reads these declarations.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, Self, runtime_checkable

from pydantic import ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from holistic.errors import ConfigError
from holistic.stats.mergeable import Folded, Stats

if TYPE_CHECKING:
    from holistic.queue.v1.envelope_pb2 import BatchEnvelope
    from holistic.settings import Settings
    from holistic.stats.instance_state import Cells
    from holistic.stats.instances import InstanceSpec, Row
    from holistic.v1.profile_pb2 import Dimension, FamilyReport, GroupBreakdown, Metric, MetricSignature


@dataclass(frozen=True)
class MetricMetadata:
    """How any front end renders one metric (HELM's MetricMetadata). `*` in `name` stands for any text,
    so one declaration covers a metric's variants (e.g. `group[*`, `*_worst`)."""

    name: str
    display_name: str
    description: str
    unit: str = ""
    lower_is_better: bool = False


@dataclass(frozen=True)
class Axis:
    """The radar axis a family scores. `kind` is the DimensionKind of HELM's seven axes; a plugin's
    own axis leaves it 0 and is known by `name`. Axes are drawn in `order`, then by name."""

    name: str
    definition: str
    kind: int = 0
    order: int = 100


class FamilyConfig(BaseSettings):
    """A family's own settings; a subclass sets `env_prefix` (e.g. HOLISTIC_TOXICITY_)."""

    model_config = SettingsConfigDict(extra="ignore", frozen=True, populate_by_name=True, env_ignore_empty=True)


def load_config(cls: type[FamilyConfig], **overrides: Any) -> FamilyConfig:
    """Build a family's settings from the environment; ConfigError names each bad variable."""
    try:
        return cls(**overrides)
    except ValidationError as exc:
        prefix = str(cls.model_config.get("env_prefix", ""))
        problems = [f"{prefix}{'_'.join(str(p) for p in e['loc']).upper()}: {e['msg']}" for e in exc.errors()]
        raise ConfigError(f"invalid {cls.__name__}:\n  " + "\n  ".join(problems)) from exc


@dataclass
class ScenarioAccuracy:
    """A family's candidate for a scenario's accuracy; the profile keeps the one from its main metric."""

    metric: Metric  # named "accuracy", with its count and interval
    source: str  # the metric it was computed from ("exact_match", "rouge_2", "client_judged", ...)
    variance: float  # of the mean, for the interval of the mean over scenarios
    # How many predictions were scored by each source ("references", "client"): the profile shows
    # the chosen candidate's as accuracy_source_<source> in the scenario's metrics.
    sources: dict[str, int] = field(default_factory=dict)


@dataclass
class ScenarioPart:
    """What one family says about one scenario."""

    metrics: list[Metric] = field(default_factory=list)
    count: int = 0
    task: int = 0
    main_metric: str = ""
    accuracy: ScenarioAccuracy | None = None


@dataclass
class FamilyFold:
    report: FamilyReport
    scenarios: dict[str, ScenarioPart] = field(default_factory=dict)
    dimensions: list[Dimension] = field(default_factory=list)
    groups: list[GroupBreakdown] = field(default_factory=list)
    # Options the fold itself applied (where the profile is folded, not in the workers), added to the
    # report's signature, e.g. fairness's minimum group size.
    fold_options: dict[str, str] = field(default_factory=dict)


@dataclass
class Partial:
    """compute's richer result, for a family with per-instance state (holistic/stats/instances.py): the
    batch's ordinary statistics by minute, and its rows for the instances of `spec`."""

    by_minute: dict[int, Stats]
    spec: InstanceSpec
    rows: list[Row] = field(default_factory=list)
    # instance -> its segment cells; the runner's (holistic/stats/segments.py) to fill, never a family's
    cells: dict[str, Cells] = field(default_factory=dict)

    def join(self, other: Partial) -> None:
        """other's rows and cells added to this one's (parts of a batch, or batches applied together)."""
        from holistic.stats.instance_state import join_cells

        self.rows.extend(other.rows)
        for instance, cells in other.cells.items():
            join_cells(self.cells.setdefault(instance, {}), cells)


def as_partial(result: dict[int, Stats] | Partial) -> tuple[dict[int, Stats], Partial | None]:
    if isinstance(result, Partial):
        return result.by_minute, result
    return result, None


def one_pass(family: Family, envelope: BatchEnvelope, settings: Settings) -> Stats:
    """A family's statistics of a whole stream at once, all time: the reference that any batching,
    order and replica count must reproduce (tests, benchmarks)."""
    from holistic.stats.instances import aggregate, fold_rows

    by_minute, partial = as_partial(family.compute(envelope, settings))
    total = Stats()
    for st in by_minute.values():
        total.merge(st)
    if partial is not None:
        for st in aggregate(partial.spec, fold_rows(partial.spec, partial.rows)).values():
            total.merge(st)
    return total


@runtime_checkable
class Family(Protocol):
    """What the worker runner, the registry and the profile fold rely on (FamilyBase implements
    the declarations' plumbing)."""

    name: str
    version: str
    metrics: tuple[MetricMetadata, ...]
    axis: Axis | None
    main_metrics: tuple[str, ...]

    def prepare(self, settings: Settings) -> None:
        """Load models and check the configuration before the worker reads anything."""
        ...

    def compute(self, envelope: BatchEnvelope, settings: Settings) -> dict[int, Stats] | Partial:
        """Partial statistics of one batch, keyed by the epoch minute of each prediction (and its
        instance rows, for families with per-instance state)."""
        ...

    def fold(self, stats: Folded, model: str, settings: Settings) -> FamilyFold:
        """Metrics, per-scenario parts and radar dimensions from merged statistics."""
        ...

    def signature(self, model: str, settings: Settings) -> MetricSignature:
        """How this worker computes, for `model`: recorded with every batch it applies."""
        ...

    # Optional: `exported_metrics: tuple[str, ...]`, the metrics `holistic quality-exporter` exports by
    # default (exported_metrics() below falls back to the main metrics, then every declared name).
    # Optional: `describe_axis(signature) -> str`, appended to the family's dimension definitions once the
    # profile knows the signature its workers recorded (toxicity names the classifier's label).
    # Optional: `share(memo: holistic.families.shared_memo.SharedMemo) -> None`, called by a worker after `prepare`
    # with a memo bound to the family's name: values its replicas compute once between them.
    # Optional: `prediction_scores(prediction, settings) -> list[holistic.process.evaluation_events.Score]`, one
    # prediction's own values (its main metric, say), or a Score with no value and `error_type` when it could
    # not score one it was asked to: what a worker sends as gen_ai.evaluation.result events when
    # HOLISTIC_OTLP_EVAL_ENDPOINT is set (docs/otlp.md).
    # Optional: `paired_direction(slot: str) -> int`, for a family with per-instance state: whether a higher
    # mean of the slot's values over shared instances is better (+1), worse (-1), or neither (0, the
    # default). CompareProfiles's paired cells "<family>/paired:<slot>" are then BETTER or WORSE, and a gate
    # can fail on them (paired_direction() below reads it).


class FamilyBase:
    """The declarations' plumbing: subclasses set the class attributes and write compute, fold and
    signature. `config` is the family's own settings, read from its environment prefix on first use;
    `configured(...)` is a copy with some of them overridden (tests, embedding)."""

    name: ClassVar[str]
    version: ClassVar[str]
    Config: ClassVar[type[FamilyConfig]] = FamilyConfig
    metrics: ClassVar[tuple[MetricMetadata, ...]] = ()
    axis: ClassVar[Axis | None] = None
    main_metrics: ClassVar[tuple[str, ...]] = ()
    # The metrics the quality exporter exports unless HOLISTIC_QUALITY_METRICS says otherwise; empty:
    # see exported_metrics().
    exported_metrics: ClassVar[tuple[str, ...]] = ()
    # False: its scores never depend on predictions' text, so the gateway's PII redaction cannot change
    # them and its signature does not record it
    reads_text: ClassVar[bool] = True
    # True: every metric is a share or a mean over predictions, so a uniform sample estimates it and
    # HOLISTIC_<NAME>_SAMPLE_RATE may be below 1 (holistic/families/sampling.py); totals and extremes are not
    samples: ClassVar[bool] = False

    def __init__(self, config: FamilyConfig | None = None) -> None:
        self._config = config

    @property
    def config(self) -> Any:
        if self._config is None:
            self._config = load_config(self.Config)
        return self._config

    def configured(self, **overrides: Any) -> Self:
        return type(self)(load_config(self.Config, **overrides))

    def prepare(self, settings: Settings) -> None:
        self.config  # noqa: B018  (a bad variable stops the worker at start, naming it)


def exported_metrics(family: Family) -> tuple[str, ...]:
    """The metrics a family exports to Prometheus by default: its declared `exported_metrics`, else its
    main metrics, else every metric it declares by a plain name (a `*` pattern names no one series)."""
    declared = tuple(getattr(family, "exported_metrics", ()))
    return declared or family.main_metrics or tuple(md.name for md in family.metrics if "*" not in md.name)


def paired_direction(family: Family, slot: str) -> int:
    """The family's declared direction of a per-instance slot (+1 higher is better, -1 lower is better);
    0, no better or worse, where it declares none (a plugin without `paired_direction`) or answers
    anything else."""
    declared = getattr(family, "paired_direction", None)
    if declared is None:
        return 0
    answer = declared(slot)
    return answer if answer in (-1, 0, 1) and not isinstance(answer, bool) else 0


def metadata_for(family: Family, metric: str) -> MetricMetadata | None:
    """The family's declaration for `metric`: an exact name first, then the longest matching pattern
    (`*` stands for any text)."""
    best: MetricMetadata | None = None
    for md in family.metrics:
        if md.name == metric:
            return md
        if "*" in md.name and _pattern(md.name).fullmatch(metric) and (best is None or len(md.name) > len(best.name)):
            best = md
    return best


@cache
def _pattern(name: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in name.split("*")), re.DOTALL)


def prediction_minute(seconds: int, nanos: int, fallback_s: float) -> int:
    """Epoch minute a prediction is bucketed in: produced_at, else the batch's accept time."""
    if seconds or nanos:
        return int(seconds // 60)
    return int(fallback_s // 60)
