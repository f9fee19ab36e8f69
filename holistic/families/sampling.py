"""Scoring a sample: a family whose scores cost a classifier pass per prediction may score a share.

`HOLISTIC_<FAMILY>_SAMPLE_RATE` (in (0, 1], default 1: every prediction) sets the share for one family.
Which predictions are in the sample is decided from the prediction alone: a 64-bit hash of
(model, scenario, instance id), where the instance id is a perturbed row's `original_id`, else its
own `id`. So every replica, every retry and every restart picks the same predictions, an original
and its perturbed variants stay together (robustness, fairness and bias pair them), and the
families sampled at the same rate score the same instances.

The estimate. Each prediction is in the sample with probability r, independently of its scores
(Poisson sampling, which the hash emulates). Horvitz–Thompson weights every sampled prediction
1/r; a family's metrics are ratios of sums over predictions (a share, a mean), and with one r in a
family the weights cancel: the weighted (Hájek) ratio is the ratio over the sample. Its interval is
the one each metric already computes from the sample's own count and moments: the sampling is the
randomness it accounts for (without the finite-population correction √(1 − r), so at worst a
little wide). A family declares `samples = True` only when all of its metrics are such ratios; a
rate below 1 for another family (efficiency's throughput is a total) stops its worker, naming the
variable. The rate is an option of the family's signature ("sample_rate"), so a profile says which
share its numbers come from, and windows before and after a change show each configuration's share.

Per scenario. `HOLISTIC_<FAMILY>_SCENARIO_SAMPLE_RATES="scen_a=0.05,scen_b=1"` gives some scenarios
their own rate (the others keep the family's). Then one family's ratio pools predictions sampled at
different rates, and the weights no longer cancel: the worker computes each rate's predictions apart
and stores the statistics of a scenario whose rate differs from the family's under the rate's own
prefix (`group_field`), and the fold folds each rate group alone and combines them (holistic/
stratified.py): Horvitz–Thompson, each sampled prediction weighing 1/rate. Every scenario's rate is in
the signature ("scenario_sample_rates").
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated

from pydantic import Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from holistic.errors import ConfigError
from holistic.families import Family, Partial, as_partial
from holistic.queue.v1.envelope_pb2 import BatchEnvelope
from holistic.settings import Settings
from holistic.stats.mergeable import Folded, Stats
from holistic.v1 import prediction_pb2 as pb

SIGNATURE_OPTION = "sample_rate"
SCENARIO_OPTION = "scenario_sample_rates"
GROUP_PREFIX = "#rate|"  # "#rate|<rate>|<field>": a field of the predictions sampled at <rate>
_SCALE = float(1 << 64)

Rate = Annotated[float, Field(gt=0.0, le=1.0)]  # a share: 0 would score nothing


def variable(family: str) -> str:
    """The environment variable of a family's rate."""
    return f"HOLISTIC_{family.upper()}_SAMPLE_RATE"


def instance_id(p: pb.Prediction) -> str:
    """What a sample keeps or drops as one: an original with its perturbed variants."""
    return p.perturbation.original_id or p.id


def position(model: str, scenario: str, instance: str) -> float:
    """Where an instance falls in [0, 1): the first 8 bytes of blake2b over its length-prefixed parts."""
    text = "".join(f"{len(part)}:{part}" for part in (model, scenario, instance))
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big") / _SCALE


def scenario_variable(family: str) -> str:
    """The environment variable of a family's per-scenario rates."""
    return f"HOLISTIC_{family.upper()}_SCENARIO_SAMPLE_RATES"


@dataclass(frozen=True)
class Rates:
    """A family's rate, and the scenarios that have their own."""

    family: float = 1.0
    scenarios: Mapping[str, float] = field(default_factory=dict)

    def of(self, scenario: str) -> float:
        return self.scenarios.get(scenario, self.family)

    @property
    def everything(self) -> bool:
        return self.family >= 1.0 and all(r >= 1.0 for r in self.scenarios.values())

    def signature_options(self) -> dict[str, str]:
        """What the signature records: the family's rate below 1, and every scenario's own rate."""
        out = {SIGNATURE_OPTION: f"{self.family:g}"} if self.family < 1.0 else {}
        if self.scenarios:
            out[SCENARIO_OPTION] = ",".join(f"{s}={r:g}" for s, r in sorted(self.scenarios.items()))
        return out


