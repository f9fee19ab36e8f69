"""Naming a profile's axes: HELM's seven by their DimensionKind, a plugin family's by its name."""

from __future__ import annotations

from holistic.v1 import profile_pb2 as pp

__all__ = ["axis_name", "dimension_name"]


def axis_name(kind: int) -> str:
    return pp.DimensionKind.Name(kind).removeprefix("DIMENSION_KIND_").lower()


def dimension_name(d: pp.Dimension) -> str:
    """The axis's name: a plugin family's own axis has no DimensionKind, only its name."""
    return d.axis or axis_name(d.kind)
