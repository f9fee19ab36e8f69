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
"""

from __future__ import annotations

import hashlib
from typing import Annotated

from pydantic import Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from holistic.errors import ConfigError
from holistic.queue.v1.envelope_pb2 import BatchEnvelope
from holistic.v1 import prediction_pb2 as pb

SIGNATURE_OPTION = "sample_rate"
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


def in_sample(p: pb.Prediction, model: str, rate: float) -> bool:
    return rate >= 1.0 or position(model, p.scenario, instance_id(p)) < rate


def sample(envelope: BatchEnvelope, rate: float) -> BatchEnvelope:
    """The batch with only its predictions in the sample (the envelope itself when the rate is 1)."""
    if rate >= 1.0:
        return envelope
    kept = BatchEnvelope()
    for fd, value in envelope.ListFields():  # all but the predictions, which are chosen one by one
        if fd.name == "predictions":
            continue
        if fd.is_repeated:
            getattr(kept, fd.name).extend(value)
        elif fd.message_type is not None:
            getattr(kept, fd.name).CopyFrom(value)
        else:
            setattr(kept, fd.name, value)
    kept.predictions.extend(p for p in envelope.predictions if in_sample(p, envelope.model or p.model, rate))
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

    SampleSettings.__qualname__ = f"settings_class({family!r})"
    return SampleSettings


def rate_for(family: str, samples: bool) -> float:
    """The family's rate from its environment variable; ConfigError names it when it is out of (0, 1]
    or set below 1 for a family whose metrics a sample would not estimate."""
    try:
        rate = float(settings_class(family)().sample_rate)  # type: ignore[attr-defined]
    except ValidationError as exc:
        raise ConfigError(f"{variable(family)}: {exc.errors()[0]['msg']} (a share in (0, 1])") from exc
    if rate < 1.0 and not samples:
        raise ConfigError(
            f"{variable(family)}={rate:g}: the {family} family does not score samples (some of its metrics are "
            "totals or extremes a sample does not estimate); unset it"
        )
    return rate