def parse_scenario_rates(text: str) -> dict[str, float]:
    """`scen_a=0.05,scen_b=1` into {scenario: rate}; ValueError says what is wrong."""
    out: dict[str, float] = {}
    for entry in (e.strip() for e in text.split(",")):
        if not entry:
            continue
        scenario, eq, value = (part.strip() for part in entry.partition("="))
        if not eq or not scenario:
            raise ValueError(f"{entry!r} is not scenario=rate")
        try:
            rate = float(value)
        except ValueError:
            raise ValueError(f"{entry!r}: {value!r} is not a number") from None
        if not 0.0 < rate <= 1.0:
            raise ValueError(f"{entry!r}: a rate is a share in (0, 1]")
        if scenario in out:
            raise ValueError(f"{scenario!r} is given twice")
        out[scenario] = rate
    return out


def group_field(rate: float, name: str) -> str:
    """The field `name` of the predictions sampled at `rate` (a scenario's own, unlike its family's)."""
    return f"{GROUP_PREFIX}{rate:g}|{name}"


def prefixed(stats: Stats, rate: float) -> Stats:
    """The statistics with every field under the rate's prefix."""
    out = Stats()
    out.ints = {group_field(rate, f): v for f, v in stats.ints.items()}
    out.floats = {group_field(rate, f): v for f, v in stats.floats.items()}
    out.mins = {group_field(rate, f): v for f, v in stats.mins.items()}
    out.maxes = {group_field(rate, f): v for f, v in stats.maxes.items()}
    out.hists = {group_field(rate, f): v for f, v in stats.hists.items()}
    out.caps = {group_field(rate, f): v for f, v in stats.caps.items()}
    return out


def split_groups(stats: Folded) -> tuple[Folded, dict[float, Folded]]:
    """The family-rate fields, and per scenario rate of its own the fields under that rate's prefix."""
    if not any(f.startswith(GROUP_PREFIX) for f in stats):
        return stats, {}
    main: dict[str, float] = {}
    groups: dict[float, dict[str, float]] = {}
    for f, v in stats.items():
        if f.startswith(GROUP_PREFIX):
            rate, _, name = f[len(GROUP_PREFIX) :].partition("|")
            groups.setdefault(float(rate), {})[name] = v
        else:
            main[f] = v
    return Folded(main), {r: Folded(g) for r, g in groups.items()}


def in_sample(p: pb.Prediction, model: str, rate: float) -> bool:
    return rate >= 1.0 or position(model, p.scenario, instance_id(p)) < rate


def sample(envelope: BatchEnvelope, rate: float) -> BatchEnvelope:
    """The batch with only its predictions in the sample (the envelope itself when the rate is 1)."""
    if rate >= 1.0:
        return envelope
    kept = _without_predictions(envelope)  # all but the predictions, which are chosen one by one
    kept.predictions.extend(p for p in envelope.predictions if in_sample(p, envelope.model or p.model, rate))
    return kept


def by_rate(envelope: BatchEnvelope, rates: Rates) -> dict[float, BatchEnvelope]:
    """The batch's sample, split by rate: the family's rate, and each scenario rate of its own in use."""
    if not rates.scenarios:
        return {rates.family: sample(envelope, rates.family)}
    model = envelope.model
    chosen: dict[float, list[pb.Prediction]] = {}
    for p in envelope.predictions:
        rate = rates.of(p.scenario)
        if in_sample(p, model or p.model, rate):
            chosen.setdefault(rate, []).append(p)
    out: dict[float, BatchEnvelope] = {rates.family: _without_predictions(envelope)}  # always computed
    for rate, predictions in chosen.items():
        if rate == rates.family:
            out[rate].predictions.extend(predictions)
            continue
        part = _without_predictions(envelope)
        part.predictions.extend(predictions)
        out[rate] = part
    return out


