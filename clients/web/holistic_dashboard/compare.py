"""The dashboard's window comparison is the core's (holistic/compare/profiles.py): one rule for which
moves matter, shared with `holistic compare`."""

from holistic.compare.profiles import Change, compare, previous_range

__all__ = ["Change", "compare", "previous_range"]
