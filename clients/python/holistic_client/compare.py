"""A window against the one before it, or one model against another: the rule lives in the core
(holistic/compare/profiles.py), so the gateway's CompareProfiles, the dashboard and `holistic compare` share it."""

from holistic.compare.profiles import (
    ABS_TOLERANCE,
    Change,
    compare,
    previous_range,
    segment_cell,
    significantly_worse,
)

__all__ = ["ABS_TOLERANCE", "Change", "compare", "previous_range", "segment_cell", "significantly_worse"]
