"""The segments panel: each family's main metric per value of each segment key (HOLISTIC_SEGMENT_KEYS), as
the dashboard's segments.js draws it. Values come by count, `other` (every value past the first K) last."""

from __future__ import annotations

from itertools import groupby

from rich.console import RenderableType
from rich.text import Text

from holistic.v1 import profile_pb2 as pp
from holistic_client.detail import bounds, value
from holistic_client.terminal import table, text


def segments_section(p: pp.Profile) -> list[RenderableType]:
    if not p.segments:
        return [Text("Segments: none (HOLISTIC_SEGMENT_KEYS names no metadata key, or no prediction carries one)")]
    out: list[RenderableType] = []
    for key, found in groupby(sorted(p.segments, key=lambda b: (b.key, b.family)), key=lambda b: b.key):
        t = table(text(key), "family", "metric", "value", "95% interval", "n", "", right=("value", "95% interval", "n"),
                  title=f"segment {text(key)}",
                  caption="other: every value past the key's first HOLISTIC_SEGMENT_TOP_K for this model")  # fmt: skip
        for b in found:
            arrow = "↓ better" if b.lower_is_better else ""
            for v in b.values:
                label = "[italic]other[/italic]" if v.other else text(v.value)
                t.add_row(label, text(b.family), text(b.metric), value(v.metric), bounds(v.metric),
                          f"{v.metric.count:,}", arrow)  # fmt: skip
        out.append(t)
    return out