def compute(
    family: Family,
    envelope: BatchEnvelope,
    settings: Settings,
    rates: Rates,
    compute: Callable[[BatchEnvelope, Settings], dict[int, Stats] | Partial] | None = None,
) -> tuple[dict[int, Stats], Partial | None]:
    """The family's statistics of the batch's sample: each rate's predictions computed apart, a scenario
    rate's fields under its prefix (the family rate's as ever), instance rows together. `compute`: what
    computes one part (the runner's adds the segment cells), `family.compute` by default."""
    compute = compute or family.compute
    parts = by_rate(envelope, rates)
    if len(parts) == 1:
        return as_partial(compute(parts[rates.family], settings))
    total: dict[int, Stats] = {}
    joined: Partial | None = None
    for rate, part in parts.items():
        by_minute, partial = as_partial(compute(part, settings))
        for minute, st in by_minute.items():
            total.setdefault(minute, Stats()).merge(st if rate == rates.family else prefixed(st, rate))
        if partial is not None:
            joined = joined or Partial(total, partial.spec)
            joined.join(partial)
    return total, joined


def _without_predictions(envelope: BatchEnvelope) -> BatchEnvelope:
    kept = BatchEnvelope()
    for fd, value in envelope.ListFields():
        if fd.name == "predictions":
            continue
        if fd.is_repeated:
            getattr(kept, fd.name).extend(value)
        elif fd.message_type is not None:
            getattr(kept, fd.name).CopyFrom(value)
        else:
            setattr(kept, fd.name, value)
    return kept


def settings_class(family: str) -> type[BaseSettings]:
    """The family's sampling settings, under its own prefix (HOLISTIC_<FAMILY>_)."""

    class SampleSettings(BaseSettings):
        model_config = SettingsConfigDict(
            env_prefix=f"HOLISTIC_{family.upper()}_", extra="ignore", frozen=True, env_ignore_empty=True
        )
        sample_rate: Rate = Field(
            default=1.0,
            description="Share of predictions the family scores, in (0, 1]: chosen by a hash of (model, scenario, "
            "instance id), the same in every replica; recorded in its signature. 1: every prediction.",
        )
        scenario_sample_rates: str = Field(
            default="",
            description="Scenarios with a rate of their own, `scen_a=0.05,scen_b=1` (the others keep the family's): "
            "estimates weigh each sampled prediction 1/rate; recorded in its signature.",
        )

    SampleSettings.__qualname__ = f"settings_class({family!r})"
    return SampleSettings


def rate_for(family: str, samples: bool) -> float:
    """The family's rate from its environment variable; ConfigError names it when it is out of (0, 1]
    or set below 1 for a family whose metrics a sample would not estimate."""
    return rates_for(family, samples).family


def rates_for(family: str, samples: bool) -> Rates:
    """The family's rate and its scenarios' own; ConfigError names the variable that is wrong."""
    try:
        config = settings_class(family)()
    except ValidationError as exc:
        raise ConfigError(f"{variable(family)}: {exc.errors()[0]['msg']} (a share in (0, 1])") from exc
    rate = float(config.sample_rate)  # type: ignore[attr-defined]
    try:
        scenarios = parse_scenario_rates(config.scenario_sample_rates)  # type: ignore[attr-defined]
    except ValueError as exc:
        raise ConfigError(f"{scenario_variable(family)}: {exc} (scenario=rate, comma separated)") from exc
    for name, value in ((variable(family), rate), *((scenario_variable(family), r) for r in scenarios.values())):
        if value < 1.0 and not samples:
            raise ConfigError(
                f"{name}={value:g}: the {family} family does not score samples (some of its metrics are totals or "
                "extremes a sample does not estimate); unset it"
            )
    return Rates(rate, {s: r for s, r in scenarios.items() if r != rate})
