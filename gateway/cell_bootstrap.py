"""CompareProfiles's cells, and the bootstrap standard errors of those without an interval (corpus-level
cells: classification F1, ECE, a gap), drawn from the stored time buckets (holistic/compare/bootstrap.py).

A profile's own cell (an axis, a family's metric) is bootstrapped with the whole families: each draw merges
the drawn buckets and folds the profile again. The segment fields ("#seg|<key>|<cell>|...",
holistic/stats/segments.py) are left out of those draws: no plain cell needs them, and folding every
segment cell on every draw is most of the work.

A segment cell ("calibration/ece_10_bin[region=eu]") is bootstrapped over its own buckets: the fields under
its prefix in each stored bucket, the buckets where the segment has predictions, each draw folded with the
family's own fold of a cell (segments.cell_metric, what the profile shows). So the cell always has a value
in a draw (a draw of all the window's buckets can miss a segment seen in a few of them, and then the cell
had no standard error at all), and its cluster count is the segment's: under MIN_BUCKETS buckets with the
segment's predictions on a side, there is no estimate.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gateway.profiles import Stored
from holistic.compare import bootstrap as bucket_bootstrap
from holistic.compare.profiles import dimension_name, segment_cell
from holistic.families import Family
from holistic.settings import Settings
from holistic.stats import segments
from holistic.stats.mergeable import Folded
from holistic.v1 import profile_pb2 as pp

FAMILY_SEP = "\x1e"  # a bootstrap bucket's field: "<family>\x1e<field>" (one draw resamples every family alike)


@dataclass(frozen=True)
class SegmentRef:
    """Where a segment cell's statistics are: its family, the fields' prefix, the metric its fold shows."""

    family: str
    prefix: str
    metric: str


def cells_of(profile: pp.Profile) -> dict[str, pp.Dimension | pp.Metric]:
    """Every cell of a profile by its name: axes, families' metrics, segment cells."""
    out: dict[str, pp.Dimension | pp.Metric] = {dimension_name(d): d for d in profile.dimensions}
    out.update({f"{f.family}/{m.name}": m for f in profile.families for m in f.metrics})
    for b in profile.segments:  # a segment's cell: its metric, with the breakdown's direction
        for v in b.values:
            m = pp.Metric()
            m.CopyFrom(v.metric)
            m.lower_is_better = b.lower_is_better
            m.family = m.family or b.family
            out[segment_cell(b, v)] = m
    return out


def segment_refs(profile: pp.Profile) -> dict[str, SegmentRef]:
    """Each segment cell of the profile, by name."""
    return {
        segment_cell(b, v): SegmentRef(b.family, segments.cell_prefix(b.key, segments.part_of(v)), b.metric)
        for b in profile.segments
        for v in b.values
    }


def value_of(msg: pp.Dimension | pp.Metric) -> float | None:
    if isinstance(msg, pp.Dimension):
        return msg.score if msg.HasField("score") else None
    return msg.value


def bootstrap_errors(
    stored: Stored, names: dict[str, str], fold: Callable[[Stored, dict[str, Folded]], pp.Profile]
) -> dict[str, float]:
    """The bootstrap standard error of each named cell (name -> its family; not a segment's), from the
    stored buckets, their segment fields left out."""
    families = sorted(set(names.values()) & stored.buckets.keys())
    if not families:
        return {}
    joined = []
    for i in range(len(stored.buckets[families[0]])):
        joined.append(
            Folded(
                {
                    f"{fam}{FAMILY_SEP}{k}": v
                    for fam in families
                    for k, v in stored.buckets[fam][i].items()
                    if not k.startswith(segments.PREFIX)
                }
            )
        )

    def values(draw: Folded) -> dict[str, float]:
        per: dict[str, dict[str, float]] = {fam: {} for fam in families}
        for k, v in draw.items():
            fam, _, field = k.partition(FAMILY_SEP)
            per[fam][field] = v
        cells = cells_of(fold(stored, {fam: Folded(fields) for fam, fields in per.items()}))
        out = {}
        for name in names:
            msg = cells.get(name)
            value = None if msg is None else value_of(msg)
            if value is not None:
                out[name] = value
        return out

    return bucket_bootstrap.standard_errors(joined, values)


def segment_errors(
    stored: Stored, refs: dict[str, SegmentRef], load: Callable[[str], Family], settings: Settings
) -> dict[str, float]:
    """The bootstrap standard error of each named segment cell, over the buckets holding its predictions."""
    out: dict[str, float] = {}
    for name, ref in refs.items():
        if ref.family not in stored.buckets:
            continue
        family, n = load(ref.family), len(ref.prefix)
        buckets = [
            Folded({k[n:]: v for k, v in bucket.items() if k.startswith(ref.prefix)})
            for bucket in stored.buckets[ref.family]
        ]

        def values(
            draw: Folded, name: str = name, family: Family = family, metric: str = ref.metric
        ) -> dict[str, float]:
            m = segments.cell_metric(family, draw, metric, stored.model, settings)
            return {} if m is None else {name: m.value}

        se = bucket_bootstrap.standard_errors(buckets, values).get(name)
        if se is not None:
            out[name] = se
    return out
